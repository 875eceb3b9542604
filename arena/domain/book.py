"""Executable prices (methodology, "Executable prices"): order books, the taker fee, fills
that walk the book, marks and exit values. Pure functions over exact decimals; no I/O.

Rounding, beside the ledger's own rules (:mod:`arena.domain.ledger`):

* shares taken from a level are whole levels, then a part of the next level rounded *down*
  to 1e-6, so a fill never spends more than it has;
* a BUY's cash out (levels plus fees) is rounded *up* to the cent, a SELL's cash in (levels
  minus fees) *down* to the cent: rounding always goes against the agent, so the ledger never
  records money no trader could have had;
* fees are summed exactly and recorded to 1e-10, like volume-weighted prices (the scale of a
  stored price).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from functools import cached_property

from arena.domain.ledger import MONEY, ONE, SHARES, ZERO
from arena.errors import NoLiquidity

PRICE_PLACES = Decimal("0.0000000001")
BPS_PLACES = Decimal("0.01")
MARK_SPREAD_LIMIT = Decimal("0.10")  # wider than this: Polymarket shows the last trade
TEN_THOUSAND = Decimal(10_000)
TWO = Decimal(2)
BOOK_HASH_ALGORITHM = "clob-sha1-v1"
"""The name of the algorithm of every stored book hash: Polymarket's own (clob-api.md §2.3,
``arena.sources.clob_parse.book_hash``), applied to the book as received."""


class Pricing(enum.StrEnum):
    """A cohort's pricing mode, frozen at creation."""

    BOOK = "book"  # walk the CLOB order book (the default for new cohorts)
    GAMMA = "gamma"  # Gamma's display price (cohorts created before executable prices)


class TradeSide(enum.StrEnum):
    """Which way a trade went; ``trades.trade_type`` stores it, upper case as exported."""

    BUY = "BUY"
    """Shares bought for cash (a BET)."""
    SELL = "SELL"
    """Shares of a held position sold back for cash."""


@dataclass(frozen=True)
class Level:
    price: Decimal
    size: Decimal  # shares


@dataclass(frozen=True)
class OrderBook:
    """One outcome token's book as the CLOB sent it. ``bids`` and ``asks`` keep the wire order
    (worst to best); the best prices are computed, never read from a position in the list.

    ``hash`` is the book's proof: computed by arena from what was received (methodology, "What
    makes a book usable"); ``served_hash`` is the one the CLOB sent beside it (``None``: none,
    or not a string), compared and never stored. A level of size 0 does not exist: it is
    never a best price (the parser drops it)."""

    token_id: str
    market: str  # condition id
    timestamp: int  # epoch milliseconds of the book's last change
    hash: str
    bids: tuple[Level, ...]
    asks: tuple[Level, ...]
    min_order_size: Decimal = ZERO
    tick_size: Decimal | None = None
    neg_risk: bool = False
    last_trade_price: Decimal | None = None
    served_hash: str | None = field(default=None, compare=False)  # compared, never stored

    # The derived prices and orders are computed once per book (a snapshot values thousands
    # of positions against the same books): cached on the instance, fields untouched.

    @cached_property
    def best_bid(self) -> Decimal | None:
        return max((level.price for level in self.bids if level.size > ZERO), default=None)

    @cached_property
    def best_ask(self) -> Decimal | None:
        return min((level.price for level in self.asks if level.size > ZERO), default=None)

    @property
    def crossed(self) -> bool:
        """Whether the best bid is at or above the best ask (crossed, or locked when equal):
        such a book is not a price (no mark, no touch, no execution)."""
        bid, ask = self.best_bid, self.best_ask
        return bid is not None and ask is not None and bid >= ask

    @property
    def hash_mismatch(self) -> bool:
        """Whether the CLOB served a hash other than the one computed of the book received."""
        return self.served_hash != self.hash

    @cached_property
    def mid(self) -> Decimal | None:
        bid, ask = self.best_bid, self.best_ask
        return None if bid is None or ask is None else (bid + ask) / TWO

    @property
    def spread(self) -> Decimal | None:
        bid, ask = self.best_bid, self.best_ask
        return None if bid is None or ask is None else ask - bid

    def size_at(self, price: Decimal | None, side: TradeSide) -> Decimal:
        """Total size resting at ``price`` on the asks (BUY) or the bids (SELL)."""
        levels = self.asks if side is TradeSide.BUY else self.bids
        return sum((level.size for level in levels if level.price == price), ZERO)

    def asks_best_first(self) -> tuple[Level, ...]:
        return self._asks_best_first

    def bids_best_first(self) -> tuple[Level, ...]:
        return self._bids_best_first

    @cached_property
    def _asks_best_first(self) -> tuple[Level, ...]:
        return tuple(sorted((lv for lv in self.asks if lv.size > ZERO), key=lambda lv: lv.price))

    @cached_property
    def _bids_best_first(self) -> tuple[Level, ...]:
        return tuple(sorted((lv for lv in self.bids if lv.size > ZERO), key=lambda lv: -lv.price))


