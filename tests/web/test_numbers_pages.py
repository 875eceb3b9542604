"""The pages write numbers in the one format (arena/numbers.py), name things plainly, and the
agent page values open positions as the snapshots do; on both databases."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from html import escape, unescape
from html.parser import HTMLParser
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from arena import numbers
from arena.store.db import make_engine, session_factory
from arena.store.models import Agent, DecisionAttempt, Position, Trade
from arena.web.standings import ENTRY_PRICE_PLACES
from tests.helpers import cli_env, run_arena
from tests.web.conftest import Site
from tests.web.test_pages import pages

PADDED = re.compile(r"^-?\d+\.\d*[1-9]?0{3,}$")  # "0.1550000000": trailing-zero noise


def first(site: Site, statement: Any) -> Any:
    engine = make_engine(site.url)
    try:
        with session_factory(engine)() as session:
            return session.execute(statement).first()
    finally:
        engine.dispose()


def cells(page: str, table_class: str) -> str:
    start = page.index(f'<table class="{table_class}"')
    return page[start : page.index("</table>", start)]


def test_decision_page_writes_prices_shares_tokens_and_cost_in_the_one_format(
    site: Site, client: TestClient
) -> None:
    row = first(
        site,
        select(Trade.decision_id, Trade.shares, Trade.price, Trade.implied_confidence)
        .where(Trade.trade_type == "BUY")
        .order_by(Trade.id),
    )
    decision_id, shares, price, confidence = row
    page = client.get(f"/decisions/{decision_id}").text
    assert f'<td class="num">{numbers.shares(shares)}</td>' in page
    assert f'<td class="num">{numbers.price(price)}</td>' in page
    assert format(price, "f") not in page and format(shares, "f") not in page
    # the stake's share of the maximum bet is labelled apart from the stated probability
    assert ">stated probability</th>" in page and ">stake / max bet</th>" in page
    assert f'<td class="num">{numbers.fixed(confidence, 3)}</td>' in page
    attempt = first(
        site,
        select(DecisionAttempt.decision_id, DecisionAttempt.prompt_tokens, DecisionAttempt.cost_usd)
        .where(DecisionAttempt.prompt_tokens >= 1000, DecisionAttempt.cost_usd > 0)
        .order_by(DecisionAttempt.id),
    )
    decision_id, tokens, cost = attempt
    page = client.get(f"/decisions/{decision_id}").text
    assert f"<dd>{numbers.count(tokens)} prompt," in page and "," in numbers.count(tokens)
    assert f"<dt>cost</dt><dd>{escape(numbers.cost(cost))}</dd>" in page
    assert numbers.cost(cost).startswith(("$", "<$"))
    assert format(cost, "f") not in page


def test_api_decimals_carry_no_trailing_zero_noise(site: Site, client: TestClient) -> None:
    """Prices, confidences, fees and costs in the JSON are exact decimal text without the
    column's padding ("0.155", not "0.1550000000"); money keeps its cents."""
    decision_id = first(site, select(Trade.decision_id).order_by(Trade.id))[0]
    body = client.get(f"/api/v1/decisions/{decision_id}").json()
    trade = body["trades"][0]
    for field in ("price", "implied_confidence", "shares", "amount", "cash_after"):
        text = trade[field]
        assert not PADDED.match(text), (field, text)
        assert text == numbers.exact(Decimal(text))
    assert re.fullmatch(r"\d+\.\d\d", trade["amount"])  # money keeps its cents
    for attempt in body["attempts"]:
        if attempt["cost_usd"] is not None:
            assert not PADDED.match(attempt["cost_usd"])
    market = client.get(f"/api/v1/markets/{trade['market_id']}").json()["market"]
    assert not PADDED.match(market["yes_price"])


def test_market_page_shows_prices_to_the_tick_and_shares_to_two_places(
    site: Site, client: TestClient
) -> None:
    market_id = first(site, select(Position.market_id).order_by(Position.id))[0]
    body = client.get(f"/api/v1/markets/{market_id}").json()
    page = client.get(f"/markets/{market_id}").text
    yes = body["market"]["yes_price"]
    assert f"<b>{numbers.price(yes)}</b>" in page
    for position in body["positions"]:
        assert f'<td class="num">{numbers.shares(position["shares"])}</td>' in page
    for trade in body["trades"]:
        assert f'<td class="num">{numbers.price(trade["price"])}</td>' in page
    assert re.search(r"<td class=\"num\">\d\.\d{2,3}</td>", page)


