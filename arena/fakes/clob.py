"""A fake Polymarket CLOB: order books per token, served with the real API's shapes and faults.

:class:`FakeClobWorld` holds binary markets. A market is set up by its YES book; the NO book
is derived from it as on the real exchange (clob-api.md §6): NO bids are the YES asks at
``1 - p`` and NO asks the YES bids at ``1 - p``, with the same sizes, the same market-level
``last_trade_price`` and the same ``timestamp``. Each book carries the ``timestamp`` of its last
change (a fake epoch-ms clock) and the server's ``hash``; both change only when the book does.

:meth:`FakeClobWorld.handle` answers ``GET /book``, ``POST /books``, ``POST /midpoints``,
``GET /midpoint``, ``/price``, ``/spread``, ``/tick-size`` and ``GET /clob-markets/{cid}``
(see :mod:`arena.fakes.clob_api` for the wire rules). Scripted faults
(:meth:`FakeClobWorld.fail`) make it misbehave once each: 500, 429 with ``Retry-After``, a 400,
an HTML error page, a malformed body, a timeout, a dropped or refused connection. ``outage``
fails every request, ``latency`` delays every answer, ``batch_limit`` lowers the 500-item cap,
:meth:`FakeClobWorld.omit_from_batches` drops tokens from batch answers,
:meth:`FakeClobWorld.remove_book` makes a book 404 and :meth:`FakeClobWorld.corrupt` serves
raw keys a client cannot read, and :meth:`FakeClobWorld.plant` serves one of the
:data:`HOSTILE_BOOKS` in place of a token's book (a huge size, a 25-digit timestamp, a long or
wrong hash, phantom levels of size 0, a crossed or locked touch). Every request is recorded
(:attr:`FakeClobWorld.requests`, :meth:`FakeClobWorld.count`).

Two transports serve it: :meth:`FakeClobWorld.mock_transport` (in-process) and
:func:`serve_fake_clob` (real HTTP on 127.0.0.1); :func:`plausible_book` builds a book around a
price for the demo and the benchmarks (in :mod:`arena.fakes.clob_books`, re-exported here).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import httpx

from arena.domain.book import NO_FEE, FeeSchedule, Level, OrderBook
from arena.fakes.clob_api import (
    HOSTILE_BOOKS,
    FakeClobMarket,
    Fault,
    ServedClob,
    fault_reply,
    html_reply,
    render_book,
    route,
    served_book,
    take_fault,
)
from arena.fakes.clob_books import BookSides, plausible_book
from arena.fakes.serving import FakeSlow, Reply, mock_transport, serve_body_handler
from arena.sources.clob_parse import book_hash

__all__ = [
    "FAULT_KINDS",
    "HOSTILE_BOOKS",
    "BookSides",
    "FakeClobMarket",
    "FakeClobWorld",
    "Fault",
    "RecordedRequest",
    "plausible_book",
    "serve_fake_clob",
]

ONE = Decimal(1)
ZERO = Decimal(0)
CENT = Decimal("0.01")
START_MS = 1_791_000_000_000  # the fake clock's start: 2026-10-03, epoch milliseconds
FAULT_KINDS = ("500", "429", "400", "html", "malformed", "timeout", "drop", "connect_error")


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes


class FakeClobWorld(ServedClob):
    """A seeded fake CLOB with no markets; add them with :meth:`add_market` or
    :meth:`add_plausible_market`."""

    def __init__(self, seed: int = 0, start_ms: int = START_MS) -> None:
        super().__init__(seed)
        self.rng = random.Random(seed)
        self.now_ms = start_ms
        self.requests: list[RecordedRequest] = []
        self.outage = False  # every request answers an HTML 503
        self.latency = 0.0  # seconds every answer is delayed
        self._market_of: dict[str, FakeClobMarket] = {}  # token id -> market
        self._last_stamp = 0
        self._lock = threading.RLock()

    # -- building the world ------------------------------------------------------------------

    def add_market(
        self,
        bids: Iterable[Level],
        asks: Iterable[Level],
        *,
        tick_size: Decimal = CENT,
        condition_id: str | None = None,
        yes_token: str | None = None,
        no_token: str | None = None,
        min_order_size: Decimal = Decimal(5),
        neg_risk: bool = False,
        last_trade_price: Decimal | None = None,
        fee: FeeSchedule = NO_FEE,
        timestamp: int | None = None,
    ) -> FakeClobMarket:
        """A binary market whose YES book holds ``bids`` and ``asks`` (any order); the NO book
        is derived. Ids not given are drawn from the world's random generator."""
        sides = _wire_order(BookSides(tuple(bids), tuple(asks)), tick_size)  # refuse before adding
        with self._lock:
            market = FakeClobMarket(
                condition_id=condition_id or "0x" + self.rng.randbytes(32).hex(),
                yes_token=yes_token or self.new_token_id(),
                no_token=no_token or self.new_token_id(),
                tick_size=tick_size,
                min_order_size=min_order_size,
                neg_risk=neg_risk,
                fee=fee,
            )
            if market.condition_id in self.markets:
                raise ValueError(f"market {market.condition_id} exists already")
            if {market.yes_token, market.no_token} & self._market_of.keys():
                raise ValueError("token id in use by another market")
            self.markets[market.condition_id] = market
            self._market_of[market.yes_token] = self._market_of[market.no_token] = market
            self._store(market, sides, last_trade_price, timestamp)
            return market

    def add_plausible_market(
        self,
        price: Decimal,
        *,
        tick_size: Decimal = CENT,
        depth_usd: Decimal = Decimal(20_000),
        thin: bool = False,
        fee: FeeSchedule = NO_FEE,
        neg_risk: bool = False,
    ) -> FakeClobMarket:
        """A market whose YES book is a :func:`plausible_book` around ``price``; its last
        trade is at the touch."""
        with self._lock:
            sides = plausible_book(price, tick_size, depth_usd, self.rng, thin=thin)
            last = self.rng.choice((sides.bids[-1].price, sides.asks[-1].price))
            return self.add_market(
                *sides,
                tick_size=tick_size,
                neg_risk=neg_risk,
                last_trade_price=last,
                fee=fee,
            )

    def new_token_id(self) -> str:
        """A uint256-sized decimal token id (77-78 digits), as the CLOB's are."""
        return str(self.rng.randrange(10**76, 10**78))

    # -- changing books ----------------------------------------------------------------------

    def set_book(
        self,
        token_id: str,
        bids: Iterable[Level],
        asks: Iterable[Level],
        *,
        last_trade_price: Decimal | None = None,
        timestamp: int | None = None,
    ) -> bool:
        """Replace a token's book (YES or NO: the other is mirrored). ``last_trade_price``
        ``None`` keeps the current one. Returns whether anything changed: an identical book
        keeps its ``timestamp`` and ``hash``."""
        with self._lock:
            market = self._market(token_id)
            sides = BookSides(tuple(bids), tuple(asks))
            if token_id == market.no_token:
                sides = _mirror(sides)
            if last_trade_price is None:
                current = self.books.get(market.yes_token) or self.books.get(market.no_token)
                last_trade_price = current.last_trade_price if current else None
            return self._store(market, sides, last_trade_price, timestamp)

    def set_level(self, token_id: str, side: str, price: Decimal, size: Decimal) -> bool:
        """Set the size resting at ``price`` on ``side`` (``"bids"`` or ``"asks"``) of a
        token's book; size 0 removes the level. Returns whether the book changed."""
        if side not in ("bids", "asks"):
            raise ValueError(f"side must be 'bids' or 'asks', not {side!r}")
        with self._lock:
            book = self._current(token_id)
            levels = {level.price: level for level in getattr(book, side)}
            if size > ZERO:
                levels[price] = Level(price, size)
            else:
                levels.pop(price, None)
            bids = tuple(levels.values()) if side == "bids" else book.bids
            asks = tuple(levels.values()) if side == "asks" else book.asks
            return self.set_book(token_id, bids, asks)

    def remove_book(self, token_id: str) -> None:
        """The token's book disappears: ``/book`` answers 404, batches omit it."""
        with self._lock:
            self.books.pop(token_id, None)

    def close_market(self, condition_id: str) -> None:
        """Trading stops (a resolution was proposed): both books vanish, the market record
        stays with ``ao`` false."""
        with self._lock:
            market = self.markets[condition_id]
            market.accepting_orders = False
            self.books.pop(market.yes_token, None)
            self.books.pop(market.no_token, None)

    def advance(self, milliseconds: int) -> None:
        """Move the fake clock; the next book change is stamped at least this late."""
        with self._lock:
            self.now_ms += milliseconds

    # -- faults and observation --------------------------------------------------------------

    def fail(self, kind: str, times: int = 1, **options: Any) -> None:
        """Queue ``times`` faults of ``kind`` (see :data:`FAULT_KINDS` and :class:`Fault`)."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; one of {FAULT_KINDS}")
        with self._lock:
            self.faults.extend(Fault(kind, **options) for _ in range(times))

    def omit_from_batches(self, *token_ids: str) -> None:
        """``POST /books`` and ``/midpoints`` leave these tokens out, as the server sometimes
        does; ``GET /book`` still answers them."""
        with self._lock:
            self.batch_omits.update(token_ids)

    def corrupt(self, token_id: str, **raw: Any) -> None:
        """Serve these raw keys in the token's book from now on (``None`` deletes a key), to
        test what a client does with a body it cannot read. The hash is left as it was."""
        with self._lock:
            self.overrides.setdefault(token_id, {}).update(raw)

    def plant(self, token_id: str, kind: str | None) -> None:
        """Serve a hostile variant of the token's book from now on (one of
        :data:`HOSTILE_BOOKS`, see :func:`~arena.fakes.clob_api.hostile_body`), on ``/book``
        and ``/books``, following the book as it changes; ``None`` serves it honestly again.
        The derived endpoints (``/midpoints``, ``/price``...) stay honest. Planting needs the
        token's book; making it honest again does not (its book may be gone by then)."""
        if kind is not None and kind not in HOSTILE_BOOKS:
            raise ValueError(f"unknown hostile book {kind!r}; one of {HOSTILE_BOOKS}")
        with self._lock:
            if kind is None:
                self.hostile.pop(token_id, None)
            else:
                self._current(token_id)
                self.hostile[token_id] = kind

    def count(self, path: str, method: str | None = None) -> int:
        """How many requests reached ``path`` (with ``method``, when given)."""
        with self._lock:
            return sum(
                1
                for r in self.requests
                if r.path == path and (method is None or r.method == method)
            )

    def counts(self) -> Counter[str]:
        """Requests per ``"METHOD /path"``."""
        with self._lock:
            return Counter(f"{r.method} {r.path}" for r in self.requests)

    def rendered(self, token_id: str) -> dict[str, Any]:
        """The honest ``/book`` body of ``token_id`` now (without a planted hostile kind)."""
        with self._lock:
            return render_book(self._current(token_id))

    def served(self, token_id: str) -> dict[str, Any]:
        """The ``/book`` body the fake sends for ``token_id`` now, hostile kind included."""
        with self._lock:
            return served_book(self, self._current(token_id))

    # -- serving -----------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: Mapping[str, list[str]], body: bytes = b""
    ) -> Reply:
        """Answer one request; transport faults raise ``FakeDrop`` or ``FakeSlow``."""
        with self._lock:
            query = {k: list(v) for k, v in query.items()}
            self.requests.append(RecordedRequest(method, path, query, body))
            if self.outage:
                return html_reply(503)
            fault = take_fault(self, path)
            if fault is not None:
                reply = fault_reply(fault)
                if reply is not None:
                    return reply
            reply = route(self, method, path, query, body)
            if fault is not None and fault.kind == "timeout":
                raise FakeSlow(fault.delay, reply)
            if self.latency > 0:
                raise FakeSlow(self.latency, reply)
            return reply

    def mock_transport(self) -> httpx.MockTransport:
        """An in-process transport: drops raise httpx errors, answers slower than the client's
        read timeout raise ``httpx.ReadTimeout`` (nothing really waits)."""
        return mock_transport(self.handle)

    # -- internals ---------------------------------------------------------------------------

    def _market(self, token_id: str) -> FakeClobMarket:
        market = self._market_of.get(token_id)
        if market is None:
            raise KeyError(f"no market has token {token_id}")
        return market

    def _current(self, token_id: str) -> OrderBook:
        book = self.books.get(token_id)
        if book is None:
            raise KeyError(f"token {token_id} has no book")
        return book

    def _store(
        self,
        market: FakeClobMarket,
        yes: BookSides,
        last_trade_price: Decimal | None,
        timestamp: int | None,
    ) -> bool:
        yes = _wire_order(yes, market.tick_size)
        no = _mirror(yes)
        books = {
            market.yes_token: self._book(market, market.yes_token, yes, last_trade_price),
            market.no_token: self._book(market, market.no_token, no, last_trade_price),
        }
        if all(_same(self.books.get(token), book) for token, book in books.items()):
            return False
        stamp = timestamp if timestamp is not None else max(self.now_ms, self._last_stamp + 1)
        self._last_stamp = max(self._last_stamp, stamp)
        for token, book in books.items():
            stamped = replace(book, timestamp=stamp)
            self.books[token] = replace(stamped, hash=book_hash(render_book(stamped)))
        return True

    @staticmethod
    def _book(
        market: FakeClobMarket, token: str, sides: BookSides, last: Decimal | None
    ) -> OrderBook:
        return OrderBook(
            token_id=token,
            market=market.condition_id,
            timestamp=0,
            hash="",
            bids=sides.bids,
            asks=sides.asks,
            min_order_size=market.min_order_size,
            tick_size=market.tick_size,
            neg_risk=market.neg_risk,
            last_trade_price=last,
        )


