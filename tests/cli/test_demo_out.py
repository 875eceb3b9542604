"""`arena demo --out DIR` writes only into a new or empty directory, or one a demo made itself
(issue 10, finding 4): it never deletes what it did not write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.cli.demo import DEMO_MARKER, prepare_out
from arena.errors import UserError
from tests.helpers import cli_env, run_arena, write_config


def _demo(cwd: Path, out: str) -> tuple[int, str]:
    config = write_config(cwd.parent / f"{cwd.name}-config.yaml", "sqlite:///unused.db")
    result = run_arena(
        "--config",
        str(config),
        "demo",
        "--weeks",
        "1",
        "--markets",
        "50",
        "--out",
        out,
        cwd=cwd,
        env=cli_env(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9"),
        timeout=600,
    )
    return result.returncode, result.stderr


def test_out_dot_in_a_non_empty_directory_refuses_and_keeps_everything(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.txt").write_text("also mine")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, stderr = _demo(tmp_path, ".")
    assert code == 2
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert "not empty" in stderr
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert after == before
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_out_naming_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("keep")
    code, stderr = _demo(tmp_path, "a-file")
    assert code == 2 and "not a directory" in stderr and "Traceback" not in stderr
    assert (tmp_path / "a-file").read_text() == "keep"


def test_a_demo_reruns_in_its_own_directory(tmp_path: Path) -> None:
    code, stderr = _demo(tmp_path, "demo-output")
    assert code == 0, stderr[-2000:]
    out = tmp_path / "demo-output"
    assert (out / DEMO_MARKER).is_file() and (out / "demo.db").is_file()
    (out / "mine.txt").write_text("a file the user put there")
    code, stderr = _demo(tmp_path, "demo-output")
    assert code == 0, stderr[-2000:]
    assert (out / "mine.txt").read_text() == "a file the user put there"
    assert (out / "export" / "manifest.json").is_file()
    # the rerun's dataset is a new one, not a second version of the first demo's
    manifest = json.loads((out / "published" / "manifest.json").read_text())
    assert manifest["version"] == 1


def test_prepare_out_adopts_an_empty_directory_and_clears_only_demo_files(
    tmp_path: Path,
) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    prepare_out(out)
    assert (out / DEMO_MARKER).is_file()
    (out / "demo.db").write_text("old")
    (out / "export").mkdir()
    (out / "export" / "trades.csv").write_text("old")
    (out / "published").mkdir()
    (out / "published" / "manifest.json").write_text("old")
    (out / "keep.txt").write_text("keep")
    prepare_out(out)
    assert sorted(p.name for p in out.iterdir()) == [DEMO_MARKER, "keep.txt"]


def test_prepare_out_refuses_a_foreign_non_empty_directory(tmp_path: Path) -> None:
    out = tmp_path / "foreign"
    out.mkdir()
    (out / "demo.db").write_text("somebody else's")
    with pytest.raises(UserError, match="not empty"):
        prepare_out(out)
    assert (out / "demo.db").read_text() == "somebody else's"
