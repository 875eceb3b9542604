"""Snapshots and settlement through the real Gamma client against the fake Gamma world."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import pytest
from sqlalchemy import func, select

from arena.clock import FixedClock
from arena.config import Benchmark, Polymarket, Settings
from arena.fakes.gamma import FakeGammaWorld
from arena.jobs.audit import check_ledger
from arena.jobs.markets import sync_markets
from arena.jobs.settle import settle_markets
from arena.jobs.snapshots import take_snapshots
from arena.sources.gamma import GammaClient
from arena.store.models import BrierScore, Market, PortfolioSnapshot, Position
from tests.conftest import Database
from tests.jobs.ledger_world import World

START = datetime(2026, 11, 22, 0, 5, tzinfo=UTC)
SETTINGS = Settings(benchmark=Benchmark(universe_size=40))


@pytest.fixture
def gamma() -> FakeGammaWorld:
    return FakeGammaWorld(n_markets=150, seed=5, start=START - timedelta(hours=1))


@pytest.fixture
def client(gamma: FakeGammaWorld) -> Iterator[GammaClient]:
    settings = Polymarket(gamma_url="http://gamma.test", timeout_seconds=1)
    with httpx.Client(transport=gamma.mock_transport()) as http:
        yield GammaClient(settings, http=http, sleep=lambda _seconds: None)


def _open_markets(db: Database) -> tuple[list[Market], list[Market]]:
    with db.factory() as session:
        rows = session.scalars(
            select(Market)
            .where(Market.closed.is_(False), Market.prices.is_not(None))
            .order_by(Market.id)
        ).all()
    binary = [r for r in rows if [o.lower() for o in r.outcomes] == ["yes", "no"]]
    named = [r for r in rows if r not in binary]
    return binary, named


def test_a_week_of_resolutions_through_the_gamma_client(
    db: Database, gamma: FakeGammaWorld, client: GammaClient
) -> None:
    sync_markets(db.factory, client, SETTINGS, FixedClock(START))
    binary, named = _open_markets(db)
    assert len(binary) >= 5 and named
    world = World(db, now=START)
    agent = world.agent(world.cohort(datetime(2026, 11, 22, tzinfo=UTC)))
    won, void, refunded, proposed, gone = (m.id for m in binary[:5])
    sport = named[0]
    for market in binary[:5]:
        world.buy(agent, market.id, "YES", "100", market.prices[0])
    world.buy(agent, sport.id, sport.outcomes[1], "100", sport.prices[1])

    gamma.resolve(won, "Yes")
    gamma.resolve_50_50(void)
    gamma.resolve_ambiguous(refunded)
    gamma.propose(proposed, "No")
    gamma.remove(gone)
    gamma.resolve(sport.id, 1)
    later = START + timedelta(days=1)
    snapshot = take_snapshots(db.factory, SETTINGS, FixedClock(later), client)
    assert snapshot.refreshed_markets == 5  # the removed market is missing
    report = settle_markets(db.factory, SETTINGS, FixedClock(later), client)

    assert (report.resolved, report.voided, report.cancelled, report.waiting) == (2, 1, 1, 2)
    assert report.gone == [gone]
    with db.factory() as session:
        outcomes = dict(
            session.execute(select(Position.market_id, Position.settlement_outcome)).all()
        )
        marks = dict(session.execute(select(Market.id, Market.prices)).all())
        briers = session.scalar(select(func.count()).select_from(BrierScore))
        (snap,) = session.scalars(select(PortfolioSnapshot)).all()
        assert check_ledger(session) == []
    assert outcomes == {
        won: "WON",
        void: "VOID",
        refunded: "CANCELLED",
        proposed: None,
        gone: None,
        sport.id: "WON",
    }
    assert briers == 2
    # the proposed market was valued at its last valid mark, not at its proposed [0, 1]
    assert marks[proposed] == binary[3].prices
    # every position was still marked at its entry price (100 x $100 bets, one snapshot before
    # settlement): resolved, 50-50, proposed and gone markets keep their last open mark
    assert snap.positions_value == Decimal("600.00")

    again = settle_markets(db.factory, SETTINGS, FixedClock(later), client)
    assert (again.checked, again.positions_settled) == (2, 0)
