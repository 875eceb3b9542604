"""Risk from the store, from an export directory (each format) and from pandas: the same
snapshots, the same numbers, never NaN or infinity (issue 25, items 1 and 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from arena.analytics import AnalysisOptions, risk
from arena.analytics.risk_report import NO_EXIT_VALUE
from arena.analytics.snapshot_columns import read_export_snapshots, read_stored_snapshots
from arena.export.writer import ExportTarget, export
from tests.analytics.risk_arena import AT, assert_same_snapshots, seed_risk_arena
from tests.conftest import Database

OPTIONS = AnalysisOptions(bootstrap_resamples=200, seed=3)


@pytest.fixture
def stored(db: Database) -> Database:
    seed_risk_arena(db.factory)
    return db


@pytest.mark.parametrize("value", ["mark", "exit"])
def test_the_store_and_every_export_format_give_the_same_snapshots(
    stored: Database, tmp_path: Path, value: str
) -> None:
    with stored.factory() as session:
        from_store = read_stored_snapshots(session, value)
    assert len(from_store.value) == 7 * 141 + 1  # 10 weeks of 12-hour points, and one
    by_store = risk(from_store, OPTIONS, value=value, at=AT)
    for fmt in ("jsonl", "csv", "parquet"):
        directory = tmp_path / fmt
        export(stored.factory, ExportTarget(directory, fmt))
        assert_same_snapshots(read_export_snapshots(directory, value), from_store)
        assert risk(directory, OPTIONS, value=value, at=AT) == by_store, fmt


def test_the_pandas_route_gives_the_same_numbers(stored: Database, tmp_path: Path) -> None:
    """The README's session: the export's tables merged with pandas, then ``risk``."""
    directory = tmp_path / "export"
    export(stored.factory, ExportTarget(directory, "parquet"))
    snapshots = pd.read_parquet(directory / "snapshots.parquet")
    agents = pd.read_parquet(directory / "agents.parquet")
    cohorts = pd.read_parquet(directory / "cohorts.parquet")
    frame = snapshots.merge(agents[["agent_id", "starting_balance"]], on="agent_id").merge(
        cohorts[["cohort_id", "week_start"]], on="cohort_id"
    )
    for by in ("family", "agent"):
        assert risk(frame, OPTIONS, by=by, at=AT) == risk(directory, OPTIONS, by=by, at=AT)


def test_bad_curves_give_insufficient_or_a_value_never_nan(stored: Database) -> None:
    with stored.factory() as session:
        mark = read_stored_snapshots(session, "mark")
        exit_ = read_stored_snapshots(session, "exit")
    reports = [
        risk(data, OPTIONS, by=by, value=value, at=AT)
        for data, value in ((mark, "mark"), (exit_, "exit"))
        for by in ("family", "agent")
    ]
    for report in reports:
        json.dumps(report, allow_nan=False)  # raises on NaN or infinity
    families = {r["forecaster"]: r for r in reports[0]["rows"]}
    agents = {r["forecaster"]: r for r in reports[1]["rows"]}
    lone = agents["7"]  # one snapshot, carried forward: no losing week, no drawdown
    assert lone["sortino"] == lone["calmar"] == "insufficient" and lone["recovered"] is True
    assert "reached 0" in agents["8"]["insufficient_reason"]
    assert families["broke"]["sharpe"] == "insufficient"
    assert agents["8"]["max_drawdown_pct"] == "insufficient"
    assert agents["8"]["max_drawdown_usd"] == pytest.approx(10_000)
    flat = families["flat"]  # no spread, no losing week, no drawdown
    assert flat["sharpe"] == flat["sortino"] == flat["calmar"] == "insufficient"
    assert flat["max_drawdown_usd"] == 0 and flat["recovered"] is True
    assert isinstance(families["alpha"]["sharpe"], dict) and families["alpha"]["agents"] == 2


def test_exit_values_cover_book_cohorts_and_name_the_gamma_ones(stored: Database) -> None:
    with stored.factory() as session:
        exit_ = read_stored_snapshots(session, "exit")
    report = risk(exit_, OPTIONS, by="agent", value="exit", at=AT)
    assert [item["agent_id"] for item in report["without_value"]] == ["1", "2", "3", "8"]
    assert {item["reason"] for item in report["without_value"]} == {NO_EXIT_VALUE}
    rows = {r["forecaster"]: r for r in report["rows"]}
    assert rows["1"]["insufficient_reason"] == NO_EXIT_VALUE and rows["1"]["sharpe"] == (
        "insufficient"
    )
    assert rows["4"]["weeks"] == 9  # cohort 2, a week younger, at exit value
    families = risk(exit_, OPTIONS, value="exit", at=AT)["rows"]
    assert {r["forecaster"]: r["insufficient_reason"] for r in families}["broke"] == NO_EXIT_VALUE


def test_the_readme_risk_session_runs(
    stored: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README.md's pandas example, run as written on a JSON-lines export."""
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    block = next(
        part.split("```", 1)[0]
        for part in readme.split("```python")[1:]
        if "from arena.analytics import AnalysisOptions, risk" in part
    )
    export(stored.factory, ExportTarget(tmp_path / "demo-output" / "export", "jsonl"))
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {"Path": Path, "at": AT}
    exec(block, scope)
    assert scope["report"] == scope["same"]
    assert scope["report"] == risk(
        tmp_path / "demo-output" / "export", AnalysisOptions(bootstrap_resamples=2000), at=AT
    )
