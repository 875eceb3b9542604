"""The database-level job guard: one run of a job per time slot, across every daemon.

Operators may run two replicas against one PostgreSQL, or a cron ``arena run --once`` next to
a daemon. Before a job runs for a slot (its scheduled fire time) it inserts the unique
``job_runs`` row ``(job, slot)``; whoever inserts it runs the job, everyone else skips. A row
left ``failed``, or ``running`` past its lease (its daemon died), may be taken over. The same
rows are the job-run log (start, end, outcome, counts) that ``arena status`` shows; failures
are also written to ``system_log`` with their traceback.
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, SystemClock
from arena.store.db import transaction
from arena.store.models import JobRun, SystemLog
from arena.store.upsert import insert_ignore

log = logging.getLogger(__name__)

HOLDER = f"{socket.gethostname()}:{os.getpid()}"
DEFAULT_LEASE = timedelta(hours=2)


@dataclass(frozen=True)
class GuardedRun:
    job: str
    slot: datetime
    ran: bool
    status: str  # succeeded | failed | skipped
    counts: dict[str, Any] | None = None
    error: str | None = None


def _acquire(
    factory: sessionmaker[Session],
    job: str,
    slot: datetime,
    started: datetime,
    lease_until: datetime,
    wall_now: datetime,
) -> bool:
    with transaction(factory) as session:
        inserted = insert_ignore(
            session,
            JobRun.__table__,  # type: ignore[arg-type]
            {
                "job": job,
                "slot": slot,
                "holder": HOLDER,
                "status": "running",
                "started_at": started,
                "lease_expires_at": lease_until,
            },
            conflict=["job", "slot"],
        )
        if inserted:
            return True
        result = session.execute(
            update(JobRun)
            .where(
                JobRun.job == job,
                JobRun.slot == slot,
                or_(
                    JobRun.status == "failed",
                    (JobRun.status == "running") & (JobRun.lease_expires_at < wall_now),
                ),
            )
            .values(
                holder=HOLDER,
                status="running",
                started_at=started,
                finished_at=None,
                lease_expires_at=lease_until,
                error=None,
                counts=None,
            )
        )
        return result.rowcount == 1  # type: ignore[attr-defined]


def run_guarded(
    factory: sessionmaker[Session],
    job: str,
    slot: datetime,
    fn: Callable[[], dict[str, Any]],
    *,
    clock: Clock,
    wall_clock: Clock | None = None,
    lease: timedelta = DEFAULT_LEASE,
) -> GuardedRun:
    """Run ``fn`` for ``(job, slot)`` unless another process already did or is doing it.

    A failing ``fn`` is logged and recorded (never raised): the job is retried at its next
    slot, or for this slot by a later ``--once``.
    """
    wall = wall_clock or SystemClock()
    if not _acquire(factory, job, slot, clock.now(), wall.now() + lease, wall.now()):
        log.info("job %s for slot %s: already done or in progress elsewhere", job, slot)
        return GuardedRun(job, slot, False, "skipped")
    try:
        counts = fn()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        log.error("job %s failed for slot %s: %s", job, slot, error)
        _finish(factory, job, slot, clock, "failed", None, error)
        _log_event(
            factory,
            clock,
            job,
            "failed",
            error,
            level="ERROR",
            details={"traceback": traceback.format_exc(limit=8)},
        )
        return GuardedRun(job, slot, True, "failed", error=error)
    _finish(factory, job, slot, clock, "succeeded", counts, None)
    return GuardedRun(job, slot, True, "succeeded", counts)


def _finish(
    factory: sessionmaker[Session],
    job: str,
    slot: datetime,
    clock: Clock,
    status: str,
    counts: dict[str, Any] | None,
    error: str | None,
) -> None:
    with transaction(factory) as session:
        session.execute(
            update(JobRun)
            .where(JobRun.job == job, JobRun.slot == slot, JobRun.holder == HOLDER)
            .values(status=status, finished_at=clock.now(), counts=counts, error=error)
        )


def _log_event(
    factory: sessionmaker[Session],
    clock: Clock,
    source: str,
    event: str,
    message: str,
    *,
    level: str = "INFO",
    details: dict[str, Any] | None = None,
) -> None:
    try:
        with transaction(factory) as session:
            session.add(
                SystemLog(
                    at=clock.now(),
                    level=level,
                    source=source,
                    event=event,
                    message=message[:2000],
                    details=details,
                )
            )
    except Exception:  # the system log must never break a job
        log.exception("could not write the system log")


def latest_runs(session: Session) -> list[JobRun]:
    """The most recent run of every job."""
    runs: dict[str, JobRun] = {}
    for run in session.scalars(select(JobRun).order_by(JobRun.slot, JobRun.started_at)):
        runs[run.job] = run
    return list(runs.values())
