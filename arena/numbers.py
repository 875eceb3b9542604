"""The one number format: how every value is written for people (the CLI's tables, the pages'
Jinja filters, the leaderboard's columns) and, as exact text, in the JSON API.

For people:

- money to the cent with a ``$`` (:func:`money`); model spend to the cent, a fraction of a cent
  as ``<$0.01`` (:func:`cost`);
- prices to the tick they were quoted in (:func:`price`): no tick size is stored, so the tick is
  read off the price, 2 places for a cent tick (``0.13``), 3 for a 0.001 tick (``0.155``), and a
  computed price (a volume-weighted fill, a mid) is rounded to the finest tick, 0.001;
- shares to 2 places (:func:`shares`); basis points to 1 place (:func:`bps`); counts with
  thousands separators (:func:`count`); scores to a fixed number of places (:func:`fixed`);
- instants as ISO 8601 UTC to the minute, ``2026-11-02 00:05Z`` (:func:`when`), including a
  book time stored as epoch milliseconds.

For the API, :func:`exact` writes a Decimal as its exact text without trailing-zero noise
(``0.1550000000`` -> ``0.155``; money keeps its cents, ``550.00``). Every writer takes a number
or its decimal text and writes ``-`` for none.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

NONE = "-"
CENT = Decimal("0.01")
FINEST_TICK_PLACES = 3  # Polymarket ticks are 0.01 or 0.001
EPOCH_MS_FLOOR = 10**11  # an integer instant above this is epoch milliseconds (after 1973)


def number(value: Any) -> Decimal | None:
    """``value`` (a number or its decimal text) as a Decimal; None for none or not a number."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return None
    return amount if amount.is_finite() else None


def exact(value: Decimal) -> str:
    """The exact decimal text of ``value`` without trailing zeros past the cents: ``550.00``,
    ``0.155``, ``4088.489786`` (the API's form of every stored Decimal)."""
    text = format(value, "f")
    if "." not in text:
        return text + ".00"
    whole, fraction = text.split(".")
    return f"{whole}.{fraction.rstrip('0').ljust(2, '0')}"


def money(value: Any, signed: bool = False) -> str:
    """``$10,234.50`` (``+$234.50`` when signed)."""
    amount = number(value)
    if amount is None:
        return NONE
    cents = amount.quantize(CENT, ROUND_HALF_EVEN)
    sign = "-" if cents < 0 else ("+" if signed and cents > 0 else "")
    return f"{sign}${abs(cents):,.2f}"


def cost(value: Any) -> str:
    """Model spend or fees to the cent (half-even, as the ledger rounds): ``$1,234.57``; a
    positive amount that rounds to no cent is ``<$0.01`` (never ``$0.00`` for money spent)."""
    amount = number(value)
    if amount is None:
        return NONE
    if amount > 0 and amount.quantize(CENT, ROUND_HALF_EVEN) == 0:
        return "<$0.01"
    return money(amount)


def price(value: Any) -> str:
    """A price to its tick: ``0.13``, ``0.155``; finer prices to the finest tick, 0.001."""
    amount = number(value)
    if amount is None:
        return NONE
    places = max(2, -amount.normalize().as_tuple().exponent)  # type: ignore[operator]
    return f"{amount:.{min(places, FINEST_TICK_PLACES)}f}"


def shares(value: Any) -> str:
    """Shares to 2 places with thousands separators: ``4,088.49``."""
    amount = number(value)
    return NONE if amount is None else f"{amount.quantize(CENT, ROUND_HALF_EVEN):,.2f}"


def bps(value: Any) -> str:
    """Basis points to 1 place: ``400.0``."""
    amount = number(value)
    return NONE if amount is None else f"{amount:,.1f}"


def count(value: Any) -> str:
    """A count with thousands separators: ``12,345``."""
    amount = number(value)
    return NONE if amount is None else f"{int(amount):,}"


def percent(value: Any, places: int = 2, signed: bool = True) -> str:
    """A value already in percent: ``+2.35%``."""
    amount = number(value)
    if amount is None:
        return NONE
    return f"{amount:+.{places}f}%" if signed else f"{amount:.{places}f}%"


def share(value: Any) -> str:
    """A rate in [0, 1] as a percentage to one place: ``55.0%``."""
    amount = number(value)
    return NONE if amount is None else f"{amount * 100:.1f}%"


def fixed(value: Any, places: int = 4, signed: bool = False) -> str:
    """A score or probability to ``places`` decimals: ``0.2140``."""
    amount = number(value)
    if amount is None:
        return NONE
    return f"{amount:+.{places}f}" if signed else f"{amount:.{places}f}"


def when(value: Any) -> str:
    """An instant as ISO 8601 UTC to the minute: ``2026-11-02 00:05Z``. Takes a datetime, its
    ISO text, or epoch milliseconds (a CLOB book time)."""
    if value is None or value == "" or isinstance(value, bool):
        return NONE
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        millis = int(value)
        if millis < EPOCH_MS_FLOOR:
            return str(value)
        value = datetime.fromtimestamp(millis / 1000, tz=UTC)
    if isinstance(value, datetime):
        value = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
        return value.strftime("%Y-%m-%d %H:%MZ")
    text = str(value).replace("T", " ")
    return text[:16] + "Z" if len(text) >= 16 else text
