"""The one converter from stored values to JSON values.

Decimals keep their exact text (never a float; the web API trims trailing zeros past the cents),
instants are written by :func:`arena.clock.iso_utc`, mappings get string keys and sequences
become lists. Used by job reports' counts, the web app's JSON and the status report.
"""

from __future__ import annotations

import enum
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from arena.clock import iso_utc
from arena.numbers import exact

PLAIN = frozenset({str, int, float, bool, type(None)})


def jsonable(value: Any, trim: bool = False) -> Any:
    """``value`` with every Decimal, instant, date and enum member made JSON-ready, at any
    depth. ``trim`` (the web API) drops a Decimal's trailing zeros past the cents
    (:func:`arena.numbers.exact`: still exact, without the column's padding)."""
    if type(value) in PLAIN:  # most values of a row: nothing to do (exact types: not enums)
        return value
    if isinstance(value, Decimal):
        return exact(value) if trim else format(value, "f")
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {
            str(k.value if isinstance(k, enum.Enum) else k): jsonable(v, trim)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, trim) for v in value]
    return value
