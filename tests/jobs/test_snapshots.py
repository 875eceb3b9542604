from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import event, func, select

from arena.clock import FixedClock
from arena.config import Settings
from arena.jobs.prices import refresh_held_markets
from arena.jobs.settle import settle_markets
from arena.jobs.snapshots import SnapshotReport, take_snapshots
from arena.store.models import Agent, Market, MarketPrice, PortfolioSnapshot, Position
from tests.conftest import Database
from tests.jobs.ledger_world import NOW, WEEK, FakeSource, World, gamma_market

D = Decimal
SETTINGS = Settings()
SLOT = datetime(2026, 11, 25, 12, 30, tzinfo=UTC)


def _snap(db: Database, at: datetime = NOW, source: FakeSource | None = None) -> SnapshotReport:
    return take_snapshots(db.factory, SETTINGS, FixedClock(at), source)


def _rows(db: Database) -> list[PortfolioSnapshot]:
    with db.factory() as session:
        return list(
            session.scalars(
                select(PortfolioSnapshot).order_by(
                    PortfolioSnapshot.taken_at, PortfolioSnapshot.agent_id
                )
            )
        )


def _basic(world: World) -> tuple[int, int]:
    """a: YES $120 at 0.6 (200 shares); b: NO $80 at 0.4 (200 shares) on m1 (YES 0.6)."""
    cohort = world.cohort()
    a, b = world.agent(cohort, "fam-a"), world.agent(cohort, "fam-b")
    world.market(gamma_market("m1", ("0.6", "0.4")))
    world.buy(a, "m1", "YES", "120", "0.6")
    world.buy(b, "m1", "NO", "80", "0.4")
    return a, b


def test_one_snapshot_per_agent_for_the_floored_slot(db: Database) -> None:
    world = World(db)
    a, b = _basic(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("0.75", "0.25")))

    report = _snap(db, source=source)

    assert (report.taken_at, report.agents, report.written, report.positions) == (SLOT, 2, 2, 2)
    assert report.refreshed_markets == 1
    assert report.refresh_error is None
    first, second = _rows(db)
    assert first.agent_id == a
    assert first.taken_at == SLOT
    # a: 200 YES shares at 0.75 = 150.00; b: 200 NO shares at 0.25 = 50.00
    assert (first.cash, first.positions_value, first.total_value) == (
        D("9880.00"),
        D("150.00"),
        D("10030.00"),
    )
    assert (first.pnl, first.pnl_pct, first.unrealized_pnl, first.realized_pnl) == (
        D("30.00"),
        D("0.3"),
        D("30.00"),
        D("0.00"),
    )
    assert (first.brier, first.resolved_bets, first.open_positions) == (None, 0, 1)
    assert (second.agent_id, second.positions_value, second.pnl, second.unrealized_pnl) == (
        b,
        D("50.00"),
        D("-30.00"),
        D("-30.00"),
    )
    assert second.pnl_pct == D("-0.3")


def test_rerunning_a_slot_changes_nothing(db: Database) -> None:
    world = World(db)
    _basic(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("0.75", "0.25")))
    _snap(db, source=source)
    source.put(gamma_market("m1", ("0.9", "0.1")))

    again = _snap(db, at=SLOT + timedelta(minutes=9, seconds=59), source=source)

    assert (again.taken_at, again.written) == (SLOT, 0)
    assert [r.positions_value for r in _rows(db)] == [D("150.00"), D("50.00")]
    later = _snap(db, at=SLOT + timedelta(minutes=10), source=source)
    assert (later.taken_at, later.written) == (SLOT + timedelta(minutes=10), 2)
    assert [r.positions_value for r in _rows(db)][2:] == [D("180.00"), D("20.00")]


