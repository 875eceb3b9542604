"""What this week still owes: the weekly work that is due and not done.

One query module for the daemon's catch-up (:meth:`arena.runtime.Runtime.catch_up`) and for
``arena status``: the cohort of the current week, its decision run, and every decision of the
decision window that is not final, each with its reason. A week is never lost silently
(methodology: "A week is never lost"). It reads in SQLAlchemy Core, so that ``arena status``
runs without the ORM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, select

from arena.clock import decision_week, iso_utc, week_start
from arena.domain.states import DecisionStatus, Job, JobRunStatus
from arena.jobs.holders import holder_alive, label
from arena.slots import job_slot
from arena.store.queries import decision_window
from arena.store.schema import agents, cohorts, decisions, job_runs

if TYPE_CHECKING:
    from arena.config import Settings
    from arena.store.queries import Reader


NOT_DECIDED = "not decided yet"
"""The reason of a decision nobody has started: due, not failed."""
NEVER_RAN = "never ran"
"""The state of a weekly run nobody has started: due, not failed."""


@dataclass(frozen=True)
class Unfinished:
    """A decision of the current week that is not final, and why."""

    cohort_id: int
    agent_id: int
    family_id: str
    decision_week: int
    reason: str


@dataclass
class WeekDue:
    """The current week's missing and unfinished weekly work at ``now``."""

    now: datetime
    missing_cohort: datetime | None = None  # the week start of a cohort that should exist
    missing_decision_run: datetime | None = None  # its fire time, when no run succeeded
    decision_run_status: str | None = None
    unfinished: list[Unfinished] = field(default_factory=list)

    def warnings(self) -> list[str]:
        """One line per missing or unfinished item, for ``arena status``."""
        return [line for line, _pending in self._lines()]

    def trouble(self) -> list[str]:
        """The lines of :meth:`warnings` that say something failed or is stuck (a failed run
        or decision, a holder that is gone), not merely that its time has come."""
        return [line for line, pending in self._lines() if not pending]

    def pending(self) -> list[str]:
        """What is only due, nothing failed: the missing cohort, a decision run that never
        ran, and the decisions not made yet (one line for all of those)."""
        lines = [
            line for line, pending in self._lines() if pending and not self._is_undecided(line)
        ]
        undecided = [u for u in self.unfinished if u.reason == NOT_DECIDED]
        if undecided:
            cohorts = ", ".join(str(c) for c in sorted({u.cohort_id for u in undecided}))
            lines.append(
                f"{len(undecided)} decision(s) of this week {NOT_DECIDED} (cohort {cohorts})"
            )
        return lines

    @staticmethod
    def _is_undecided(line: str) -> bool:
        return line.startswith("unfinished decision:") and line.endswith(f": {NOT_DECIDED}")

    def _lines(self) -> list[tuple[str, bool]]:
        """Every line with whether it is only due (True) or trouble (False)."""
        lines: list[tuple[str, bool]] = []
        if self.missing_cohort is not None:
            week = self.missing_cohort.date()
            lines.append((f"missing cohort: no cohort for the week of {week}", True))
        if self.missing_decision_run is not None:
            state = self.decision_run_status or NEVER_RAN
            lines.append(
                (
                    f"missing decision run: the run of {iso_utc(self.missing_decision_run)} "
                    f"has not succeeded ({state})",
                    state == NEVER_RAN,
                )
            )
        lines += [
            (
                f"unfinished decision: agent {u.agent_id} ({u.family_id}) cohort {u.cohort_id} "
                f"week {u.decision_week}: {u.reason}",
                u.reason == NOT_DECIDED,
            )
            for u in self.unfinished
        ]
        return lines


def weekly_fire_time(spec_slot: datetime, now: datetime) -> datetime | None:
    """``spec_slot`` (the latest fire time at or before ``now``) if it falls in ``now``'s week."""
    return spec_slot if spec_slot >= week_start(now) else None


