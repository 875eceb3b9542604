"""The leaderboard equals an independent recomputation from the exported files (both backends,
every format), across cohorts and per cohort; the contract fields are there; provisional rows
and null scores behave."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from pathlib import Path

import pytest

from arena.analytics.leaderboard import (
    FIELDS,
    attempts_usage,
    compute_leaderboard,
    to_json,
    write_csv,
)
from arena.export.writer import ExportTarget, export
from arena.store.models import Agent, Family
from tests.analytics.export_files import FORMATS
from tests.analytics.recompute import INTERFACE_FIELDS, assert_matches, recompute
from tests.analytics.results_arena import FIRST_WEEK, ArenaFacts, build_arena
from tests.conftest import Database


@pytest.fixture
def arena(db: Database) -> tuple[Database, ArenaFacts]:
    return db, build_arena(db.factory)


@pytest.mark.parametrize("fmt", FORMATS)
def test_leaderboard_equals_recomputation_from_the_export(
    arena: tuple[Database, ArenaFacts], tmp_path: Path, fmt: str
) -> None:
    db, facts = arena
    tmp_path = tmp_path / "export"
    export(db.factory, ExportTarget(tmp_path, fmt))
    board = to_json(compute_leaderboard(db.factory, min_scored_bets=5))
    assert_matches(board, recompute(tmp_path, fmt))
    for cohort_id in facts.cohort_ids:
        per_cohort = to_json(compute_leaderboard(db.factory, cohort_id=cohort_id))
        assert {row["cohort_id"] for row in per_cohort} == {cohort_id}
        assert_matches(per_cohort, recompute(tmp_path, fmt, cohort=cohort_id))


def test_rows_carry_the_contract_fields_and_are_ranked(
    arena: tuple[Database, ArenaFacts],
) -> None:
    db, _ = arena
    board = to_json(compute_leaderboard(db.factory, min_scored_bets=4))
    assert len(board) == 3
    for row in board:
        assert set(row) >= INTERFACE_FIELDS
        assert list(row) == list(FIELDS)
        assert row["provisional"] == (row["scored_bets"] < 4)
        assert row["brier_band"] in {"excellent", "good", "fair", "poor", "very poor"}
        assert row["return_band"] in {
            "exceptional",
            "excellent",
            "good",
            "neutral",
            "poor",
            "very poor",
        }
        for money in ("total_value", "pnl", "realized_pnl", "unrealized_pnl"):
            assert Decimal(row[money]).as_tuple().exponent == -2
    pnls = [Decimal(row["pnl"]) for row in board]
    assert pnls == sorted(pnls, reverse=True)
    assert json.loads(json.dumps(board)) == board


def test_a_family_without_scored_bets_has_null_scores(
    arena: tuple[Database, ArenaFacts],
) -> None:
    db, facts = arena
    with db.factory() as session, session.begin():
        session.add(
            Family(
                id="newcomer",
                kind="baseline",
                display_name="Newcomer",
                provider="",
                strategy="always-hold",
                active=True,
                first_seen_at=FIRST_WEEK,
                updated_at=FIRST_WEEK,
            )
        )
        session.flush()
        session.add(
            Agent(
                cohort_id=facts.cohort_ids[2],
                family_id="newcomer",
                kind="baseline",
                display_name="Newcomer",
                provider="",
                prompt_version="v2",
                methodology_version="v2",
                starting_balance=Decimal(10000),
                cash=Decimal(10000),
                realized_pnl=Decimal(0),
                created_at=FIRST_WEEK,
            )
        )
    board = {row["family_id"]: row for row in to_json(compute_leaderboard(db.factory))}
    row = board["newcomer"]
    assert row["brier"] is None
    assert row["win_rate"] is None
    assert row["bss_uniform"] is None
    assert row["bss_market"] is None
    assert row["brier_band"] is None
    assert row["malformed_share"] is None
    assert row["provisional"] is True
    assert (row["total_value"], row["pnl"], row["return_pct"]) == ("10000.00", "0.00", 0.0)
    assert row["return_band"] == "neutral"
    assert row["cost_usd"] == "0.00"
    assert (row["cohorts"], row["agents"], row["scored_bets"]) == (1, 1, 0)
    assert "newcomer" not in {
        r["family_id"]
        for r in to_json(compute_leaderboard(db.factory, cohort_id=facts.cohort_ids[0]))
    }


def test_csv_has_the_json_fields(arena: tuple[Database, ArenaFacts]) -> None:
    db, _ = arena
    standings = compute_leaderboard(db.factory)
    out = io.StringIO()
    write_csv(standings, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split(",") == list(FIELDS)
    assert len(lines) == 1 + len(standings)


def test_empty_arena_has_an_empty_leaderboard(sqlite_db: Database) -> None:
    assert compute_leaderboard(sqlite_db.factory) == []


def test_the_pass_over_every_attempt_reads_an_index_not_the_prompts(sqlite_db: Database) -> None:
    """On SQLite an attempt's cost and tokens sit behind its prompt's overflow pages: the
    leaderboard's pass over every attempt must be answered by ``ix_decision_attempts_usage``
    (a plan, not a time: bench_results.py measures the time)."""
    build_arena(sqlite_db.factory)
    with sqlite_db.engine.connect() as connection:
        for cohort_id in (None, 1):
            statement = attempts_usage(cohort_id).compile(
                dialect=connection.dialect, compile_kwargs={"literal_binds": True}
            )
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}").all()
            steps = [step[-1] for step in plan if "decision_attempts" in step[-1]]
            assert steps and all("COVERING INDEX ix_decision_attempts_usage" in s for s in steps)
