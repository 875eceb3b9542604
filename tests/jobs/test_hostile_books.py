"""Hostile order books (issue 22, findings 2, 3 and 7), on both databases, over real HTTP
against the fake CLOB (through the real CLOB client): one bad book costs its market only, a
book that is not a price is never shown, traded or marked, and the stored proof of a book is
the hash computed of what was received.

Four markets have books; the tests plant a hostile book on some of them
(:meth:`~arena.fakes.clob.FakeClobWorld.plant`) and check that the decision run, the
executions and the snapshots go on for the others.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from arena.clock import FixedClock
from arena.domain.book import Level
from arena.domain.states import BOOK_HASH_MISMATCH, CLOB_UNAVAILABLE
from arena.fakes.clob import FakeClobWorld, serve_fake_clob
from arena.jobs.decide_report import DecideReport
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
    SystemLog,
    Trade,
    UniverseMarket,
)
from arena.web.app import create_app
from tests.conftest import PRICING_ENV, Database
from tests.jobs.decide_world import DECIDE_AT, MODELS, World, fake_answer, make_world

D = Decimal
FED = "gpt-5.1"  # the family whose answers the tests script
# (market id, YES bids, YES asks): every book two cents wide at most, so its mark is the mid
BOOKS = {
    "1001": ((("0.39", "1000"), ("0.40", "500")), (("0.42", "1000"), ("0.41", "1000"))),
    "1002": ((("0.10", "5000"),), (("0.11", "5000"),)),
    "1003": ((("0.64", "5000"),), (("0.65", "5000"),)),
    "1004": ((("0.54", "50000"),), (("0.55", "50000"),)),
}
SIDES = {"1001": "YES", "1002": "YES", "1003": "FaZe", "1004": "YES"}  # each market's first side


def levels(pairs: tuple[tuple[str, str], ...]) -> list[Level]:
    return [Level(D(p), D(s)) for p, s in pairs]


class Hostile:
    """The decide world in mode book, its markets booked on a fake CLOB served over HTTP."""

    def __init__(self, world: World, clob: FakeClobWorld, base_url: str) -> None:
        self.world, self.clob = world, clob
        self.client = ClobClient(
            world.settings.polymarket.model_copy(update={"max_attempts": 1}),
            base_url=base_url,
            sleep=lambda _s: None,
        )
        self.tokens: dict[str, tuple[str, str]] = {}  # market id -> (first token, second)
        for index, (market_id, (bids, asks)) in enumerate(BOOKS.items()):
            market = clob.add_market(
                levels(bids), levels(asks), condition_id="0x" + f"{index + 10:x}" * 32
            )
            self.tokens[market_id] = (market.yes_token, market.no_token)
        with self.factory() as session, session.begin():
            for market_id, tokens in self.tokens.items():
                condition = clob._market(tokens[0]).condition_id
                session.execute(
                    update(Market)
                    .where(Market.id == market_id)
                    .values(clob_token_ids=list(tokens), condition_id=condition)
                )

    def factory(self) -> Any:
        return self.world.db.factory()

    def token(self, market_id: str) -> str:
        return self.tokens[market_id][0]

    def bets(self, *bets: tuple[str, int]) -> None:
        """The scripted family bets ``amount`` on each market's first side."""
        self.world.fake.set_default(
            MODELS[FED],
            fake_answer(
                {
                    "action": "BET",
                    "bets": [
                        {"market_id": m, "side": SIDES[m], "amount": amount} for m, amount in bets
                    ],
                    "reasoning": "r",
                }
            ),
        )

    def freeze(self, at: datetime = DECIDE_AT) -> int:
        with self.factory() as session:
            cohort_ids = list(session.scalars(select(Cohort.id)))
        return freeze_universe(
            self.world.db.factory, self.world.settings, at, cohort_ids, books=self.client
        )

    def run(self, at: datetime = DECIDE_AT) -> DecideReport:
        return self.world.run(at, books=self.client)

    def snapshot(self, at: datetime) -> Any:
        return take_snapshots(
            self.world.db.factory, self.world.settings, FixedClock(at), books=self.client
        )

    def universe(self) -> dict[str, UniverseMarket]:
        with self.factory() as session:
            return {row.market_id: row for row in session.scalars(select(UniverseMarket))}

    def decisions(self) -> dict[str, Decision]:
        return self.world.decisions()

    def trades(self) -> list[Trade]:
        """The scripted family's trades (the baselines trade too)."""
        with self.factory() as session:
            return list(
                session.scalars(
                    select(Trade)
                    .join(Agent, Agent.id == Trade.agent_id)
                    .where(Agent.family_id == FED)
                    .order_by(Trade.id)
                )
            )

    def mark(self, market_id: str) -> BookMark | None:
        with self.factory() as session:
            return session.get(BookMark, self.token(market_id))

    def fed_snapshot(self, at: datetime) -> PortfolioSnapshot:
        with self.factory() as session:
            return session.execute(
                select(PortfolioSnapshot)
                .join(Agent, Agent.id == PortfolioSnapshot.agent_id)
                .where(Agent.family_id == FED, PortfolioSnapshot.taken_at == at)
            ).scalar_one()

    def fed_cash(self) -> Decimal:
        with self.factory() as session:
            return session.execute(select(Agent.cash).where(Agent.family_id == FED)).scalar_one()

    def snapshot_count(self, at: datetime) -> int:
        with self.factory() as session:
            return len(
                session.scalars(
                    select(PortfolioSnapshot.id).where(PortfolioSnapshot.taken_at == at)
                ).all()
            )

    def system_log(self, event: str) -> list[SystemLog]:
        with self.factory() as session:
            return list(session.scalars(select(SystemLog).where(SystemLog.event == event)))


