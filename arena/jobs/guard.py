"""The database-level job guard: one run of a job per time slot, across every daemon.

Operators may run two replicas against one PostgreSQL, or a cron ``arena run --once`` next to
a daemon. Before a job runs for a slot (its scheduled fire time) it inserts the unique
``job_runs`` row ``(job, slot)``; whoever inserts it runs the job, everyone else is told who
holds it. A row left ``failed``, ``abandoned``, or ``running`` by a dead holder, is taken
over: at once when the holder ran on this host (:mod:`arena.jobs.holders`), else once its short
lease (renewed every third of it while the job runs, on the real clock) has expired. A
``succeeded`` row is final, except when the catch-up reopens a decision slot that still has
agents to decide (methodology: "When a slot counts as done").

A row left ``running`` by a holder that is gone and that nobody takes over is marked
``abandoned`` (:func:`mark_abandoned`, at every catch-up tick and ``--once``), so the record
never claims a run is in flight that no process is doing. The same rows are the job-run log
(start, end, outcome, counts) that ``arena status`` shows; failures and abandoned runs are
also written to ``system_log``.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, SystemClock, iso_utc
from arena.domain.states import Blocked, Job, JobRunStatus
from arena.jobs.holders import Heartbeat, holder_alive, holder_gone, label, this_process
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import JobRun
from arena.store.system_log import LogMessage, log_event
from arena.store.upsert import insert_ignore

log = logging.getLogger(__name__)

DEFAULT_LEASE = timedelta(seconds=90)


@dataclass(frozen=True)
class JobSlot:
    """One job at one slot (its scheduled fire time): the key of a ``job_runs`` row."""

    job: Job
    slot: datetime


@dataclass(frozen=True)
class GuardedRun:
    job: Job
    slot: datetime
    ran: bool
    status: str  # succeeded | failed | already final | held | week over
    counts: dict[str, Any] | None = None
    error: str | None = None
    holder: str | None = None
    lease_until: datetime | None = None

    @property
    def final(self) -> bool:
        return self.status in (JobRunStatus.SUCCEEDED, Blocked.ALREADY_FINAL, Blocked.WEEK_OVER)

    def describe(self) -> str:
        """``succeeded``, ``already final``, ``held by HOST:PID until T``, or the failure."""
        if self.status == Blocked.HELD:
            until = iso_utc(self.lease_until) if self.lease_until else "?"
            return f"held by {label(self.holder)} until {until}"
        return self.status + (f": {self.error}" if self.error else "")


def _holder() -> str:
    return str(this_process())


def _acquire(
    factory: sessionmaker[Session],
    job_slot: JobSlot,
    started: datetime,
    lease_until: datetime,
    wall_now: datetime,
    reopen: bool = False,
) -> JobRun | None:
    """Take the ``(job, slot)`` row; ``None`` when taken, else the row that stops us.
    ``reopen``: a succeeded row may be taken too."""
    job, slot = job_slot.job, job_slot.slot
    me = _holder()
    take = {
        "holder": me,
        "status": JobRunStatus.RUNNING,
        "started_at": started,
        "finished_at": None,
        "lease_until": lease_until,
        "error": None,
        "counts": None,
    }
    key = (JobRun.job == job, JobRun.slot == slot)
    takeable = [JobRunStatus.FAILED, JobRunStatus.ABANDONED]
    if reopen:
        takeable.append(JobRunStatus.SUCCEEDED)
    with transaction(factory) as session:
        inserted = insert_ignore(
            session,
            schema.job_runs,
            {"job": job, "slot": slot, **take},
            conflict=["job", "slot"],
        )
        if inserted:
            return None
        result = session.execute(
            update(JobRun)
            .where(
                *key,
                or_(
                    JobRun.status.in_(takeable),
                    (JobRun.status == JobRunStatus.RUNNING) & (JobRun.lease_until < wall_now),
                ),
            )
            .values(**take)
        )
        if result.rowcount == 1:  # type: ignore[attr-defined]
            return None
        row = session.execute(select(JobRun).where(*key)).scalar_one()
        if row.status == JobRunStatus.RUNNING and holder_alive(row.holder) is False:
            log.warning("job %s slot %s: holder %s is dead; taking over", job, slot, row.holder)
            result = session.execute(
                update(JobRun)
                .where(*key, JobRun.holder == row.holder, JobRun.status == JobRunStatus.RUNNING)
                .values(**take)
            )
            if result.rowcount == 1:  # type: ignore[attr-defined]
                return None
        session.expunge(row)
        return row


def run_guarded(
    factory: sessionmaker[Session],
    job_slot: JobSlot,
    fn: Callable[[], dict[str, Any]],
    *,
    clock: Clock,
    wall_clock: Clock | None = None,
    reopen: bool = False,
) -> GuardedRun:
    """Run ``fn`` for the job's slot unless another process already did or is doing it
    (``reopen``: even when it succeeded before), under a lease of :data:`DEFAULT_LEASE`.

    A failing ``fn`` is logged and recorded (never raised): the job is retried at its next
    slot, or for this slot by a catch-up or a later ``--once``.
    """
    job, slot, lease = job_slot.job, job_slot.slot, DEFAULT_LEASE
    wall = wall_clock or SystemClock()
    blocker = _acquire(factory, job_slot, clock.now(), wall.now() + lease, wall.now(), reopen)
    if blocker is not None:
        status = Blocked.HELD if blocker.status == JobRunStatus.RUNNING else Blocked.ALREADY_FINAL
        log.info("job %s for slot %s: %s", job, slot, status)
        return GuardedRun(
            job, slot, False, status, holder=blocker.holder, lease_until=blocker.lease_until
        )
    me = _holder()

    def renew() -> bool:
        with transaction(factory) as session:
            result = session.execute(
                update(JobRun)
                .where(
                    JobRun.job == job,
                    JobRun.slot == slot,
                    JobRun.holder == me,
                    JobRun.status == JobRunStatus.RUNNING,
                )
                .values(lease_until=wall.now() + lease)
            )
            return result.rowcount == 1  # type: ignore[attr-defined]

    try:
        with Heartbeat(renew, lease.total_seconds() / 3, f"job-{job}"):
            counts = fn()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        log.error("job %s failed for slot %s: %s", job, slot, error)
        _finish(factory, job_slot, clock, JobRunStatus.FAILED, None, error)
        log_event(
            factory,
            clock.now(),
            job,
            JobRunStatus.FAILED,
            LogMessage(error, "ERROR", {"traceback": traceback.format_exc(limit=8)}),
        )
        return GuardedRun(job, slot, True, JobRunStatus.FAILED, error=error)
    _finish(factory, job_slot, clock, JobRunStatus.SUCCEEDED, counts, None)
    return GuardedRun(job, slot, True, JobRunStatus.SUCCEEDED, counts)


def _finish(
    factory: sessionmaker[Session],
    job_slot: JobSlot,
    clock: Clock,
    status: str,
    counts: dict[str, Any] | None,
    error: str | None,
) -> None:
    with transaction(factory) as session:
        session.execute(
            update(JobRun)
            .where(
                JobRun.job == job_slot.job,
                JobRun.slot == job_slot.slot,
                JobRun.holder == _holder(),
            )
            .values(status=status, finished_at=clock.now(), counts=counts, error=error)
        )


def mark_abandoned(
    factory: sessionmaker[Session], clock: Clock, wall_clock: Clock | None = None
) -> list[tuple[Job, datetime]]:
    """Mark ``abandoned`` every run left ``running`` by a holder that is gone (dead on this
    host, or its lease run out elsewhere); the ``(job, slot)`` of each, also written to the
    system log. Its ``finished_at`` stays empty: it never finished. Idempotent."""
    wall_now = (wall_clock or SystemClock()).now()
    with factory() as session:  # a read first: no write lock unless something is to mark
        running = session.execute(
            select(JobRun.job, JobRun.slot, JobRun.holder, JobRun.lease_until).where(
                JobRun.status == JobRunStatus.RUNNING
            )
        ).all()
    gone = [run for run in running if holder_gone(run.holder, run.lease_until, wall_now)]
    if not gone:
        return []
    marked: list[tuple[Job, datetime]] = []
    with transaction(factory) as session:
        for run in gone:
            result = session.execute(
                update(JobRun)
                .where(
                    JobRun.job == run.job,
                    JobRun.slot == run.slot,
                    JobRun.holder == run.holder,
                    JobRun.status == JobRunStatus.RUNNING,
                    JobRun.lease_until == run.lease_until,  # not renewed since
                )
                .values(
                    status=JobRunStatus.ABANDONED,
                    error=f"holder {label(run.holder)} is gone; the run never finished",
                )
            )
            if result.rowcount == 1:  # type: ignore[attr-defined]
                marked.append((Job(run.job), run.slot))  # an old name reads as its job
    for job, slot in marked:
        log.warning("job %s slot %s: its holder is gone; marked abandoned", job, slot)
        log_event(
            factory,
            clock.now(),
            job,
            JobRunStatus.ABANDONED,
            LogMessage(
                f"slot {iso_utc(slot)}: its holder is gone; the run never finished", "WARNING"
            ),
        )
    return marked
