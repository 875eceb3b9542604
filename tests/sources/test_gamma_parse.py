"""Parsing raw Gamma markets: every recorded fixture, every awkward shape the API produces."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.errors import MarketParseError
from arena.sources.gamma_parse import (
    ParsedRows,
    parse_events,
    parse_gamma_time,
    parse_market,
    parse_rows,
    should_skip,
    to_decimal,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gamma"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"), parse_float=Decimal)


def parse_fixture(name: str) -> ParsedRows:
    """Parse a fixture whatever its shape: market, market list, keyset page, events, search."""
    data = load(name)
    if isinstance(data, dict) and "markets" in data and "question" not in data:
        return parse_rows(data["markets"])
    if isinstance(data, dict) and "events" in data and "question" not in data:
        return parse_events(data["events"])
    if isinstance(data, dict):
        return parse_rows([data])
    if data and "markets" in data[0] and "question" not in data[0]:
        return parse_events(data)
    return parse_rows(data)


FIXTURE_COUNTS = {
    "polymarket-agents__examples__ten_markets.json": 10,
    "dr-manhattan__tests__fixtures__polymarket_markets.json": 5,
    "prediction-market-value-lab__tests__fixtures__polymarket_markets.json": 3,
    "prediction-market-value-lab__tests__fixtures__polymarket_events.json": 8,
    "gamma_markets_keyset_page_3_open.json": 3,
    "gamma_market_open_negrisk_member_newsom.json": 1,
    "gamma_events_list_negrisk_open_dem_nominee_2028_truncated.json": 2,
    "gamma_events_list_closed_resolved_yes_us_gov_shutdown_2024.json": 1,
    "gamma_market_closed_resolved_no_katana_fdv.json": 1,
    "gamma_market_by_id_closed_resolved_second_outcome_wta.json": 1,
    "gamma_market_closed_resolved_first_outcome_sports_moneyline.json": 1,
    "gamma_market_closed_resolved_sports_map_handicap.json": 1,
    "gamma_market_closed_yes_prices_accepting_orders_true_outlier.json": 1,
    "gamma_market_legacy_2020_closed_prices_zero_zero.json": 1,
    "gamma_market_legacy_2020_scalar_long_short_closed.json": 1,
    "gamma_public_search_response_btc_events.json": 1,
}


def test_every_fixture_file_is_covered() -> None:
    assert {p.name for p in FIXTURES.glob("*.json")} == set(FIXTURE_COUNTS)


@pytest.mark.parametrize(("name", "count"), sorted(FIXTURE_COUNTS.items()))
def test_every_fixture_parses(name: str, count: int) -> None:
    parsed = parse_fixture(name)
    assert parsed.errors == []
    assert len(parsed.markets) == count
    for market in parsed.markets:
        assert market.id.isdigit()
        assert market.question
        assert len(market.outcomes) >= 2
        if market.prices is not None:
            assert len(market.prices) == len(market.outcomes)
            assert all(isinstance(p, Decimal) for p in market.prices)


def test_fixture_rows_also_parse_from_plain_json_floats() -> None:
    """Rows decoded by a plain ``json.loads`` (floats) give the same market."""
    name = "gamma_markets_keyset_page_3_open.json"
    plain = json.loads((FIXTURES / name).read_text(encoding="utf-8"))["markets"]
    assert parse_rows(plain).markets == parse_fixture(name).markets


def test_keyset_row_fields_are_exact() -> None:
    market = parse_fixture("gamma_markets_keyset_page_3_open.json").markets[0]
    assert market.id == "559651"
    assert market.question == "Xi Jinping out before 2027?"
    assert market.outcomes == ("Yes", "No")
    assert market.prices == (Decimal("0.0245"), Decimal("0.9755"))
    assert market.is_binary
    assert market.yes_price == Decimal("0.0245")
    assert market.volume == Decimal("14405063.424337989")
    assert market.liquidity == Decimal("583899.75949")
    assert market.end_date == datetime(2027, 1, 1, 4, 59, tzinfo=UTC)
    assert market.closed_time is None
    assert market.active
    assert not market.closed
    assert market.accepting_orders is True
    assert market.uma_resolution_status is None
    assert market.condition_id is not None
    assert market.condition_id.startswith("0x")
    assert len(market.clob_token_ids) == 2
    assert all(t.isdigit() and len(t) >= 76 for t in market.clob_token_ids)
    assert market.event_id == "30828"
    assert market.event_slug == "xi-jinping-out-before-2027"
    assert market.group_item_title is None  # "" means no group
    assert market.is_tradable
    assert should_skip(market) is None


def test_clob_token_ids_are_kept_digit_for_digit() -> None:
    raw = load("gamma_market_open_negrisk_member_newsom.json")
    market = parse_market(raw)
    assert market.clob_token_ids == tuple(json.loads(raw["clobTokenIds"]))


def test_negrisk_membership_from_events() -> None:
    market = parse_fixture("gamma_market_open_negrisk_member_newsom.json").markets[0]
    assert market.id == "559652"
    assert market.neg_risk
    assert not market.neg_risk_other
    assert market.neg_risk_market_id == (
        "0x2c3d7e0eee6f058be3006baabf0d54a07da254ba47fe6e3e095e7990c7814700"
    )
    assert market.group_item_title == "Gavin Newsom"
    assert market.event_id == "30829"
    assert market.event_slug == "democratic-presidential-nominee-2028"
    assert market.event_title == "Democratic Presidential Nominee 2028"
    assert market.category == "Politics"


def test_nested_event_markets_take_event_membership_and_tag_category() -> None:
    parsed = parse_fixture("gamma_events_list_negrisk_open_dem_nominee_2028_truncated.json")
    for market in parsed.markets:
        assert market.event_id == "30829"
        assert market.event_title == "Democratic Presidential Nominee 2028"
        assert "Politics" in market.tags
        assert market.category == "Politics"
    shutdown = parse_fixture("gamma_events_list_closed_resolved_yes_us_gov_shutdown_2024.json")
    assert shutdown.markets[0].event_id == "12327"
    assert shutdown.markets[0].tags[0] == "Politics"


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("gamma_market_legacy_2020_closed_prices_zero_zero.json", "Politics"),  # US-current-affairs
        ("gamma_market_legacy_2020_scalar_long_short_closed.json", "Crypto"),
        ("gamma_market_closed_resolved_first_outcome_sports_moneyline.json", "Sports"),
        ("gamma_public_search_response_btc_events.json", "Crypto"),
        ("gamma_events_list_closed_resolved_yes_us_gov_shutdown_2024.json", "Politics"),
    ],
)
def test_category_legacy_field_then_tags_then_title(name: str, category: str) -> None:
    assert parse_fixture(name).markets[0].category == category


def test_category_from_event_tags_for_kraken_and_macron() -> None:
    parsed = parse_fixture("prediction-market-value-lab__tests__fixtures__polymarket_events.json")
    by_event = {m.event_id: m.category for m in parsed.markets}
    assert by_event == {"16183": "Crypto", "16263": "Politics"}


def test_closed_time_in_postgres_text_format() -> None:
    market = parse_fixture("gamma_market_by_id_closed_resolved_second_outcome_wta.json").markets[0]
    assert market.closed_time == datetime(2026, 5, 25, 22, 43, 31, tzinfo=UTC)
    assert market.outcomes == ("Hanyu Guo", "McCartney Kessler")
    assert not market.is_binary
    assert market.liquidity is None  # the key is absent


def test_missing_volume_keys_give_none() -> None:
    market = parse_fixture("gamma_market_closed_resolved_no_katana_fdv.json").markets[0]
    assert market.volume is None
    assert market.liquidity is None
    assert market.event_id is None


def test_legacy_scalar_prices_are_exact_decimals() -> None:
    market = parse_fixture("gamma_market_legacy_2020_scalar_long_short_closed.json").markets[0]
    assert market.prices == (
        Decimal("0.5843311669077693146635445446077281"),
        Decimal("0.4156688330922306853364554553922719"),
    )
    assert market.market_type == "scalar"
    assert market.accepting_orders is None  # key absent on legacy markets


def test_never_deployed_placeholder_is_skipped() -> None:
    parsed = parse_fixture("prediction-market-value-lab__tests__fixtures__polymarket_events.json")
    placeholder = next(m for m in parsed.markets if m.id == "1642124")
    assert placeholder.prices is None
    assert not placeholder.active
    assert placeholder.condition_id is None
    assert placeholder.volume == Decimal(0)
    assert should_skip(placeholder) == "inactive"
    assert not placeholder.is_tradable


def binary_row(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": "900001",
        "question": "Will it rain?",
        "conditionId": "0x" + "ab" * 32,
        "outcomes": '["Yes", "No"]',
        "outcomePrices": '["0.4", "0.6"]',
        "active": True,
        "closed": False,
        "acceptingOrders": True,
        "volume": "1234.5",
        "volumeNum": 1234.5,
    }
    row.update(overrides)
    return {k: v for k, v in row.items() if v is not None}


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"groupItemTitle": "Person X", "active": False}, "placeholder 'Person X': inactive"),
        ({"groupItemTitle": "Person AB", "outcomePrices": None}, "placeholder 'Person AB': no"),
        ({"conditionId": ""}, "not deployed (empty conditionId)"),
        ({"negRiskOther": True, "groupItemTitle": "Other"}, "negRiskOther child"),
        ({"question": "  "}, "no question"),
    ],
)
def test_should_skip_reasons(overrides: dict[str, Any], reason: str) -> None:
    assert (should_skip(parse_market(binary_row(**overrides))) or "").startswith(reason)


def test_group_child_named_other_is_not_a_placeholder() -> None:
    market = parse_market(binary_row(groupItemTitle="Other", negRisk=True))
    assert should_skip(market) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1234, Decimal(1234)),
        (1234.5, Decimal("1234.5")),
        ("1234.50", Decimal("1234.50")),
        (Decimal("0.1"), Decimal("0.1")),
        ("NaN", None),
        ("Infinity", None),
        ("abc", None),
        (True, None),
        ([1], None),
    ],
)
def test_to_decimal_type_flips(value: Any, expected: Decimal | None) -> None:
    assert to_decimal(value) == expected


def test_volume_num_preferred_then_volume_string() -> None:
    assert parse_market(binary_row(volumeNum=99)).volume == Decimal(99)
    assert parse_market(binary_row(volumeNum="77.25")).volume == Decimal("77.25")
    assert parse_market(binary_row(volumeNum=None)).volume == Decimal("1234.5")
    assert parse_market(binary_row(volumeNum=None, volume=None)).volume is None
    assert parse_market(binary_row(volumeNum=None, volume=12.5)).volume == Decimal("12.5")


def test_float_volume_goes_through_its_repr_not_binary_expansion() -> None:
    assert parse_market(binary_row(volumeNum=0.1)).volume == Decimal("0.1")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-05-25 22:43:31+00", datetime(2026, 5, 25, 22, 43, 31, tzinfo=UTC)),
        ("2027-01-01T04:59:00Z", datetime(2027, 1, 1, 4, 59, tzinfo=UTC)),
        ("2025-07-03T20:36:58.88434Z", datetime(2025, 7, 3, 20, 36, 58, 884340, tzinfo=UTC)),
        ("2025-07-11T18:35:56.805Z", datetime(2025, 7, 11, 18, 35, 56, 805000, tzinfo=UTC)),
        ("2023-11-02 21:40:32.968+00", datetime(2023, 11, 2, 21, 40, 32, 968000, tzinfo=UTC)),
        ("2027-01-01", datetime(2027, 1, 1, tzinfo=UTC)),
        ("2026-06-01T09:00:00+02:00", datetime(2026, 6, 1, 7, tzinfo=UTC)),
        ("not a date", None),
        ("", None),
        (None, None),
        (1700000000, None),
    ],
)
def test_parse_gamma_time(text: Any, expected: datetime | None) -> None:
    assert parse_gamma_time(text) == expected


def test_end_date_falls_back_to_end_date_iso() -> None:
    market = parse_market(binary_row(endDateIso="2027-01-01"))
    assert market.end_date == datetime(2027, 1, 1, tzinfo=UTC)


def test_minimal_row_gets_defaults() -> None:
    market = parse_market({"id": 42, "outcomes": ["Yes", "No"]})
    assert market.id == "42"
    assert market.question == ""
    assert market.prices is None
    assert market.active
    assert not market.closed
    assert market.accepting_orders is None
    assert market.clob_token_ids == ()
    assert market.category is None
    assert market.tags == ()


def test_empty_token_ids_while_new() -> None:
    assert parse_market(binary_row(clobTokenIds="")).clob_token_ids == ()
    assert parse_market(binary_row(clobTokenIds="[]")).clob_token_ids == ()
    assert parse_market(binary_row(clobTokenIds="[broken")).clob_token_ids == ()


def test_string_booleans_and_status_case() -> None:
    market = parse_market(binary_row(closed="true", umaResolutionStatus=" Resolved "))
    assert market.closed
    assert market.uma_resolution_status == "resolved"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"id": None}, "missing or non-numeric id"),
        ({"id": "abc"}, "missing or non-numeric id"),
        ({"outcomes": '["Yes", "No"'}, "unreadable outcomes"),
        ({"outcomes": '["Yes"]'}, "at least two outcomes"),
        ({"outcomes": "[1, 2]"}, "non-empty strings"),
        ({"outcomes": '["Yes", "yes"]'}, "duplicate outcome"),
        ({"outcomePrices": '["0.4", "0.6", "0"]'}, "3 prices for 2 outcomes"),
        ({"outcomePrices": '["0.4", "x"]'}, "outside [0, 1]"),
        ({"outcomePrices": '["1.4", "-0.4"]'}, "outside [0, 1]"),
        ({"outcomePrices": '{"a": 1}'}, "unreadable outcomePrices"),
        ({"outcomePrices": 17}, "unreadable outcomePrices"),
    ],
)
def test_bad_rows_raise_market_parse_error(overrides: dict[str, Any], message: str) -> None:
    row = binary_row(**overrides)
    if overrides.get("id", "") is None:
        row.pop("id", None)
    with pytest.raises(MarketParseError, match=message.replace("[", r"\[")) as info:
        parse_market(row)
    if "id" not in overrides:
        assert info.value.market_id == "900001"


def test_parse_rows_logs_and_skips_bad_rows(caplog: pytest.LogCaptureFixture) -> None:
    rows = [
        binary_row(id="1"),
        binary_row(id="2", outcomes="oops"),
        "not a row",
        binary_row(id="3"),
    ]
    with caplog.at_level(logging.WARNING):
        parsed = parse_rows(rows)
    assert [m.id for m in parsed.markets] == ["1", "3"]
    assert [e.market_id for e in parsed.errors] == ["2", None]
    assert "market 2" in caplog.text or " 2:" in caplog.text


def test_prices_parse_from_a_real_list_too() -> None:
    market = parse_market(binary_row(outcomePrices=["0.25", 0.75]))
    assert market.prices == (Decimal("0.25"), Decimal("0.75"))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from([*sorted(binary_row()), "events", "closedTime", "endDate", "negRisk"]),
    value=_JSON | st.just("__delete__"),
)
def test_any_field_mutation_gives_a_market_or_a_parse_error(key: str, value: Any) -> None:
    row = binary_row()
    if value == "__delete__":
        row.pop(key, None)
    else:
        row[key] = value
    try:
        market = parse_market(row)
    except MarketParseError as exc:
        reason = exc.reason
        market = None
    if market is None:
        assert reason
    else:
        assert market.id.isdigit()
        should_skip(market)
        _ = market.is_tradable


@given(st.decimals(min_value=0, max_value=1, allow_nan=False, places=8))
def test_price_strings_round_trip_exactly(price: Decimal) -> None:
    other = Decimal(1) - price
    row = binary_row(outcomePrices=json.dumps([str(price), str(other)]))
    assert parse_market(row).prices == (price, other)