@pytest.fixture
def hostile(db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hostile]:
    monkeypatch.delenv(PRICING_ENV)
    world = make_world(
        db,
        tmp_path,
        benchmark={"min_universe_markets": 1, "pricing": "book", "max_slippage": 0.02},
    )
    clob = FakeClobWorld(seed=22)
    with serve_fake_clob(clob) as base_url:
        harness = Hostile(world, clob, base_url)
        try:
            yield harness
        finally:
            harness.client.close()


def assert_every_agent_decided(hostile: Hostile, report: DecideReport) -> None:
    decisions = hostile.decisions()
    assert len(decisions) == len(MODELS) + 3  # four model families and three baselines
    assert all(d.status == "completed" for d in decisions.values()), {
        family: (d.status, d.error) for family, d in decisions.items()
    }
    assert {r.status for r in report.results} == {"completed"}


# -- finding 2: a malformed book costs its market, not the run --------------------------------


def test_a_decision_run_with_unstorable_books_completes_for_every_other_market(
    hostile: Hostile,
) -> None:
    """A size of 1e1000000 at the touch (``decimal.Overflow`` in the touch), a 25-digit
    timestamp (beyond a BIGINT) and a 200-character hash (beyond ``VARCHAR(64)``) each stopped
    the whole run, every retry alike. Now the first two cost their market, the third only
    its served hash: every agent is decided and the good market trades."""
    hostile.clob.plant(hostile.token("1002"), "huge_size")
    hostile.clob.plant(hostile.tokens["1003"][1], "long_timestamp")  # the second outcome's
    hostile.clob.plant(hostile.token("1004"), "long_hash")
    hostile.bets(("1001", 100), ("1004", 100))
    report = hostile.run()
    assert_every_agent_decided(hostile, report)
    universe = hostile.universe()
    assert set(universe) == {"1001", "1004"}  # 1002 and 1003 are left out
    touch = universe["1004"].books[0]  # type: ignore[index]
    assert touch["book_hash"] == hostile.clob.rendered(hostile.token("1004"))["hash"]
    trades = hostile.trades()
    assert sorted(t.market_id for t in trades) == ["1001", "1004"]
    assert all(t.book_hash is not None and len(t.book_hash) == 40 for t in trades)
    assert hostile.mark("1002") is None and hostile.mark("1004") is not None
    assert not hostile.system_log(CLOB_UNAVAILABLE)  # a bad book is not an outage
    hostile.world.assert_ledger()


