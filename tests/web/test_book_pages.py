"""Mode book on the dashboard: the leaderboard's execution table and the decision page's fills
(the levels each trade consumed), on both databases."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape

from fastapi.testclient import TestClient
from sqlalchemy import select

from arena import numbers
from arena.store.models import Agent, Decision, Trade
from arena.web.app import create_app
from tests.jobs.test_book_pricing import FED, BookWorld, book_world, clob  # noqa: F401


def test_leaderboard_and_decision_pages_show_the_fills(book_world: BookWorld) -> None:  # noqa: F811
    book_world.answer_bets(("1001", "YES", 500))
    book_world.run()
    with book_world.world.db.factory() as session:
        decision_id = session.execute(
            select(Decision.id)
            .join(Agent, Agent.id == Decision.agent_id)
            .where(Agent.family_id == FED)
        ).scalar_one()
    with TestClient(create_app(book_world.world.settings)) as client:
        board = client.get("/api/v1/leaderboard").json()
        row = next(r for r in board if r["family_id"] == FED)
        assert row["fill_ratio"] == 0.252 and row["fees_usd"] == "0.00"
        assert row["slippage_mid_bps"] == 370.37 and row["liquidity_refusals"] == 0
        page = client.get("/").text
        assert 'id="execution"' in page and "Slippage (bps)" in page and "25.2%" in page
        decision = client.get(f"/decisions/{decision_id}").text
        assert "Fills" in decision and book_world.clob.rendered("1" * 77)["hash"] in decision
        for price in ("0.41", "0.42", "0.43"):
            assert f'<td class="num">{price}</td>' in decision
        api = client.get(f"/api/v1/decisions/{decision_id}").json()
        (trade,) = api["trades"]
        assert [lv["price"] for lv in trade["levels"]] == ["0.41", "0.42", "0.43"]


def test_fills_show_fees_in_dollars_slippage_in_bps_and_the_book_time_as_a_time(
    book_world: BookWorld,  # noqa: F811
) -> None:
    """Mode book: the fee to the cent with a $ (a fraction of a cent as <$0.01), slippage to
    one decimal of a basis point, prices to the tick, and the CLOB's book time (epoch
    milliseconds) as an ISO UTC minute."""
    book_world.answer_bets(("1004", "YES", 500))
    book_world.run()
    with book_world.world.db.factory() as session:
        trade = session.scalars(select(Trade).join(Agent).where(Agent.family_id == FED)).one()
    assert trade.fee is not None and trade.fee > 0 and trade.book_timestamp is not None
    with TestClient(create_app(book_world.world.settings)) as client:
        page = client.get(f"/decisions/{trade.decision_id}").text
        api = client.get(f"/api/v1/decisions/{trade.decision_id}").json()
    assert f'<dt title="Polymarket taker fee paid">fee</dt><dd>{numbers.cost(trade.fee)}</dd>' in (
        unescape(page)  # a fee under a cent reads <$0.01
    )
    assert re.search(r"<dd>\$\d+\.\d\d</dd>", page)
    touch, mid = numbers.bps(trade.slippage_touch_bps), numbers.bps(trade.slippage_mid_bps)
    assert f"<dd>{touch} / {mid}</dd>" in page and re.fullmatch(r"-?[\d,]+\.\d", mid)
    booked = datetime.fromtimestamp(trade.book_timestamp / 1000, tz=UTC)
    assert f" at {booked:%Y-%m-%d %H:%M}Z</dd>" in page
    assert str(trade.book_timestamp) not in page
    assert f"<dd>{numbers.price(trade.mid_price)}</dd>" in page
    (row,) = api["trades"]
    assert row["fee"] == numbers.exact(trade.fee) and not row["fee"].endswith("000")
    assert row["book_timestamp"] == trade.book_timestamp  # the API keeps the stored value
