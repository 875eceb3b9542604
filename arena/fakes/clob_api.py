"""The HTTP surface of the fake CLOB: what it serves, routing, payload checks, and wire rendering.

:class:`ServedClob` is the state the surface reads (markets, books, faults, switches); the
functions take it (a :class:`~arena.fakes.clob.FakeClobWorld`, under its lock, from
``FakeClobWorld.handle``). Books are rendered the way the CLOB sends them (clob-api.md §2):
the ten keys in wire order, prices and sizes as decimal strings written exactly as stored,
``timestamp`` as an epoch-ms string, bids ascending and asks descending (best last), and the
``hash`` of :func:`~arena.sources.clob_parse.book_hash`. Errors are ``{"error": "..."}`` with
the server's messages (§5).

Not confirmed on the real server, and chosen here: a one-sided book has no midpoint (absent
from ``/midpoints``; ``/midpoint`` and ``/spread`` answer 404) and an empty side has no
``/price`` (404); an unknown condition id on ``/clob-markets`` answers 404
``{"error":"market not found"}``; duplicate tokens in a batch are answered once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from arena.domain.book import NO_FEE, FeeSchedule, Level, OrderBook
from arena.fakes.serving import FakeDrop, Reply
from arena.sources.clob_parse import book_hash

MAX_BATCH = 500
NO_BOOK = "No orderbook exists for the requested token id"
INVALID_TOKEN = "Invalid token id"
INVALID_PAYLOAD = "Invalid payload"
TOO_MANY = "Payload exceeds the limit"
HTML_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>{status} | clob.polymarket.com | Cloudflare</title>"
    "</head>\n<body><h1>Error {status}</h1><p>The web server reported an error.</p>"
    "</body></html>\n"
)


@dataclass
class Fault:
    """One scripted misbehaviour, used by the next request whose path starts with ``path``."""

    kind: str
    path: str = "/"
    retry_after: float | None = 1.0  # 429: the Retry-After header (None: no header)
    status: int = 502  # html: the status of the error page
    delay: float = 60.0  # timeout: how late the answer would come


@dataclass
class FakeClobMarket:
    """A binary market's CLOB record: its tokens and what ``/clob-markets`` reports."""

    condition_id: str
    yes_token: str
    no_token: str
    tick_size: Decimal
    min_order_size: Decimal = Decimal(5)
    neg_risk: bool = False
    fee: FeeSchedule = NO_FEE
    taker_only: bool = True
    accepting_orders: bool = True


class ServedClob:
    """What the fake CLOB serves (:class:`~arena.fakes.clob.FakeClobWorld` builds and moves
    it): the markets and their books, the scripted faults, and the switches that vary the
    answers."""

    def __init__(self, seed: int) -> None:
        self.seed = seed  # orders the shuffled batch answers
        self.markets: dict[str, FakeClobMarket] = {}
        self.books: dict[str, OrderBook] = {}
        self.faults: deque[Fault] = deque()
        self.batch_omits: set[str] = set()
        self.batch_limit = MAX_BATCH  # items a batch may hold; more -> 400
        self.overrides: dict[str, dict[str, Any]] = {}  # token id -> raw keys to replace
        self.hostile: dict[str, str] = {}  # token id -> the hostile book served (plant)


def text(value: Decimal) -> str:
    """A decimal as the wire writes it, digit for digit as stored (``0.430`` stays
    ``0.430``), never in exponent form."""
    return format(value, "f")


def render_levels(levels: tuple[Level, ...]) -> list[dict[str, str]]:
    return [{"price": text(level.price), "size": text(level.size)} for level in levels]


def render_book(book: OrderBook) -> dict[str, Any]:
    """The book's ``/book`` body, the ten keys in wire order; levels as stored (the world
    stores them worst to best)."""
    return {
        "market": book.market,
        "asset_id": book.token_id,
        "timestamp": str(book.timestamp),
        "hash": book.hash,
        "bids": render_levels(book.bids),
        "asks": render_levels(book.asks),
        "min_order_size": text(book.min_order_size),
        "tick_size": text(book.tick_size) if book.tick_size is not None else "",
        "neg_risk": book.neg_risk,
        "last_trade_price": "" if book.last_trade_price is None else text(book.last_trade_price),
    }


HOSTILE_BOOKS = (
    "huge_size",
    "long_timestamp",
    "long_hash",
    "zero_size",
    "crossed",
    "locked",
    "wrong_hash",
)
"""The hostile books the fake can serve in place of a token's honest one (issue 22, findings
2, 3 and 7); see :func:`hostile_body`."""

HUGE_SIZE = "1e1000000"  # decimal.Overflow in any arithmetic
LONG_TIMESTAMP = "1" + "0" * 24  # 25 digits: past a BIGINT
LONG_HASH = "f" * 200  # past the String(64) of book_hash
ZERO_HASH = "0" * 40


