"""The category rule on every recorded Gamma fixture: what Gamma's fields give, market by
market (METHODOLOGY.md, "Where and when", records the tally)."""

from __future__ import annotations

from collections import Counter

from tests.sources.test_gamma_parse import FIXTURES, parse_fixture

# category -> markets, over all recorded fixtures (41 markets); None is "other"
EXPECTED = {
    "Politics": 18,
    "Crypto": 8,
    "Sports": 6,
    "Culture": 3,
    "Geopolitics": 2,
    "Economy": 1,
    "Weather": 1,
    "Business": 1,
    None: 1,
}


def test_every_fixture_market_gets_a_category_but_one() -> None:
    tally: Counter[str | None] = Counter()
    for path in sorted(FIXTURES.glob("*.json")):
        tally.update(market.category for market in parse_fixture(path.name).markets)
    assert dict(tally) == EXPECTED


def test_legacy_category_takes_the_tag_name() -> None:
    legacy = parse_fixture("gamma_market_legacy_2020_closed_prices_zero_zero.json").markets[0]
    assert legacy.category == "Politics"  # Gamma wrote "US-current-affairs"


def test_title_rules_cover_the_untagged_fixture_markets() -> None:
    parsed = parse_fixture("polymarket-agents__examples__ten_markets.json").markets
    by_question = {market.question: market.category for market in parsed}
    assert by_question["Will Brian Kim win the WSOP main event?"] == "Sports"
    assert by_question["NVIDIA largest company in July?"] == "Business"
    assert by_question["TikTok banned in the US in 2024?"] == "Politics"
    storms = next(q for q in by_question if "named storms" in q)
    assert by_question[storms] == "Weather"
