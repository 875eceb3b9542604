"""Migration 0004 (executable prices) on a database holding a week of mode-gamma history, on
SQLite and PostgreSQL: the cohorts and trades from before keep mode gamma, every stored number
stays as it was, and the leaderboard reads them as before."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from alembic import command
from sqlalchemy import text

from arena.analytics.leaderboard import compute_leaderboard
from arena.store.db import alembic_config, upgrade
from tests.conftest import Database

AT = datetime(2026, 11, 1, tzinfo=UTC)
BEFORE_PRICING = "0002"  # the revision before executable prices


def _downgrade(db: Database, revision: str) -> None:
    cfg = alembic_config(db.engine)
    with db.engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.downgrade(cfg, revision)


def _history(db: Database) -> None:
    """A cohort, an agent, a market, a BUY, a position and a snapshot, written as the code
    before executable prices wrote them (plain SQL against the old schema)."""
    stamp = AT.replace(tzinfo=None) if db.backend == "sqlite" else AT
    rows = [
        "INSERT INTO families (id, kind, display_name, provider, active, first_seen_at, "
        "updated_at) VALUES ('fam', 'openrouter', 'Fam', 'p', true, :at, :at)",
        "INSERT INTO cohorts (id, week_start, created_at, methodology_version, prompt_version, "
        "starting_balance, status) VALUES (1, :at, :at, 'v1', 'v1', 10000.00, 'active')",
        "INSERT INTO agents (id, cohort_id, family_id, kind, display_name, provider, "
        "prompt_version, methodology_version, starting_balance, cash, realized_pnl, created_at) "
        "VALUES (1, 1, 'fam', 'openrouter', 'Fam', 'p', 'v1', 'v1', 10000.00, 9500.00, 0.00, :at)",
        "INSERT INTO markets (id, question, outcomes, prices, yes_price, active, closed, "
        "neg_risk, first_seen_at, updated_at, status) VALUES ('7', 'Q?', '[\"Yes\", \"No\"]', "
        "'[\"0.25\", \"0.75\"]', 0.25, true, false, false, :at, :at, 'open')",
        "INSERT INTO decisions (id, agent_id, cohort_id, decision_week, status, action, "
        "system_hold, claim_count, prompt_version, methodology_version, created_at, updated_at) "
        "VALUES (1, 1, 1, 1, 'completed', 'BET', false, 1, 'v1', 'v1', :at, :at)",
        "INSERT INTO positions (id, agent_id, cohort_id, market_id, side, shares, cost_basis, "
        "status, realized_pnl, opened_at, updated_at) VALUES (1, 1, 1, '7', 'YES', "
        "2500.000000, 500.00, 'OPEN', 0.00, :at, :at)",
        "INSERT INTO trades (id, decision_id, agent_id, cohort_id, position_id, market_id, side, "
        "trade_type, amount, shares, price, implied_confidence, cash_shown, cash_after, "
        "executed_at) VALUES (1, 1, 1, 1, 1, '7', 'YES', 'BUY', 500.00, 2500.000000, 0.2, 0.2, "
        "10000.00, 9500.00, :at)",
        "INSERT INTO portfolio_snapshots (id, agent_id, cohort_id, taken_at, cash, "
        "positions_value, total_value, pnl, pnl_pct, realized_pnl, unrealized_pnl, "
        "resolved_bets, open_positions) VALUES (1, 1, 1, :at, 9500.00, 625.00, 10125.00, "
        "125.00, 1.25, 0.00, 125.00, 0, 1)",
    ]
    with db.engine.begin() as connection:
        for statement in rows:
            connection.execute(text(statement), {"at": stamp})


def test_old_cohorts_keep_mode_gamma_and_their_numbers(db: Database) -> None:
    _downgrade(db, BEFORE_PRICING)
    try:
        _history(db)
        upgrade(db.engine)
    finally:
        upgrade(db.engine)  # the fixture's database goes back to head whatever happened
    with db.engine.connect() as connection:
        cohort = connection.execute(text("SELECT pricing FROM cohorts")).one()
        trade = connection.execute(
            text("SELECT pricing, amount, shares, price, fee, levels FROM trades")
        ).one()
        snap = connection.execute(
            text("SELECT total_value, exit_value FROM portfolio_snapshots")
        ).one()
        universe_columns = connection.execute(text("SELECT count(*) FROM book_marks")).scalar()
    assert cohort.pricing == "gamma"
    assert trade.pricing == "gamma" and trade.fee is None and trade.levels is None
    assert Decimal(str(trade.amount)) == Decimal("500.00")
    assert Decimal(str(trade.shares)) == Decimal("2500")
    assert Decimal(str(trade.price)) == Decimal("0.2")
    assert Decimal(str(snap.total_value)) == Decimal("10125.00") and snap.exit_value is None
    assert universe_columns == 0
    (row,) = compute_leaderboard(db.factory)
    assert row.total_value == Decimal("10125.00")  # 9500 cash + 2500 YES at 0.25
    assert row.execution.exit_pnl is None and row.execution.trades == 0
    assert row.to_json()["fees_usd"] == "0.00"
