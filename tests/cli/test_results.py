"""``arena leaderboard`` and ``arena export`` through the real CLI entry point: once in a fresh
process, the rest in-process through ``arena.cli.main`` (same code path, faster)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from arena.analytics.leaderboard import FIELDS, compute_leaderboard, to_json
from arena.cli import main
from arena.export.tables import TABLES
from tests.analytics.results_arena import ArenaFacts, build_arena
from tests.conftest import Database
from tests.helpers import run_arena, write_config


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def arena_main(capsys: pytest.CaptureFixture[str], *args: str) -> Done:
    """Run ``arena ARGS`` in this process; exit code and output as a subprocess would give."""
    try:
        main(list(args))
        code: object = 0
    except SystemExit as stopped:
        code = stopped.code
    out = capsys.readouterr()
    return Done(code if isinstance(code, int) else 0, out.out, out.err)


@pytest.fixture
def arena(sqlite_db: Database, tmp_path: Path) -> tuple[Database, ArenaFacts, Path]:
    facts = build_arena(sqlite_db.factory)
    config = write_config(tmp_path / "config.yaml", sqlite_db.url)
    return sqlite_db, facts, config


def test_leaderboard_json_is_the_computed_standings(
    arena: tuple[Database, ArenaFacts, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    db, facts, config = arena
    done = run_arena("--config", str(config), "leaderboard", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == to_json(compute_leaderboard(db.factory, min_scored_bets=10))
    cohort = facts.cohort_ids[1]
    done = arena_main(
        capsys, "--config", str(config), "leaderboard", "--format", "json", "--cohort", str(cohort)
    )
    assert done.returncode == 0, done.stderr
    assert {row["cohort_id"] for row in json.loads(done.stdout)} == {cohort}


def test_leaderboard_csv_and_table(
    arena: tuple[Database, ArenaFacts, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, _, config = arena
    done = arena_main(capsys, "--config", str(config), "leaderboard", "--format", "csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert list(rows[0]) == list(FIELDS)
    assert len(rows) == 3
    monkeypatch.setattr("arena.cli.common.console.width", 80)
    done = arena_main(capsys, "--config", str(config), "leaderboard")
    assert done.returncode == 0, done.stderr
    for text in (
        "Leaderboard (all cohorts)",
        "alpha-model *",
        "provisional: fewer than 10 scored bets",
        "Cost and reliability",
    ):
        assert text in done.stdout
    assert "very poor" not in done.stdout  # bands are in the wide view
    wide = arena_main(capsys, "--config", str(config), "leaderboard", "--wide")
    assert wide.returncode == 0, wide.stderr
    for text in ("Alpha Model", "BSS vs market", "very poor", "Completion tokens"):
        assert text in wide.stdout


def test_leaderboard_usage_errors(
    arena: tuple[Database, ArenaFacts, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, config = arena
    done = arena_main(capsys, "--config", str(config), "leaderboard", "--cohort", "99")
    assert done.returncode == 2
    assert done.stderr.strip() == "arena: error: cohort 99 does not exist"
    done = arena_main(capsys, "--config", str(config), "leaderboard", "--format", "xml")
    assert done.returncode == 2
    assert "--format" in done.stderr


def test_export_with_every_option(arena: tuple[Database, ArenaFacts, Path], tmp_path: Path) -> None:
    _, facts, config = arena
    out = tmp_path / "out"
    done = run_arena(
        "--config",
        str(config),
        "export",
        "--out",
        str(out),
        "--format",
        "parquet",
        "--cohort",
        str(facts.cohort_ids[0]),
        "--cohort",
        str(facts.cohort_ids[1]),
        "--family",
        "alpha-model",
        "--since",
        "2026-11-01T00:00:00Z",
        "--until",
        "2026-11-15T00:00:00Z",
        "--no-prompts",
    )
    assert done.returncode == 0, done.stderr
    assert f"{len(TABLES)} parquet files" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["filters"] == {
        "cohorts": facts.cohort_ids[:2],
        "families": ["alpha-model"],
        "since": "2026-11-01T00:00:00Z",
        "until": "2026-11-15T00:00:00Z",
        "include_prompts": False,
    }
    assert manifest["methodology_version"] == "v1"
    assert (out / "trades.parquet").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "xlsx"], "--format"),
        (["--since", "yesterday"], "--since"),
        (["--family", "nobody"], "--family: no family nobody"),
        (["--cohort", "42"], "--cohort: no cohort 42"),
    ],
)
def test_export_usage_errors(
    arena: tuple[Database, ArenaFacts, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    _, _, config = arena
    done = arena_main(
        capsys, "--config", str(config), "export", "--out", str(tmp_path / "x"), *args
    )
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert "Traceback" not in done.stderr