def hostile_body(body: dict[str, Any], kind: str) -> dict[str, Any]:
    """``body`` (a rendered book, levels worst to best) made hostile in one way:

    * ``huge_size``: the size at the best bid and the best ask is ``1e1000000``;
    * ``long_timestamp``: a 25-digit ``timestamp``;
    * ``long_hash``: a 200-character served ``hash``;
    * ``zero_size``: phantom levels of size 0 at ``1 - tick`` (bids) and ``tick`` (asks),
      last, where the best prices sit;
    * ``crossed``: a bid of 100 shares one tick above the best ask;
    * ``locked``: a bid of 100 shares at the best ask;
    * ``wrong_hash``: the served ``hash`` is forty zeros.

    Every kind but the two hash kinds serves the hash of the hostile body itself, so a client
    sees exactly one thing wrong."""
    if kind not in HOSTILE_BOOKS:
        raise ValueError(f"unknown hostile book {kind!r}; one of {HOSTILE_BOOKS}")
    body = {**body, "bids": list(body["bids"]), "asks": list(body["asks"])}
    tick = Decimal(body["tick_size"] or "0.01")
    best_ask = Decimal(body["asks"][-1]["price"]) if body["asks"] else None
    if kind == "huge_size":
        for side in ("bids", "asks"):
            if body[side]:
                body[side][-1] = {**body[side][-1], "size": HUGE_SIZE}
    elif kind == "long_timestamp":
        body["timestamp"] = LONG_TIMESTAMP
    elif kind == "zero_size":
        body["bids"].append({"price": text(1 - tick), "size": "0"})
        body["asks"].append({"price": text(tick), "size": "0"})
    elif kind in ("crossed", "locked"):
        if best_ask is None:
            raise ValueError("a crossed or locked book needs an ask")
        price = best_ask + tick if kind == "crossed" and best_ask + tick < 1 else best_ask
        body["bids"].append({"price": text(price), "size": "100"})
    if kind == "long_hash":
        body["hash"] = LONG_HASH
    elif kind == "wrong_hash":
        body["hash"] = ZERO_HASH
    else:
        body["hash"] = book_hash(body)
    return body


def served_book(world: ServedClob, book: OrderBook) -> dict[str, Any]:
    """The book as served: rendered, made hostile if a test planted a hostile kind
    (:meth:`~arena.fakes.clob.FakeClobWorld.plant`), with any raw keys a test asked to
    corrupt."""
    rendered = render_book(book)
    kind = world.hostile.get(book.token_id)
    if kind is not None:
        rendered = hostile_body(rendered, kind)
    for key, value in world.overrides.get(book.token_id, {}).items():
        if value is None:
            rendered.pop(key, None)
        else:
            rendered[key] = value
    return rendered


def take_fault(world: ServedClob, path: str) -> Fault | None:
    for fault in world.faults:
        if path.startswith(fault.path):
            world.faults.remove(fault)
            return fault
    return None


def fault_reply(fault: Fault) -> Reply | None:
    """The reply a fault stands for; ``None`` for a fault that delays the real answer."""
    if fault.kind == "500":
        return error_reply(500, "error getting the orderbook")
    if fault.kind == "429":
        status, headers, body = error_reply(429, "Too Many Requests")
        if fault.retry_after is not None:
            headers["Retry-After"] = f"{fault.retry_after:g}"
        return status, headers, body
    if fault.kind == "400":
        return error_reply(
            400, INVALID_PAYLOAD if fault.path.startswith("/books") else INVALID_TOKEN
        )
    if fault.kind == "html":
        return html_reply(fault.status)
    if fault.kind == "malformed":
        return 200, {"Content-Type": "application/json"}, b'[{"market":"0x8765'
    if fault.kind in ("drop", "connect_error"):
        raise FakeDrop(fault.kind)
    return None


def route(
    world: ServedClob, method: str, path: str, query: Mapping[str, list[str]], body: bytes
) -> Reply:
    if path == "/book" and method == "GET":
        return _book(world, query)
    if path == "/books":
        return _books(world, body) if method == "POST" else error_reply(400, INVALID_PAYLOAD)
    if path == "/midpoints" and method == "POST":
        return _midpoints(world, body)
    if method == "GET" and path in ("/midpoint", "/spread", "/price", "/tick-size"):
        return _derived(world, path, query)
    match = re.fullmatch(r"/clob-markets/([^/]+)", path)
    if match and method == "GET":
        return _clob_market(world, match.group(1))
    return error_reply(404, "not found")


