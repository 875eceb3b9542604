"""The market sync job against the fake Gamma, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from arena.clock import FixedClock
from arena.config import Polymarket, Settings
from arena.errors import GammaError
from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.jobs.markets import SyncReport, sync_markets
from arena.jobs.universe import freeze_universe, load_universe
from arena.sources import gamma as gamma_module
from arena.sources.gamma import GammaClient
from arena.store.db import transaction
from arena.store.models import Agent, Cohort, Family, Market, MarketPrice, Position
from tests.conftest import Database

NOW = datetime(2026, 11, 1, 0, 5, tzinfo=UTC)


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gamma_module, "retry_sleep", lambda seconds: None)


@pytest.fixture
def world() -> FakeGammaWorld:
    return FakeGammaWorld(n_markets=1200, seed=11, start=NOW - timedelta(hours=1))


@pytest.fixture
def client(world: FakeGammaWorld) -> Iterator[GammaClient]:
    settings = Polymarket(gamma_url="http://gamma.test", timeout_seconds=0.3)
    with httpx.Client(transport=world.mock_transport()) as http:
        yield GammaClient(settings, http=http)


def sync(db: Database, client: GammaClient, at: datetime = NOW) -> SyncReport:
    return sync_markets(db.factory, client, Settings(), FixedClock(at))


def stored_ids(db: Database) -> set[str]:
    with transaction(db.factory) as session:
        return set(session.scalars(select(Market.id)))


def table_state(db: Database) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every column of every markets and market_prices row, for before/after comparisons."""
    with transaction(db.factory) as session:
        markets = session.execute(select(Market.__table__).order_by(Market.id)).all()
        history = session.execute(select(MarketPrice.__table__).order_by(MarketPrice.id)).all()
    return [tuple(r) for r in markets], [tuple(r) for r in history]


def hold(db: Database, market_id: str) -> None:
    """Give some agent an OPEN position in ``market_id``."""
    with transaction(db.factory) as session:
        family = session.get(Family, "fam")
        if family is None:
            session.add(
                Family(id="fam", kind="baseline", display_name="Fam", first_seen_at=NOW,
                       updated_at=NOW)
            )  # fmt: skip
            cohort = Cohort(week_start=NOW, created_at=NOW, methodology_version="v1",
                            prompt_version="v1", starting_balance=Decimal(10000))  # fmt: skip
            session.add(cohort)
            session.flush()
            session.add(
                Agent(cohort_id=cohort.id, family_id="fam", kind="baseline", display_name="Fam",
                      prompt_version="v1", methodology_version="v1",
                      starting_balance=Decimal(10000), cash=Decimal(9900), created_at=NOW)
            )  # fmt: skip
            session.flush()
        agent = session.scalars(select(Agent)).first()
        assert agent is not None
        session.add(
            Position(agent_id=agent.id, cohort_id=agent.cohort_id, market_id=market_id, side="YES",
                     shares=Decimal(200), cost_basis=Decimal(100), opened_at=NOW, updated_at=NOW)
        )  # fmt: skip


