"""Every error the CLI prints has one shape (issue 23: Typer's boxes beside one-liners).

``arena: error: MESSAGE`` for a usage or configuration error (exit 2), ``arena: failed:
MESSAGE`` for a job that ran and failed (exit 1), each optionally followed by one line
``arena: hint: ...``; never a box, a traceback or click's ``Usage:``/``Error:`` lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.store.db import make_engine, upgrade
from tests.helpers import free_port, run_arena, write_config

SHAPE = re.compile(r"arena: (?P<kind>error|failed): \S.*(\narena: hint: \S.*)?")
KIND = {2: "error", 1: "failed"}

# (arguments after --config, exit code, text of the error line, text of the hint or None)
CASES: list[tuple[list[str], int, str, str | None]] = [
    (["nosuch"], 2, "No such command 'nosuch'", "`arena --help` shows the usage"),
    (["export"], 2, "Missing option '--out'", "`arena export --help`"),
    (["export", "--out", "o", "--frmat", "csv"], 2, "No such option: --frmat", "arena export"),
    (["demo", "--weeks", "0"], 2, "'--weeks'", "`arena demo --help`"),
    (["analyze", "h2h", "only-one"], 2, "Missing argument", "`arena analyze h2h --help`"),
    (["leaderboard", "--format", "xml"], 2, "--format: 'xml' is not one of", "arena leaderboard"),
    (["snapshot", "--at", "yesterday"], 2, "--at: 'yesterday'", "`arena snapshot --help`"),
    (["analyze", "report", "--pair", "a,b,c"], 2, "--pair: 'a,b,c'", "arena analyze report"),
    (["leaderboard", "--cohort", "0"], 2, "--cohort: 0 is not an id", "arena leaderboard"),
    (["markets", "sync"], 1, "connection error", None),
]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A config whose database is fine (and there) and whose Polymarket refuses every
    connection."""
    gamma = {"gamma_url": f"http://127.0.0.1:{free_port()}", "max_attempts": 1}
    url = f"sqlite:///{tmp_path / 'a.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return write_config(tmp_path / "c.yaml", url, polymarket=gamma)


@pytest.mark.parametrize(("args", "code", "message", "hint"), CASES)
def test_every_error_has_one_shape(
    config: Path, args: list[str], code: int, message: str, hint: str | None
) -> None:
    result = run_arena("--config", str(config), *args, cwd=config.parent)
    assert result.returncode == code, result.stderr
    stderr = result.stderr.strip()
    shape = SHAPE.fullmatch(stderr)
    assert shape is not None, stderr
    assert shape.group("kind") == KIND[code]
    first, *rest = stderr.splitlines()
    assert message in first, stderr
    if hint is not None:
        assert rest and hint in rest[0], stderr
    assert not re.search(r"[│╭╰─]|Traceback|^Usage:|^Error:", stderr, re.MULTILINE), stderr
    assert result.stdout == ""


def test_a_config_error_has_the_shape(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///a.db", benchmark={"min_bet": -1})
    result = run_arena("--config", str(config), "families", cwd=tmp_path)
    assert result.returncode == 2
    assert SHAPE.fullmatch(result.stderr.strip()), result.stderr
    assert result.stderr.startswith("arena: error: benchmark.min_bet: ")
