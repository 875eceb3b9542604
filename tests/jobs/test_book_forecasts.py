"""Mode book, methodology v2 (issue 24), on both databases, over real HTTP against the fake
CLOB (through the real CLOB client):

* a forecast records the market price the model was shown: the mid of that side's frozen
  book (a NO side: the NO token's own book), null for a one-sided book, never Gamma's display
  price (methodology, "Skill against the market");
* the freeze fetches and stores the fee schedule of every panel market, so the after-fee
  return is known for every panel question and not only for traded ones; a CLOB failure
  there is logged as an outage and never fails the freeze.

Mode gamma's display price is checked in ``tests/jobs/test_decide.py``
(``test_v2_forecast_panel_is_required_and_stored``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from arena.domain.book import NO_FEE, FeeSchedule, Level
from arena.domain.states import CLOB_UNAVAILABLE
from arena.fakes.clob import FakeClobWorld, serve_fake_clob
from arena.jobs.universe import freeze_universe, load_universe
from arena.sources.clob import ClobClient
from arena.store.models import Agent, Cohort, Forecast, Market, MarketFee, SystemLog, Trade
from tests.conftest import PRICING_ENV, Database
from tests.jobs.decide_world import DECIDE_AT, HOLD, MODELS, World, fake_answer, make_world

D = Decimal
FED = "gpt-5.1"  # the family whose answers the tests script
CID_1001, CID_1004 = "0x" + "a" * 64, "0x" + "b" * 64
YES_1001, NO_1001 = "1" * 77, "2" * 77
YES_1004, NO_1004 = "3" * 77, "4" * 77
FEE_1004 = FeeSchedule(D("0.04"), D(1))
# every family forecasts the panel (1001 and 1004: Gamma shows 0.40 and 0.55)
FORECASTS = [{"market_id": "1001", "probability": 0.45}, {"market_id": "1004", "probability": 0.5}]


def levels(*pairs: tuple[str, str]) -> list[Level]:
    return [Level(D(p), D(s)) for p, s in pairs]


@dataclass
class BookV2:
    world: World
    clob: FakeClobWorld
    client: ClobClient

    def cohort_ids(self) -> list[int]:
        with self.world.db.factory() as session:
            return list(session.scalars(select(Cohort.id)))

    def freeze(self) -> int:
        factory, settings = self.world.db.factory, self.world.settings
        return freeze_universe(factory, settings, DECIDE_AT, self.cohort_ids(), books=self.client)

    def fees(self) -> dict[str, tuple[Decimal, Decimal]]:
        with self.world.db.factory() as session:
            rows = session.execute(
                select(MarketFee.condition_id, MarketFee.rate, MarketFee.exponent)
            )
            return {cid: (rate, exponent) for cid, rate, exponent in rows}

    def outages(self) -> list[str]:
        with self.world.db.factory() as session:
            return list(
                session.scalars(
                    select(SystemLog.message).where(SystemLog.event == CLOB_UNAVAILABLE)
                )
            )


def book_v2(db: Database, tmp_path: Path, clob: FakeClobWorld, url: str, **v2: Any) -> BookV2:
    world = make_world(
        db,
        tmp_path,
        methodology="v2",
        v2=v2 or {"panel_size": 20},
        benchmark={"min_universe_markets": 1, "pricing": "book", "max_slippage": 0.02},
    )
    with db.factory() as session, session.begin():
        for market_id, tokens, cid in (
            ("1001", [YES_1001, NO_1001], CID_1001),
            ("1004", [YES_1004, NO_1004], CID_1004),
        ):
            session.execute(
                update(Market)
                .where(Market.id == market_id)
                .values(clob_token_ids=tokens, condition_id=cid)
            )
    settings = world.settings.polymarket.model_copy(update={"max_attempts": 1})
    return BookV2(world, clob, ClobClient(settings, base_url=url, sleep=lambda _s: None))


@pytest.fixture
def clob() -> FakeClobWorld:
    world = FakeClobWorld(seed=24)
    # 1001: YES 0.40 / 0.42 (mid 0.41; Gamma shows 0.40), NO mirrored 0.58 / 0.60 (mid 0.59)
    world.add_market(
        levels(("0.40", "500"), ("0.39", "1000")),
        levels(("0.42", "500"), ("0.43", "1000")),
        condition_id=CID_1001,
        yes_token=YES_1001,
        no_token=NO_1001,
        fee=NO_FEE,
    )
    # 1004: a one-sided book (bids only: no mid on either side; Gamma shows 0.55), 4% fee
    world.add_market(
        levels(("0.54", "50000")),
        [],
        condition_id=CID_1004,
        yes_token=YES_1004,
        no_token=NO_1004,
        fee=FEE_1004,
    )
    return world


@pytest.fixture
def served(
    db: Database, tmp_path: Path, clob: FakeClobWorld, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Database, Path, FakeClobWorld, str]]:
    monkeypatch.delenv(PRICING_ENV)
    with serve_fake_clob(clob) as url:
        yield db, tmp_path, clob, url


def test_a_forecast_records_the_mid_of_the_frozen_book_it_was_shown(
    served: tuple[Database, Path, FakeClobWorld, str],
) -> None:
    arena = book_v2(*served)
    for model in MODELS.values():
        arena.world.fake.set_default(model, fake_answer({**HOLD, "forecasts": FORECASTS}))
    arena.world.fake.set_default(
        MODELS[FED],
        fake_answer(
            {
                "action": "BET",
                "bets": [{"market_id": "1001", "side": "NO", "amount": 100, "probability": 0.7}],
                "forecasts": FORECASTS,
                "reasoning": "r",
            }
        ),
    )
    report = arena.world.run(books=arena.client)
    assert report.failure() is None
    with arena.world.db.factory() as session:
        rows = session.execute(
            select(Agent.family_id, Forecast)
            .join(Agent, Agent.id == Forecast.agent_id)
            .order_by(Forecast.id)
        ).all()
        trade = session.execute(
            select(Trade).join(Agent, Agent.id == Trade.agent_id).where(Agent.family_id == FED)
        ).scalar_one()
    assert trade.pricing == "book" and trade.mid_price == D("0.59")  # the NO book's own mid
    fed = {
        (f.market_id, f.outcome, f.source): f.market_probability for fam, f in rows if fam == FED
    }
    assert fed == {
        ("1001", "YES", "panel"): D("0.41"),  # the YES book's mid, not Gamma's 0.40
        ("1001", "NO", "bet"): D("0.59"),  # the NO book's mid, not 1 - 0.40
        ("1004", "YES", "panel"): None,  # one-sided: no mid, and no fallback to Gamma's 0.55
    }
    by_market: dict[str, set[Decimal | None]] = {}
    for _family, forecast in rows:
        if forecast.source == "panel":
            by_market.setdefault(forecast.market_id, set()).add(forecast.market_probability)
    assert by_market == {"1001": {D("0.41")}, "1004": {None}}  # every family was shown the same


def test_the_freeze_stores_the_fee_schedule_of_every_panel_market(
    served: tuple[Database, Path, FakeClobWorld, str],
) -> None:
    arena = book_v2(*served, panel_size=1)
    with arena.world.db.factory() as session:
        universe = load_universe(session, arena.freeze())
    assert [m.id for m in universe.panel] == ["1001"] and set(universe.by_id) == {"1001", "1004"}
    assert arena.fees() == {CID_1001: (D(0), D(1))}  # the panel's one market: fee-free, known
    assert arena.clob.count(f"/clob-markets/{CID_1004}") == 0  # not in the panel: not asked
    assert arena.outages() == []


def test_a_panel_with_the_fee_schedule_fetched_needs_no_new_request(
    served: tuple[Database, Path, FakeClobWorld, str],
) -> None:
    arena = book_v2(*served)
    arena.freeze()
    assert arena.fees() == {CID_1001: (D(0), D(1)), CID_1004: (D("0.04"), D(1))}
    asked = arena.clob.count(f"/clob-markets/{CID_1004}")
    arena.world.run(books=arena.client)  # a fresh universe is reused; HOLD trades nothing
    assert arena.clob.count(f"/clob-markets/{CID_1004}") == asked == 1


def test_a_clob_failure_on_the_panel_fees_never_fails_the_freeze(
    served: tuple[Database, Path, FakeClobWorld, str],
) -> None:
    arena = book_v2(*served)
    arena.clob.fail("500", path=f"/clob-markets/{CID_1004}")
    with arena.world.db.factory() as session:
        universe = load_universe(session, arena.freeze())
    assert {m.id for m in universe.panel} == {"1001", "1004"}
    assert universe.by_id["1001"].books  # the books were frozen all the same
    assert arena.fees() == {CID_1001: (D(0), D(1))}  # never read as "no fee"
    (outage,) = arena.outages()
    assert "fee schedule" in outage and "1 of 2 panel markets" in outage
