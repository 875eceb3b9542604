"""Who holds a piece of work, and whether that holder is still alive.

Decision claims and job runs both record their holder as ``HOST:PID:START`` (the host name,
the process id and the process start time in whole seconds since the epoch). The start time
tells a process apart from a later one that reused its pid. On the holder's own host a dead
holder is seen at once (:func:`holder_alive`); elsewhere the holder's short lease decides: it
is renewed every third of its length while the work runs (:class:`Heartbeat`), so a crashed
holder's work is free within one lease. Leases run on the real clock, whatever ``--at`` says.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int
    started: int  # process start time, whole seconds since the epoch

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}:{self.started}"

    @property
    def label(self) -> str:
        """``HOST:PID``, as reports name a holder."""
        return f"{self.host}:{self.pid}"

    @classmethod
    def parse(cls, text: str | None) -> Holder | None:
        """The holder recorded in ``text``; ``None`` for an older ``HOST:PID`` or garbage."""
        if not text:
            return None
        host, _, rest = text.rpartition(":")
        host, _, pid = host.rpartition(":")
        if not (host and pid.isdigit() and rest.isdigit()):
            return None
        return cls(host, int(pid), int(rest))


@cache
def this_process() -> Holder:
    """The holder identity of the running process."""
    import psutil  # loaded by the first claim, not by every command that imports this module

    pid = os.getpid()
    return Holder(socket.gethostname()[:60], pid, int(psutil.Process(pid).create_time()))


def holder_alive(text: str | None) -> bool | None:
    """Whether the recorded holder still runs: ``True``/``False`` when it is on this host,
    ``None`` when that cannot be told from here (another host, an old record)."""
    holder = Holder.parse(text)
    if holder is None or holder.host != this_process().host:
        return None
    import psutil

    try:
        started = int(psutil.Process(holder.pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    if psutil.Process(holder.pid).status() == psutil.STATUS_ZOMBIE:
        return False
    return abs(started - holder.started) <= 1


def holder_gone(text: str | None, lease_until: datetime | None, wall_now: datetime) -> bool:
    """Whether the holder of a lease is gone: dead on this host, or (elsewhere, where that
    cannot be seen) its lease has run out on the real clock ``wall_now``."""
    alive = holder_alive(text)
    if alive is not None:
        return not alive
    return lease_until is None or lease_until < wall_now


def label(text: str | None) -> str:
    """``HOST:PID`` of a recorded holder, for reports."""
    holder = Holder.parse(text)
    return holder.label if holder else (text or "unknown")


class Heartbeat:
    """Calls ``renew`` every ``interval`` seconds in a daemon thread while the block runs.

    ``renew`` returns False when the work was lost to another holder; the heartbeat then stops
    and :attr:`lost` is set. A failing renewal is logged and retried at the next beat.
    """

    def __init__(self, renew: Callable[[], bool], interval: float, name: str) -> None:
        self._renew = renew
        self._interval = max(interval, 0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.lost = False

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                if not self._renew():
                    self.lost = True
                    log.warning("%s: lost to another holder", self._thread.name)
                    return
            except Exception:
                log.exception("%s: renewal failed; retrying at the next beat", self._thread.name)
