"""arena works as a real package: installed (not editable) into a fresh virtual environment,
both from a freshly built wheel and by a plain ``pip install <source directory>``, and run from an
empty directory far from the checkout.

The new environment gets its third-party dependencies from the test's own environment through a
``.pth`` line (no network); arena itself comes from the wheel alone, which the test checks.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import site
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import cli_env, free_port

pytestmark = pytest.mark.slow  # started first (tests/conftest.py)

REPO = Path(__file__).resolve().parents[1]


def run(*args: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=cli_env(), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module", params=["wheel", "pip install ."])
def installed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ directory of a fresh venv with arena installed, not editable: from a freshly
    built wheel, or straight from a source directory as ``pip install .`` does."""
    return install(request.param, tmp_path_factory.mktemp("wheel"))


def install(kind: str, work: Path) -> Path:
    """Install arena into a new venv under ``work``: from a built wheel or a source directory."""
    source = work / "source"  # a copy, so the build leaves nothing in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "arena", source / "arena", ignore=shutil.ignore_patterns("__pycache__"))
    venv = work / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=work)
    python = venv / "bin" / "python"
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=work)
    dependencies = "\n".join(site.getsitepackages())
    (Path(purelib.stdout.strip()) / "zz_test_dependencies.pth").write_text(dependencies + "\n")
    if kind == "wheel":
        dist = work / "dist"
        run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
            "-w", dist, source, cwd=work)  # fmt: skip
        target = next(dist.glob("arena-*.whl"))
    else:
        target = source
    # No network: the build backend is the test environment's setuptools (reached through the
    # .pth line), not the older one a new venv may bring, and there is no build isolation.
    run(python, "-m", "pip", "uninstall", "--yes", "setuptools", cwd=work)
    run(python, "-m", "pip", "install", "--no-deps", "--no-index", "--no-build-isolation",
        target, cwd=work)  # fmt: skip
    listed = run(python, "-m", "pip", "show", "--files", "arena", cwd=work).stdout
    assert "__editable__" not in listed and "Editable project location" not in listed
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
    # with no config there, status names the database it looked for instead of creating one
    missing = subprocess.run(
        [str(installed / "arena"), "status"], cwd=empty, env=cli_env(), capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert missing.returncode == 2 and f"no database at {empty.resolve() / 'arena.db'}" in (
        missing.stderr
    )
    assert not (empty / "arena.db").exists()
    demo_db = f"sqlite:///{empty / 'demo-output' / 'demo.db'}"
    status = subprocess.run(
        [str(installed / "arena"), "status"], cwd=empty, env=cli_env(ARENA_DATABASE_URL=demo_db),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert "Jobs" in status.stdout and "no daemon has run against this database" in status.stdout


# -- the Docker image, without a Docker engine ---------------------------------------------
# None runs here, so the image is checked in two halves: its Dockerfile has the shape the
# operator is promised, and its command and HEALTHCHECK, run as written (only the port and the
# image's paths moved), work against the wheel installed as the image installs it.


@dataclass
class Image:
    stages: list[str]  # the text of each build stage
    env: dict[str, str]  # the final stage's ENV
    user: str
    healthcheck: list[str]  # HEALTHCHECK's CMD, exec form
    command: list[str]  # CMD, exec form


def read_dockerfile() -> Image:
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]
    stages: list[list[str]] = []
    for line in lines:
        if line.startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    final = stages[-1]
    env: dict[str, str] = {}
    for line in final:
        if line.startswith("ENV "):
            env.update(pair.split("=", 1) for pair in shlex.split(line[4:]))
    (user,) = [line.split()[1] for line in final if line.startswith("USER ")]
    (health,) = [line for line in final if line.startswith("HEALTHCHECK ")]
    (command,) = [line for line in final if line.startswith("CMD ")]
    return Image(
        stages=["\n".join(stage) for stage in stages],
        env=env,
        user=user,
        healthcheck=json.loads(health.split(" CMD ", 1)[1]),
        command=json.loads(command.removeprefix("CMD ")),
    )


def test_the_dockerfile_builds_the_wheel_and_runs_unprivileged() -> None:
    image = read_dockerfile()
    build, final = image.stages[0], image.stages[-1]
    assert len(image.stages) == 2
    assert "pip wheel" in build and "-e" not in build.split()
    assert "COPY --from=build" in final
    assert "pip install --no-cache-dir /dist/*.whl" in final  # the wheel, not editable
    assert image.user not in ("root", "0")
    assert f"useradd --create-home --uid 1000 {image.user}" in final
    assert image.command[:3] == ["arena", "run", "--http"]
    assert image.healthcheck[0] == "python3" and "/healthz" in image.healthcheck[-1]


@pytest.mark.parametrize("installed", ["wheel"], indirect=True)  # as the image installs it
def test_the_image_command_serves_what_its_healthcheck_asks(
    installed: Path, tmp_path: Path
) -> None:
    """The image's CMD (the daemon with its dashboard) from the installed wheel, in the image's
    environment; its HEALTHCHECK passes while it runs and fails once it has stopped."""
    image = read_dockerfile()
    data, etc = tmp_path / "data", tmp_path / "etc"
    data.mkdir()
    etc.mkdir()
    shutil.copy(REPO / "config.yaml", etc / "config.yaml")  # COPY config.yaml /etc/arena/

    def moved(value: str) -> str:  # the image's paths, under tmp_path
        return value.replace("/etc/arena", str(etc)).replace("/data", str(data))

    port = free_port()
    env = cli_env(
        **{key: moved(value) for key, value in image.env.items() if key != "PATH"},
        PATH=f"{installed}{os.pathsep}{os.environ['PATH']}",  # ENV PATH=/opt/arena/bin:$PATH
        HTTPS_PROXY="http://127.0.0.1:9",  # no network: Gamma and OpenRouter fail at once
        HTTP_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
    )
    command = [*image.command[:-1], f"127.0.0.1:{port}"]  # the image listens on 0.0.0.0:8000
    healthcheck = [
        part.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for part in image.healthcheck
    ]
    assert healthcheck != image.healthcheck

    def healthy() -> bool:
        done = subprocess.run(healthcheck, env=env, cwd=data, capture_output=True, timeout=60)
        return done.returncode == 0

    log_path = tmp_path / "daemon.log"
    with log_path.open("w") as log:
        daemon = subprocess.Popen(command, env=env, cwd=data, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 180  # generous: a busy machine only starts it later
            while not healthy():
                assert daemon.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, log_path.read_text()[-3000:]
                time.sleep(0.2)
            assert (data / "arena.db").is_file()  # the database lives on the /data volume
            daemon.send_signal(signal.SIGTERM)  # STOPSIGNAL SIGTERM: docker stop
            assert daemon.wait(timeout=90) == 0, log_path.read_text()[-3000:]
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait(timeout=30)
    assert not healthy()
