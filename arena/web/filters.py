"""Jinja2 filters: the writers of :mod:`arena.numbers` (the one number format) under their own
names, and ``pretty_json``. The JSON API keeps the values exact."""

from __future__ import annotations

import json
from typing import Any

from jinja2 import Environment

from arena import numbers


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def register(env: Environment) -> None:
    env.filters.update(
        money=numbers.money,
        cost=numbers.cost,
        price=numbers.price,
        shares=numbers.shares,
        bps=numbers.bps,
        count=numbers.count,
        percent=numbers.percent,
        fixed=numbers.fixed,
        share=numbers.share,
        when=numbers.when,
        pretty_json=pretty_json,
    )