def test_an_execution_against_an_unstorable_book_is_refused_and_the_rest_stands(
    hostile: Hostile,
) -> None:
    """Books that turn bad between the freeze and the execution: the executions on them are
    refused with the reason (``no_book``, not an outage); the bet on the good market fills."""
    hostile.bets(("1001", 100), ("1002", 100), ("1004", 100))
    hostile.freeze()
    hostile.clob.plant(hostile.token("1001"), "huge_size")
    hostile.clob.plant(hostile.token("1004"), "long_timestamp")
    report = hostile.run()
    assert_every_agent_decided(hostile, report)
    decision = hostile.decisions()[FED]
    refused = {r["market_id"]: r for r in decision.refusals or []}  # type: ignore[union-attr]
    assert set(refused) == {"1001", "1004"}
    assert {r["kind"] for r in refused.values()} == {"no_book"}
    assert "1e+1000000" in refused["1001"]["reason"].lower()
    assert "timestamp" in refused["1004"]["reason"]
    assert [t.market_id for t in hostile.trades()] == ["1002"]
    assert not hostile.system_log(CLOB_UNAVAILABLE)
    hostile.world.assert_ledger()


@pytest.mark.parametrize("kind", ["huge_size", "long_timestamp", "long_hash"])
def test_a_snapshot_with_an_unstorable_book_values_every_agent(hostile: Hostile, kind: str) -> None:
    """The snapshot fetches every held book: one that cannot be stored or computed with keeps
    its token's last valid mark, and every agent is valued."""
    hostile.bets(("1001", 100), ("1004", 100))
    hostile.run()
    before = hostile.mark("1001")
    assert before is not None
    hostile.clob.set_book(hostile.token("1001"), levels(BOOKS["1001"][0]), levels((("0.45", "9"),)))
    hostile.clob.set_book(
        hostile.token("1004"), levels((("0.60", "50000"),)), levels((("0.61", "9"),))
    )
    hostile.clob.plant(hostile.token("1001"), kind)
    at = DECIDE_AT + timedelta(minutes=15)
    report = hostile.snapshot(at)
    assert report.books_error is None
    assert hostile.snapshot_count(at) == report.agents == len(MODELS) + 3
    after, other = hostile.mark("1001"), hostile.mark("1004")
    assert other is not None and other.mark == D("0.605")  # the good book marks
    assert after is not None
    if kind == "long_hash":  # readable: marked, its proof the computed hash
        assert after.mark == D("0.425")
        assert after.book_hash == hostile.clob.rendered(hostile.token("1001"))["hash"]
    else:  # refused: the last valid mark holds
        assert (after.mark, after.book_hash) == (before.mark, before.book_hash)
    assert hostile.fed_snapshot(at).exit_value is not None


# -- finding 3: crossed books and levels of size 0 -------------------------------------------


def test_phantom_levels_of_size_zero_are_never_shown_or_marked(hostile: Hostile) -> None:
    """Levels of size 0 at 0.99 (bids) and 0.01 (asks), last where the best prices sit: the
    model was shown YES=0.99/0.01 and the snapshot marked at their mid. They don't exist."""
    hostile.clob.plant(hostile.token("1001"), "zero_size")
    hostile.bets(("1001", 100))
    hostile.run()
    (yes, _no) = hostile.universe()["1001"].books  # type: ignore[misc]
    assert (yes["best_bid"], yes["best_ask"]) == ("0.40", "0.41")
    prompt = hostile.world.attempts(FED)[0].request_messages[1]["content"]
    assert "YES=0.4/0.41; NO=0.59/0.6" in prompt
    (trade,) = hostile.trades()
    assert trade.touch_price == D("0.41") and trade.book_hash == yes["book_hash"]
    at = DECIDE_AT + timedelta(minutes=15)
    hostile.snapshot(at)
    mark = hostile.mark("1001")
    assert mark is not None and mark.mark == D("0.405")
    assert (mark.best_bid, mark.best_ask) == (D("0.40"), D("0.41"))
    snap = hostile.fed_snapshot(at)
    assert snap.positions_value == (trade.shares * D("0.405")).quantize(D("0.01"))


def test_crossed_and_locked_books_are_left_out_of_the_universe(hostile: Hostile) -> None:
    hostile.clob.plant(hostile.token("1002"), "crossed")
    hostile.clob.plant(hostile.token("1004"), "locked")
    hostile.bets(("1001", 100))
    report = hostile.run()
    assert_every_agent_decided(hostile, report)
    assert set(hostile.universe()) == {"1001", "1003"}
    assert hostile.mark("1002") is None and hostile.mark("1004") is None  # never marked
    prompt = hostile.world.attempts(FED)[0].request_messages[1]["content"]
    assert "1002 |" not in prompt and "1004 |" not in prompt