class _Tables(HTMLParser):
    """Each table's header cells and first body row's cells, with their classes."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, list[str]]] = []
        self.part = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = dict(attrs).get("class") or ""
        if tag == "table":
            self.tables.append({"th": [], "td": [], "rows": []})
        elif tag in ("thead", "tbody"):
            self.part = tag
        elif tag == "tr" and self.tables and self.part == "tbody":
            self.tables[-1]["rows"].append("")
        elif tag == "th" and self.tables and self.part == "thead":
            self.tables[-1]["th"].append(classes)
        elif tag == "td" and self.tables and len(self.tables[-1]["rows"]) == 1:
            self.tables[-1]["td"].append(classes)


def test_numeric_columns_have_right_aligned_headers(site: Site, client: TestClient) -> None:
    """Every header over a column of numbers (class ``num``) is right-aligned too."""
    checked = 0
    for path in pages(site):
        parser = _Tables()
        parser.feed(client.get(path).text)
        for table in parser.tables:
            if len(table["th"]) != len(table["td"]):
                continue  # an empty table's single "None." row
            for th, td in zip(table["th"], table["td"], strict=True):
                if "num" in td.split():
                    checked += 1
                    assert "num" in th.split(), (path, table["th"])
    assert checked > 50


def test_agent_page_values_open_positions_as_the_latest_snapshot(
    site: Site, client: TestClient
) -> None:
    """Entry price, mark, value and unrealised P/L per open position, and tiles for total value
    and return: cash plus the positions' values is the latest snapshot's total value."""
    engine = make_engine(site.url)
    try:
        with session_factory(engine)() as session:
            agents = session.execute(
                select(Agent.cohort_id, Agent.family_id).order_by(Agent.id)
            ).all()
    finally:
        engine.dispose()
    held = 0
    for cohort_id, family_id in agents:
        body = client.get(f"/api/v1/cohorts/{cohort_id}/families/{family_id}").json()
        valuation, snapshot = body["valuation"], body["latest_snapshot"]
        values = [Decimal(p["value"]) for p in body["open_positions"]]
        total = Decimal(valuation["cash"]) + sum(values, Decimal(0))
        assert total == Decimal(valuation["total_value"])
        assert snapshot is not None
        assert total == Decimal(snapshot["total_value"]), (cohort_id, family_id)
        assert Decimal(valuation["pnl"]) == Decimal(snapshot["pnl"])
        for p in body["open_positions"]:
            held += 1
            assert "payout" not in p and "closed_at" not in p and "settlement_outcome" not in p
            basis, shares = Decimal(p["cost_basis"]), Decimal(p["shares"])
            assert Decimal(p["avg_entry_price"]) == (basis / shares).quantize(ENTRY_PRICE_PLACES)
            assert Decimal(p["unrealized_pnl"]) == Decimal(p["value"]) - basis
            assert Decimal(p["value"]) == (shares * Decimal(p["mark"])).quantize(Decimal("0.01"))
        if body["open_positions"]:
            page = client.get(f"/cohorts/{cohort_id}/families/{family_id}").text
            assert f"<span>Total value</span><b>{numbers.money(total)}</b>" in page
            assert f"<span>Return</span><b>{numbers.percent(valuation['return_pct'])}</b>" in page
            table = cells(page, "open-positions")
            for header in ("entry price", "mark", "value", "unrealized P/L"):
                assert f">{header}</th>" in table
            for header in ("payout", "outcome", "closed", "realized P/L"):
                assert f">{header}</th>" not in table
            p = body["open_positions"][0]
            for text in (
                numbers.price(p["avg_entry_price"]),
                numbers.price(p["mark"]),
                numbers.money(p["value"]),
                numbers.money(p["unrealized_pnl"], signed=True),
            ):
                assert f'<td class="num">{text}</td>' in table
    assert held > 0


def test_leaderboard_writes_cost_in_dollars_and_counts_with_separators(
    site: Site, client: TestClient
) -> None:
    board = client.get("/api/v1/leaderboard").json()
    page = client.get("/").text
    standings, reliability = cells(page, "leaderboard"), cells(page, "reliability")
    for row in board:
        cost = escape(numbers.cost(row["cost_usd"]))
        assert f'<td class="num" data-field="cost_usd">{cost}</td>' in standings
        assert f'<td class="num">{numbers.count(row["prompt_tokens"])}</td>' in reliability
    spent = [row for row in board if Decimal(row["cost_usd"]) > 0]
    assert spent and all(numbers.cost(r["cost_usd"]).startswith(("$", "<$")) for r in spent)
    assert any("," in numbers.count(row["prompt_tokens"]) for row in board)
    # the Brier column says what v1 scores: the stake's size, not a stated probability
    brier = re.search(r'<th class="num" title="([^"]*)">Brier</th>', standings)
    assert brier is not None
    tooltip = unescape(brier.group(1))
    assert "max_bet_fraction" in tooltip and "not a stated probability" in tooltip


def test_ranking_names_families_by_display_name_and_clips_brier_intervals(
    site: Site, client: TestClient
) -> None:
    ranking = client.get("/api/v1/ranking").json()["ranking"]
    board = {
        row["family_id"]: row["display_name"] for row in client.get("/api/v1/leaderboard").json()
    }
    table = cells(client.get("/").text, "ranking")
    renamed = 0
    for row in ranking["rows"]:
        for field in ("ci_low", "ci_high", "bootstrap_low", "bootstrap_high"):
            if row[field] is not None:
                assert 0.0 <= row[field] <= 1.0, (row["forecaster"], field, row[field])
        if row["reference"]:
            continue
        name = board[row["forecaster"]]
        assert f'<a href="/families/{row["forecaster"]}">{name}</a>' in unescape(table)
        renamed += name != row["forecaster"]
    assert renamed > 0  # the display names differ from the ids somewhere
    assert "None" not in table
    assert "clipped to [0, 1]" in client.get("/").text
    assert "questions" in ranking["sample"] and "counts once" in ranking["sample"]


def arena_cli(site: Site, *args: str) -> str:
    result = run_arena(
        "--config", str(site.config), *args, env=cli_env(ARENA_DATABASE_URL=site.url, COLUMNS="200")
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_cli_leaderboard_writes_cost_and_fees_in_dollars(site: Site) -> None:
    board = json.loads(arena_cli(site, "leaderboard", "--format", "json"))
    table = arena_cli(site, "leaderboard", "--wide")
    for row in board:
        assert numbers.cost(row["cost_usd"]) in table
        assert numbers.count(row["prompt_tokens"]) in table
    assert any("," in numbers.count(row["prompt_tokens"]) for row in board)
    assert not re.search(r"\b0\.00[0-9]{2}\b", table)  # no 4-place cost such as 0.0058


def test_cli_ranking_names_forecasters_and_says_what_n_counts(site: Site) -> None:
    """`analyze ranking` names families by display name (`--by agent`: name and cohort), its
    intervals stay in [0, 1], and the ranking and calibration say what their n counts."""
    board = {
        r["family_id"]: r["display_name"]
        for r in json.loads(arena_cli(site, "leaderboard", "-f", "json"))
    }
    report = json.loads(arena_cli(site, "analyze", "ranking", "-f", "json", "--bootstrap", "50"))
    assert [r["forecaster"] for r in report["rows"] if not r["reference"]]  # JSON keeps ids
    assert "counts once" in report["sample"]
    for row in report["rows"]:
        if row["ci_low"] is not None:
            assert 0.0 <= row["ci_low"] <= row["ci_high"] <= 1.0
    table = arena_cli(site, "analyze", "ranking", "--bootstrap", "50")
    renamed = {board[r["forecaster"]] for r in report["rows"] if not r["reference"]}
    assert renamed - set(board) and all(name in table for name in renamed)
    assert "counts once" in table and "# -: not ranked" in table
    by_agent = arena_cli(site, "analyze", "ranking", "--by", "agent", "--bootstrap", "50")
    assert re.search(r"· cohort \d+", by_agent)
    calibration = json.loads(arena_cli(site, "analyze", "calibration", "-f", "json"))
    assert "forecast rows" in calibration["sample"]
    assert "forecast rows" in arena_cli(site, "analyze", "calibration")