@dataclass(frozen=True)
class Touch:
    """What a universe freezes of one outcome token's book (and the prompt shows)."""

    token_id: str
    best_bid: Decimal | None
    best_ask: Decimal | None
    mid: Decimal | None
    bid_size: Decimal
    ask_size: Decimal
    book_hash: str
    book_timestamp: int

    @classmethod
    def of(cls, book: OrderBook) -> Touch:
        return cls(
            token_id=book.token_id,
            best_bid=book.best_bid,
            best_ask=book.best_ask,
            mid=book.mid,
            bid_size=book.size_at(book.best_bid, TradeSide.SELL),
            ask_size=book.size_at(book.best_ask, TradeSide.BUY),
            book_hash=book.hash,
            book_timestamp=book.timestamp,
        )

    def to_json(self) -> dict[str, str | int | None]:
        def text(value: Decimal | None) -> str | None:
            return None if value is None else str(value)

        return {
            "token_id": self.token_id,
            "best_bid": text(self.best_bid),
            "best_ask": text(self.best_ask),
            "mid": text(self.mid),
            "bid_size": str(self.bid_size),
            "ask_size": str(self.ask_size),
            "book_hash": self.book_hash,
            "book_timestamp": self.book_timestamp,
        }

    @classmethod
    def from_json(cls, raw: dict[str, object]) -> Touch:
        def dec(value: object) -> Decimal | None:
            return None if value is None else Decimal(str(value))

        return cls(
            token_id=str(raw["token_id"]),
            best_bid=dec(raw.get("best_bid")),
            best_ask=dec(raw.get("best_ask")),
            mid=dec(raw.get("mid")),
            bid_size=dec(raw.get("bid_size")) or ZERO,
            ask_size=dec(raw.get("ask_size")) or ZERO,
            book_hash=str(raw.get("book_hash") or ""),
            book_timestamp=int(str(raw.get("book_timestamp") or 0)),
        )


@dataclass(frozen=True)
class FeeSchedule:
    """A market's taker fee: ``fee(p) = rate * (p * (1 - p)) ** exponent`` per share
    (``GET /clob-markets/{condition_id}``, ``fd.r`` and ``fd.e``; no ``fd``: no fee)."""

    rate: Decimal = ZERO
    exponent: Decimal = ONE

    def per_share(self, price: Decimal) -> Decimal:
        if self.rate == ZERO:
            return ZERO
        base = price * (ONE - price)
        exponent = self.exponent
        powered = base ** int(exponent) if exponent == exponent.to_integral() else base**exponent
        return self.rate * powered


NO_FEE = FeeSchedule()


@dataclass(frozen=True)
class LevelFill:
    """Shares taken at one level of the book."""

    price: Decimal
    shares: Decimal
    fee: Decimal  # exact: shares * fee(price)

    def to_json(self) -> dict[str, str]:
        fee = self.fee.quantize(PRICE_PLACES, rounding=ROUND_HALF_EVEN).normalize()
        return {"price": str(self.price), "shares": str(self.shares), "fee": f"{fee:f}"}


