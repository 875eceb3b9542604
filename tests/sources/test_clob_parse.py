"""Reading recorded CLOB bodies: books, the server's hash, fees, midpoints."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from arena.domain.book import NO_FEE, FeeSchedule, Level, TradeSide
from arena.errors import BookUnusable, ClobError
from arena.fakes.clob_api import hostile_body
from arena.sources.clob import book_hash, parse_book, parse_fee_schedule
from arena.sources.clob_parse import WIRE_KEYS, parse_midpoints

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clob"
FED = "book_fed_negrisk_yes_tick0.01_2026-08-10.json"
XI = "book_xi_yes_tick0.001_2026-10-06.json"
SNAPSHOT_1 = "book_fed_oct2026_yes_negrisk_snapshot1_ts1791259305517.json"
SNAPSHOT_2 = "book_fed_oct2026_yes_negrisk_snapshot2_ts1791259402463.json"
BOOKS = (FED, XI, SNAPSHOT_1, SNAPSHOT_2)
RECORDED_HASHES = {
    FED: "4f5acf63ca0bba3aad4d9b888c6a05614ce9cf7a",
    XI: "6bd013d5f211e2eaecf60fbf357b1f936422049f",
    SNAPSHOT_1: "5a181104ed750420c6bc2e0ada7131f34b969d78",
}


def load(name: str) -> Any:
    """A fixture decoded as the client decodes bodies (JSON numbers as exact decimals)."""
    return json.loads((FIXTURES / name).read_bytes(), parse_float=Decimal)


def minimal_book(**changes: Any) -> dict[str, Any]:
    """A small well-formed book with ``changes`` applied (``None`` removes a key)."""
    raw: dict[str, Any] = {
        "market": "0x" + "ab" * 32,
        "asset_id": "1" * 77,
        "timestamp": "1791258810641",
        "hash": "0" * 40,
        "bids": [{"price": "0.41", "size": "10"}, {"price": "0.42", "size": "5.5"}],
        "asks": [{"price": "0.44", "size": "7"}, {"price": "0.43", "size": "12.25"}],
        "min_order_size": "5",
        "tick_size": "0.01",
        "neg_risk": False,
        "last_trade_price": "0.43",
    }
    for key, value in changes.items():
        if value is None:
            raw.pop(key)
        else:
            raw[key] = value
    return raw


@pytest.mark.parametrize("name", BOOKS)
def test_every_recorded_book_parses_exactly(name: str) -> None:
    raw = load(name)
    book = parse_book(raw)
    assert book.token_id == raw["asset_id"]
    assert book.market == raw["market"]
    assert book.timestamp == int(raw["timestamp"])
    assert book.hash == raw["hash"]
    assert [(str(lv.price), str(lv.size)) for lv in book.bids] == [
        (lv["price"], lv["size"]) for lv in raw["bids"]
    ]
    assert [(str(lv.price), str(lv.size)) for lv in book.asks] == [
        (lv["price"], lv["size"]) for lv in raw["asks"]
    ]
    assert book.min_order_size == Decimal(5)
    assert book.tick_size == Decimal(raw["tick_size"])
    assert book.neg_risk is raw["neg_risk"]
    assert str(book.last_trade_price) == raw["last_trade_price"]  # "0.430" keeps its zero


@pytest.mark.parametrize("name", BOOKS)
def test_book_hash_reproduces_the_recorded_hash(name: str) -> None:
    raw = load(name)
    assert list(raw) == list(WIRE_KEYS)
    assert book_hash(raw) == raw["hash"]
    if name in RECORDED_HASHES:
        assert raw["hash"] == RECORDED_HASHES[name]


def test_book_hash_sees_every_character() -> None:
    raw = load(FED)
    assert book_hash({**raw, "last_trade_price": "0.43"}) != raw["hash"]  # was "0.430"
    assert book_hash({**raw, "hash": "anything"}) == raw["hash"]  # the hash field is blanked
    deeper = json.loads(json.dumps(raw))
    deeper["bids"][0]["size"] = "2260866.9"
    assert book_hash(deeper) != raw["hash"]


@pytest.mark.parametrize("name", BOOKS)
def test_best_prices_are_computed_though_they_come_last(name: str) -> None:
    book = parse_book(load(name))
    assert book.best_bid == max(lv.price for lv in book.bids) == book.bids[-1].price
    assert book.best_ask == min(lv.price for lv in book.asks) == book.asks[-1].price
    assert book.bids[0].price < book.best_bid < book.best_ask < book.asks[0].price


def test_touch_of_the_recorded_books() -> None:
    fed, xi = parse_book(load(FED)), parse_book(load(XI))
    assert (fed.best_bid, fed.best_ask) == (Decimal("0.42"), Decimal("0.43"))
    assert (fed.bids[0].price, fed.asks[0].price) == (Decimal("0.01"), Decimal("0.99"))
    assert (xi.best_bid, xi.best_ask) == (Decimal("0.024"), Decimal("0.025"))
    assert xi.size_at(xi.best_ask, TradeSide.BUY) == Decimal("3563.48")
    assert fed.size_at(fed.best_bid, TradeSide.SELL) == Decimal("95.09")


def test_the_recorded_related_endpoints_agree_with_the_book() -> None:
    book = parse_book(load(FED))
    bodies = load("related_endpoints_and_errors_2026-08-10.json")["responses"]
    assert book.mid == Decimal(bodies["GET /midpoint?token_id=<fed_yes>"]["mid"])
    assert book.spread == Decimal(bodies["GET /spread?token_id=<fed_yes>"]["spread"])
    assert book.best_bid == Decimal(bodies["GET /price?token_id=<fed_yes>&side=BUY"]["price"])
    assert book.best_ask == Decimal(bodies["GET /price?token_id=<fed_yes>&side=SELL"]["price"])


def test_token_ids_stay_strings_digit_for_digit() -> None:
    raw = load(SNAPSHOT_1)
    book = parse_book(raw)
    token = "111061902544814266207267295505639408607400625795891618462682726460921782993748"
    assert book.token_id == raw["asset_id"] == token
    assert isinstance(book.token_id, str)
    assert len(book.token_id) == 78
    assert str(float(token)) != token  # what a float would have made of it


def test_numeric_asset_id_is_refused() -> None:
    with pytest.raises(ClobError, match="asset_id"):
        parse_book(minimal_book(asset_id=int("1" * 77)))


def test_snapshots_differ_deep_in_the_book_and_in_hash_and_timestamp() -> None:
    first, second = parse_book(load(SNAPSHOT_1)), parse_book(load(SNAPSHOT_2))
    assert first.token_id == second.token_id
    assert first.hash != second.hash
    assert second.timestamp - first.timestamp == 1791259402463 - 1791259305517
    assert first.asks == second.asks
    changed = [
        (a.price, a.size, b.size) for a, b in zip(first.bids, second.bids, strict=True) if a != b
    ]
    assert len(changed) == 1
    assert changed[0][0] == Decimal("0.75")
    assert first.best_bid == second.best_bid  # the touch did not move, the hash did


def test_fee_details_fixture_reads_exactly() -> None:
    raw = load("clob_markets_info_xi_fee_details.json")
    fee = parse_fee_schedule(raw, raw["c"])
    assert fee == FeeSchedule(rate=Decimal("0.04"), exponent=Decimal(1))
    assert str(fee.rate) == "0.04"  # never through a float
    assert fee.per_share(Decimal("0.5")) == Decimal("0.0100")


def test_missing_fee_details_mean_no_fee() -> None:
    raw = load("clob_markets_info_xi_fee_details.json")
    del raw["fd"]
    assert parse_fee_schedule(raw, raw["c"]) is NO_FEE


@pytest.mark.parametrize(
    "details", ["0.04", {"e": 1}, {"r": "x", "e": 1}, {"r": -1, "e": 1}, {"r": 0.04, "e": 0}]
)
def test_unreadable_fee_details_fail_naming_the_market(details: Any) -> None:
    with pytest.raises(ClobError, match="market 0xcafe"):
        parse_fee_schedule({"c": "0xcafe", "fd": details}, "0xcafe")


@pytest.mark.parametrize("value", ["", None])
def test_empty_or_missing_last_trade_price_is_none(value: str | None) -> None:
    assert parse_book(minimal_book(last_trade_price=value)).last_trade_price is None  # None: absent


def test_empty_or_absent_sides_are_empty() -> None:
    book = parse_book(minimal_book(bids=[], asks=None))
    assert (book.bids, book.asks) == ((), ())
    assert (book.best_bid, book.best_ask, book.mid) == (None, None, None)
    null_sides = minimal_book()
    null_sides["bids"] = None
    assert parse_book(null_sides).bids == ()


def test_levels_are_exact_decimals() -> None:
    book = parse_book(minimal_book())
    assert book.asks == (
        Level(Decimal("0.44"), Decimal(7)),
        Level(Decimal("0.43"), Decimal("12.25")),
    )
    assert all(isinstance(lv.price, Decimal) for lv in book.bids + book.asks)
    assert book.mid == Decimal("0.425")
    assert book.timestamp == 1791258810641


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"bids": [{"price": "abc", "size": "1"}]}, r"bids\[0\].price"),
        ({"asks": [{"price": "0.5"}]}, r"asks\[0\].size"),
        ({"asks": [{"price": "1.5", "size": "1"}]}, "inside"),
        ({"bids": [{"price": "0.4", "size": "-1"}]}, "negative"),
        ({"bids": [{"price": "NaN", "size": "1"}]}, "finite"),
        ({"bids": {"price": "0.4"}}, "list"),
        ({"timestamp": "2026-10-06T03:53:00Z"}, "timestamp"),
        ({"market": None}, "market"),
        ({"neg_risk": "false"}, "neg_risk"),
        ({"last_trade_price": "n/a"}, "last_trade_price"),
    ],
)
def test_an_unreadable_book_fails_naming_the_token(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(ClobError, match=f"token {'1' * 77}: .*{reason}"):
        parse_book(minimal_book(**changes))


def test_midpoints_are_exact_and_restricted_to_the_tokens_asked() -> None:
    body = {"1" * 77: "0.0245", "2" * 77: Decimal("0.5"), "3" * 77: "0.1"}
    assert parse_midpoints(body, {"1" * 77, "2" * 77}) == {
        "1" * 77: Decimal("0.0245"),
        "2" * 77: Decimal("0.5"),
    }
    with pytest.raises(ClobError, match="token 1"):
        parse_midpoints({"1" * 77: ""}, {"1" * 77})


# -- the storable rule at the edge (issue 22) ------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("huge_size", r"size 1E\+1000000 is not a storable size"),
        ("long_timestamp", "timestamp 1000000000000000000000000"),
        ("crossed", "crossed book: best bid 0.44 >= best ask 0.43"),
        ("locked", "locked book: best bid 0.43 >= best ask 0.43"),
    ],
)
def test_a_hostile_book_is_refused_at_the_edge_naming_the_token(kind: str, reason: str) -> None:
    raw = hostile_body(json.loads((FIXTURES / FED).read_bytes()), kind)
    with pytest.raises(BookUnusable, match=reason) as refused:
        parse_book(raw)
    assert refused.value.token_id == raw["asset_id"]


@pytest.mark.parametrize(
    "changes",
    [
        {"bids": [{"price": "0.4", "size": "1e18"}]},  # Shares: 18 integer digits
        {"bids": [{"price": "0.4", "size": "0.0000001"}]},  # ... and 6 places
        {"bids": [{"price": "0.4", "size": "1e-1000000"}]},
        {"asks": [{"price": "0.12345678901", "size": "1"}]},  # Price: 10 places
        {"asks": [{"price": "1e-1000000", "size": "1"}]},
        {"timestamp": "9223372036854775808"},  # 2^63
        {"timestamp": "9" * 5000},  # past int()'s digit limit: refused unread
        {"timestamp": -1},
        {"min_order_size": "1e1000000"},
        {"tick_size": "1e-1000000"},
        {"last_trade_price": "1e1000000"},
    ],
)
def test_numbers_the_database_cannot_hold_exactly_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(BookUnusable, match=f"token {'1' * 77}: "):
        parse_book(minimal_book(**changes))


def test_the_widest_storable_values_are_read() -> None:
    book = parse_book(
        minimal_book(
            timestamp=str(2**63 - 1),
            bids=[{"price": "0.0000000001", "size": "999999999999999999.999999"}],
        )
    )
    assert book.timestamp == 2**63 - 1 and book.bids[0].size == Decimal("999999999999999999.999999")


def test_levels_of_size_zero_do_not_exist() -> None:
    raw = hostile_body(json.loads((FIXTURES / FED).read_bytes()), "zero_size")
    book = parse_book(raw)
    honest = parse_book(load(FED))
    assert (book.bids, book.asks) == (honest.bids, honest.asks)
    assert (book.best_bid, book.best_ask) == (honest.best_bid, honest.best_ask)


def test_the_hash_kept_is_computed_and_the_served_one_only_compared() -> None:
    raw = load(FED)
    honest = parse_book(raw)
    assert honest.hash == honest.served_hash == RECORDED_HASHES[FED]
    assert not honest.hash_mismatch
    for served in ("0" * 40, "f" * 200, None, 12):
        book = parse_book({**raw, "hash": served})
        assert book.hash == RECORDED_HASHES[FED] and book.hash_mismatch
        assert book.served_hash == (served if isinstance(served, str) else None)


def test_any_received_book_has_a_hash() -> None:
    """A JSON number where a string belongs, or a lone surrogate, still hashes."""
    odd = minimal_book(market="\ud800", min_order_size=Decimal("5"))
    assert len(book_hash(odd)) == 40


def test_the_hash_is_the_compact_json_of_the_wire_keys() -> None:
    """The hand-written text is exactly json.dumps's, escapes and non-ASCII included."""
    import hashlib

    odd = minimal_book(market='0x"é\n\\\x01€', last_trade_price="", neg_risk=True)
    odd["bids"] = [{"size": "1", "price": "0.4", "extra": "x"}, "not a level"]
    ordered = {key: odd.get(key) for key in WIRE_KEYS} | {"hash": ""}
    ordered["bids"] = [{"price": "0.4", "size": "1"}, "not a level"]
    text = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False)
    assert book_hash(odd) == hashlib.sha1(text.encode()).hexdigest()
