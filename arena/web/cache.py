"""A small cache of expensive read results (leaderboard, v2 ranking, curves, metrics), keyed by
the database's *data version*: a handful of cheap aggregates that change whenever the daemon
writes something those results depend on. The work is redone at most once per write
(snapshots land every few minutes), not once per request. The ledger's pages show the numbers
of the current version; the research measures that take seconds at scale (risk, breakdowns,
trend, a scoped ranking or leaderboard) are served by :meth:`ResultCache.latest`: the last
result while the new version is computed in the background, so no reader waits on them.
"""

from __future__ import annotations

import logging
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
log = logging.getLogger(__name__)
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
        self._refreshing: set[Hashable] = set()
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

    def latest(
        self, key: Hashable, version: Any, compute: Callable[[], T], refresh: Callable[[], T]
    ) -> T:
        """:meth:`get`, except that while a value of an older version is held, that value is
        returned at once and ``refresh`` computes this version in a thread of its own (one per
        key at a time): a reader never waits on a recomputation after a write, and the result
        lags the write by the computation's time. With no value held, ``compute`` runs here."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                if entry[0] != version and key not in self._refreshing:
                    self._refreshing.add(key)
                    threading.Thread(
                        target=self._refresh,
                        args=(key, version, refresh),
                        name=f"refresh {key!r}",
                        daemon=True,
                    ).start()
        if entry is None:
            return self.get(key, version, compute)
        return entry[1]

    def _refresh(self, key: Hashable, version: Any, refresh: Callable[[], Any]) -> None:
        try:
            value = refresh()
        except Exception as exc:  # logged; the next request after it tries again
            log.error("refreshing %r failed: %s: %s", key, type(exc).__name__, exc)
        else:
            with self._lock:
                self._entries[key] = (version, value)
        finally:
            with self._lock:
                self._refreshing.discard(key)

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
