"""Reading the CLOB's market-data bodies into domain types, and the server's book hash.

Behaviour follows clob-api.md (§2, §4, §7):

- a book's prices and sizes are decimal *strings*, read as exact :class:`~decimal.Decimal`;
  ``timestamp`` is epoch milliseconds as a string; token ids are 76-78 digit uint256 values
  and stay strings end to end (a float or a JS number would lose digits);
- levels keep the wire order (worst to best on both sides); the best prices are computed by
  :class:`~arena.domain.book.OrderBook`, never read from a position;
- ``last_trade_price`` may be ``""``: no last trade (``None``), as may an absent key; absent
  or null sides are empty;
- the ``hash`` is SHA-1 of the compact JSON of the book with ``"hash": ""``, keys in the wire
  order of the Go server; :func:`book_hash` recomputes it (so the fake can produce it and a
  test can pin it against recorded books). The proof arena keeps (``OrderBook.hash``) is that
  hash computed of the book *as received*, never the served one, which is kept beside it
  (``served_hash``) only to be compared (:data:`~arena.domain.book.BOOK_HASH_ALGORITHM`);
- a book passes the storable rule (:mod:`arena.domain.storable`) here, at the edge: prices
  and sizes fit their columns exactly (``Price``: 4 integer digits and 10 places, ``Shares``:
  18 and 6), the ``timestamp`` fits a ``BIGINT``; levels of size 0 are dropped (they do not
  exist); a crossed or locked touch is refused. Any refusal is a :class:`BookUnusable` for
  that book alone;
- fees come from ``GET /clob-markets/{condition_id}``: ``fd.r`` (rate) and ``fd.e`` (exponent);
  no ``fd`` means a fee-free market.

Bodies are decoded with ``parse_float=Decimal``, so a JSON number such as ``0.04`` arrives as
``Decimal("0.04")`` and never passes through a float.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from arena.domain.book import NO_FEE, FeeSchedule, Level, OrderBook
from arena.domain.ledger import ONE, ZERO
from arena.domain.storable import fits_bigint, fits_column
from arena.errors import BookUnusable, ClobError, UnreadableField

PRICE_COLUMN = (14, 10)  # arena.store.types.Price
SHARES_COLUMN = (24, 6)  # arena.store.types.Shares
MAX_TIMESTAMP_DIGITS = 19  # a BIGINT has at most 19 digits; longer text is refused unread

WIRE_KEYS = (
    "market",
    "asset_id",
    "timestamp",
    "hash",
    "bids",
    "asks",
    "min_order_size",
    "tick_size",
    "neg_risk",
    "last_trade_price",
)


def book_hash(raw: Mapping[str, Any]) -> str:
    """The server's ``hash`` of a book: SHA-1 of the compact JSON of ``raw`` with ``"hash": ""``,
    the ten keys in wire order and each level as ``{"price": ..., "size": ...}``.

    ``raw`` is the book as the wire carries it (strings stay strings); a value must be written
    back exactly as received, so ``"0.430"`` and ``"0.43"`` hash differently, as on the server.
    A JSON number where the CLOB sends a string (decoded as a Decimal; a real book has none)
    is hashed as its text in quotes, and a lone surrogate as such: whatever arrives has a hash.
    """
    parts = []
    for key in WIRE_KEYS:
        value = "" if key == "hash" else raw.get(key)
        if key in ("bids", "asks") and isinstance(value, list):
            text = "[" + ",".join(_level_text(level) for level in value) + "]"
        else:
            text = _json_text(value)
        parts.append(f'"{key}":{text}')
    body = "{" + ",".join(parts) + "}"
    return hashlib.sha1(body.encode("utf-8", "surrogatepass")).hexdigest()


# Compact JSON, non-ASCII as is: the text json.dumps(..., separators=(",", ":"),
# ensure_ascii=False) writes, built by hand for the usual string values (a snapshot hashes
# thousands of books).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
_quote: Callable[[str], str] = json.encoder.encode_basestring


def _json_text(value: Any) -> str:
    return _quote(value) if type(value) is str else _ENCODER.encode(value)


def _level_text(level: Any) -> str:
    if type(level) is dict or isinstance(level, Mapping):
        price, size = level.get("price"), level.get("size")
        return '{"price":' + _json_text(price) + ',"size":' + _json_text(size) + "}"
    return _json_text(level)


def parse_book(raw: Mapping[str, Any]) -> OrderBook:
    """One ``/book`` (or ``/books`` element) body as an :class:`OrderBook`, its ``hash``
    computed of what was received and the served one kept as ``served_hash``.

    Raises :class:`BookUnusable` naming the token when a field cannot be read or stored
    exactly, or when the touch is crossed or locked: a book the ledger would price from must
    be read exactly or not at all, and a refusal costs this book only.
    """
    if not isinstance(raw, Mapping):
        raise BookUnusable("<none>", f"expected a JSON object, got {type(raw).__name__}")
    token = raw.get("asset_id")
    if not isinstance(token, str) or not token:
        raise BookUnusable("<none>", f"asset_id must be a non-empty string, got {token!r:.80}")
    served = raw.get("hash")
    try:
        book = OrderBook(
            token_id=token,
            market=_text(raw.get("market"), "market"),
            timestamp=_epoch_ms(raw.get("timestamp")),
            hash=book_hash(raw),
            bids=_levels(raw.get("bids"), "bids"),
            asks=_levels(raw.get("asks"), "asks"),
            min_order_size=_optional_size(raw.get("min_order_size"), "min_order_size") or ZERO,
            tick_size=_optional_price(raw.get("tick_size"), "tick_size"),
            neg_risk=_flag(raw.get("neg_risk"), "neg_risk"),
            last_trade_price=_optional_price(raw.get("last_trade_price"), "last_trade_price"),
            served_hash=served if isinstance(served, str) else None,
        )
    except UnreadableField as exc:
        raise BookUnusable(token, str(exc)) from None
    if book.crossed:
        touch = "locked" if book.best_bid == book.best_ask else "crossed"
        raise BookUnusable(
            token, f"{touch} book: best bid {book.best_bid} >= best ask {book.best_ask}"
        )
    return book


def parse_fee_schedule(raw: Mapping[str, Any], condition_id: str) -> FeeSchedule:
    """The taker fee in a ``/clob-markets/{condition_id}`` body: ``fd.r`` and ``fd.e`` as exact
    decimals, :data:`NO_FEE` when ``fd`` is absent (the market is fee-free).

    A present but unreadable ``fd`` raises :class:`ClobError`: guessing zero would let agents
    trade a fee-bearing market for free.
    """
    if not isinstance(raw, Mapping):
        raise ClobError(f"market {condition_id}: expected a JSON object")
    details = raw.get("fd")
    if details is None:
        return NO_FEE
    try:
        if not isinstance(details, Mapping):
            raise UnreadableField(f"fd must be an object, got {details!r}")
        rate = _decimal(details.get("r"), "fd.r")
        exponent = _decimal(details.get("e"), "fd.e")
        if rate < ZERO or exponent <= ZERO:
            raise UnreadableField(f"fd out of range: r={rate}, e={exponent}")
    except UnreadableField as exc:
        raise ClobError(f"market {condition_id}: {exc}") from None
    return FeeSchedule(rate=rate, exponent=exponent)


def parse_midpoints(raw: Any, wanted: set[str]) -> dict[str, Decimal]:
    """A ``POST /midpoints`` body (``{"<token id>": "0.45", ...}``) restricted to ``wanted``.

    Values are strings on the wire; a JSON number is accepted too (the docs disagree).
    """
    if not isinstance(raw, Mapping):
        raise ClobError(f"midpoints: expected a JSON object, got {type(raw).__name__}")
    mids: dict[str, Decimal] = {}
    for token, value in raw.items():
        if token not in wanted:
            continue
        try:
            mids[token] = _decimal(value, "mid")
        except UnreadableField as exc:
            raise ClobError(f"midpoint of token {token}: {exc}") from None
    return mids


def _levels(value: Any, side: str) -> tuple[Level, ...]:
    """A side's levels in wire order, each price and size read exactly and checked against
    its column; levels of size 0 are left out (they do not exist)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise UnreadableField(f"{side} must be a list, got {type(value).__name__}")
    levels = []
    for index, row in enumerate(value):
        if type(row) is not dict and not isinstance(row, Mapping):
            raise UnreadableField(f"{side}[{index}] must be an object")
        price = _level_price(row.get("price"), side, index)
        size = _level_size(row.get("size"), side, index)
        if size:  # a level of size 0 does not exist
            levels.append(Level(price=price, size=size))
    return tuple(levels)