def week_due(
    session: Reader,
    settings: Settings,
    now: datetime,
    cohort_fire: datetime,
    decision_fire: datetime,
    lease_now: datetime,
) -> WeekDue:
    """What the week of ``now`` still owes; ``cohort_fire``/``decision_fire`` are the latest
    fire times of the two weekly jobs, and ``lease_now`` the real time that leases are read at."""
    due = WeekDue(now)
    week = week_start(now)
    if weekly_fire_time(cohort_fire, now) is not None:
        exists = session.scalar(select(cohorts.c.id).where(cohorts.c.week_start == week))
        if exists is None:
            due.missing_cohort = week
    if weekly_fire_time(decision_fire, now) is None:
        return due
    run = session.execute(
        select(job_runs).where(job_runs.c.job == Job.DECISION_RUN, job_runs.c.slot == decision_fire)
    ).one_or_none()
    if run is None or run.status != JobRunStatus.SUCCEEDED:
        due.missing_decision_run = decision_fire
        due.decision_run_status = _run_state(run, lease_now)
    due.unfinished = unfinished_decisions(session, settings, now, lease_now)
    return due


def current_week_due(
    settings: Settings, session: Reader, now: datetime, lease_now: datetime
) -> WeekDue:
    """What the week of ``now`` still owes (missing cohort, decision run, decisions)."""
    return week_due(
        session,
        settings,
        now,
        job_slot(settings, Job.COHORT_START, now),
        job_slot(settings, Job.DECISION_RUN, now),
        lease_now,
    )


def unfinished_decisions(
    session: Reader, settings: Settings, now: datetime, lease_now: datetime
) -> list[Unfinished]:
    """Every agent of the decision window whose decision for this week is not completed."""
    window = session.execute(decision_window(settings.benchmark.decision_cohort_limit, now))
    out: list[Unfinished] = []
    for cohort in sorted(window, key=lambda c: c.week_start):
        week = decision_week(cohort.week_start, now)
        rows = session.execute(
            select(
                agents.c.id.label("agent_id"),
                agents.c.family_id,
                decisions.c.id,
                decisions.c.status,
                decisions.c.holder,
                decisions.c.lease_until,
                decisions.c.error,
            )
            .outerjoin(
                decisions,
                (decisions.c.agent_id == agents.c.id) & (decisions.c.decision_week == week),
            )
            .where(agents.c.cohort_id == cohort.id)
            .order_by(agents.c.id)
        ).all()
        for row in rows:
            if row.status == DecisionStatus.COMPLETED:
                continue
            out.append(
                Unfinished(cohort.id, row.agent_id, row.family_id, week, _reason(row, lease_now))
            )
    return out


def _reason(decision: Any, lease_now: datetime) -> str:
    """Why a decision (a row of ``decisions``; its ``id`` None when there is none) is not final."""
    if decision.id is None:
        return NOT_DECIDED
    if decision.status == DecisionStatus.CLAIMED:
        until = decision.lease_until
        alive = holder_alive(decision.holder)
        if alive is False or (until is not None and until < lease_now):
            return f"held by {label(decision.holder)}, which is gone; retried next run"
        return f"held by {label(decision.holder)} until {iso_utc(until) if until else '?'}"
    return f"{decision.status}: {(decision.error or '')[:120]}".rstrip(": ")


def _run_state(run: Row[Any] | None, lease_now: datetime) -> str:
    if run is None:
        return NEVER_RAN
    if run.status == JobRunStatus.RUNNING:
        if holder_alive(run.holder) is False or run.lease_until < lease_now:
            return f"running by {label(run.holder)}, which is gone"
        return f"running, held by {label(run.holder)} until {iso_utc(run.lease_until)}"
    return f"{run.status}: {(run.error or '')[:120]}".rstrip(": ")


def retry_pause(run_finished: datetime | None, now: datetime, minutes: int) -> bool:
    """Whether a failed run finished too recently to be retried yet."""
    return run_finished is not None and now - run_finished < timedelta(minutes=minutes)
