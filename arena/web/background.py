"""A result computed off the request path, once per data version (:class:`Background`).

The dashboard serves the v2 analysis the daemon stored (:mod:`arena.analytics.stored`). Until
one is stored (``arena serve`` on a database no daemon has analysed yet), the web process
computes it itself, in a thread of its own: a request that finds no result starts that thread
and answers at once, the page saying the analysis is being computed; a later request gets the
result. A result of an older data version is served (with its time) while the new one is being
computed; a request never waits on the computation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class Background(Generic[T]):
    """The latest value computed, and at most one computation of a newer version running."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._version: Hashable | None = None
        self._value: T | None = None
        self._running: Hashable | None = None
        self.thread: threading.Thread | None = None

    def preset(self, version: Hashable, value: T) -> None:
        """Hold ``value`` as computed for ``version`` (the static copy computes its analysis
        before rendering, so no page depends on a thread's timing)."""
        with self._lock:
            self._version, self._value = version, value

    def get(self, version: Hashable, compute: Callable[[], T]) -> tuple[T | None, bool]:
        """The latest value computed (None before the first) and whether it is of
        ``version``; starts computing ``version`` in a thread when it is neither."""
        with self._lock:
            current = self._version == version and self._value is not None
            if not current and self._running is None:
                self._running = version
                self.thread = threading.Thread(
                    target=self._run, args=(version, compute), name=self._name, daemon=True
                )
                self.thread.start()
            return self._value, current

    def _run(self, version: Hashable, compute: Callable[[], T]) -> None:
        try:
            value = compute()
        except Exception as exc:  # logged; the next request for this version tries again
            log.error("%s failed: %s: %s", self._name, type(exc).__name__, exc)
            with self._lock:
                self._running = None
            return
        with self._lock:
            self._version, self._value, self._running = version, value, None