# The wire's usual forms, read without further checks (a book has dozens of levels, a
# snapshot thousands of books): a price "0.41" inside (0, 1) with at most 10 places, a size
# "16069385.26" with at most 18 integer digits and 6 places. Anything else takes the full way.
_PLAIN_PRICE = re.compile(r"0?\.[0-9]{1,10}")
_PLAIN_SIZE = re.compile(r"[0-9]{1,18}(?:\.[0-9]{0,6})?")


def _level_price(value: Any, side: str, index: int) -> Decimal:
    if type(value) is str and _PLAIN_PRICE.fullmatch(value):
        price = Decimal(value)
        if price:
            return price
    price = _decimal(value, f"{side}[{index}].price")
    if not ZERO < price < ONE:
        raise UnreadableField(f"{side}[{index}].price {price:.40} is not inside (0, 1)")
    if not fits_column(price, *PRICE_COLUMN):
        raise UnreadableField(f"{side}[{index}].price {price:.40} has more than 10 places")
    return price


def _level_size(value: Any, side: str, index: int) -> Decimal:
    if type(value) is str and _PLAIN_SIZE.fullmatch(value):
        return Decimal(value)
    size = _decimal(value, f"{side}[{index}].size")
    if size < ZERO:
        raise UnreadableField(f"{side}[{index}].size {size:.40} is negative")
    if not fits_column(size, *SHARES_COLUMN):
        raise UnreadableField(f"{side}[{index}].size {size:.40} is not a storable size")
    return size


