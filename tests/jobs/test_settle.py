from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from arena.clock import FixedClock
from arena.config import Settings
from arena.domain.resolution import Verdict
from arena.errors import JobFailed
from arena.jobs import settle as settle_module
from arena.jobs.audit import check_ledger
from arena.jobs.settle import SettleReport, settle_markets
from arena.store.models import Agent, BrierScore, Decision, Forecast, Market, Position
from tests.conftest import Database
from tests.jobs.ledger_world import NOW, FakeSource, World, days_before, gamma_market

D = Decimal
SETTINGS = Settings()


def _resolve(db: Database, source: FakeSource, at=NOW) -> SettleReport:  # type: ignore[no-untyped-def]
    return settle_markets(db.factory, SETTINGS, FixedClock(at), source)


def _agent(db: Database, agent_id: int) -> Agent:
    with db.factory() as session:
        return session.get_one(Agent, agent_id)


def _position(db: Database, position_id: int) -> Position:
    with db.factory() as session:
        return session.get_one(Position, position_id)


def _market(db: Database, market_id: str) -> Market:
    with db.factory() as session:
        return session.get_one(Market, market_id)


def _briers(db: Database) -> list[BrierScore]:
    with db.factory() as session:
        return list(session.scalars(select(BrierScore).order_by(BrierScore.trade_id)))


def _audit(db: Database) -> list[str]:
    with db.factory() as session:
        return check_ledger(session)


@pytest.fixture
def world(db: Database) -> World:
    return World(db)


def _two_sided(world: World) -> tuple[int, int, int, int]:
    """Agent a: YES $100 at 0.5 (200 shares); agent b: NO $200 at 0.5 (400 shares)."""
    cohort = world.cohort()
    a, b = world.agent(cohort, "fam-a"), world.agent(cohort, "fam-b")
    world.market(gamma_market("m1", ("0.5", "0.5")))
    pa = world.buy(a, "m1", "YES", "100", "0.5")
    pb = world.buy(b, "m1", "NO", "200", "0.5")
    return a, b, pa, pb


def test_decisive_winner_pays_one_and_scores_every_buy(db: Database, world: World) -> None:
    a, b, pa, pb = _two_sided(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("1", "0"), closed=True, uma="resolved"))

    report = _resolve(db, source)

    assert (report.checked, report.resolved, report.positions_settled) == (1, 1, 2)
    assert report.payout == D("200.00")
    assert report.brier_rows == 2
    assert report.ok
    won, lost = _position(db, pa), _position(db, pb)
    assert (won.status, won.settlement_outcome, won.payout, won.realized_pnl) == (
        "SETTLED",
        "WON",
        D("200.00"),
        D("100.00"),
    )
    assert (lost.status, lost.settlement_outcome, lost.payout, lost.realized_pnl) == (
        "SETTLED",
        "LOST",
        D("0.00"),
        D("-200.00"),
    )
    assert won.closed_at == NOW
    assert (_agent(db, a).cash, _agent(db, a).realized_pnl) == (D("10100.00"), D("100.00"))
    assert (_agent(db, b).cash, _agent(db, b).realized_pnl) == (D("9800.00"), D("-200.00"))
    market = _market(db, "m1")
    assert (market.status, market.resolution_state, market.winning_outcome, market.resolved_at) == (
        "resolved",
        "resolved_winner",
        "YES",
        NOW,
    )
    first, second = _briers(db)
    # a: confidence 100 / (0.25 * 10000) = 0.04, won; b: 200 / 2500 = 0.08, lost
    assert (first.agent_id, first.won, first.implied_confidence) == (a, True, D("0.04"))
    assert (first.brier, first.market_brier) == (D("0.9216"), D("0.25"))
    assert (second.agent_id, second.won, second.brier, second.market_brier) == (
        b,
        False,
        D("0.0064"),
        D("0.25"),
    )
    assert second.family_id == "fam-b"
    assert second.price_paid == D("0.5")
    assert _audit(db) == []