def test_closed_unsettled_market_keeps_last_valid_mark(db: Database) -> None:
    world = World(db)
    _basic(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("0.7", "0.3")))
    _snap(db, source=source)
    # proposed at [1, 0], a "valid" [0.5, 0.5] after close, then no prices at all
    for prices in (("1", "0"), ("0.5", "0.5"), None):
        source.put(gamma_market("m1", prices, closed=True, uma="proposed"))
        _snap(db, at=NOW + timedelta(minutes=30), source=source)
    source.markets.clear()  # and then gone from Gamma
    _snap(db, at=NOW + timedelta(hours=1), source=source)

    values = {(r.taken_at, r.agent_id): r.positions_value for r in _rows(db)}
    assert set(values.values()) == {D("140.00"), D("60.00")}  # 200 x 0.7 and 200 x 0.3
    with db.factory() as session:
        market = session.get_one(Market, "m1")
        history = session.scalar(select(func.count()).select_from(MarketPrice))
    assert (market.prices, market.yes_price, market.closed) == (["0.7", "0.3"], D("0.7"), True)
    assert market.last_raw_prices == ["0.5", "0.5"]  # prices Gamma left out overwrite nothing
    assert history == 1


def test_market_without_any_valid_price_is_valued_at_cost(db: Database) -> None:
    world = World(db)
    cohort = world.cohort()
    a = world.agent(cohort)
    world.market(gamma_market("m5", ("0.25", "0.75"), ("Red", "Blue")))
    world.buy(a, "m5", "Blue", "75", "0.75")
    with db.factory.begin() as session:
        session.get_one(Market, "m5").prices = None

    report = _snap(db)

    assert report.unpriced_positions == 1
    assert report.refreshed_markets is None
    (row,) = _rows(db)
    assert (row.positions_value, row.unrealized_pnl, row.total_value) == (
        D("75.00"),
        D("0.00"),
        D("10000.00"),
    )


def test_price_history_appended_only_on_change(db: Database) -> None:
    world = World(db)
    _basic(world)
    source = FakeSource()
    clock = FixedClock(NOW)
    for minutes, prices in [
        (0, ("0.6", "0.4")),
        (5, ("0.60", "0.40")),
        (10, ("0.65", "0.35")),
        (15, ("1", "0")),
    ]:
        clock.set(NOW + timedelta(minutes=minutes))
        source.put(gamma_market("m1", prices))
        assert refresh_held_markets(db.factory, source, clock) == 1
    with db.factory() as session:
        history = session.execute(
            select(MarketPrice.observed_at, MarketPrice.prices).order_by(MarketPrice.observed_at)
        ).all()
        market = session.get_one(Market, "m1")
    assert [tuple(h) for h in history] == [(NOW + timedelta(minutes=10), ["0.65", "0.35"])]
    assert market.prices == ["0.65", "0.35"]
    assert market.last_raw_prices == ["1", "0"]
    assert market.prices_updated_at == NOW + timedelta(minutes=10)


def test_brier_mean_and_resolved_bets(db: Database) -> None:
    world = World(db)
    cohort = world.cohort()
    a = world.agent(cohort)
    for market_id in ("w", "l", "v"):
        world.market(gamma_market(market_id, ("0.5", "0.5")))
    world.buy(a, "w", "YES", "250", "0.5")  # confidence 0.1, won: (0.9)^2 = 0.81
    world.buy(a, "l", "YES", "500", "0.5")  # 500 / (0.25 x 9750) = 0.205128, lost
    world.buy(a, "v", "YES", "100", "0.5")  # void: no Brier, not counted
    source = FakeSource()
    source.put(gamma_market("w", ("1", "0"), closed=True, uma="resolved"))
    source.put(gamma_market("l", ("0", "1"), closed=True, uma="resolved"))
    source.put(gamma_market("v", ("0.5", "0.5"), closed=True, uma="resolved"))
    settle_markets(db.factory, SETTINGS, FixedClock(NOW), source)

    _snap(db)

    (row,) = _rows(db)
    # (0.81 + 0.205128^2) / 2 = (0.81 + 0.042077496384) / 2, to 10 places
    assert (row.brier, row.resolved_bets, row.open_positions) == (D("0.4260387482"), 2, 0)
    # paid 850, got back 500 shares x 1 (win) + 200 shares x 0.5 (void)
    assert (row.cash, row.realized_pnl, row.positions_value) == (
        D("9750.00"),
        D("-250.00"),
        D("0.00"),
    )
    assert (row.pnl, row.pnl_pct) == (D("-250.00"), D("-2.5"))


