"""Mode book: the universe's books are fetched while the market sync stores the listing
(issue 27, arena's own time per agent), and the freeze is answered from them as it would have
been by the CLOB directly."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

import arena.jobs.markets
from arena.domain.markets import MarketView
from arena.errors import ClobError
from arena.jobs.decide import DecisionRun
from arena.jobs.universe import BooksAhead
from arena.sources.clob import BookBatch
from arena.store.models import MarketFee
from tests.conftest import Database
from tests.helpers import week_simulation

SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)


class Clob:
    """Books by token (any object stands for a book), every request noted."""

    def __init__(self, known: dict[str, object], fail: Exception | None = None) -> None:
        self.known, self.fail = known, fail
        self.asked: list[list[str]] = []

    def books(self, token_ids: Sequence[str]) -> BookBatch:
        self.asked.append(list(token_ids))
        if self.fail is not None:
            raise self.fail
        found: dict[str, Any] = {t: self.known[t] for t in token_ids if t in self.known}
        return BookBatch(found, tuple(t for t in token_ids if t not in found))


def _market(market_id: str, volume: int, *, closed: bool = False) -> MarketView:
    return MarketView(
        id=market_id,
        question=f"Q{market_id}?",
        outcomes=("Yes", "No"),
        prices=(Decimal("0.4"), Decimal("0.6")),
        volume=Decimal(volume),
        closed=closed,
        clob_token_ids=(f"{market_id}1", f"{market_id}2"),
    )


def _ahead(clob: Clob, size: int = 2) -> BooksAhead:
    ahead = BooksAhead(clob, size)  # type: ignore[arg-type]
    listing = [_market("7", 10), _market("8", 30), _market("9", 20), _market("6", 99, closed=True)]
    ahead.fetch(listing)
    ahead.close()  # the fetch ahead has ended
    return ahead


def test_the_first_tradable_markets_by_volume_are_asked_ahead_and_served_from_it() -> None:
    clob = Clob({t: f"book {t}" for t in ("81", "82", "91", "92", "55")})
    ahead = _ahead(clob)
    assert clob.asked == [["81", "82", "91", "92"]]  # 8 then 9 by volume; 6 is closed, 7 is 3rd
    answer = ahead.books(["91", "92", "81", "82", "55", "56"])
    assert answer.books == {t: f"book {t}" for t in ("91", "92", "81", "82", "55")}
    assert answer.missing == ("56",)
    assert clob.asked[1:] == [["55", "56"]]  # only what was not asked ahead (a held market's)


def test_a_token_asked_ahead_without_a_book_stays_missing_without_asking_again() -> None:
    clob = Clob({"81": "book 81", "82": "book 82", "91": "book 91"})
    ahead = _ahead(clob)
    answer = ahead.books(["91", "92"])
    assert answer.books == {"91": "book 91"} and answer.missing == ("92",)
    assert len(clob.asked) == 1


def test_a_clob_failure_ahead_is_the_freezes_failure() -> None:
    ahead = _ahead(Clob({}, fail=ClobError("POST /books: 503 (after 3 attempts)")))
    with pytest.raises(ClobError, match="503"):
        ahead.books(["81"])


def test_another_failure_ahead_is_logged_and_the_clob_asked_directly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clob = Clob({"81": "book 81"}, fail=ValueError("a bug ahead"))
    ahead = _ahead(clob)
    clob.fail = None
    assert ahead.books(["81"]).books == {"81": "book 81"}
    assert clob.asked[-1] == ["81"]
    assert "books fetched ahead of the freeze failed" in caplog.text


def test_the_fees_after_the_freeze_go_to_later_or_run_at_once() -> None:
    ran: list[str] = []
    handed: list[object] = []
    BooksAhead(Clob({}), 5).after_freeze(lambda: ran.append("now"))  # type: ignore[arg-type]
    BooksAhead(Clob({}), 5, handed.append).after_freeze(lambda: ran.append("later"))  # type: ignore[arg-type]
    assert ran == ["now"] and len(handed) == 1


def test_nothing_listed_asks_nothing_ahead() -> None:
    clob = Clob({"11": "book 11"})
    ahead = BooksAhead(clob, 5)  # type: ignore[arg-type]
    ahead.fetch([])
    assert clob.asked == []
    assert ahead.books(["11"]).books == {"11": "book 11"}


def _open_cohort(sim: Any) -> None:
    sim.clock.set(SUNDAY)
    sim.world.evolve(SUNDAY)
    sim.runtime.cohort_start(sim.clock)
    at = SUNDAY + timedelta(minutes=5)
    sim.clock.set(at)
    sim.world.evolve(at)


def test_a_decision_run_asks_its_first_agent_before_the_panel_fees_are_fetched(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The panel's fee schedules are fetched while the first model call is in flight
    (fetched in the freeze, they would wait for an agent that is never asked), and they are
    stored by the time the run returns."""
    monkeypatch.setenv("ARENA_BENCHMARK__PRICING", "book")
    with week_simulation(db.url, db.factory, tmp_path / "config.yaml", SUNDAY) as sim:
        _open_cohort(sim)
        asking = threading.Event()
        ask = DecisionRun.ask_agent

        def noting(run: DecisionRun, prepared: Any) -> Any:
            asking.set()
            return ask(run, prepared)

        monkeypatch.setattr(DecisionRun, "ask_agent", noting)
        clob = sim.runtime.clob
        assert clob is not None
        fee_schedules = clob.fee_schedules
        waited: list[bool] = []

        def waiting(condition_ids: Sequence[str]) -> Any:
            waited.append(asking.wait(10))
            return fee_schedules(condition_ids)

        monkeypatch.setattr(clob, "fee_schedules", waiting)
        report = sim.runtime.decision_run(sim.clock)
        with db.factory() as session:
            fees = session.scalar(select(func.count()).select_from(MarketFee))
    assert waited and all(waited)  # the panel's first, then those of the traded markets
    assert report.results and all(r.status == "completed" for r in report.results)
    assert fees  # stored before the run returned


def test_a_decision_run_fetches_the_books_while_the_sync_stores_the_listing(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store of the listing waits until the CLOB has been asked for the universe's books:
    asked only after the store (one after the other), it would wait in vain."""
    monkeypatch.setenv("ARENA_BENCHMARK__PRICING", "book")
    with week_simulation(db.url, db.factory, tmp_path / "config.yaml", SUNDAY) as sim:
        _open_cohort(sim)
        asked = threading.Event()
        clob = sim.runtime.clob
        assert clob is not None
        books = clob.books

        def noting(token_ids: Sequence[str]) -> BookBatch:
            asked.set()
            return books(token_ids)

        monkeypatch.setattr(clob, "books", noting)
        store = arena.jobs.markets.store_markets
        waited: list[bool] = []

        def storing(*args: Any, **kwargs: Any) -> Any:
            waited.append(asked.wait(10))
            return store(*args, **kwargs)

        monkeypatch.setattr(arena.jobs.markets, "store_markets", storing)
        report = sim.runtime.decision_run(sim.clock)
    assert waited == [True]
    assert report.results and all(r.status == "completed" for r in report.results)
    assert report.universe_id is not None
