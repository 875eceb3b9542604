"""Spreadsheet-safe CSV text (the OWASP CSV-injection rule), for exports and the leaderboard.

A text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, and is not
a plain decimal number (``-12.50``, ``+3``, ``1e-5``), gets a single quote ``'`` in front, so a
spreadsheet shows it as text instead of evaluating it. NUL characters are removed from every
text cell. Numbers, times and booleans are never changed; JSON lines and Parquet keep the exact
text.
"""

from __future__ import annotations

import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def safe_cell(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet will not run (see the module doc)."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if text.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_text(value: object) -> str:
    """A JSON value as a CSV cell: null empty, booleans ``true``/``false``, text
    spreadsheet-safe (:func:`safe_cell`), numbers as Python writes them."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return safe_cell(value)
    return str(value)
