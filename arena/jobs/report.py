"""What every job's report says: its figures for the job log, a line for the operator, and
whether the job failed.

Each job (:class:`arena.domain.states.Job`) returns one report
(:class:`arena.jobs.cohorts.CohortReport`, :class:`arena.jobs.markets.SyncReport`,
:class:`arena.jobs.decide_report.DecideReport`, :class:`arena.jobs.settle.SettleReport`,
:class:`arena.jobs.snapshots.SnapshotReport`).
The report alone decides how the job ended: its CLI command prints it and exits 1 when it
failed, and the daemon's run of the job for a slot fails (to be retried) on the same rule,
both through :func:`raise_failure`.
"""

from __future__ import annotations

from typing import Any, Protocol

from arena.errors import JobFailed


class JobReport(Protocol):
    """The report of one run of a job."""

    def counts(self) -> dict[str, Any]:
        """The run's figures, JSON-ready (:func:`arena.jsonable.jsonable`), as stored in its
        ``job_runs`` row."""
        ...

    def failure(self) -> str | None:
        """Why the run failed, or None when it did what it had to."""
        ...

    def summary(self) -> str:
        """One or a few lines for the operator (the job's CLI command prints them)."""
        ...


def raise_failure(report: JobReport) -> None:
    """Raise :class:`JobFailed` (exit code 1) with the report's failure, if it has one."""
    failure = report.failure()
    if failure is not None:
        raise JobFailed(failure)