def test_named_outcome_winner_maps_through_outcomes(db: Database, world: World) -> None:
    cohort = world.cohort()
    a = world.agent(cohort)
    outcomes = ("Falcons", "Otters")
    world.market(gamma_market("m2", ("0.7", "0.3"), outcomes))
    falcons = world.buy(a, "m2", "Falcons", "70", "0.7")
    otters = world.buy(a, "m2", "Otters", "30", "0.3")
    source = FakeSource()
    source.put(gamma_market("m2", ("0", "1"), outcomes, closed=True, uma="resolved"))

    _resolve(db, source)

    assert _position(db, falcons).settlement_outcome == "LOST"
    assert (_position(db, otters).settlement_outcome, _position(db, otters).payout) == (
        "WON",
        D("100.00"),
    )
    assert _market(db, "m2").winning_outcome == "Otters"
    assert [b.won for b in _briers(db)] == [False, True]
    assert _audit(db) == []


def test_fifty_fifty_is_void_without_brier(db: Database, world: World) -> None:
    a, _b, pa, _pb = _two_sided(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("0.5", "0.5"), closed=True, uma="resolved"))

    report = _resolve(db, source)

    assert report.voided == 1
    assert report.brier_rows == 0
    position = _position(db, pa)
    assert (position.status, position.settlement_outcome, position.payout) == (
        "SETTLED",
        "VOID",
        D("100.00"),
    )
    assert _agent(db, a).cash == D("10000.00")
    assert _market(db, "m1").resolution_state == "resolved_50_50"
    assert _briers(db) == []
    assert _audit(db) == []


def test_ambiguous_refunds_remaining_basis(db: Database, world: World) -> None:
    a, _b, pa, _pb = _two_sided(world)
    world.sell(pa, "50", "0.6")  # 100 shares for 60.00, basis out 50.00, +10.00
    source = FakeSource()
    source.put(gamma_market("m1", ("0", "0"), closed=True, uma="resolved"))

    report = _resolve(db, source)

    assert report.cancelled == 1
    assert report.brier_rows == 0
    position = _position(db, pa)
    assert (position.status, position.settlement_outcome, position.payout) == (
        "CANCELLED",
        "CANCELLED",
        D("50.00"),
    )
    assert position.realized_pnl == D("10.00")  # the sale; the refund is P/L-neutral
    agent = _agent(db, a)
    assert (agent.cash, agent.realized_pnl) == (D("10010.00"), D("10.00"))
    market = _market(db, "m1")
    assert (market.status, market.resolution_state, market.winning_outcome) == (
        "cancelled",
        "ambiguous",
        None,
    )
    assert _audit(db) == []


@pytest.mark.parametrize(("days", "settled"), [(13.9, False), (14, True)])
def test_closed_unresolved_is_cancelled_once_overdue(
    db: Database, world: World, days: float, settled: bool
) -> None:
    _a, _b, pa, _pb = _two_sided(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("0.9", "0.1"), closed=True, closed_time=days_before(NOW, days)))

    report = _resolve(db, source)

    assert report.cancelled == (1 if settled else 0)
    assert report.waiting == (0 if settled else 1)
    assert _position(db, pa).status == ("CANCELLED" if settled else "OPEN")
    if settled:
        assert _market(db, "m1").resolution_state == "overdue"
    assert _audit(db) == []


@pytest.mark.parametrize("uma", ["proposed", "disputed"])
def test_proposed_and_disputed_wait(db: Database, world: World, uma: str) -> None:
    a, _b, pa, _pb = _two_sided(world)
    source = FakeSource()
    source.put(
        gamma_market("m1", ("1", "0"), closed=True, uma=uma, closed_time=days_before(NOW, 1))
    )

    report = _resolve(db, source)

    assert (report.waiting, report.resolved, report.positions_settled) == (1, 0, 0)
    assert _position(db, pa).status == "OPEN"
    assert _agent(db, a).cash == D("9900.00")
    market = _market(db, "m1")
    assert (market.status, market.uma_resolution_status, market.closed) == ("open", uma, True)
    assert market.prices == ["0.5", "0.5"]  # [1, 0] is not a valid mark
    assert market.last_raw_prices == ["1", "0"]
    assert _briers(db) == []


def test_disputed_for_too_long_is_cancelled(db: Database, world: World) -> None:
    _two_sided(world)
    source = FakeSource()
    source.put(
        gamma_market(
            "m1", ("1", "0"), closed=True, uma="disputed", closed_time=days_before(NOW, 20)
        )
    )
    assert _resolve(db, source).cancelled == 1


