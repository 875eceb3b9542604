"""The fake CLOB itself: books that hash like the real ones, the wire shapes, the NO mirror,
the API's errors and limits, and plausible books."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.domain.book import FeeSchedule, Level, OrderBook
from arena.fakes.clob import HOSTILE_BOOKS, FakeClobMarket, FakeClobWorld, plausible_book
from arena.fakes.serving import FakeDrop, FakeSlow
from arena.sources.clob import book_hash, parse_book
from arena.sources.clob_parse import WIRE_KEYS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clob"
BOOKS = sorted(p.name for p in FIXTURES.glob("book_*.json"))
SNAPSHOT_1 = "book_fed_oct2026_yes_negrisk_snapshot1_ts1791259305517.json"
SNAPSHOT_2 = "book_fed_oct2026_yes_negrisk_snapshot2_ts1791259402463.json"
RELATED = "related_endpoints_and_errors_2026-08-10.json"
ONE = Decimal(1)


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_bytes())


def call(
    world: FakeClobWorld, method: str, path: str, body: Any = None, **query: str
) -> tuple[int, dict[str, str], Any]:
    raw = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    status, headers, payload = world.handle(method, path, {k: [v] for k, v in query.items()}, raw)
    return status, headers, json.loads(payload)


def rebuild(world: FakeClobWorld, recorded: OrderBook) -> FakeClobMarket:
    """Set a recorded YES book up in the fake, at its recorded timestamp."""
    return world.add_market(
        recorded.bids,
        recorded.asks,
        tick_size=recorded.tick_size or Decimal("0.01"),
        condition_id=recorded.market,
        yes_token=recorded.token_id,
        min_order_size=recorded.min_order_size,
        neg_risk=recorded.neg_risk,
        last_trade_price=recorded.last_trade_price,
        timestamp=recorded.timestamp,
    )


@pytest.fixture
def world() -> FakeClobWorld:
    return FakeClobWorld(seed=11)


@pytest.fixture
def market(world: FakeClobWorld) -> FakeClobMarket:
    return world.add_plausible_market(Decimal("0.62"), fee=FeeSchedule(Decimal("0.05"), ONE))


# -- books as the real server writes them ----------------------------------------------------


@pytest.mark.parametrize("name", BOOKS)
def test_a_recorded_book_rebuilt_in_the_fake_hashes_as_recorded(
    world: FakeClobWorld, name: str
) -> None:
    raw = fixture(name)
    market = rebuild(world, parse_book(raw))
    status, _, body = world.handle("GET", "/book", {"token_id": [market.yes_token]})
    assert status == 200
    served = json.loads(body)
    assert served["hash"] == raw["hash"]
    assert served == raw
    assert body == json.dumps(raw, separators=(",", ":")).encode()  # byte for byte, compact


def test_a_deep_level_change_gives_the_next_recorded_snapshot(world: FakeClobWorld) -> None:
    first, second = parse_book(fixture(SNAPSHOT_1)), parse_book(fixture(SNAPSHOT_2))
    market = rebuild(world, first)
    (changed,) = [b for a, b in zip(first.bids, second.bids, strict=True) if a != b]
    world.now_ms = second.timestamp
    assert world.set_level(market.yes_token, "bids", changed.price, changed.size)
    assert world.books[market.yes_token] == second


def test_books_emit_the_ten_keys_in_wire_order(
    world: FakeClobWorld, market: FakeClobMarket
) -> None:
    for token in (market.yes_token, market.no_token):
        _, headers, body = call(world, "GET", "/book", token_id=token)
        assert headers["Content-Type"] == "application/json"
        assert tuple(body) == WIRE_KEYS
        assert all(
            isinstance(body[k], str) for k in WIRE_KEYS if k not in ("bids", "asks", "neg_risk")
        )
        assert body["timestamp"].isdigit() and len(body["timestamp"]) == 13
        assert all(set(lv) == {"price", "size"} for lv in body["bids"] + body["asks"])
        assert all(isinstance(v, str) for lv in body["bids"] + body["asks"] for v in lv.values())
        assert book_hash(body) == body["hash"]
        assert parse_book(body) == world.books[token]


def test_levels_run_worst_to_best(world: FakeClobWorld, market: FakeClobMarket) -> None:
    world.set_book(
        market.yes_token,
        bids=[Level(Decimal("0.5"), Decimal(9)), Level(Decimal("0.3"), Decimal(1))],
        asks=[Level(Decimal("0.7"), Decimal(4)), Level(Decimal("0.9"), Decimal(2))],
    )
    for token in (market.yes_token, market.no_token):
        _, _, body = call(world, "GET", "/book", token_id=token)
        bids = [Decimal(lv["price"]) for lv in body["bids"]]
        asks = [Decimal(lv["price"]) for lv in body["asks"]]
        assert bids == sorted(bids) and asks == sorted(asks, reverse=True)
        assert bids[-1] < asks[-1]


def test_the_no_book_mirrors_the_yes_book(world: FakeClobWorld, market: FakeClobMarket) -> None:
    yes, no = world.books[market.yes_token], world.books[market.no_token]
    assert no.bids == tuple(Level(ONE - lv.price, lv.size) for lv in yes.asks)
    assert no.asks == tuple(Level(ONE - lv.price, lv.size) for lv in yes.bids)
    assert no.last_trade_price == yes.last_trade_price is not None
    assert no.timestamp == yes.timestamp
    assert no.market == yes.market
    assert no.hash != yes.hash
    assert yes.mid is not None and no.mid == ONE - yes.mid
    assert no.spread == yes.spread


def test_setting_the_no_book_moves_the_yes_book(
    world: FakeClobWorld, market: FakeClobMarket
) -> None:
    world.set_book(
        market.no_token,
        bids=[Level(Decimal("0.4"), Decimal(10))],
        asks=[Level(Decimal("0.45"), Decimal(20))],
    )
    yes = world.books[market.yes_token]
    assert yes.bids == (Level(Decimal("0.55"), Decimal(20)),)
    assert yes.asks == (Level(Decimal("0.6"), Decimal(10)),)


def test_timestamp_and_hash_change_only_with_the_book(
    world: FakeClobWorld, market: FakeClobMarket
) -> None:
    yes = world.books[market.yes_token]
    world.advance(5_000)
    assert not world.set_book(market.yes_token, yes.bids, yes.asks)
    assert not world.set_book(market.no_token, *reversed_sides(world.books[market.no_token]))
    assert world.books[market.yes_token] == yes
    _, _, again = call(world, "GET", "/book", token_id=market.yes_token)
    assert (again["timestamp"], again["hash"]) == (str(yes.timestamp), yes.hash)

    deep = yes.bids[0]
    assert world.set_level(market.yes_token, "bids", deep.price, deep.size + 1)
    moved = world.books[market.yes_token]
    assert moved.timestamp == yes.timestamp + 5_000
    assert moved.hash != yes.hash
    assert world.books[market.no_token].timestamp == moved.timestamp
    assert world.set_level(market.yes_token, "bids", deep.price, Decimal(0))  # removed
    assert world.books[market.yes_token].timestamp > moved.timestamp  # strictly later


def reversed_sides(book: OrderBook) -> tuple[tuple[Level, ...], tuple[Level, ...]]:
    return tuple(reversed(book.bids)), tuple(reversed(book.asks))


def test_a_book_the_clob_could_not_hold_is_refused(world: FakeClobWorld) -> None:
    crossed = ([Level(Decimal("0.5"), ONE)], [Level(Decimal("0.5"), ONE)])
    with pytest.raises(ValueError, match="crossed"):
        world.add_market(*crossed)
    with pytest.raises(ValueError, match="grid"):
        world.add_market([Level(Decimal("0.505"), ONE)], [])
    with pytest.raises(ValueError, match="positive"):
        world.add_market([Level(Decimal("0.5"), Decimal(0))], [])
    assert world.markets == {} and world.books == {}


# -- errors and batches ----------------------------------------------------------------------


def test_book_errors_match_the_recorded_bodies(world: FakeClobWorld) -> None:
    recorded = fixture(RELATED)["responses"]
    assert call(world, "GET", "/book") == (
        400,
        {"Content-Type": "application/json"},
        recorded["GET /book (token_id omitted, HTTP 400)"],
    )
    for token in ("not-a-real-token", "0", "9" * 77):
        status, _, body = call(world, "GET", "/book", token_id=token)
        assert (status, body) == (404, recorded["GET /book?token_id=0 (HTTP 404)"])


def test_closed_markets_and_removed_books_404(world: FakeClobWorld, market: FakeClobMarket) -> None:
    world.close_market(market.condition_id)
    for token in (market.yes_token, market.no_token):
        assert call(world, "GET", "/book", token_id=token)[0] == 404
    _, _, info = call(world, "GET", f"/clob-markets/{market.condition_id}")
    assert info["ao"] is False


def test_batch_limits_and_payload_errors(world: FakeClobWorld, market: FakeClobMarket) -> None:
    items = [{"token_id": market.yes_token}] * 500
    assert call(world, "POST", "/books", items)[0] == 200
    too_many = [*items, {"token_id": market.no_token}]
    for path in ("/books", "/midpoints"):
        assert call(world, "POST", path, too_many)[::2] == (
            400,
            {"error": "Payload exceeds the limit"},
        )
        for bad in (b"{not json", {"token_id": market.yes_token}, [{"id": "1"}], [{"token_id": 1}]):
            assert call(world, "POST", path, bad)[::2] == (400, {"error": "Invalid payload"})
    assert call(world, "POST", "/books", [])[::2] == (200, [])
    assert call(world, "GET", "/books", token_ids=market.yes_token)[::2] == (
        400,
        {"error": "Invalid payload"},
    )


def test_batches_omit_unknown_tokens_and_do_not_keep_the_request_order(
    world: FakeClobWorld,
) -> None:
    markets = [world.add_plausible_market(Decimal("0.2")) for _ in range(10)]
    tokens = [m.yes_token for m in markets]
    request = [{"token_id": t} for t in [*tokens, "9" * 77, tokens[0]]]
    _, _, first = call(world, "POST", "/books", request)
    _, _, second = call(world, "POST", "/books", request)
    answered = [book["asset_id"] for book in first]
    assert sorted(answered) == sorted(tokens)  # unknown omitted, the duplicate answered once
    assert answered != tokens
    assert first == second  # deterministic
    world.omit_from_batches(tokens[3])
    _, _, fewer = call(world, "POST", "/books", request)
    assert tokens[3] not in {book["asset_id"] for book in fewer}
    assert call(world, "GET", "/book", token_id=tokens[3])[0] == 200


def test_midpoints_and_the_derived_endpoints(world: FakeClobWorld, market: FakeClobMarket) -> None:
    yes = world.books[market.yes_token]
    _, _, mids = call(
        world, "POST", "/midpoints", [{"token_id": market.yes_token}, {"token_id": "1"}]
    )
    assert mids == {market.yes_token: str(yes.mid)}
    assert call(world, "GET", "/midpoint", token_id=market.yes_token)[2] == {"mid": str(yes.mid)}
    assert call(world, "GET", "/spread", token_id=market.yes_token)[2] == {
        "spread": str(yes.spread)
    }
    assert call(world, "GET", "/price", token_id=market.yes_token, side="BUY")[2] == {
        "price": str(yes.best_bid)  # BUY answers the best bid
    }
    assert call(world, "GET", "/price", token_id=market.yes_token, side="SELL")[2] == {
        "price": str(yes.best_ask)
    }
    assert call(world, "GET", "/price", token_id=market.yes_token, side="x")[::2] == (
        400,
        {"error": "Invalid side"},
    )
    assert call(world, "GET", "/tick-size", token_id=market.yes_token)[2] == {
        "minimum_tick_size": 0.01
    }


def test_clob_market_info_has_the_compact_shape(
    world: FakeClobWorld, market: FakeClobMarket
) -> None:
    recorded = fixture("clob_markets_info_xi_fee_details.json")
    _, _, info = call(world, "GET", f"/clob-markets/{market.condition_id}")
    assert info["c"] == market.condition_id
    assert info["t"] == [{"t": market.yes_token, "o": "Yes"}, {"t": market.no_token, "o": "No"}]
    assert info["fd"] == {"r": 0.05, "e": 1, "to": True}
    assert set(info) <= set(recorded) | {"nr"}
    assert (info["mos"], info["mts"], info["mbf"], info["tbf"]) == (5, 0.01, 1000, 1000)
    free = world.add_plausible_market(Decimal("0.3"), neg_risk=True)
    _, _, free_info = call(world, "GET", f"/clob-markets/{free.condition_id}")
    assert "fd" not in free_info
    assert (free_info["mbf"], free_info["nr"]) == (0, True)
    assert call(world, "GET", "/clob-markets/0xnope")[0] == 404


# -- faults and the request log ----------------------------------------------------------------


def test_faults_are_used_once_in_order(world: FakeClobWorld, market: FakeClobMarket) -> None:
    world.fail("429", retry_after=3)
    world.fail("html", status=502)
    world.fail("timeout", delay=9)
    world.fail("drop")
    status, headers, _ = world.handle("GET", "/book", {"token_id": [market.yes_token]})
    assert (status, headers["Retry-After"]) == (429, "3")
    status, headers, page = world.handle("GET", "/book", {"token_id": [market.yes_token]})
    assert status == 502 and headers["Content-Type"].startswith("text/html")
    assert page.startswith(b"<!DOCTYPE html>")
    with pytest.raises(FakeSlow) as slow:
        world.handle("GET", "/book", {"token_id": [market.yes_token]})
    assert slow.value.delay == 9 and slow.value.reply[0] == 200
    with pytest.raises(FakeDrop):
        world.handle("GET", "/book", {"token_id": [market.yes_token]})
    assert world.handle("GET", "/book", {"token_id": [market.yes_token]})[0] == 200
    with pytest.raises(ValueError, match="unknown fault"):
        world.fail("teapot")


def test_outage_latency_and_request_counts(world: FakeClobWorld, market: FakeClobMarket) -> None:
    world.outage = True
    assert world.handle("GET", "/book", {"token_id": [market.yes_token]})[0] == 503
    world.outage = False
    world.latency = 0.25
    with pytest.raises(FakeSlow) as slow:
        world.handle("POST", "/books", {}, b"[]")
    assert slow.value.delay == 0.25
    assert world.count("/book") == 1 and world.count("/books", "POST") == 1
    assert world.counts() == {"GET /book": 1, "POST /books": 1}
    assert world.requests[-1].body == b"[]"


# -- plausible books -----------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    cents=st.integers(min_value=1, max_value=999),
    tick=st.sampled_from([Decimal("0.01"), Decimal("0.001")]),
    depth=st.integers(min_value=500, max_value=500_000),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_plausible_books_look_like_live_ones(
    cents: int, tick: Decimal, depth: int, seed: int
) -> None:
    price = Decimal(cents) / 1000
    bids, asks = plausible_book(price, tick, Decimal(depth), random.Random(seed))
    best_bid, best_ask = bids[-1].price, asks[-1].price
    assert (best_ask - best_bid) in (tick, 2 * tick)
    if 3 * tick <= price <= ONE - 3 * tick:
        assert best_bid <= price <= best_ask
    assert [lv.price for lv in bids] == sorted(lv.price for lv in bids)
    assert [lv.price for lv in asks] == sorted((lv.price for lv in asks), reverse=True)
    for side in (bids, asks):
        assert all(lv.price % tick == 0 and tick <= lv.price <= ONE - tick for lv in side)
        assert all(lv.size >= 5 for lv in side)
        outward = [lv.size for lv in reversed(side)]  # from the touch out
        assert outward == sorted(outward, reverse=True)  # thinning away from the touch
        assert str(side[0].price) == format(side[0].price.normalize(), "f")
        if len(side) == 8:
            notional = sum(lv.price * lv.size for lv in side)
            assert abs(notional - depth) <= depth / 50 + 8 * 5


@settings(max_examples=100, deadline=None)
@given(
    cents=st.integers(min_value=50, max_value=950),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_thin_books_empty_after_a_few_hundred_dollars(cents: int, seed: int) -> None:
    price = Decimal(cents) / 1000
    bids, asks = plausible_book(
        price, Decimal("0.001"), Decimal(50_000), random.Random(seed), thin=True
    )
    for side in (bids, asks):
        near = list(reversed(side))[:3]
        dollars = [lv.price * lv.size for lv in near]
        assert all(d <= 121 for d in dollars)
        assert sum(dollars) <= 363
        assert sum(lv.price * lv.size for lv in side) > 10 * sum(dollars)  # depth sits further out


def test_a_plausible_market_is_consistent_on_both_tokens(world: FakeClobWorld) -> None:
    market = world.add_plausible_market(Decimal("0.97"), tick_size=Decimal("0.001"), thin=True)
    yes, no = world.books[market.yes_token], world.books[market.no_token]
    assert yes.last_trade_price in (yes.best_bid, yes.best_ask)
    assert yes.spread == no.spread
    assert len(market.yes_token) >= 77 and market.yes_token.isdigit()
    assert parse_book(world.rendered(market.no_token)) == no


# -- hostile books (issue 22) ----------------------------------------------------------------


def test_each_hostile_book_changes_only_what_it_names(
    world: FakeClobWorld, market: FakeClobMarket
) -> None:
    """The hash kinds keep the book and serve a wrong hash; the others carry the hash of their
    own body, so a client sees exactly one thing wrong. ``None`` serves the book honestly."""
    token = market.yes_token
    honest = world.rendered(token)
    served = {}
    for kind in HOSTILE_BOOKS:
        world.plant(token, kind)
        served[kind] = body = world.served(token)
        assert call(world, "GET", "/book", token_id=token)[2] == body
        if kind in ("wrong_hash", "long_hash"):
            assert body["hash"] != book_hash(body)
            assert {**body, "hash": ""} == {**honest, "hash": ""}
        else:
            assert body["hash"] == book_hash(body) != honest["hash"]
    assert served["huge_size"]["asks"][-1]["size"] == "1e1000000"
    assert len(served["long_timestamp"]["timestamp"]) == 25
    assert len(served["long_hash"]["hash"]) == 200
    assert served["zero_size"]["bids"][-1] == {"price": "0.99", "size": "0"}
    bid, ask = (Decimal(served["crossed"][s][-1]["price"]) for s in ("bids", "asks"))
    assert bid > ask
    bid, ask = (Decimal(served["locked"][s][-1]["price"]) for s in ("bids", "asks"))
    assert bid == ask
    world.plant(token, None)
    assert world.served(token) == honest
    with pytest.raises(ValueError, match="unknown hostile book"):
        world.plant(token, "nonsense")
