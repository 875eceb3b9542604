"""Mode-book snapshots at scale (issue 22, finding 11), on both databases against the fake CLOB
through the real client: fee schedules are fetched once each and refreshed ahead of expiry in
bounded numbers (never all at once a day later), no ``IN (...)`` list outgrows
:data:`arena.jobs.books.IN_CHUNK`, and the exit values computed a chunk of markets at a time
are the ones the whole books give, to the cent."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import event, insert, select, update

from arena.clock import FixedClock
from arena.config import Polymarket, Settings
from arena.domain.book import NO_FEE, FeeSchedule, exit_proceeds, mark
from arena.domain.valuation import position_value
from arena.fakes.clob import FakeClobMarket, FakeClobWorld
from arena.jobs import held_books
from arena.jobs.books import IN_CHUNK
from arena.jobs.held_books import fetch_held_books
from arena.jobs.snapshots import take_snapshots, value_agents
from arena.sources import clob as clob_module
from arena.sources.clob import ClobClient
from arena.store import schema
from arena.store.models import Agent, Cohort, PortfolioSnapshot, Position
from tests.conftest import Database
from tests.jobs.ledger_world import NOW, World, gamma_market

D = Decimal
SETTINGS = Settings()
FEE = FeeSchedule(D("0.04"), D(1))
T0 = NOW.replace(hour=0, minute=0, second=0)
PLACEHOLDER = r"(?:\?|%\(\w+\)s(?:::\w+)?|%s)"  # SQLite's, psycopg's (with a cast)
IN_LIST = re.compile(rf"\bIN \(({PLACEHOLDER}(?:, {PLACEHOLDER})*)\)", re.IGNORECASE)


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clob_module, "retry_sleep", lambda _s: None)


class BookArena:
    """A mode-book cohort whose agents hold positions in ``markets`` binary markets, each with
    a plausible book (half of them with the 4% taker fee) on the fake CLOB."""

    def __init__(self, db: Database, markets: int, agents: int = 3, seed: int = 11) -> None:
        self.db = db
        self.clob = FakeClobWorld(seed=seed)
        self.client = ClobClient(Polymarket(max_attempts=2), transport=self.clob.mock_transport())
        world = World(db)
        cohort = world.cohort()
        with db.factory.begin() as session:
            session.execute(update(Cohort).where(Cohort.id == cohort).values(pricing="book"))
        self.agents = [world.agent(cohort, f"fam-{i}") for i in range(agents)]
        rng = random.Random(seed)
        self.markets: dict[str, FakeClobMarket] = {}
        for index in range(markets):
            price = D(rng.randint(5, 95)) / 100
            fake = self.clob.add_plausible_market(price, fee=FEE if index % 2 else NO_FEE)
            market_id = str(5000 + index)
            world.market(
                gamma_market(market_id, (str(price), str(1 - price))),
                condition_id=fake.condition_id,
                clob_token_ids=[fake.yes_token, fake.no_token],
            )
            self.markets[market_id] = fake
        rows = []
        for index, market_id in enumerate(self.markets):  # every market held by one agent
            agent = self.agents[index % agents]
            basis = D(rng.randint(50, 400))
            rows.append(
                {
                    "agent_id": agent,
                    "cohort_id": cohort,
                    "market_id": market_id,
                    "side": rng.choice(("YES", "NO")),
                    "shares": basis * 2,
                    "cost_basis": basis,
                    "status": "OPEN",
                    "realized_pnl": D(0),
                    "opened_at": NOW,
                    "updated_at": NOW,
                }
            )
        with db.factory.begin() as session:
            session.execute(insert(schema.positions), rows)

    def fee_requests(self) -> int:
        return sum(n for path, n in self.clob.counts().items() if "/clob-markets/" in path)

    def snapshots(self, at: datetime) -> dict[int, PortfolioSnapshot]:
        with self.db.factory() as session:
            return {
                s.agent_id: s
                for s in session.scalars(
                    select(PortfolioSnapshot).where(PortfolioSnapshot.taken_at == at)
                )
            }

    def expected(self) -> dict[int, tuple[Decimal, Decimal]]:
        """Each agent's (positions value, exit value) computed from the fake's whole books."""
        with self.db.factory() as session:
            cash = dict(session.execute(select(Agent.id, Agent.cash)).all())
            positions = session.execute(
                select(Position.agent_id, Position.market_id, Position.side, Position.shares)
            ).all()
        value = dict.fromkeys(self.agents, D(0))
        exits = dict(cash)
        for agent, market_id, side, shares in positions:
            fake = self.markets[market_id]
            book = self.clob.books[fake.yes_token if side == "YES" else fake.no_token]
            value[agent] += position_value(shares, D(0), mark(book))
            exits[agent] += exit_proceeds(book, shares, fake.fee)
        return {agent: (value[agent], exits[agent]) for agent in self.agents}


@contextmanager
def in_lists(db: Database) -> Iterator[list[int]]:
    """The number of bound parameters in each ``IN (...)`` list executed (SQLAlchemy expands
    an ``in_()`` into one placeholder per value)."""
    sizes: list[int] = []

    def record(
        _conn: Any, _cursor: Any, statement: str, params: Any, _ctx: Any, _many: bool
    ) -> None:
        for items in IN_LIST.findall(statement):
            sizes.append(items.count(",") + 1)

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        yield sizes
    finally:
        event.remove(db.engine, "before_cursor_execute", record)


def test_fee_requests_per_tick_stay_bounded_over_two_days(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first tick asks each market's schedule once; afterwards the schedules are refreshed
    ahead of their expiry, a bounded number a tick, so a day later they do not all expire (and
    get fetched) in one tick, and no exit value is ever unknown for want of a fee."""
    arena = BookArena(db, markets=24)
    monkeypatch.setattr(held_books, "FEE_REFRESH_PER_CALL", 6)
    per_tick = []
    for hour in range(0, 50, 2):
        at = T0 + timedelta(hours=hour)
        before = arena.fee_requests()
        report = take_snapshots(db.factory, SETTINGS, FixedClock(at), books=arena.client)
        assert report.books_error is None
        per_tick.append(arena.fee_requests() - before)
        assert all(s.exit_value is not None for s in arena.snapshots(at).values()), hour
    assert per_tick[0] == 24  # each market once
    assert max(per_tick[1:]) <= 6, per_tick
    assert sum(per_tick[1:]) >= 24  # and every schedule was refreshed within its day