def test_open_market_waits_even_at_near_certain_price(db: Database, world: World) -> None:
    _two_sided(world)
    source = FakeSource()
    source.put(replace(gamma_market("m1", ("0.9995", "0.0005")), end_date=days_before(NOW, 30)))
    report = _resolve(db, source)
    assert report.waiting == 1
    assert report.positions_settled == 0


def test_gone_market_waits_then_is_cancelled_by_its_stored_close(
    db: Database, world: World
) -> None:
    cohort = world.cohort()
    a = world.agent(cohort)
    world.market(gamma_market("m9", ("0.4", "0.6")), end_date=days_before(NOW, 10))
    position = world.buy(a, "m9", "NO", "60", "0.6")
    source = FakeSource()  # Gamma no longer knows m9

    report = _resolve(db, source)
    assert (report.gone, report.waiting) == (["m9"], 1)
    assert _position(db, position).status == "OPEN"

    later = _resolve(db, source, at=NOW + timedelta(days=5))
    assert (later.gone, later.cancelled) == (["m9"], 1)
    assert (_position(db, position).status, _position(db, position).payout) == (
        "CANCELLED",
        D("60.00"),
    )
    assert _agent(db, a).cash == D("10000.00")
    assert _audit(db) == []


def test_gone_market_without_dates_waits(db: Database, world: World) -> None:
    cohort = world.cohort()
    a = world.agent(cohort)
    world.market(gamma_market("m9"))
    world.buy(a, "m9", "YES", "60", "0.6")
    report = _resolve(db, FakeSource(), at=NOW + timedelta(days=400))
    assert (report.gone, report.waiting, report.cancelled) == (["m9"], 1, 0)


def test_sold_bets_are_scored_when_the_market_resolves(db: Database, world: World) -> None:
    cohort = world.cohort()
    a, b = world.agent(cohort, "fam-a"), world.agent(cohort, "fam-b")
    world.market(gamma_market("m1", ("0.5", "0.5")))
    world.market(gamma_market("m2", ("0.5", "0.5")))
    sold = world.buy(a, "m1", "YES", "250", "0.5")
    world.sell(sold, "100", "0.8")  # fully sold: +150.00
    partly = world.buy(b, "m1", "NO", "100", "0.5")
    world.buy(b, "m1", "NO", "100", "0.4")  # same position, second BUY
    world.sell(partly, "25", "0.45")
    only_sold = world.buy(a, "m2", "YES", "100", "0.5")
    world.sell(only_sold, "100", "0.5")  # m2 has no open position left at all
    source = FakeSource()
    source.put(gamma_market("m1", ("1", "0"), closed=True, uma="resolved"))
    source.put(gamma_market("m2", ("0", "1"), closed=True, uma="resolved"))

    report = _resolve(db, source)

    assert (report.checked, report.resolved, report.positions_settled) == (2, 2, 1)
    briers = _briers(db)
    assert [(r.agent_id, r.market_id, r.won) for r in briers] == [
        (a, "m1", True),
        (b, "m1", False),
        (b, "m1", False),
        (a, "m2", False),
    ]
    assert briers[0].brier == D("0.81")  # confidence 250/2500 = 0.1
    assert _position(db, sold).status == "CLOSED"  # untouched by settlement
    assert _position(db, partly).settlement_outcome == "LOST"
    assert _market(db, "m2").status == "resolved"
    assert _audit(db) == []


def test_rerun_is_a_no_op(db: Database, world: World) -> None:
    a, _b, _pa, _pb = _two_sided(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("1", "0"), closed=True, uma="resolved"))
    _resolve(db, source)
    cash = _agent(db, a).cash

    again = _resolve(db, source)

    assert (again.checked, again.resolved, again.positions_settled, again.brier_rows) == (
        0,
        0,
        0,
        0,
    )
    assert _agent(db, a).cash == cash
    assert len(_briers(db)) == 2
    assert _audit(db) == []


