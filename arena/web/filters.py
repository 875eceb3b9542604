"""Jinja2 filters that format stored values for people (the JSON API keeps them exact)."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from jinja2 import Environment


def _number(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def money(value: Any, signed: bool = False) -> str:
    """``$10,234.50`` (``+$234.50`` when signed); ``-`` for none."""
    number = _number(value)
    if number is None:
        return "-"
    sign = "-" if number < 0 else ("+" if signed and number > 0 else "")
    return f"{sign}${abs(number):,.2f}"


def percent(value: Any, places: int = 2, signed: bool = True) -> str:
    number = _number(value)
    if number is None:
        return "-"
    return f"{number:+.{places}f}%" if signed else f"{number:.{places}f}%"


def fixed(value: Any, places: int = 4, signed: bool = False) -> str:
    number = _number(value)
    if number is None:
        return "-"
    return f"{number:+.{places}f}" if signed else f"{number:.{places}f}"


def share(value: Any) -> str:
    """A rate in [0, 1] as a percentage."""
    number = _number(value)
    return "-" if number is None else f"{number * 100:.1f}%"


def when(value: Any) -> str:
    """An ISO instant, shortened to minutes (``2026-11-02 00:05Z``)."""
    if not value:
        return "-"
    text = str(value).replace("T", " ")
    return text[:16] + "Z" if len(text) >= 16 else text


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def register(env: Environment) -> None:
    env.filters.update(
        money=money, percent=percent, fixed=fixed, share=share, when=when, pretty_json=pretty_json
    )
