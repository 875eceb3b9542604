"""The daemon's jobs driven through three simulated weeks on a fake clock against the fake
Gamma and fake OpenRouter: cohorts, decisions, 10-minute snapshots, settlements and Brier rows
are checked exactly, and the ledger invariant holds for every agent."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

import pytest
from sqlalchemy import func, select

from arena.config import load_settings
from arena.demo_world import Simulation, WorldPlan
from arena.jobs.audit import check_ledger
from arena.store.models import (
    Agent,
    BrierScore,
    Cohort,
    Decision,
    JobRun,
    Market,
    PortfolioSnapshot,
    Position,
    Trade,
)
from tests.conftest import Database
from tests.helpers import write_config

# started first (tests/conftest.py); the simulated weeks take ~3 minutes alone, so the hang
# guard leaves a busy machine room
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

START = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
END = START + timedelta(days=21) - timedelta(minutes=10)
SCALE = Decimal("1e-10")  # Brier columns keep 10 decimals
FAMILIES = [
    {"id": "sim-sharp", "display_name": "Sharp", "openrouter_id": "sim/sharp"},
    {"id": "sim-noisy", "display_name": "Noisy", "openrouter_id": "sim/noisy"},
    {"id": "market-follower", "kind": "baseline", "strategy": "market-follower"},
    {"id": "random-bettor", "kind": "baseline", "strategy": "random", "seed": 5},
]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Database:
    from arena.store.db import make_engine, session_factory, upgrade

    tmp = tmp_path_factory.mktemp("daemon")
    url = f"sqlite:///{tmp / 'arena.db'}"
    config = write_config(
        Path(tmp / "config.yaml"),
        url,
        families=FAMILIES,
        schedule={"market_sync_minutes": 60, "resolution_minutes": 30, "snapshot_minutes": 10},
        benchmark={"decision_cohort_limit": 2},
    )
    settings = load_settings(config)
    engine = make_engine(url)
    upgrade(engine)
    factory = session_factory(engine)
    sim = Simulation(
        settings,
        factory,
        WorldPlan(START, 21, n_markets=50, seed=11),
        skills={"sim-sharp": 0.7, "sim-noisy": 0.1},
    )
    try:
        sim.run(END, timedelta(minutes=10))
    finally:
        sim.close()
    return Database(url, engine, factory)


def test_one_cohort_per_week_with_every_family(simulated: Database) -> None:
    with simulated.factory() as session:
        cohorts = list(session.scalars(select(Cohort).order_by(Cohort.week_start)))
        assert [c.week_start for c in cohorts] == [START + timedelta(days=7 * i) for i in range(3)]
        for cohort in cohorts:
            families = session.scalars(select(Agent.family_id).where(Agent.cohort_id == cohort.id))
            assert sorted(families) == sorted(f["id"] for f in FAMILIES)


def test_decisions_follow_the_decision_window(simulated: Database) -> None:
    with simulated.factory() as session:
        rows = session.execute(
            select(Cohort.week_start, Decision.decision_week, func.count())
            .join(Cohort, Cohort.id == Decision.cohort_id)
            .group_by(Cohort.week_start, Decision.decision_week)
        ).all()
        statuses = set(session.scalars(select(Decision.status)))
    weeks = {(start, week): count for start, week, count in rows}
    n = len(FAMILIES)
    # decision_cohort_limit 2: cohort 1 decides in weeks 1-2, then is tracking-only
    assert weeks == {
        (START, 1): n,
        (START, 2): n,
        (START + timedelta(days=7), 1): n,
        (START + timedelta(days=7), 2): n,
        (START + timedelta(days=14), 1): n,
    }
    assert statuses == {"completed"}


def test_snapshots_every_ten_minutes_none_twice(simulated: Database) -> None:
    with simulated.factory() as session:
        agents = list(session.scalars(select(Agent)))
        cohort_start = {c.id: c.week_start for c in session.scalars(select(Cohort))}
        for agent in agents:
            times = list(
                session.scalars(
                    select(PortfolioSnapshot.taken_at)
                    .where(PortfolioSnapshot.agent_id == agent.id)
                    .order_by(PortfolioSnapshot.taken_at)
                )
            )
            expected_count = (END - cohort_start[agent.cohort_id]) // timedelta(minutes=10) + 1
            assert len(times) == len(set(times)) == expected_count
            assert times[0] == cohort_start[agent.cohort_id] and times[-1] == END
            assert all(b - a == timedelta(minutes=10) for a, b in pairwise(times))


def test_settlements_and_brier_rows_are_exact(simulated: Database) -> None:
    with simulated.factory() as session:
        markets = {m.id: m for m in session.scalars(select(Market))}
        settled = list(
            session.scalars(
                select(Position).where(Position.status != "OPEN", Position.status != "CLOSED")
            )
        )
        outcomes = Counter(p.settlement_outcome for p in settled)
        assert outcomes["WON"] and outcomes["LOST"], outcomes
        for position in settled:
            market = markets[position.market_id]
            assert market.status in ("resolved", "cancelled")
            if position.settlement_outcome == "WON":
                assert market.winning_outcome == position.side
            if position.settlement_outcome == "CANCELLED":
                assert position.payout is not None and position.realized_pnl == 0
        open_on_settled = session.scalar(
            select(func.count())
            .select_from(Position)
            .join(Market, Market.id == Position.market_id)
            .where(Position.status == "OPEN", Market.status != "open")
        )
        assert open_on_settled == 0
        scored_markets = [
            m.id
            for m in markets.values()
            if m.status == "resolved" and m.resolution_state == "resolved_winner"
        ]
        buys = list(
            session.scalars(
                select(Trade).where(Trade.trade_type == "BUY", Trade.market_id.in_(scored_markets))
            )
        )
        briers = {b.trade_id: b for b in session.scalars(select(BrierScore))}
        assert set(briers) == {t.id for t in buys}
        for trade in buys:
            row = briers[trade.id]
            won = Decimal(1) if markets[trade.market_id].winning_outcome == trade.side else 0
            assert row.brier == ((trade.implied_confidence - won) ** 2).quantize(SCALE)
            assert row.market_brier == ((trade.price - won) ** 2).quantize(SCALE)


def test_ledger_invariant_and_job_runs(simulated: Database) -> None:
    with simulated.factory() as session:
        assert check_ledger(session) == []
        failed = session.scalar(
            select(func.count()).select_from(JobRun).where(JobRun.status != "succeeded")
        )
        assert failed == 0
        snapshot_runs = session.scalar(
            select(func.count()).select_from(JobRun).where(JobRun.job == "snapshot")
        )
        assert snapshot_runs == (END - START) // timedelta(minutes=10) + 1
