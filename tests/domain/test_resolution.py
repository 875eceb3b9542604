"""Resolution classification: the recorded fixtures, then every rule on synthetic markets."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from arena.domain.markets import MarketView, ResolutionState
from arena.domain.resolution import classify, is_overdue, winner_index
from arena.sources.gamma_parse import parse_events, parse_market

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gamma"
EVENTS = "prediction-market-value-lab__tests__fixtures__polymarket_events.json"
S = ResolutionState


def fixture_market(name: str, market_id: str | None = None) -> MarketView:
    data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    if isinstance(data, list):
        markets = parse_events(data).markets
        return next(m for m in markets if market_id is None or m.id == market_id)
    return parse_market(data)


@pytest.mark.parametrize(
    ("name", "market_id", "state", "winner"),
    [
        (
            "gamma_events_list_closed_resolved_yes_us_gov_shutdown_2024.json",
            None,
            S.RESOLVED_WINNER,
            "YES",
        ),
        ("gamma_market_closed_resolved_no_katana_fdv.json", None, S.RESOLVED_WINNER, "NO"),
        (
            "gamma_market_by_id_closed_resolved_second_outcome_wta.json",
            None,
            S.RESOLVED_WINNER,
            "McCartney Kessler",
        ),
        (
            "gamma_market_closed_resolved_first_outcome_sports_moneyline.json",
            None,
            S.RESOLVED_WINNER,
            "FaZe",
        ),
        ("gamma_market_closed_resolved_sports_map_handicap.json", None, S.RESOLVED_WINNER, "FaZe"),
        (
            "gamma_market_closed_yes_prices_accepting_orders_true_outlier.json",
            None,
            S.CLOSED_AWAITING,
            None,
        ),
        ("gamma_market_legacy_2020_closed_prices_zero_zero.json", None, S.AMBIGUOUS, None),
        ("gamma_market_legacy_2020_scalar_long_short_closed.json", None, S.AMBIGUOUS, None),
        ("gamma_market_open_negrisk_member_newsom.json", None, S.OPEN, None),
        (EVENTS, "516950", S.RESOLVED_WINNER, "NO"),
        (EVENTS, "597964", S.RESOLVED_WINNER, "NO"),
        (EVENTS, "691547", S.OPEN, None),
        (EVENTS, "1642124", S.OPEN, None),
    ],
)
def test_fixture_classification_matches_readme(
    name: str, market_id: str | None, state: ResolutionState, winner: str | None
) -> None:
    resolution = classify(fixture_market(name, market_id))
    assert (resolution.state, resolution.winner) == (state, winner)
    assert resolution.reason


@pytest.mark.parametrize(
    "name",
    [
        "prediction-market-value-lab__tests__fixtures__polymarket_markets.json",
        "polymarket-agents__examples__ten_markets.json",
        "dr-manhattan__tests__fixtures__polymarket_markets.json",
    ],
)
def test_open_fixture_markets_are_open_even_at_near_certain_prices(name: str) -> None:
    rows = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    for row in rows:
        assert classify(parse_market(row)).state is S.OPEN


def test_search_fixture_open_at_0_9995_is_open() -> None:
    data = json.loads((FIXTURES / "gamma_public_search_response_btc_events.json").read_text())
    market = parse_events(data["events"]).markets[0]
    assert market.prices == (Decimal("0.9995"), Decimal("0.0005"))
    assert classify(market).state is S.OPEN


def make(
    prices: tuple[str, ...] | None = ("0.4", "0.6"),
    outcomes: tuple[str, ...] = ("Yes", "No"),
    **fields: object,
) -> MarketView:
    base = MarketView(
        id="1",
        question="q",
        outcomes=outcomes,
        prices=None if prices is None else tuple(Decimal(p) for p in prices),
        closed=True,
        accepting_orders=False,
        uma_resolution_status="resolved",
    )
    return replace(base, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("market", "state", "winner"),
    [
        (make(("1", "0")), S.RESOLVED_WINNER, "YES"),
        (make(("0", "1")), S.RESOLVED_WINNER, "NO"),
        (make(("0", "1"), outcomes=("No", "Yes")), S.RESOLVED_WINNER, "YES"),
        (make(("1", "0"), outcomes=("NO", "yes")), S.RESOLVED_WINNER, "NO"),
        (make(("0.99", "0.01")), S.RESOLVED_WINNER, "YES"),
        (make(("0.989", "0.011")), S.AMBIGUOUS, None),
        (make(("0", "0.995", "0.005"), outcomes=("A", "B", "C")), S.RESOLVED_WINNER, "B"),
        (make(("0", "0.995", "0.02"), outcomes=("A", "B", "C")), S.AMBIGUOUS, None),
        (make(("0.5", "0.5")), S.RESOLVED_50_50, None),
        (make(("0.5", "0.5"), outcomes=("Long", "Short")), S.RESOLVED_50_50, None),
        (make(("0", "0")), S.AMBIGUOUS, None),
        (make(("1", "1")), S.AMBIGUOUS, None),
        (make(("0.58", "0.42")), S.AMBIGUOUS, None),
        (make(None), S.AMBIGUOUS, None),
        (make(("1", "0"), uma_resolution_status="proposed"), S.PROPOSED, None),
        (make(("1", "0"), uma_resolution_status="disputed"), S.DISPUTED, None),
        (make(("1", "0"), uma_resolution_status=None), S.CLOSED_AWAITING, None),
        (make(("0.3", "0.7"), uma_resolution_status=None), S.CLOSED_AWAITING, None),
        (make(None, uma_resolution_status=None), S.CLOSED_AWAITING, None),
        (make(("1", "0"), uma_resolution_status="weird"), S.CLOSED_AWAITING, None),
        (
            make(("1", "0"), uma_resolution_status=None, accepting_orders=True),
            S.CLOSED_AWAITING,
            None,
        ),
        (make(("0", "0"), uma_resolution_status=None), S.AMBIGUOUS, None),
        (
            make(("0.58", "0.42"), outcomes=("Long", "Short"), uma_resolution_status=None,
                 market_type="scalar"),
            S.AMBIGUOUS,
            None,
        ),
        (make(("0.9995", "0.0005"), closed=False, uma_resolution_status=None), S.OPEN, None),
        (make(("1", "0"), closed=False), S.OPEN, None),
        (make(("1", "0"), closed=False, uma_resolution_status="proposed"), S.PROPOSED, None),
        (make(("1", "0"), closed=False, uma_resolution_status="disputed"), S.DISPUTED, None),
    ],
)  # fmt: skip
def test_classify_rules(market: MarketView, state: ResolutionState, winner: str | None) -> None:
    resolution = classify(market)
    assert (resolution.state, resolution.winner) == (state, winner)


def test_outlier_reason_says_why_it_is_not_final() -> None:
    name = "gamma_market_closed_yes_prices_accepting_orders_true_outlier.json"
    assert "accepting orders" in classify(fixture_market(name)).reason


def test_winner_index_edges() -> None:
    d = Decimal
    assert winner_index(None) is None
    assert winner_index((d(1),)) is None
    assert winner_index((d("0.999"), d("0.001"))) == 0
    assert winner_index((d("0.995"), d("0.995"))) is None


CLOSED_AT = datetime(2026, 5, 25, 22, 43, 31, tzinfo=UTC)


def test_overdue_counts_from_closed_time() -> None:
    market = make(("1", "0"), uma_resolution_status=None, closed_time=CLOSED_AT)
    assert not is_overdue(market, CLOSED_AT + timedelta(days=14, seconds=-1), 14)
    assert is_overdue(market, CLOSED_AT + timedelta(days=14), 14)
    assert is_overdue(market, CLOSED_AT + timedelta(days=3), 3)


def test_overdue_falls_back_to_end_date_and_needs_some_date() -> None:
    market = make(("1", "0"), uma_resolution_status=None, end_date=CLOSED_AT)
    assert is_overdue(market, CLOSED_AT + timedelta(days=15), 14)
    assert not is_overdue(make(("1", "0")), CLOSED_AT + timedelta(days=999), 14)


def test_open_market_past_end_date_is_never_overdue() -> None:
    market = make(("0.4", "0.6"), closed=False, end_date=CLOSED_AT)
    assert not is_overdue(market, CLOSED_AT + timedelta(days=400), 14)


def test_overdue_accepts_naive_now_as_utc() -> None:
    market = make(("1", "0"), closed_time=CLOSED_AT)
    assert is_overdue(market, datetime(2026, 7, 1), 14)