def test_completed_and_future_cohorts_are_not_snapshotted(db: Database) -> None:
    world = World(db)
    done = world.cohort(WEEK - timedelta(days=7), status="completed")
    world.agent(done)
    current = world.agent(world.cohort())
    world.agent(world.cohort(WEEK + timedelta(days=7)))
    _snap(db)
    assert [r.agent_id for r in _rows(db)] == [current]


def test_refresh_failure_still_snapshots_at_last_marks(db: Database) -> None:
    world = World(db)
    _basic(world)
    report = _snap(db, source=FakeSource(error="HTTP 503"))
    assert report.written == 2
    assert "503" in (report.refresh_error or "")
    assert [r.positions_value for r in _rows(db)] == [D("120.00"), D("80.00")]


@contextmanager
def _statements(db: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(" ".join(statement.split()))

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", record)


def _selects(statements: list[str]) -> int:
    return sum(1 for s in statements if s.upper().startswith("SELECT"))


def test_reads_a_constant_number_of_queries_and_never_writes_the_ledger(db: Database) -> None:
    world = World(db)
    _basic(world)
    with _statements(db) as small:
        _snap(db)
    for week in range(1, 4):
        cohort = world.cohort(WEEK - timedelta(days=7 * week))
        for family in ("fam-a", "fam-b", "fam-c"):
            agent = world.agent(cohort, family)
            for index in range(4):
                market_id = f"x{week}-{index}"
                if family == "fam-a":
                    world.market(gamma_market(market_id, ("0.3", "0.7")))
                world.buy(agent, market_id, "NO", "10", "0.7")
    with db.factory() as session:
        before = session.execute(select(Agent.id, Agent.cash, Agent.realized_pnl)).all()
        positions = session.execute(select(Position.id, Position.shares, Position.status)).all()
    with _statements(db) as large:
        report = _snap(db, at=NOW + timedelta(minutes=10))

    assert report.agents == 11
    assert report.positions == 38
    assert _selects(large) == _selects(small) <= 6
    ledger_writes = re.compile(r"^(INSERT INTO|UPDATE|DELETE FROM) \"?(agents|positions)\b", re.I)
    assert not [s for s in small + large if ledger_writes.match(s)]
    with db.factory() as session:
        assert session.execute(select(Agent.id, Agent.cash, Agent.realized_pnl)).all() == before
        assert (
            session.execute(select(Position.id, Position.shares, Position.status)).all()
            == positions
        )


def test_a_huge_return_is_stored_within_the_percent_column(db: Database) -> None:
    world = World(db)
    a = world.agent(world.cohort())
    world.market(gamma_market("m1", ("0.001", "0.999")))
    world.buy(a, "m1", "YES", "2500", "0.001")  # 2,500,000 shares
    source = FakeSource()
    source.put(gamma_market("m1", ("0.999", "0.001")))
    _snap(db, source=source)
    (row,) = _rows(db)
    assert row.pnl == D("2495000.00")  # 7,500 cash + 2,497,500 - 10,000: exact, never clipped
    assert row.pnl_pct == D("9999.9999")


class SlowRefreshClock:
    """A real-time-like clock: every reading is later than the one before, so a price refresh
    that reads it crosses into the next snapshot slot."""

    def __init__(self, start: datetime, step: timedelta) -> None:
        self.at, self.step = start, step

    def now(self) -> datetime:
        at = self.at
        self.at += self.step
        return at


def test_the_slot_is_the_one_the_job_started_in(db: Database) -> None:
    world = World(db)
    _basic(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("0.75", "0.25")))
    start = SLOT + timedelta(minutes=9, seconds=59)  # the refresh ends in the next slot
    clock = SlowRefreshClock(start, timedelta(seconds=2))

    report = take_snapshots(db.factory, SETTINGS, clock, source)

    assert report.taken_at == SLOT
    assert {row.taken_at for row in _rows(db)} == {SLOT}
