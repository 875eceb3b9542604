"""Where the record has holes: snapshot slots without every snapshot, and abandoned runs.

One reading for ``arena status``, its web twin and ``/metrics`` (methodology: "How gaps show"),
over the last :data:`GAP_WINDOW`:

* a **snapshot gap** is a slot of the snapshot grid at which some agent that should have been
  valued has no snapshot: its cohort existed at the slot (created at or before it) and was not
  completed within the slot's interval. A slot still within ``misfire_grace_seconds`` with no
  run yet, or whose run is in progress under a live holder, is pending, not a gap. Each gap
  names its run's state (``never ran``, ``abandoned``, ``failed: ...``);
* an **abandoned run** is a job run whose holder died mid-run (dead on this host, or its lease
  run out elsewhere) and which nobody finished: marked ``abandoned`` by the daemon, or still
  ``running`` when no daemon has looked since.

It reads in SQLAlchemy Core, on an ORM session or a plain connection, in a fixed number of
queries; holders' leases are judged on ``lease_now``, the real clock they are renewed on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from arena.clock import iso_utc
from arena.domain.states import Job, JobRunStatus
from arena.jobs.holders import holder_gone, label
from arena.slots import job_slot
from arena.store.schema import agents, cohorts, job_runs, portfolio_snapshots

if TYPE_CHECKING:
    from arena.config import Settings
    from arena.store.queries import Reader

GAP_HOURS = 24
GAP_WINDOW = timedelta(hours=GAP_HOURS)
LISTED = 5  # gap slots named in the one-line warning


@dataclass(frozen=True)
class GapSlot:
    """A snapshot slot at which ``missing`` expected agent snapshots do not exist."""

    slot: datetime
    missing: int
    run: str  # the slot's run: "never ran", "abandoned: ...", "failed: ...", "succeeded"


@dataclass(frozen=True)
class SnapshotGaps:
    """The gap slots of the last ``window_hours``, oldest first, and the snapshots they lack."""

    window_hours: int = GAP_HOURS
    slots: list[GapSlot] = field(default_factory=list)
    missing_snapshots: int = 0

    def warnings(self) -> list[str]:
        if not self.slots:
            return []
        named = ", ".join(f"{iso_utc(g.slot)} ({g.run})" for g in self.slots[:LISTED])
        more = f" and {len(self.slots) - LISTED} more" if len(self.slots) > LISTED else ""
        return [
            f"snapshot gaps: {len(self.slots)} slots in the last {self.window_hours} h lack "
            f"{self.missing_snapshots} agent snapshots: {named}{more}"
        ]


@dataclass(frozen=True)
class AbandonedRun:
    """A job run whose holder died mid-run and that nobody finished."""

    job: Job
    slot: datetime
    holder: str  # HOST:PID
    started_at: datetime


def abandoned_warnings(runs: list[AbandonedRun]) -> list[str]:
    """One line per job with abandoned runs (how many, and the latest)."""
    per_job = Counter(run.job for run in runs)
    lines = []
    for job, count in sorted(per_job.items()):
        latest = max((r for r in runs if r.job == job), key=lambda r: r.slot)
        lines.append(
            f"abandoned runs: {count} {job} runs in the last {GAP_HOURS} h never finished, "
            f"their holder gone (latest: slot {iso_utc(latest.slot)}, holder {latest.holder})"
        )
    return lines


def abandoned_runs(session: Reader, now: datetime, lease_now: datetime) -> list[AbandonedRun]:
    """The runs of slots in the last :data:`GAP_WINDOW` whose holder died mid-run, oldest
    first."""
    rows = session.execute(
        select(
            job_runs.c.job,
            job_runs.c.slot,
            job_runs.c.holder,
            job_runs.c.started_at,
            job_runs.c.status,
            job_runs.c.lease_until,
        )
        .where(
            job_runs.c.slot > now - GAP_WINDOW,
            job_runs.c.slot <= now,
            job_runs.c.status.in_([JobRunStatus.ABANDONED, JobRunStatus.RUNNING]),
        )
        .order_by(job_runs.c.slot, job_runs.c.job)
    ).all()
    return [
        AbandonedRun(Job(row.job), row.slot, label(row.holder), row.started_at)
        for row in rows
        if row.status == JobRunStatus.ABANDONED
        or holder_gone(row.holder, row.lease_until, lease_now)
    ]


def snapshot_gaps(
    session: Reader, settings: Settings, now: datetime, lease_now: datetime
) -> SnapshotGaps:
    """The snapshot slots of the last :data:`GAP_WINDOW` that lack an expected snapshot."""
    step = timedelta(minutes=settings.schedule.every_minutes(Job.SNAPSHOT))
    grace = timedelta(seconds=settings.schedule.misfire_grace_seconds)
    since = now - GAP_WINDOW
    tracked = session.execute(
        select(cohorts.c.id, cohorts.c.created_at, cohorts.c.completed_at).where(
            cohorts.c.created_at <= now,
            or_(cohorts.c.completed_at.is_(None), cohorts.c.completed_at > since),
        )
    ).all()
    if not tracked:
        return SnapshotGaps()
    ids = [c.id for c in tracked]
    sizes: dict[int, int] = dict(
        session.execute(
            select(agents.c.cohort_id, func.count())
            .where(agents.c.cohort_id.in_(ids))
            .group_by(agents.c.cohort_id)
        ).all()
    )
    taken: dict[tuple[datetime, int], int] = {
        (row.taken_at, row.cohort_id): row.n
        for row in session.execute(
            select(
                portfolio_snapshots.c.taken_at,
                portfolio_snapshots.c.cohort_id,
                func.count().label("n"),
            )
            .where(portfolio_snapshots.c.taken_at > since, portfolio_snapshots.c.taken_at <= now)
            .group_by(portfolio_snapshots.c.taken_at, portfolio_snapshots.c.cohort_id)
        )
    }
    runs = {
        row.slot: row
        for row in session.execute(
            select(
                job_runs.c.slot,
                job_runs.c.status,
                job_runs.c.holder,
                job_runs.c.lease_until,
                job_runs.c.error,
            ).where(job_runs.c.job == Job.SNAPSHOT, job_runs.c.slot > since, job_runs.c.slot <= now)
        )
    }
    gaps: list[GapSlot] = []
    slot = job_slot(settings, Job.SNAPSHOT, now)
    while slot > since:
        run = runs.get(slot)
        if not _pending(run, slot, now, grace, lease_now):
            # Expected: cohorts created by the slot and not completed within its interval.
            missing = sum(
                max(0, sizes.get(c.id, 0) - taken.get((slot, c.id), 0))
                for c in tracked
                if c.created_at <= slot and not (c.completed_at and c.completed_at < slot + step)
            )
            if missing:
                gaps.append(GapSlot(slot, missing, _run_state(run)))
        slot -= step
    gaps.reverse()
    return SnapshotGaps(GAP_HOURS, gaps, sum(gap.missing for gap in gaps))


def _pending(
    run: Any, slot: datetime, now: datetime, grace: timedelta, lease_now: datetime
) -> bool:
    """Whether the slot may still be snapshotted: not yet run within its grace, or running
    under a live holder."""
    if run is None:
        return now - slot <= grace
    return run.status == JobRunStatus.RUNNING and not holder_gone(
        run.holder, run.lease_until, lease_now
    )


def _run_state(run: Any) -> str:
    if run is None:
        return "never ran"
    if run.status == JobRunStatus.RUNNING:
        return f"abandoned: holder {label(run.holder)} is gone"
    return f"{run.status}: {(run.error or '')[:120]}".rstrip(": ")