def _same(old: OrderBook | None, new: OrderBook) -> bool:
    """Whether ``new`` renders exactly as ``old`` apart from its timestamp and hash."""
    if old is None:
        return False
    return render_book(replace(old, timestamp=0, hash="")) == render_book(
        replace(new, timestamp=0, hash="")
    )


def _mirror(sides: BookSides) -> BookSides:
    """The complementary token's sides: its bids are these asks at ``1 - p``, its asks these
    bids at ``1 - p``. Mapping in order keeps the wire order (descending asks become
    ascending bids)."""
    return BookSides(
        bids=tuple(Level(ONE - level.price, level.size) for level in sides.asks),
        asks=tuple(Level(ONE - level.price, level.size) for level in sides.bids),
    )


def _wire_order(sides: BookSides, tick: Decimal) -> BookSides:
    """The sides sorted worst to best, after checking that the book is one the CLOB could
    hold: prices inside (0, 1) on the tick grid, one level per price, sizes positive, and the
    best bid below the best ask."""
    for name, levels in (("bids", sides.bids), ("asks", sides.asks)):
        prices = [level.price for level in levels]
        if len(set(prices)) != len(prices):
            raise ValueError(f"{name}: two levels at one price")
        for level in levels:
            if not ZERO < level.price < ONE or level.price % tick != ZERO:
                raise ValueError(f"{name}: price {level.price} is off the {tick} grid or (0, 1)")
            if level.size <= ZERO:
                raise ValueError(f"{name}: size {level.size} at {level.price} is not positive")
    bids = tuple(sorted(sides.bids, key=lambda level: level.price))
    asks = tuple(sorted(sides.asks, key=lambda level: level.price, reverse=True))
    if bids and asks and bids[-1].price >= asks[-1].price:
        raise ValueError(f"crossed book: best bid {bids[-1].price} >= best ask {asks[-1].price}")
    return BookSides(bids, asks)


@contextmanager
def serve_fake_clob(world: FakeClobWorld) -> Iterator[str]:
    """Serve ``world`` over real HTTP on 127.0.0.1 (an ephemeral port); yields the base URL.

    A dropped connection closes the socket without an answer; a slow reply sleeps first.
    """
    with serve_body_handler(world.handle) as base_url:
        yield base_url
