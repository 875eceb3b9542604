"""``arena analyze risk``: JSON, CSV and an 80-column table, from an export or the database."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.export.writer import ExportTarget, export
from tests.analytics.risk_arena import AT, seed_risk_arena
from tests.analytics.test_cli_analyze import _app
from tests.conftest import Database

runner = CliRunner()
FLAGS = ["--at", AT.isoformat(), "--bootstrap", "200", "--seed", "3"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from arena.store.db import make_engine, session_factory, upgrade

    directory = tmp_path_factory.mktemp("risk")
    engine = make_engine(f"sqlite:///{directory / 'arena.db'}")
    upgrade(engine)
    seed_risk_arena(session_factory(engine))
    export(session_factory(engine), ExportTarget(directory / "export", "jsonl"))
    engine.dispose()
    return directory / "export"


def _run(*args: str) -> str:
    result = runner.invoke(_app(), ["analyze", "risk", *args, *FLAGS], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_json_has_the_interface_fields(exported: Path) -> None:
    report = json.loads(_run("--from-export", str(exported), "--format", "json"))
    assert report["kind"] == "risk" and report["min_weeks"] == 8
    assert "sqrt(52)" in report["annualisation"]
    alpha = next(r for r in report["rows"] if r["forecaster"] == "alpha")
    assert set(alpha) >= {
        "weeks",
        "sharpe",
        "sortino",
        "max_drawdown_pct",
        "max_drawdown_usd",
        "drawdown_hours",
        "recovered",
        "calmar",
    }
    assert set(alpha["sharpe"]) == {"estimate", "low", "high"}
    assert report["resampling"] == {"resamples": 200, "seed": 3}


def test_csv_rows_match_the_json(exported: Path) -> None:
    report = json.loads(_run("--from-export", str(exported), "--by", "agent", "-f", "json"))
    rows = list(
        csv.DictReader(
            io.StringIO(_run("--from-export", str(exported), "--by", "agent", "-f", "csv"))
        )
    )
    assert [r["forecaster"] for r in rows] == [r["forecaster"] for r in report["rows"]]
    for line, row in zip(rows, report["rows"], strict=True):
        sharpe = row["sharpe"]
        expected = str(sharpe["estimate"]) if isinstance(sharpe, dict) else "insufficient"
        assert line["sharpe_estimate"] == expected and line["weeks"] == str(row["weeks"])


def test_the_table_fits_80_columns_and_states_its_rules(exported: Path) -> None:
    for value in ("mark", "exit"):
        output = _run("--from-export", str(exported), "--value", value)
        assert max(len(line) for line in output.splitlines()) <= 80
        text = " ".join(output.split())
        assert "annualised by sqrt(52)" in text and "fewer than 8 complete weeks" in text
        assert "Alpha" in output  # the family's display name
    assert "gamma" in " ".join(output.split())  # --value exit says why gamma agents are empty


def test_bad_value_is_a_usage_error(exported: Path) -> None:
    result = runner.invoke(
        _app(), ["analyze", "risk", "--from-export", str(exported), "--value", "bid"]
    )
    assert result.exit_code != 0
    assert "--value: 'bid' is not one of mark, exit" in str(result.exception)


def test_without_an_export_it_reads_the_database(
    sqlite_db: Database, exported: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seed_risk_arena(sqlite_db.factory)
    monkeypatch.setenv("ARENA_DATABASE_URL", sqlite_db.url)
    monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text("{}\n")
    stored = json.loads(_run("-f", "json"))
    assert stored == json.loads(_run("--from-export", str(exported), "-f", "json"))