def test_settle_market_twice_settles_once(db: Database, world: World) -> None:
    """The in-transaction re-check: a verdict applied to an already settled market is a no-op."""
    a, _b, _pa, _pb = _two_sided(world)
    verdict = Verdict("resolved_winner", "resolved", winner="YES")
    first = settle_module.settle_market(db.factory, "m1", verdict, NOW)
    second = settle_module.settle_market(db.factory, "m1", verdict, NOW)
    assert first is not None
    assert first.positions == 2
    assert second is None
    assert _agent(db, a).cash == D("10100.00")


def test_concurrent_resolves_settle_each_market_once(db: Database, world: World) -> None:
    cohort = world.cohort()
    agents = [world.agent(cohort, f"fam-{i}") for i in range(3)]
    source = FakeSource(barrier=threading.Barrier(2))
    for index in range(6):
        market_id = f"c{index}"
        world.market(gamma_market(market_id, ("0.5", "0.5")))
        for agent in agents:
            world.buy(agent, market_id, "YES" if index % 2 else "NO", "40", "0.5")
        source.put(gamma_market(market_id, ("1", "0"), closed=True, uma="resolved"))
    reports: list[SettleReport] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            reports.append(_resolve(db, source))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert sum(r.resolved for r in reports) == 6
    assert sum(r.already_settled for r in reports) == 6
    assert sum(r.positions_settled for r in reports) == 18
    # each agent: 6 x $40 spent; 3 winning markets pay 80 each
    assert {_agent(db, agent).cash for agent in agents} == {D("10000.00")}
    assert {_agent(db, agent).realized_pnl for agent in agents} == {D("0.00")}
    assert len(_briers(db)) == 18
    assert _audit(db) == []


def test_failure_rolls_back_the_market(
    db: Database, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _b, pa, _pb = _two_sided(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("1", "0"), closed=True, uma="resolved"))

    def broken(*_args: object) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(settle_module, "_write_brier_rows", broken)
    report = _resolve(db, source)

    assert not report.ok
    assert "m1" in report.failures[0]
    assert "disk on fire" in report.failures[0]
    assert _position(db, pa).status == "OPEN"
    assert _agent(db, a).cash == D("9900.00")
    assert _market(db, "m1").status == "open"
    monkeypatch.undo()
    assert _resolve(db, source).resolved == 1
    assert _audit(db) == []


def test_gamma_failure_is_a_failed_job(db: Database, world: World) -> None:
    _two_sided(world)
    with pytest.raises(JobFailed, match="Gamma"):
        _resolve(db, FakeSource(error="HTTP 503"))


def test_nothing_traded_asks_gamma_nothing(db: Database) -> None:
    source = FakeSource()
    assert _resolve(db, source).checked == 0
    assert source.calls == []


def test_v2_forecasts_are_scored_with_the_market(db: Database, world: World) -> None:
    a, _b, _pa, _pb = _two_sided(world)
    world.market(gamma_market("m3", ("0.5", "0.5")))
    with db.factory.begin() as session:
        decision = session.scalars(select(Decision.id).where(Decision.agent_id == a)).first()
        assert decision is not None
        for market_id, outcome, probability in [
            ("m1", "YES", "0.7"),
            ("m1", "NO", "0.2"),
            ("m3", "YES", "0.6"),
        ]:
            session.add(
                Forecast(
                    decision_id=decision,
                    agent_id=a,
                    cohort_id=1,
                    family_id="fam-a",
                    market_id=market_id,
                    outcome=outcome,
                    probability=D(probability),
                    source="panel",
                    forecast_at=NOW,
                )
            )
    source = FakeSource()
    source.put(gamma_market("m1", ("1", "0"), closed=True, uma="resolved"))

    report = _resolve(db, source)

    assert report.forecasts_scored == 2
    with db.factory() as session:
        rows = session.execute(
            select(
                Forecast.market_id,
                Forecast.outcome,
                Forecast.resolved_value,
                Forecast.brier,
                Forecast.scored_at,
            ).order_by(Forecast.id)
        ).all()
    assert [tuple(r) for r in rows] == [
        ("m1", "YES", 1, D("0.09"), NOW),
        ("m1", "NO", 0, D("0.04"), NOW),
        ("m3", "YES", None, None, None),
    ]