@dataclass(frozen=True)
class Fill:
    """A walk of the book: what a BUY or a SELL would get right now."""

    side: TradeSide
    shares: Decimal  # filled, to 1e-6
    notional: Decimal  # sum of shares * level price, exact
    fee: Decimal  # sum of shares * fee(level price), exact (recorded to 1e-10)
    cash: Decimal  # BUY: cash out (notional + fee, rounded up); SELL: cash in (rounded down)
    limit: Decimal
    touch: Decimal  # the best ask (BUY) or best bid (SELL) of the book walked
    mid: Decimal | None
    levels: tuple[LevelFill, ...]
    book_hash: str
    book_timestamp: int

    @property
    def price(self) -> Decimal:
        """The volume-weighted price of the levels consumed, without fees."""
        return (self.notional / self.shares).quantize(PRICE_PLACES, rounding=ROUND_HALF_EVEN)

    def slippage_bps(self, reference: Decimal | None) -> Decimal | None:
        """``10^4 * (price - ref) / ref`` for a BUY, ``(ref - price)`` for a SELL: a worse
        price than the reference is positive."""
        if reference is None or reference <= ZERO:
            return None
        gap = self.price - reference if self.side is TradeSide.BUY else reference - self.price
        return (TEN_THOUSAND * gap / reference).quantize(BPS_PLACES, rounding=ROUND_HALF_EVEN)


def walk_buy(book: OrderBook, budget: Decimal, limit: Decimal, fee: FeeSchedule = NO_FEE) -> Fill:
    """BUY for at most ``budget`` dollars: take the asks from the best upward, one share at
    level p costing ``p + fee(p)``, whole levels while the money lasts, then part of the next;
    never a level above ``limit``. Raises :class:`NoLiquidity` when less than the book's
    minimum order size (or nothing) fills."""
    touch = book.best_ask
    if touch is None:
        raise NoLiquidity(f"token {book.token_id} has no asks")
    left = budget
    taken: list[LevelFill] = []
    for level in book.asks_best_first():
        if level.price > limit or left <= ZERO:
            break
        unit = level.price + fee.per_share(level.price)
        shares = level.size if level.size * unit <= left else _floor_shares(left / unit)
        while shares > ZERO and shares * unit > left:  # the division's last digit rounded up
            shares -= SHARES
        if shares <= ZERO:
            break
        taken.append(LevelFill(level.price, shares, shares * fee.per_share(level.price)))
        left -= shares * unit
        if shares < level.size:
            break
    fill = _fill(book, TradeSide.BUY, taken, limit, touch)
    if fill is None:
        raise NoLiquidity(
            f"no ask of token {book.token_id} at or below the limit {limit} (best ask {touch})"
        )
    _check_minimum(book, fill)
    return fill


def walk_sell(
    book: OrderBook,
    shares: Decimal,
    limit: Decimal | None,
    fee: FeeSchedule = NO_FEE,
    *,
    minimum: bool = False,
) -> Fill:
    """SELL up to ``shares``: take the bids from the best downward, one share at level p
    bringing ``p - fee(p)``; stop below ``limit`` (``None``: no limit, as for an exit value).
    Shares the bids cannot take stay unsold. Raises :class:`NoLiquidity` when nothing fills
    (or, with ``minimum``, less than the book's minimum order size)."""
    touch = book.best_bid
    if touch is None:
        raise NoLiquidity(f"token {book.token_id} has no bids")
    taken = [
        LevelFill(price, take, take * fee.per_share(price))
        for price, take in _bids_taken(book, shares, limit)
    ]
    fill = _fill(book, TradeSide.SELL, taken, limit if limit is not None else ZERO, touch)
    if fill is None:
        raise NoLiquidity(
            f"no bid of token {book.token_id} at or above the limit {limit} (best bid {touch})"
        )
    if minimum:
        _check_minimum(book, fill)
    return fill


