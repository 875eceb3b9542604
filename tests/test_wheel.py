"""arena works as a real package: built into a wheel, installed (not editable) into a fresh
virtual environment, and run from an empty directory far from the checkout.

The new environment gets its third-party dependencies from the test's own environment through a
``.pth`` line (no network); arena itself comes from the wheel alone, which the test checks.
"""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import cli_env

REPO = Path(__file__).resolve().parents[1]


def run(*args: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=cli_env(), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ directory of a fresh venv with arena installed from a freshly built wheel."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # a copy, so the build leaves nothing in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "arena", source / "arena", ignore=shutil.ignore_patterns("__pycache__"))
    dist = work / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "-w", dist, source, cwd=work)  # fmt: skip
    wheel = next(dist.glob("arena-*.whl"))
    venv = work / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=work)
    python = venv / "bin" / "python"
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=work)
    dependencies = "\n".join(site.getsitepackages())
    (Path(purelib.stdout.strip()) / "zz_test_dependencies.pth").write_text(dependencies + "\n")
    run(python, "-m", "pip", "install", "--no-deps", "--no-index", wheel, cwd=work)
    return venv / "bin"


def test_the_wheel_ships_prompts_and_migrations(installed: Path, tmp_path: Path) -> None:
    check = (
        "import arena, pathlib\n"
        "from arena.prompts import prompts_dir\n"
        "from arena.store.db import migrations_dir\n"
        "print(arena.__file__); print(prompts_dir()); print(migrations_dir())"
    )
    done = run(installed / "python", "-c", check, cwd=tmp_path)
    package, prompts, migrations = (Path(line) for line in done.stdout.splitlines())
    venv = installed.parent
    for path in (package, prompts, migrations):
        assert path.is_relative_to(venv), path  # not the checkout
    assert (prompts / "v1" / "system.txt").is_file()
    methodology = package.parent / "resources" / "METHODOLOGY.md"  # served at /methodology
    assert not methodology.is_symlink()
    assert methodology.read_text().startswith("# ")
    assert (migrations / "env.py").is_file()
    assert sorted(p.name for p in (migrations / "versions").glob("0*.py"))


def test_the_installed_demo_runs_from_an_empty_directory(installed: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run(installed / "arena", "demo", "--weeks", "1", cwd=empty)
    assert "Leaderboard" in done.stdout
    assert "ledger invariant holds" in done.stdout
    assert (empty / "demo-output" / "demo.db").is_file()
    status = run(installed / "arena", "status", cwd=empty)
    assert "Jobs" in status.stdout