def test_refresh_during_resolve_keeps_last_valid_mark(db: Database, world: World) -> None:
    _two_sided(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("0.7", "0.3")))
    _resolve(db, source)
    source.put(gamma_market("m1", None, closed=True))
    _resolve(db, source)
    market = _market(db, "m1")
    # One market-state rule (arena.jobs.prices): prices Gamma left out overwrite nothing.
    assert (market.prices, market.last_raw_prices, market.closed) == (
        ["0.7", "0.3"],
        ["0.7", "0.3"],
        True,
    )
    with db.factory() as session:
        assert session.scalar(select(func.count()).select_from(Position)) == 2


def test_settlement_waits_for_a_concurrent_writer_of_the_agent(db: Database, world: World) -> None:
    """A decision run holding the agent row (mid-SELL) is waited for, never overwritten."""
    a, _b, _pa, _pb = _two_sided(world)
    source = FakeSource()
    source.put(gamma_market("m1", ("1", "0"), closed=True, uma="resolved"))
    locked, release = threading.Event(), threading.Event()

    def concurrent_sell() -> None:
        with db.factory.begin() as session:
            agent = session.execute(
                select(Agent).where(Agent.id == a).with_for_update()
            ).scalar_one()
            agent.cash += D("10.00")
            session.flush()
            locked.set()
            release.wait(timeout=30)

    writer = threading.Thread(target=concurrent_sell)
    writer.start()
    assert locked.wait(timeout=30)
    resolver = threading.Thread(target=lambda: _resolve(db, source))
    resolver.start()
    resolver.join(timeout=0.5)  # give it time to reach the lock; correctness does not depend on it
    release.set()
    writer.join(timeout=60)
    resolver.join(timeout=60)

    assert _agent(db, a).cash == D("10110.00")  # 9900 + 10 (the sell) + 200 (the payout)
    assert _market(db, "m1").status == "resolved"


def test_settlement_never_deadlocks_with_a_buy_on_the_market(
    db: Database, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """A decision run holds its agent row (locked first) while it buys on a market; a
    settlement of that market locks the market row, then the agents. The BUY's new position
    references the market (a foreign key: FOR KEY SHARE on PostgreSQL), so a settlement
    holding the market FOR UPDATE and waiting for the agent deadlocks with it: one side is
    aborted, the settlement retried or the execution failed. FOR NO KEY UPDATE (what it needs:
    it never changes the market's key) lets the BUY commit first; the settlement then settles
    the new position with the others, in one transaction and without a retry."""
    a, _b, _pa, _pb = _two_sided(world)
    cohort_id = _agent(db, a).cohort_id
    source = FakeSource()
    source.put(gamma_market("m1", ("1", "0"), closed=True, uma="resolved"))
    errors: list[BaseException] = []

    def resolve() -> None:
        try:
            _resolve(db, source)
        except BaseException as exc:  # reported below
            errors.append(exc)

    resolver = threading.Thread(target=resolve)
    with caplog.at_level("WARNING", logger="arena.jobs.settle"), db.factory.begin() as session:
        agent = session.execute(select(Agent).where(Agent.id == a).with_for_update()).scalar_one()
        agent.cash -= D("50.00")  # a BUY of $50 of NO at 0.5, as the decision run writes it
        session.flush()
        resolver.start()
        db.wait_until_blocked_or_done(resolver)
        session.add(
            Position(
                agent_id=a,
                cohort_id=cohort_id,
                market_id="m1",
                side="NO",
                shares=D("100"),
                cost_basis=D("50.00"),
                status="OPEN",
                realized_pnl=D(0),
                opened_at=NOW,
                updated_at=NOW,
            )
        )
        session.flush()  # the insert that references the market
    resolver.join(timeout=120)
    assert errors == []
    assert "40P01" not in caplog.text  # no deadlock, so no retry
    assert _market(db, "m1").status == "resolved"
    with db.factory() as session:
        positions = session.scalars(select(Position).where(Position.agent_id == a)).all()
    assert {(p.side, p.status, p.payout) for p in positions} == {
        ("YES", "SETTLED", D("200.00")),
        ("NO", "SETTLED", D("0.00")),  # the BUY that committed first, settled with the rest
    }
    assert _agent(db, a).cash == D("10050.00")  # 9900 - 50 (the BUY) + 200 (the payout)