@pytest.mark.parametrize("kind", ["crossed", "locked"])
def test_an_execution_on_a_crossed_or_locked_book_is_refused_with_the_reason(
    hostile: Hostile, kind: str
) -> None:
    hostile.bets(("1001", 100), ("1004", 100))
    hostile.freeze()
    hostile.clob.plant(hostile.token("1001"), kind)
    report = hostile.run()
    assert_every_agent_decided(hostile, report)
    (refusal,) = hostile.decisions()[FED].refusals  # type: ignore[misc]
    assert refusal["market_id"] == "1001" and refusal["kind"] == "no_book"
    assert f"{kind} book: best bid" in refusal["reason"]
    assert [t.market_id for t in hostile.trades()] == ["1004"]


def test_a_crossed_book_never_marks_and_never_inflates_the_exit_value(
    hostile: Hostile,
) -> None:
    """A crossed book at the snapshot: the mark holds, and the position realises nothing
    (as without a book) instead of selling into a bid above the ask."""
    hostile.bets(("1001", 400))
    hostile.run()
    before = hostile.mark("1001")
    assert before is not None and before.mark == D("0.405")
    # the bids move above the ask: a crossed book (0.60 bid, 0.41 ask)
    hostile.clob.plant(hostile.token("1001"), "crossed")
    hostile.clob.set_book(
        hostile.token("1001"), levels((("0.40", "500"),)), levels((("0.41", "1000"),))
    )
    at = DECIDE_AT + timedelta(minutes=15)
    hostile.snapshot(at)
    after = hostile.mark("1001")
    assert after is not None and (after.mark, after.book_hash) == (before.mark, before.book_hash)
    snap = hostile.fed_snapshot(at)
    assert snap.exit_value == hostile.fed_cash()  # cash only: no usable bid to sell into


# -- finding 7: the proof of a book is its computed hash -------------------------------------


def test_a_wrong_served_hash_is_counted_and_the_computed_hash_is_the_proof(
    hostile: Hostile,
) -> None:
    token = hostile.token("1001")
    honest = hostile.clob.rendered(token)["hash"]
    hostile.clob.plant(token, "wrong_hash")
    assert hostile.clob.served(token)["hash"] == "0" * 40
    hostile.bets(("1001", 100))
    report = hostile.run()
    assert_every_agent_decided(hostile, report)
    (yes, _no) = hostile.universe()["1001"].books  # type: ignore[misc]
    (trade,) = hostile.trades()
    mark = hostile.mark("1001")
    assert yes["book_hash"] == trade.book_hash == honest
    assert mark is not None and mark.book_hash == honest
    # one row per fetch that saw it: the freeze, then each execution on 1001 (the scripted
    # family's, and any baseline's)
    rows = hostile.system_log(BOOK_HASH_MISMATCH)
    counts = [r.details["count"] for r in rows]  # type: ignore[index]
    assert len(rows) >= 2 and set(counts) == {1}
    assert {r.source for r in rows} == {"decision_run"}
    assert rows[0].details["books"][0] == {  # type: ignore[index]
        "token_id": token,
        "served": "0" * 40,
        "computed": honest,
    }
    with hostile.factory() as session:
        status = read_status(session, hostile.world.settings, DECIDE_AT, DECIDE_AT)
    (warning,) = [w for w in status.warnings if "wrong hash" in w]
    assert warning.startswith(f"{len(rows)} order book(s) served with a wrong hash")
    assert token in warning
    with TestClient(create_app(hostile.world.settings)) as web:
        metrics = web.get("/metrics").text
    assert f"arena_book_hash_mismatches_total {float(len(rows))}" in metrics


def test_a_long_served_hash_is_cut_where_it_is_logged(hostile: Hostile) -> None:
    hostile.clob.plant(hostile.token("1004"), "long_hash")
    hostile.run()
    row = hostile.system_log(BOOK_HASH_MISMATCH)[0]  # the freeze's
    served = row.details["books"][0]["served"]  # type: ignore[index]
    assert len(served) == 80 and served.endswith("[cut]")