def test_sync_stores_exactly_the_top_500_and_a_rerun_changes_nothing(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    report = sync(db, client)
    assert stored_ids(db) == set(world.expected_top(500))
    assert report.top_ids == world.expected_top(500)
    assert report.pages >= 5
    assert (report.inserted, report.updated, report.price_changes) == (500, 0, 500)
    assert report.complete
    before = table_state(db)
    again = sync(db, client, NOW + timedelta(minutes=5))
    assert (again.inserted, again.updated, again.price_changes) == (0, 0, 0)
    assert again.unchanged == 500
    assert table_state(db) == before


def test_stored_values_are_exact(db: Database, world: FakeGammaWorld, client: GammaClient) -> None:
    sync(db, client)
    top = world.markets[world.expected_top(1)[0]]
    with transaction(db.factory) as session:
        row = session.get(Market, top.id)
        assert row is not None
        assert row.prices == [str(p) for p in top.prices or ()]
        if top.outcomes == ["Yes", "No"]:
            assert row.yes_price == (top.prices or [None])[0]
        assert row.volume == top.volume
        assert row.first_seen_at == row.updated_at == NOW
        assert row.status == "open"
        history = session.scalars(select(MarketPrice).where(MarketPrice.market_id == top.id)).one()
        assert history.observed_at == NOW


FAULTS: list[tuple[str, dict[str, Any]]] = [
    ("429", {"times": 2, "retry_after": 3}),
    ("500", {"times": 2}),
    ("drop", {"times": 2}),
    ("connect_error", {"times": 1}),
    ("slow", {"times": 2, "delay": 1.0}),
    ("malformed", {"times": 2}),
    ("repeat_cursor", {"times": 1, "path": "/markets/keyset"}),
]


@pytest.mark.parametrize(("kind", "options"), FAULTS, ids=[kind for kind, _ in FAULTS])
def test_every_failure_mode_still_stores_exactly_the_top_500(
    db: Database, world: FakeGammaWorld, client: GammaClient, kind: str, options: dict[str, Any]
) -> None:
    world.fail(kind, **options)
    report = sync(db, client)
    assert stored_ids(db) == set(world.expected_top(500))
    assert report.pages >= 5
    before = table_state(db)
    again = sync(db, client, NOW + timedelta(minutes=5))
    assert (again.inserted, again.updated, again.price_changes) == (0, 0, 0)
    assert table_state(db) == before


@pytest.mark.parametrize("switch", ["type_flips", "missing_fields"])
def test_row_shape_changes_still_store_exactly_the_top_500(
    db: Database, world: FakeGammaWorld, client: GammaClient, switch: str
) -> None:
    setattr(world, switch, True)
    sync(db, client)
    assert stored_ids(db) == set(world.expected_top(500))
    before = table_state(db)
    sync(db, client, NOW + timedelta(minutes=5))
    assert table_state(db) == before


def test_over_real_http_with_a_dropped_connection_and_a_slow_page(
    db: Database, world: FakeGammaWorld
) -> None:
    world.fail("drop")
    world.fail("slow", delay=60.0)  # a minute late; an ordinary page has seconds, even when busy
    settings = Polymarket(timeout_seconds=2.0)
    with serve_fake_gamma(world) as base_url, GammaClient(settings, base_url=base_url) as client:
        report = sync(db, client)
    assert stored_ids(db) == set(world.expected_top(500))
    assert report.retries == 2


def test_missing_fields_never_overwrite_known_values(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    sync(db, client)
    with transaction(db.factory) as session:
        before = {row.id: row for row in session.scalars(select(Market))}
    target = world.expected_top(3)[2]
    for key in (
        "volumeNum",
        "volume",
        "liquidity",
        "liquidityNum",
        "events",
        "slug",
        "endDate",
        "endDateIso",
        "description",
        "acceptingOrders",
        "closedTime",
    ):
        world.corrupt(target, **{key: None})  # fmt: skip
    world.missing_fields = True
    sync(db, client, NOW + timedelta(minutes=5))
    with transaction(db.factory) as session:
        for row in session.scalars(select(Market)):
            old = before[row.id]
            for column in (
                "volume",
                "liquidity",
                "slug",
                "event_id",
                "event_title",
                "end_date",
                "description",
                "accepting_orders",
                "category",
                "prices",
            ):
                assert getattr(row, column) == getattr(old, column), (row.id, column)  # fmt: skip


def test_price_history_grows_only_for_changed_prices(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    sync(db, client)
    moved = set(world.move_prices(fraction=0.2)) & set(world.expected_top(500))
    later = NOW + timedelta(minutes=5)
    report = sync(db, client, later)
    assert report.price_changes == len(moved) > 0
    with transaction(db.factory) as session:
        counts = dict(
            session.execute(
                select(MarketPrice.market_id, func.count()).group_by(MarketPrice.market_id)
            ).all()
        )
        for market_id in moved:
            assert counts[market_id] == 2
            row = session.get(Market, market_id)
            assert row is not None
            assert [Decimal(p) for p in row.prices or ()] == world.markets[market_id].prices
            assert row.prices_updated_at == later
        assert sum(counts.values()) == 500 + len(moved)


def test_held_markets_are_refreshed_after_leaving_the_top_or_closing(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    sync(db, client)
    top = world.expected_top(500)
    resolved, outside = top[0], top[-1]
    hold(db, resolved)
    hold(db, outside)
    prices_before = world.markets[resolved].prices
    world.resolve(resolved, "Yes")
    world.markets[outside].volume = Decimal(1)  # falls far out of the top 500
    world.set_prices(outside, ["0.123", "0.877"])
    report = sync(db, client, NOW + timedelta(minutes=5))
    assert report.held == 2
    with transaction(db.factory) as session:
        done = session.get(Market, resolved)
        assert done is not None
        assert done.closed
        assert done.uma_resolution_status == "resolved"
        assert done.last_raw_prices == ["1", "0"]
        assert done.prices == [str(p) for p in prices_before or ()]  # the last valid mark
        assert done.closed_time == world.markets[resolved].closed_time
        out = session.get(Market, outside)
        assert out is not None
        assert out.prices == ["0.123", "0.877"]
        assert out.volume == Decimal(1)


def test_a_market_that_closed_outside_any_position_is_not_left_open(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    """Markets that left the listing are refreshed by id, so the universe frozen from the
    table right after a sync is exactly Gamma's top 500."""
    sync(db, client)
    gone = world.expected_top(5)
    world.close(gone[0])
    world.markets[gone[1]].accepting_orders = False
    report = sync(db, client, NOW + timedelta(minutes=5))
    assert report.refreshed == 2
    assert report.missing == []
    with transaction(db.factory) as session:
        closed = session.get(Market, gone[0])
        assert closed is not None
        assert closed.closed
        paused = session.get(Market, gone[1])
        assert paused is not None
        assert paused.accepting_orders is False
    universe_id = freeze_universe(db.factory, Settings(), NOW + timedelta(minutes=6), [])
    with transaction(db.factory) as session:
        ranked = [m.id for m in load_universe(session, universe_id).ranked]
    assert ranked == world.expected_top(500)


def test_a_market_gamma_no_longer_knows_is_reported_and_left_alone(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    sync(db, client)
    gone = world.expected_top(3)[1]
    before = [r for r in table_state(db)[0] if r[0] == gone]
    world.remove(gone)
    report = sync(db, client, NOW + timedelta(minutes=5))
    assert report.missing == [gone]
    assert [r for r in table_state(db)[0] if r[0] == gone] == before


def test_a_malformed_row_keeps_the_stored_market(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    sync(db, client)
    bad = world.expected_top(10)[4]
    before = [r for r in table_state(db)[0] if r[0] == bad]
    world.corrupt(bad, outcomePrices='["0.5", ')
    report = sync(db, client, NOW + timedelta(minutes=5))
    assert bad in {market_id for market_id, _ in report.parse_errors}
    assert bad in report.missing
    assert [r for r in table_state(db)[0] if r[0] == bad] == before
    assert report.inserted == 1  # the 501st market moves up into the universe


def test_gamma_down_changes_nothing(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    sync(db, client)
    before = table_state(db)
    world.fail("500", times=100)
    with pytest.raises(GammaError):
        sync(db, client, NOW + timedelta(minutes=5))
    assert table_state(db) == before


def test_two_syncs_at_once_write_each_price_once(db: Database, world: FakeGammaWorld) -> None:
    errors: list[BaseException] = []
    reports: list[SyncReport] = []

    def run(offset: int) -> None:
        settings = Polymarket(gamma_url="http://gamma.test")
        try:
            with httpx.Client(transport=world.mock_transport()) as http:
                client = GammaClient(settings, http=http)
                reports.append(sync(db, client, NOW + timedelta(seconds=offset)))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(r.inserted for r in reports) == 500
    assert stored_ids(db) == set(world.expected_top(500))
    with transaction(db.factory) as session:
        assert session.scalar(select(func.count()).select_from(MarketPrice)) == 500


def test_a_sync_never_deadlocks_with_a_writer_of_rows_that_reference_markets(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    """A sync locks the markets it writes (in id order) while other transactions insert rows
    that reference markets (the universe, trades, positions, price history): each such insert
    takes PostgreSQL's FOR KEY SHARE lock on its market, in its own order. The sync's lock must
    not conflict with it (FOR NO KEY UPDATE, not FOR UPDATE), or the two deadlock: seen as
    `arena decide` runs started together failing with "deadlock detected" under load."""
    sync(db, client)
    ids = sorted(stored_ids(db))
    first, last = ids[0], ids[-1]  # the sync locks `first` before `last`

    def reference(session: Any, market_id: str) -> None:  # any row with a foreign key to it
        session.add(
            MarketPrice(
                market_id=market_id,
                observed_at=NOW - timedelta(days=1),
                prices=["0.5", "0.5"],
            )
        )
        session.flush()

    errors: list[BaseException] = []

    def concurrent_sync() -> None:
        try:
            sync(db, client, NOW + timedelta(minutes=5))
        except BaseException as exc:  # reported below
            errors.append(exc)

    syncing = threading.Thread(target=concurrent_sync)
    with transaction(db.factory) as session:
        reference(session, last)
        syncing.start()
        db.wait_until_blocked_or_done(syncing)  # PostgreSQL: the old lock waited here on `last`
        reference(session, first)  # ... while holding `first`: a deadlock, one side aborted
    syncing.join()
    assert errors == []
    with transaction(db.factory) as session:
        referenced = select(func.count()).where(MarketPrice.observed_at == NOW - timedelta(days=1))
        assert session.scalar(referenced.select_from(MarketPrice)) == 2
