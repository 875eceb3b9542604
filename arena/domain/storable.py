"""What the database can hold: the one rule for outside text and numbers before they are stored.

Gamma rows, model answers and config values are untrusted. PostgreSQL refuses a NUL character
in text and a string longer than its ``VARCHAR(n)``; both databases refuse lone UTF-16
surrogates; ``NUMERIC(p, s)`` refuses a number with more than ``p - s`` integer digits. SQLite
accepts most of these, so without one rule the same row would be stored on one database and
crash the other. Everything outside passes through here first, so what is admitted is stored
identically on both:

* text: NUL and lone surrogates become U+FFFD; text longer than its column is cut and ends
  with :data:`CUT_MARKER`;
* identifiers: ASCII digits only, within their column length (never cut: a cut id is a
  different id);
* numbers: finite and within the column's integer digits (:func:`fits_column` also refuses
  digits past its scale, for values that must be stored exactly, such as an order book's);
  counts non-negative and within ``INTEGER``; in a JSON value, non-finite floats (``NaN``,
  ``1e400``) become null (PostgreSQL's JSON refuses them);
* integers: within a ``BIGINT`` (:func:`fits_bigint`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal
from typing import Any

CUT_MARKER = "…[cut]"
REPLACEMENT = "\ufffd"
MAX_MARKET_ID_DIGITS = 32  # markets.id is VARCHAR(32)
MAX_OUTCOME_LENGTH = 300  # positions.side, trades.side, forecasts.outcome are VARCHAR(300)
MAX_VOLUME = Decimal("1e18")  # Volume() is NUMERIC(24, 6): 18 integer digits
MAX_BIGINT = 2**63 - 1  # BIGINT on PostgreSQL, INTEGER on SQLite: 8 signed bytes
LONG_TEXT = 20_000  # questions, descriptions, titles: unbounded TEXT, bounded here
MODEL_TEXT = 200_000  # a model's raw answer or reasoning

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def has_unstorable(text: str) -> bool:
    """Whether ``text`` holds a character no database stores (NUL, a lone surrogate)."""
    return _UNSTORABLE.search(text) is not None


def storable_text(text: str, limit: int) -> str:
    """``text`` with unstorable characters replaced, cut to ``limit`` characters with a marker."""
    text = _UNSTORABLE.sub(REPLACEMENT, text)
    if len(text) > limit:
        text = text[: max(limit - len(CUT_MARKER), 0)] + CUT_MARKER
    return text[:limit]


def optional_text(text: str | None, limit: int) -> str | None:
    """:func:`storable_text` for an optional value."""
    return None if text is None else storable_text(text, limit)


def storable_json(value: Any, limit: int = MODEL_TEXT) -> Any:
    """A JSON-like value with every string (keys included) made storable."""
    if isinstance(value, str):
        return storable_text(value, limit)
    if isinstance(value, Mapping):
        return {storable_text(str(k), limit): storable_json(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v, limit) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def is_market_id(text: str) -> bool:
    """A Polymarket market id as stored: 1 to 32 ASCII digits ("²" is a digit to ``isdigit``)."""
    return 0 < len(text) <= MAX_MARKET_ID_DIGITS and text.isascii() and text.isdigit()


def fits_digits(number: Decimal, bound: Decimal = MAX_VOLUME) -> bool:
    """Whether ``number`` is finite and its magnitude below ``bound`` (a NUMERIC column)."""
    return number.is_finite() and number.copy_abs() < bound  # abs() would overflow 1e1000000


def fits_column(number: Decimal, precision: int, scale: int) -> bool:
    """Whether ``NUMERIC(precision, scale)`` holds ``number`` exactly: finite, fewer than
    ``precision - scale`` integer digits and no digit past ``scale``. Never raises, whatever
    the exponent (``1e1000000`` and ``1e-1000000`` are refused, not computed with)."""
    if not number.is_finite() or number.copy_abs() >= Decimal(10) ** (precision - scale):
        return False
    exponent = number.as_tuple().exponent
    if isinstance(exponent, int) and exponent >= -scale:
        return True
    return number == number.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_DOWN)


def fits_bigint(number: int) -> bool:
    """Whether a ``BIGINT`` column holds ``number``."""
    return -MAX_BIGINT - 1 <= number <= MAX_BIGINT


# --- outside replies (OpenRouter): ids, counts and costs -----------------------------------

MAX_COUNT = 2**31 - 1  # INTEGER on PostgreSQL


def storable_id(text: object, limit: int) -> str | None:
    """An outside opaque id (a generation id) as it can be stored, or None: 1 to ``limit``
    printable ASCII characters without spaces. Never cut: a cut id names something else."""
    if not isinstance(text, str) or not 0 < len(text) <= limit:
        return None
    return text if text.isascii() and text.isprintable() and " " not in text else None


def storable_count(value: object) -> int | None:
    """A count from outside (tokens) as stored: an int in ``[0, MAX_COUNT]``, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


def storable_amount(value: Decimal | None, bound: Decimal, places: int) -> Decimal | None:
    """A non-negative amount from outside (a cost) as its ``NUMERIC`` column keeps it: finite,
    below ``bound``, rounded half-even to ``places`` decimals; else None."""
    if value is None or not fits_digits(value, bound) or value < 0:
        return None
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