def exit_proceeds(book: OrderBook, shares: Decimal, fee: FeeSchedule = NO_FEE) -> Decimal:
    """What selling ``shares`` into the current bids would bring, fees included, to the cent
    (rounded down); 0 when the bids take nothing.

    The cash of ``walk_sell(book, shares, None, fee)``: the same levels and rounding, summed
    without building the fill, since a snapshot asks it of every open position (a property
    test keeps the two equal)."""
    notional = fees = ZERO
    for price, take in _bids_taken(book, shares, None):
        notional += take * price
        fees += take * fee.per_share(price)
    return _sell_cash(notional, fees) if notional > ZERO else ZERO


def _bids_taken(
    book: OrderBook, shares: Decimal, limit: Decimal | None
) -> Iterator[tuple[Decimal, Decimal]]:
    """(price, shares) taken from each bid, best first, until ``shares`` are sold or a bid is
    below ``limit``."""
    left = shares
    for level in book.bids_best_first():
        if (limit is not None and level.price < limit) or left <= ZERO:
            return
        take = min(level.size, left)
        yield level.price, take
        left -= take


def _sell_cash(notional: Decimal, fees: Decimal) -> Decimal:
    """A SELL's cash in: levels minus fees, rounded down to the cent (against the agent)."""
    return max(ZERO, (notional - fees).quantize(MONEY, rounding=ROUND_FLOOR))


def mark(book: OrderBook) -> Decimal | None:
    """The token's mark as Polymarket displays it: the mid, or, when the spread is wider than
    0.10 or one side is empty, the last trade price. The book's ``last_trade_price`` is the
    market's, not the token's (the YES and NO books carry the same value), so it is taken as
    this token's price when it lies within this token's bid and ask, else its complement when
    that does; otherwise there is no mark (the caller keeps the last valid one). A crossed
    or locked book has no mark."""
    if book.crossed:
        return None
    spread = book.spread
    if spread is not None and spread <= MARK_SPREAD_LIMIT and book.mid is not None:
        return book.mid
    last = book.last_trade_price
    if last is None or not (ZERO < last < ONE):
        return None
    low = book.best_bid if book.best_bid is not None else ZERO
    high = book.best_ask if book.best_ask is not None else ONE
    for candidate in (last, ONE - last):
        if low <= candidate <= high:
            return candidate
    return None


def limit_price(shown: Decimal, max_slippage: Decimal, side: TradeSide) -> Decimal:
    """The limit of an execution: the price shown plus (BUY) or minus (SELL) the slippage."""
    return shown + max_slippage if side is TradeSide.BUY else shown - max_slippage


def levels_json(levels: Sequence[LevelFill]) -> list[dict[str, str]]:
    return [level.to_json() for level in levels]


def _floor_shares(value: Decimal) -> Decimal:
    return value.quantize(SHARES, rounding=ROUND_DOWN)


def _fill(
    book: OrderBook, side: TradeSide, taken: list[LevelFill], limit: Decimal, touch: Decimal
) -> Fill | None:
    shares = sum((level.shares for level in taken), ZERO)
    if shares <= ZERO:
        return None
    notional = sum((level.shares * level.price for level in taken), ZERO)
    fee = sum((level.fee for level in taken), ZERO)
    if side is TradeSide.BUY:
        cash = (notional + fee).quantize(MONEY, rounding=ROUND_CEILING)
    else:
        cash = _sell_cash(notional, fee)
    return Fill(
        side=side,
        shares=shares,
        notional=notional,
        fee=fee,
        cash=cash,
        limit=limit,
        touch=touch,
        mid=book.mid,
        levels=tuple(taken),
        book_hash=book.hash,
        book_timestamp=book.timestamp,
    )


def _check_minimum(book: OrderBook, fill: Fill) -> None:
    if fill.shares < book.min_order_size:
        raise NoLiquidity(
            f"only {fill.shares} shares of token {book.token_id} fill within the limit "
            f"{fill.limit}, under the minimum order size {book.min_order_size}"
        )
