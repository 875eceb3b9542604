"""A small cache of expensive read results (leaderboard, v2 ranking, curves, metrics), keyed by
the database's *data version*: a handful of cheap aggregates that change whenever the daemon
writes something those results depend on. A page therefore never shows stale numbers, and the
work is redone at most once per write (snapshots land every few minutes), not once per request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.domain.states import MarketStatus
from arena.store.models import (
    Agent,
    BrierScore,
    Decision,
    DecisionAttempt,
    Forecast,
    JobRun,
    Market,
    PortfolioSnapshot,
    Position,
    Trade,
)

T = TypeVar("T")
MAX_ENTRIES = 256


def data_version(session: Session) -> tuple[Any, ...]:
    """One round trip of index-only or tiny reads that change with every write the cached
    results depend on: the newest id of each append-only table (trades, attempts, decisions,
    positions, snapshots, scores, forecasts, job runs), the agents' cash and realized P/L
    (settlements, refunds and sells move them), how many markets have settled (forecasts are
    scored then), the newest price sync, and the newest job run's finish time."""
    newest_run = select(JobRun.finished_at).order_by(JobRun.id.desc()).limit(1)
    parts = [
        select(func.max(model.id)).scalar_subquery()
        for model in (
            PortfolioSnapshot,
            Trade,
            DecisionAttempt,
            Decision,
            Position,
            BrierScore,
            Forecast,
            JobRun,
        )
    ]
    parts += [
        select(func.sum(Agent.cash)).scalar_subquery(),
        select(func.sum(Agent.realized_pnl)).scalar_subquery(),
        select(func.count())
        .select_from(Market)
        .where(Market.status != MarketStatus.OPEN)
        .scalar_subquery(),
        select(func.max(Market.prices_updated_at)).scalar_subquery(),
        newest_run.scalar_subquery(),
    ]
    return tuple(session.execute(select(*parts)).one())


class ResultCache:
    """Thread-safe LRU of ``(key, version) -> value``; concurrent misses on one key compute once."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: OrderedDict[Hashable, tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self._max = max_entries

    def get(self, key: Hashable, version: Any, compute: Callable[[], T]) -> T:
        hit = self._lookup(key, version)
        if hit is not None:
            return hit[0]
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            hit = self._lookup(key, version)
            if hit is not None:
                return hit[0]
            value = compute()
            with self._lock:
                self._entries[key] = (version, value)
                self._entries.move_to_end(key)
                while len(self._entries) > self._max:
                    old, _ = self._entries.popitem(last=False)
                    self._key_locks.pop(old, None)
            return value

    def _lookup(self, key: Hashable, version: Any) -> tuple[Any] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != version:
                return None
            self._entries.move_to_end(key)
            return (entry[1],)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
