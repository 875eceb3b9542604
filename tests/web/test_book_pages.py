"""Mode book on the dashboard: the leaderboard's execution table and the decision page's fills
(the levels each trade consumed), on both databases."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select

from arena.store.models import Agent, Decision
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
