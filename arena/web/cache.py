"""A small cache of expensive read results (leaderboard, v2 ranking, curves, metrics), keyed by
the database's *data version*: a handful of cheap aggregates that change whenever the daemon
writes something those results depend on. The work is redone at most once per write
(snapshots land every few minutes), not once per request. The results that take a second or
more at scale (the leaderboard, the curves, risk, breakdowns, trend, a scoped ranking or
leaderboard) are served by :meth:`ResultCache.latest`: the last result while one worker thread
computes the new version after the write, so no reader waits on a recomputation."""

from __future__ import annotations

import logging
import math
import threading
import time
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
REFRESH_MIN_S = 30.0  # a result is recomputed at most this often, however often the data change
REFRESH_DUTY = 0.5  # the refresh worker computes at most this share of the time, resting between


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
    """Thread-safe LRU of ``(key, version) -> value``; concurrent misses on one key compute once.

    :meth:`latest` serves what is held and leaves the new version to one worker thread: the
    results a write makes stale are recomputed one at a time, each at most once per
    :data:`REFRESH_MIN_S`, and after each computation the worker rests so that it computes at
    most :data:`REFRESH_DUTY` of the time: a burst of writes (a decision run writes an attempt
    every few seconds) costs half a core at most, never a thread per result and never a
    reader's wait."""

    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        min_interval: float = REFRESH_MIN_S,
        duty: float = REFRESH_DUTY,
    ) -> None:
        self._entries: OrderedDict[Hashable, tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self._max = max_entries
        self._min_interval = min_interval
        self._rest_s_per_s = (1 - duty) / duty  # seconds of rest per second computed
        self._rest_until = -math.inf
        # the refresh worker's queue: key -> (version, refresh), oldest request first
        self._pending: OrderedDict[Hashable, tuple[Any, Callable[[], Any]]] = OrderedDict()
        self._computed_at: dict[Hashable, float] = {}  # monotonic time of each key's last value
        self._busy: Hashable | None = None
        self._changed = threading.Condition(self._lock)
        self._worker: threading.Thread | None = None

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
                self._store(key, version, value)
            return value

    def latest(
        self, key: Hashable, version: Any, compute: Callable[[], T], refresh: Callable[[], T]
    ) -> T:
        """:meth:`get`, except that while a value of an older version is held, that value is
        returned at once and ``refresh`` computes this version on the refresh worker: a reader
        never waits on a recomputation after a write, and the result lags the write by the
        queue's time. With no value held, ``compute`` runs here."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                if entry[0] != version:
                    self._enqueue(key, version, refresh)
        if entry is None:
            return self.get(key, version, compute)
        return entry[1]

    def settle(self, timeout: float) -> bool:
        """Wait until the refresh worker has nothing queued or running; whether it has."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._pending or self._busy is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def _enqueue(self, key: Hashable, version: Any, refresh: Callable[[], Any]) -> None:
        """Queue (or re-aim) the refresh of ``key`` to ``version``; the caller holds the lock."""
        queued = self._pending.get(key)
        if queued is not None and queued[0] == version:
            return
        self._pending[key] = (version, refresh)
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="result refresh", daemon=True)
            self._worker.start()
        self._changed.notify_all()

    def _work(self) -> None:
        """The refresh worker: the oldest queued key that is due, until the queue is empty."""
        while True:
            with self._changed:
                job = self._next_due()
                while job is None:
                    if not self._pending:
                        self._worker = None
                        self._changed.notify_all()
                        return
                    self._changed.wait(self._wait_s())
                    job = self._next_due()
                key, version, refresh = job
                self._busy = key
            started = time.monotonic()
            try:
                value = refresh()
            except Exception as exc:  # logged; the next request after it tries again
                log.error("refreshing %r failed: %s: %s", key, type(exc).__name__, exc)
                with self._changed:
                    self._computed_at[key] = time.monotonic()
            else:
                with self._changed:
                    if key in self._entries:  # not evicted meanwhile
                        self._store(key, version, value)
            finally:
                with self._changed:
                    self._busy = None
                    done = time.monotonic()
                    self._rest_until = done + (done - started) * self._rest_s_per_s
                    self._changed.notify_all()

    def _next_due(self) -> tuple[Hashable, Any, Callable[[], Any]] | None:
        now = time.monotonic()
        if now < self._rest_until:
            return None
        for key, (version, refresh) in self._pending.items():
            if now - self._computed_at.get(key, -math.inf) >= self._min_interval:
                del self._pending[key]
                return key, version, refresh
        return None

    def _wait_s(self) -> float:
        """Seconds until the first queued key is due and the worker has rested."""
        now = time.monotonic()
        due = min(
            self._computed_at.get(key, -math.inf) + self._min_interval for key in self._pending
        )
        return max(0.0, due - now, self._rest_until - now)

    def _store(self, key: Hashable, version: Any, value: Any) -> None:
        """Hold ``value`` as ``key``'s of ``version``; the caller holds the lock."""
        self._entries[key] = (version, value)
        self._entries.move_to_end(key)
        self._computed_at[key] = time.monotonic()
        while len(self._entries) > self._max:
            old, _ = self._entries.popitem(last=False)
            self._key_locks.pop(old, None)
            self._computed_at.pop(old, None)
            self._pending.pop(old, None)

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
