"""Mode book end to end on both databases: the decision run freezes books, executions walk the
live book of the fake CLOB (through the real CLOB client), snapshots mark at the mid and store
the exit value (methodology, "Executable prices")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from arena.clock import FixedClock
from arena.domain.book import FeeSchedule, Level
from arena.fakes.clob import FakeClobWorld
from arena.jobs.snapshots import take_snapshots
from arena.jobs.status import read_status
from arena.jobs.universe import freeze_universe
from arena.sources.clob import ClobClient
from arena.store.models import (
    Agent,
    BookMark,
    Cohort,
    Decision,
    Market,
    PortfolioSnapshot,
    Position,
    Trade,
    UniverseMarket,
)
from tests.conftest import PRICING_ENV, Database
from tests.jobs.decide_world import DECIDE_AT, MODELS, World, fake_answer, make_world

D = Decimal
FED = "gpt-5.1"  # the family whose answers the tests script
YES_1001, NO_1001 = "1" * 77, "2" * 77
YES_1004, NO_1004 = "3" * 77, "4" * 77


def levels(*pairs: tuple[str, str]) -> list[Level]:
    return [Level(D(p), D(s)) for p, s in pairs]


@pytest.fixture
def clob() -> FakeClobWorld:
    world = FakeClobWorld(seed=7)
    # market 1001: YES asks 0.41 x 100, 0.42 x 100, 0.43 x 100, 0.50 x 10000 (limit 0.43)
    world.add_market(
        levels(("0.40", "500"), ("0.39", "1000")),
        levels(("0.41", "100"), ("0.42", "100"), ("0.43", "100"), ("0.50", "10000")),
        condition_id="0x" + "a" * 64,
        yes_token=YES_1001,
        no_token=NO_1001,
        last_trade_price=D("0.41"),
    )
    # market 1004: a deep book with a 4% taker fee
    world.add_market(
        levels(("0.54", "50000")),
        levels(("0.55", "50000")),
        condition_id="0x" + "b" * 64,
        yes_token=YES_1004,
        no_token=NO_1004,
        last_trade_price=D("0.55"),
        fee=FeeSchedule(D("0.04"), D(1)),
    )
    return world


class BookWorld:
    def __init__(self, world: World, clob: FakeClobWorld) -> None:
        self.world, self.clob = world, clob
        self.client = ClobClient(
            world.settings.polymarket, transport=clob.mock_transport(), sleep=lambda _s: None
        )

    def answer(self, obj: dict[str, Any]) -> None:
        self.world.fake.set_default(MODELS[FED], fake_answer(obj))

    def answer_bets(self, *bets: tuple[str, str, int]) -> None:
        """The scripted family answers BET with these (market id, side, amount) bets."""
        self.answer(
            {
                "action": "BET",
                "bets": [{"market_id": m, "side": side, "amount": a} for m, side, a in bets],
                "reasoning": "r",
            }
        )

    def run(self, at: Any = DECIDE_AT) -> Any:
        return self.world.run(at, books=self.client)

    def decision(self) -> Decision:
        with self.world.db.factory() as session:
            return session.execute(
                select(Decision)
                .join(Agent, Agent.id == Decision.agent_id)
                .where(Agent.family_id == FED)
            ).scalar_one()

    def trades(self) -> list[Trade]:
        with self.world.db.factory() as session:
            return list(
                session.scalars(
                    select(Trade)
                    .join(Agent, Agent.id == Trade.agent_id)
                    .where(Agent.family_id == FED)
                    .order_by(Trade.id)
                )
            )


@pytest.fixture
def book_world(
    db: Database, tmp_path: Path, clob: FakeClobWorld, monkeypatch: pytest.MonkeyPatch
) -> Iterator[BookWorld]:
    monkeypatch.delenv(PRICING_ENV)
    world = make_world(
        db,
        tmp_path,
        benchmark={"min_universe_markets": 1, "pricing": "book", "max_slippage": 0.02},
    )
    with db.factory() as session, session.begin():
        for market_id, tokens, cid in (
            ("1001", [YES_1001, NO_1001], "0x" + "a" * 64),
            ("1004", [YES_1004, NO_1004], "0x" + "b" * 64),
        ):
            session.execute(
                update(Market)
                .where(Market.id == market_id)
                .values(clob_token_ids=tokens, condition_id=cid)
            )
    bw = BookWorld(world, clob)
    yield bw
    bw.client.close()


def test_new_cohorts_are_book_and_the_universe_keeps_only_booked_markets(
    book_world: BookWorld,
) -> None:
    book_world.run()
    with book_world.world.db.factory() as session:
        assert set(session.scalars(select(Cohort.pricing))) == {"book"}
        rows = {r.market_id: r for r in session.scalars(select(UniverseMarket))}
    assert set(rows) == {"1001", "1004"}  # 1002 and 1003 have no token ids, so no book
    yes, no = rows["1001"].books  # type: ignore[misc]
    assert (yes["best_bid"], yes["best_ask"], yes["token_id"]) == ("0.40", "0.41", YES_1001)
    assert (no["best_bid"], no["best_ask"]) == ("0.59", "0.60")  # the mirrored NO book
    assert len(yes["book_hash"]) == 40 and yes["book_timestamp"] > 0
    prompt = book_world.world.attempts(FED)[0].request_messages[1]["content"]
    assert "1001 |" in prompt and "YES=0.4/0.41; NO=0.59/0.6" in prompt
    assert "1002 |" not in prompt


def test_buy_fills_across_three_levels_and_stops_at_the_limit(book_world: BookWorld) -> None:
    book_world.answer_bets(("1001", "YES", 500))
    book_world.run()
    (trade,) = book_world.trades()
    assert trade.pricing == "book"
    assert [lv["price"] for lv in trade.levels] == ["0.41", "0.42", "0.43"]  # type: ignore[union-attr]
    assert trade.shares == D("300") and trade.amount == D("126.00")
    assert trade.requested_amount == D("500.00") and trade.fill_ratio == D("0.252")
    assert trade.price == D("0.42") and trade.touch_price == D("0.41")
    assert trade.mid_price == D("0.405") and trade.fee == D("0")
    assert trade.slippage_touch_bps == D("243.90") and trade.slippage_mid_bps == D("370.37")
    assert trade.book_hash == book_world.clob.rendered(YES_1001)["hash"]
    assert trade.implied_confidence == D("0.2")  # the stake asked for, 500 of 2500
    with book_world.world.db.factory() as session:
        agent = session.execute(select(Agent).where(Agent.family_id == FED)).scalar_one()
        position = session.execute(
            select(Position).where(Position.agent_id == agent.id)
        ).scalar_one()
    assert agent.cash == D("9874.00") and position.cost_basis == D("126.00")
    assert book_world.decision().status == "completed"
    book_world.world.assert_ledger()


def test_no_bet_walks_the_mirrored_book_and_pays_the_fee(book_world: BookWorld) -> None:
    book_world.answer_bets(("1004", "NO", 100))
    book_world.run()
    (trade,) = book_world.trades()
    # NO asks mirror YES bids: 0.54 -> NO ask 0.46, fee 0.04 * 0.46 * 0.54 per share
    assert trade.touch_price == D("0.46") and trade.price == D("0.46")
    assert trade.token_id == NO_1004
    unit = D("0.46") + D("0.04") * D("0.46") * D("0.54")
    assert trade.shares == (D(100) / unit).quantize(D("0.000001"), rounding="ROUND_DOWN")
    assert trade.amount <= D("100.00") and trade.fee is not None and trade.fee > 0
    assert trade.amount == (trade.shares * unit).quantize(D("0.01"), rounding="ROUND_CEILING")
    book_world.world.assert_ledger()


def test_sell_into_the_bids(book_world: BookWorld) -> None:
    book_world.answer_bets(("1001", "YES", 100))
    book_world.run()
    with book_world.world.db.factory() as session:
        position = session.execute(
            select(Position)
            .join(Agent, Agent.id == Position.agent_id)
            .where(Agent.family_id == FED)
        ).scalar_one()
        session.execute(update(Decision).values(decision_week=0))  # free next week's slot
        session.commit()
    # the bids thin out: 0.40 x 100, 0.39 x 1000 (limit 0.40 - 0.02 = 0.38)
    book_world.clob.set_book(
        YES_1001, levels(("0.40", "100"), ("0.39", "1000"), ("0.30", "9999")), levels(("0.41", "9"))
    )
    book_world.answer(
        {"action": "SELL", "sells": [{"position_id": str(position.id), "percentage": 100}],
         "reasoning": "r"}
    )  # fmt: skip
    book_world.run(DECIDE_AT + timedelta(days=7))
    sell = book_world.trades()[-1]
    assert sell.trade_type == "SELL" and sell.pricing == "book"
    assert [lv["price"] for lv in sell.levels] == ["0.40", "0.39"]  # type: ignore[union-attr]
    assert sell.shares == position.shares and sell.requested_shares == position.shares
    expected = D(100) * D("0.40") + (position.shares - 100) * D("0.39")
    assert sell.amount == expected.quantize(D("0.01"), rounding="ROUND_FLOOR")
    assert sell.touch_price == D("0.40") and sell.slippage_touch_bps > 0  # type: ignore[operator]
    book_world.world.assert_ledger()


def test_a_book_that_vanished_before_execution_fails_with_its_reason(
    book_world: BookWorld,
) -> None:
    book_world.answer_bets(("1001", "YES", 100))
    factory, settings = book_world.world.db.factory, book_world.world.settings
    with factory() as session:
        cohort_ids = list(session.scalars(select(Cohort.id)))
    freeze_universe(factory, settings, DECIDE_AT, cohort_ids, books=book_world.client)
    book_world.clob.remove_book(YES_1001)  # between the freeze and the execution
    book_world.run()
    decision = book_world.decision()
    assert decision.status == "retryable" and not book_world.trades()
    assert "no order book" in (decision.error or "") and "404" in (decision.error or "")
    assert decision.refusals[0]["kind"] == "no_book"  # type: ignore[index]


def test_a_clob_outage_during_the_run_never_falls_back_to_gamma(book_world: BookWorld) -> None:
    book_world.answer_bets(("1004", "YES", 100))
    factory, settings = book_world.world.db.factory, book_world.world.settings
    with factory() as session:
        cohort_ids = list(session.scalars(select(Cohort.id)))
    freeze_universe(factory, settings, DECIDE_AT, cohort_ids, books=book_world.client)
    book_world.clob.outage = True
    report = book_world.run()
    decision = book_world.decision()
    assert decision.status == "retryable" and not book_world.trades()
    assert decision.refusals[0]["kind"] == "unavailable"  # type: ignore[index]
    assert any(r.family_id == FED and r.status == "retryable" for r in report.results)
    with factory() as session:
        status = read_status(session, settings, DECIDE_AT, DECIDE_AT)
    assert any("CLOB outage" in w for w in status.warnings)
    # and a freeze during the outage refuses the universe instead of using Gamma's prices
    book_world.clob.outage = True
    later = DECIDE_AT + timedelta(days=2)
    from arena.errors import UniverseUnavailable

    with pytest.raises(UniverseUnavailable, match="order books unavailable"):
        freeze_universe(factory, settings, later, cohort_ids, books=book_world.client)


def test_snapshot_marks_at_the_mid_and_stores_the_exit_value(book_world: BookWorld) -> None:
    book_world.answer_bets(("1004", "YES", 1000))
    book_world.run()
    (trade,) = book_world.trades()
    # the book moves: bid 0.60 x 100 then 0.58 x lots, ask 0.62 (mid 0.61)
    book_world.clob.set_book(
        YES_1004, levels(("0.60", "100"), ("0.58", "100000")), levels(("0.62", "100000"))
    )
    factory, settings = book_world.world.db.factory, book_world.world.settings
    at = DECIDE_AT + timedelta(minutes=15)
    report = take_snapshots(factory, settings, FixedClock(at), books=book_world.client)
    assert report.books_fetched and report.books_error is None
    with factory() as session:
        agent = session.execute(select(Agent).where(Agent.family_id == FED)).scalar_one()
        snap = session.execute(
            select(PortfolioSnapshot).where(PortfolioSnapshot.agent_id == agent.id)
        ).scalar_one()
        others = session.scalars(
            select(PortfolioSnapshot.exit_value).where(PortfolioSnapshot.agent_id != agent.id)
        ).all()
        mark = session.get(BookMark, YES_1004)
    assert mark is not None and mark.mark == D("0.61")
    assert snap.positions_value == (trade.shares * D("0.61")).quantize(D("0.01"))
    fee = D("0.04") * D(1)
    proceeds = (
        D(100) * (D("0.60") - fee * D("0.60") * D("0.40"))
        + (trade.shares - 100) * (D("0.58") - fee * D("0.58") * D("0.42"))
    ).quantize(D("0.01"), rounding="ROUND_FLOOR")
    assert snap.exit_value == agent.cash + proceeds
    assert len(others) == 6 and all(value is not None for value in others)
    # an outage keeps the marks and leaves the exit value unknown
    book_world.clob.outage = True
    later = at + timedelta(minutes=10)
    report = take_snapshots(factory, settings, FixedClock(later), books=book_world.client)
    assert report.books_error
    with factory() as session:
        snap2 = session.execute(
            select(PortfolioSnapshot).where(
                PortfolioSnapshot.agent_id == agent.id, PortfolioSnapshot.taken_at > at
            )
        ).scalar_one()
    assert snap2.exit_value is None and snap2.positions_value == snap.positions_value


def test_a_held_market_unknown_to_the_clob_does_not_void_the_other_exit_values(
    book_world: BookWorld,
) -> None:
    """A held market the CLOB no longer knows (its book gone, ``/clob-markets`` 404) adds no
    exit proceeds; it must not turn the whole snapshot's exit values into unknowns."""
    book_world.answer_bets(("1001", "YES", 60), ("1004", "YES", 1000))
    book_world.run()
    assert len(book_world.trades()) == 2
    with book_world.clob._lock:
        gone = book_world.clob.markets.pop("0x" + "a" * 64)
        book_world.clob.books.pop(gone.yes_token, None)
        book_world.clob.books.pop(gone.no_token, None)
    factory, settings = book_world.world.db.factory, book_world.world.settings
    at = DECIDE_AT + timedelta(days=2)  # the fee schedules fetched at execution are stale
    report = take_snapshots(factory, settings, FixedClock(at), books=book_world.client)
    assert report.books_error is None
    with factory() as session:
        agent = session.execute(select(Agent).where(Agent.family_id == FED)).scalar_one()
        snap = session.execute(
            select(PortfolioSnapshot).where(PortfolioSnapshot.agent_id == agent.id)
        ).scalar_one()
        shares_1004 = session.execute(
            select(Position.shares).where(
                Position.agent_id == agent.id, Position.market_id == "1004"
            )
        ).scalar_one()
    fee = D("0.04") * D("0.54") * D("0.46")
    proceeds = (shares_1004 * (D("0.54") - fee)).quantize(D("0.01"), rounding="ROUND_FLOOR")
    assert snap.exit_value == agent.cash + proceeds  # 1001 has no bids: it brings nothing