def _book(world: ServedClob, query: Mapping[str, list[str]]) -> Reply:
    token = _first(query, "token_id")
    if not token:
        return error_reply(400, INVALID_TOKEN)
    book = world.books.get(token)
    if book is None:
        return error_reply(404, NO_BOOK)
    return json_reply(served_book(world, book))


def _books(world: ServedClob, body: bytes) -> Reply:
    tokens = _batch_tokens(body, world.batch_limit)
    if isinstance(tokens, tuple):
        return tokens
    found = [world.books[t] for t in dict.fromkeys(tokens) if _in_batch(world, t)]
    found.sort(key=lambda book: _shuffle_key(world.seed, book.token_id))
    return json_reply([served_book(world, book) for book in found])


def _midpoints(world: ServedClob, body: bytes) -> Reply:
    tokens = _batch_tokens(body, world.batch_limit)
    if isinstance(tokens, tuple):
        return tokens
    mids: dict[str, str] = {}
    for token in dict.fromkeys(tokens):
        mid = world.books[token].mid if _in_batch(world, token) else None
        if mid is not None:
            mids[token] = text(mid.normalize())
    return json_reply(mids)


def _derived(world: ServedClob, path: str, query: Mapping[str, list[str]]) -> Reply:
    token = _first(query, "token_id")
    if not token:
        return error_reply(400, INVALID_TOKEN)
    book = world.books.get(token)
    if path == "/tick-size":
        if book is None or book.tick_size is None:
            return error_reply(404, "market not found")
        return json_reply({"minimum_tick_size": json_number(book.tick_size)})
    if book is None:
        return error_reply(404, NO_BOOK)
    if path == "/price":
        side = (_first(query, "side") or "").upper()
        if side not in ("BUY", "SELL"):
            return error_reply(400, "Invalid side")
        price = book.best_bid if side == "BUY" else book.best_ask  # BUY: the best *bid*
        return error_reply(404, NO_BOOK) if price is None else json_reply({"price": text(price)})
    value = book.mid if path == "/midpoint" else book.spread
    if value is None:
        return error_reply(404, NO_BOOK)
    key = "mid" if path == "/midpoint" else "spread"
    return json_reply({key: text(value.normalize())})


def _clob_market(world: ServedClob, condition_id: str) -> Reply:
    market = world.markets.get(condition_id)
    if market is None:
        return error_reply(404, "market not found")
    charged = market.fee.rate > 0
    rendered: dict[str, Any] = {
        "t": [{"t": market.yes_token, "o": "Yes"}, {"t": market.no_token, "o": "No"}],
        "c": market.condition_id,
        "mos": json_number(market.min_order_size),
        "mts": json_number(market.tick_size),
    }
    if market.neg_risk:
        rendered["nr"] = True
    rendered.update({"mbf": 1000 if charged else 0, "tbf": 1000 if charged else 0})
    rendered["ao"] = market.accepting_orders
    if charged:
        rendered["fd"] = {
            "r": json_number(market.fee.rate),
            "e": json_number(market.fee.exponent),
            "to": market.taker_only,
        }
    return json_reply(rendered)


def _batch_tokens(body: bytes, limit: int) -> list[str] | Reply:
    """The token ids of a batch body ``[{"token_id": "..."}]``, or the 400 the server sends."""
    try:
        items = json.loads(body)
    except ValueError:
        return error_reply(400, INVALID_PAYLOAD)
    if not isinstance(items, list) or not all(
        isinstance(item, dict) and isinstance(item.get("token_id"), str) for item in items
    ):
        return error_reply(400, INVALID_PAYLOAD)
    if len(items) > limit:
        return error_reply(400, TOO_MANY)
    return [item["token_id"] for item in items]


def _in_batch(world: ServedClob, token: str) -> bool:
    return token in world.books and token not in world.batch_omits


def _shuffle_key(seed: int, token: str) -> bytes:
    """A fixed pseudo-random order, unrelated to the request's, as the server's is."""
    return hashlib.sha1(f"{seed}:{token}".encode()).digest()


def json_number(value: Decimal) -> int | float:
    """A decimal as a JSON number, the way the server writes ``mts``, ``mos`` and ``fd``
    (shortest form: ``0.04`` reads back as exactly ``Decimal("0.04")``)."""
    return int(value) if value == value.to_integral_value() else float(value)


def _first(query: Mapping[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def json_reply(body: Any) -> Reply:
    payload = json.dumps(body, separators=(",", ":")).encode()
    return 200, {"Content-Type": "application/json"}, payload


def error_reply(status: int, message: str) -> Reply:
    payload = json.dumps({"error": message}, separators=(",", ":")).encode()
    return status, {"Content-Type": "application/json"}, payload


def html_reply(status: int) -> Reply:
    page = HTML_PAGE.format(status=status).encode()
    return status, {"Content-Type": "text/html; charset=UTF-8"}, page
