"""A small stored arena for the risk tests: two cohorts a week apart (one gamma, one book),
three families, ten weeks of snapshots every 12 hours, and the awkward curves (one snapshot,
flat, reaching 0)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from arena.store.models import Agent, Cohort, Family, PortfolioSnapshot

START = datetime(2026, 1, 4, tzinfo=UTC)  # a Sunday
WEEKS = 10
AT = START + timedelta(weeks=WEEKS, hours=1)
STEP = timedelta(hours=12)
FAMILIES = ("alpha", "beta", "flat")
COLUMNS = ("agent_id", "family_id", "start", "balance", "taken_at", "value")
"""The columns of :class:`arena.analytics.risk_measures.Snapshots`."""


def _family(family_id: str) -> Family:
    return Family(
        id=family_id,
        kind="openrouter",
        display_name=family_id.title(),
        provider="test",
        active=True,
        first_seen_at=START,
        updated_at=START,
    )


def _cohort(cohort_id: int, pricing: str) -> Cohort:
    return Cohort(
        id=cohort_id,
        week_start=cohort_start(cohort_id),
        created_at=cohort_start(cohort_id),
        methodology_version="v2",
        prompt_version="v2",
        starting_balance=Decimal(10_000),
        pricing=pricing,
        status="active",
    )


def cohort_start(cohort_id: int) -> datetime:
    """Cohort 1 starts at :data:`START`, cohort 2 a week later."""
    return START + timedelta(weeks=cohort_id - 1)


def _agent(agent_id: int, cohort_id: int, family_id: str) -> Agent:
    return Agent(
        id=agent_id,
        cohort_id=cohort_id,
        family_id=family_id,
        kind="openrouter",
        display_name=family_id.title(),
        provider="test",
        prompt_version="v2",
        methodology_version="v2",
        starting_balance=Decimal(10_000),
        cash=Decimal(10_000),
        realized_pnl=Decimal(0),
        created_at=START,
    )


def _snapshot(agent: Agent, at: datetime, value: Decimal, exit_value: Decimal | None) -> object:
    return PortfolioSnapshot(
        agent_id=agent.id,
        cohort_id=agent.cohort_id,
        taken_at=at,
        cash=value,
        positions_value=Decimal(0),
        total_value=value,
        pnl=value - Decimal(10_000),
        pnl_pct=Decimal(0),
        realized_pnl=Decimal(0),
        unrealized_pnl=Decimal(0),
        resolved_bets=0,
        open_positions=0,
        exit_value=exit_value,
    )


def curve(family_id: str, seed: int, points: int) -> list[Decimal]:
    """The values of one agent's curve (to the cent): a random walk, flat, or down to 0."""
    if family_id == "flat":
        return [Decimal(10_000)] * points
    rng = random.Random(seed)
    level, values = 10_000.0, []
    for _ in range(points):
        level = max(0.0, level * (1 + rng.gauss(0.001, 0.02)))
        values.append(Decimal(str(round(level, 2))))
    return values


def seed_risk_arena(factory: sessionmaker[Session]) -> None:
    """Cohort 1 prices at gamma (no exit value), cohort 2 at book; agent 7 (family lone) has
    one snapshot, agent 8 (family broke) reaches 0 on day 5."""
    points = int(timedelta(weeks=WEEKS) / STEP) + 1
    with factory.begin() as session:
        session.add_all([_family(f) for f in (*FAMILIES, "lone", "broke")])
        session.add_all([_cohort(1, "gamma"), _cohort(2, "book")])
        session.flush()
        agents = [
            _agent(number, cohort, family)
            for number, (cohort, family) in enumerate(
                [(c, f) for c in (1, 2) for f in FAMILIES], start=1
            )
        ]
        agents += [_agent(7, 2, "lone"), _agent(8, 1, "broke")]
        session.add_all(agents)
        session.flush()
        for agent in agents[:6]:
            values = curve(agent.family_id, agent.id, points)
            start = cohort_start(agent.cohort_id)
            for step, value in enumerate(values):
                exit_value = value - Decimal("12.34") if agent.cohort_id == 2 else None
                session.add(_snapshot(agent, start + step * STEP, value, exit_value))
        first = cohort_start(2) + STEP
        session.add(_snapshot(agents[6], first, Decimal(10_050), Decimal(10_000)))
        for step in range(points):
            value = max(Decimal(0), Decimal(10_000) - step * Decimal(1_000))
            session.add(_snapshot(agents[7], START + step * STEP, value, None))


def assert_same_snapshots(got: object, expected: object) -> None:
    """Two ``Snapshots`` hold the same columns: dtypes and values (NaN equal to NaN)."""
    for name in COLUMNS:
        left, right = getattr(got, name), getattr(expected, name)
        assert left.dtype == right.dtype, name
        if left.dtype.kind == "f":
            np.testing.assert_array_equal(left, right, err_msg=name)  # NaN == NaN here
        else:
            assert (left == right).all(), name