def test_the_books_of_a_decision_are_fetched_side_by_side_each_with_its_own_fate(
    book_world: BookWorld,
) -> None:
    """Issue 27's overhead per agent: the live books right before an execution are fetched at
    once, not one round trip after another (a barrier lets no request through until all
    have started; one by one, it would break). Each token keeps its own answer: a book, a 404
    or an outage, recorded as before."""
    import threading

    from arena.domain.book import OrderBook
    from arena.domain.states import Job
    from arena.errors import NoBook
    from arena.jobs.books import live_books

    class Together:
        """The real client, each request held until every token's request has started."""

        def __init__(self, inner: ClobClient, parties: int) -> None:
            self.inner, self.barrier = inner, threading.Barrier(parties, timeout=30)

        def book(self, token_id: str) -> OrderBook:
            self.barrier.wait()
            return self.inner.book(token_id)

    book_world.clob.remove_book(NO_1004)
    tokens = [YES_1001, NO_1001, YES_1004, NO_1004, YES_1001]  # one asked twice
    books = live_books(
        book_world.world.db.factory,
        Together(book_world.client, 4),  # type: ignore[arg-type]
        tokens,
        DECIDE_AT,
        component=Job.DECISION_RUN,
    )
    assert list(books) == [YES_1001, NO_1001, YES_1004, NO_1004]
    assert all(isinstance(books[t], OrderBook) for t in (YES_1001, NO_1001, YES_1004))
    missing = books[NO_1004]
    assert isinstance(missing, NoBook) and "404" in str(missing)
    assert [r.query["token_id"] for r in book_world.clob.requests if r.path == "/book"].count(
        [YES_1001]
    ) == 1
