"""Jinja2 filters that format stored values for people (the JSON API keeps them exact)."""

from __future__ import annotations

import json
from typing import Any

from jinja2 import Environment

from arena.analytics.leaderboard_columns import fixed, money, percent, share


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