def _decimal(value: Any, what: str) -> Decimal:
    """An exact decimal from a wire string (or a JSON number decoded as Decimal or int)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise UnreadableField(f"{what} must be a decimal string, got {value!r}")
    try:
        number = Decimal(value.strip() if isinstance(value, str) else str(value))
    except InvalidOperation:
        raise UnreadableField(f"{what} is not a number: {value!r}") from None
    if not number.is_finite():
        raise UnreadableField(f"{what} is not finite: {value!r}")
    return number


def _optional_decimal(value: Any, what: str) -> Decimal | None:
    if value is None or value == "":
        return None
    return _decimal(value, what)


def _optional_price(value: Any, what: str) -> Decimal | None:
    """A price-like field (tick size, last trade) that fits the ``Price`` column exactly."""
    number = _optional_decimal(value, what)
    if number is not None and not fits_column(number, *PRICE_COLUMN):
        raise UnreadableField(f"{what} {number:.40} is not a storable price")
    return number


def _optional_size(value: Any, what: str) -> Decimal | None:
    """A size-like field (the minimum order size) that fits the ``Shares`` column exactly."""
    number = _optional_decimal(value, what)
    if number is not None and (number < ZERO or not fits_column(number, *SHARES_COLUMN)):
        raise UnreadableField(f"{what} {number:.40} is not a storable size")
    return number


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise UnreadableField(f"{what} must be a string, got {value!r}")
    return value


def _epoch_ms(value: Any) -> int:
    """Epoch milliseconds that a ``BIGINT`` holds (a 25-digit timestamp is refused unread)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number: int | None = value
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value) if len(value) <= MAX_TIMESTAMP_DIGITS else None
    else:
        raise UnreadableField(
            f"timestamp must be epoch milliseconds as a string, got {value!r:.80}"
        )
    if number is None or number < 0 or not fits_bigint(number):
        raise UnreadableField(f"timestamp {str(value)[:40]}... does not fit epoch milliseconds")
    return number


def _flag(value: Any, what: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise UnreadableField(f"{what} must be a boolean, got {value!r}")
    return value