def test_in_lists_are_bounded_and_exit_values_match_the_whole_books(db: Database) -> None:
    arena = BookArena(db, markets=IN_CHUNK + 120)
    at = T0 + timedelta(hours=3)
    with in_lists(db) as sizes:
        report = take_snapshots(db.factory, SETTINGS, FixedClock(at), books=arena.client)
    assert report.books_error is None and report.books_fetched == len(arena.markets)
    assert sizes and max(sizes) <= IN_CHUNK, max(sizes)
    assert arena.fee_requests() == len(arena.markets)
    snaps = arena.snapshots(at)
    for agent, (value, exit_value) in arena.expected().items():
        assert (snaps[agent].positions_value, snaps[agent].exit_value) == (value, exit_value)


def test_a_market_whose_fee_cannot_be_read_costs_only_its_holders(db: Database) -> None:
    """A refused fee request leaves the exit value of the agent holding that market unknown
    (never "no fee"); the other agents' exit values are exact."""
    arena = BookArena(db, markets=12, agents=3)
    charged = next(m for m in arena.markets.values() if m.fee != NO_FEE)
    arena.clob.fail("400", path=f"/clob-markets/{charged.condition_id}")
    holder_market = next(k for k, m in arena.markets.items() if m is charged)
    at = T0 + timedelta(hours=1)
    report = take_snapshots(db.factory, SETTINGS, FixedClock(at), books=arena.client)
    assert report.books_error is None
    with db.factory() as session:
        holder = session.execute(
            select(Position.agent_id).where(Position.market_id == holder_market)
        ).scalar_one()
    snaps = arena.snapshots(at)
    expected = arena.expected()
    assert snaps[holder].exit_value is None
    for agent in arena.agents:
        if agent != holder:
            assert snaps[agent].exit_value == expected[agent][1]
    # the next tick asks again, and the exit value is back
    later = at + timedelta(minutes=10)
    take_snapshots(db.factory, SETTINGS, FixedClock(later), books=arena.client)
    assert arena.snapshots(later)[holder].exit_value == expected[holder][1]


def test_a_trade_between_the_book_pass_and_the_valuation_leaves_that_exit_unknown(
    db: Database,
) -> None:
    """Exit proceeds are summed before the consistent valuation read; an agent whose positions
    changed in between gets no exit value for that slot (never one mixing the two states)."""
    arena = BookArena(db, markets=9, agents=3)
    at = T0 + timedelta(hours=1)
    held = fetch_held_books(db.factory, arena.client, at)
    moved = arena.agents[1]
    with db.factory.begin() as session:
        position = session.scalars(select(Position).where(Position.agent_id == moved)).first()
        assert position is not None
        position.shares -= 1
    rows, _positions, _unpriced = value_agents(db.factory, at, at, held)
    exits = {row["agent_id"]: row["exit_value"] for row in rows}
    expected = arena.expected()
    assert exits[moved] is None
    assert all(exits[a] == expected[a][1] for a in arena.agents if a != moved)
