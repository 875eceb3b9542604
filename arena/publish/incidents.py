"""The incident log of a published dataset: ``incidents.jsonl`` and ``analysis/incidents.json``.

One line per incident, ``{"kind", "at", "subject", "detail"}`` plus the ids of its kind:

* ``job_failed``: a scheduled run whose slot ended ``failed`` or ``abandoned`` (its holder died
  mid-run);
* ``job_caught_up``: a run that started more than ``caught_up_after_seconds`` (the scheduler's
  ``schedule.misfire_grace_seconds``) after its slot: the scheduler never starts a run that
  late, so the catch-up (or a reopened decision slot, or ``arena run --once``) ran it;
* ``job_late``: a run that started at least ``late_after_seconds``
  (:data:`arena.slots.MISSED_AFTER`) after its slot, within the grace;
* ``decision_failed``: a decision left ``retryable`` or ``budget_skipped``, never completed;
* ``clob_outage``: a Polymarket CLOB outage the system log recorded (``clob_unavailable``);
* ``anchor_failed``: a commitment an anchor failed to take (``anchor_deliveries``).

A job run is one incident at most (a failure before its timing). A run still ``running`` is in
progress: neither an incident nor counted in the share of runs on time. A run is *on time* when
it succeeded and started less than ``late_after_seconds`` after its slot.

The classification is pure: it reads rows as the export's JSON-lines values (the rows of
``tables/job_runs``, ``tables/decisions`` and ``tables/system_log``,
:func:`arena.export.values.text_value`), so ``arena verify`` recomputes the job-run, decision
and outage incidents of a dataset from its own tables with these same functions.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.clock import iso_utc
from arena.config import Settings
from arena.domain.states import CLOB_UNAVAILABLE, DecisionStatus, JobRunStatus
from arena.export.tables import DECISIONS, JOB_RUNS, SYSTEM_LOG
from arena.export.values import text_rows
from arena.masking import masked_text
from arena.publish.dataset import Part
from arena.publish.layout import INCIDENT_SUMMARY as SUMMARY
from arena.publish.layout import INCIDENTS
from arena.record.canonical import canonical
from arena.slots import MISSED_AFTER
from arena.store.models import AnchorDelivery, Decision

FAILED_DECISIONS = (DecisionStatus.RETRYABLE, DecisionStatus.BUDGET_SKIPPED)
ANCHOR_FAILED = "failed"  # anchor_deliveries.status of a delivery given up


class IncidentKind(enum.StrEnum):
    """What went wrong; the ``kind`` of a line of ``incidents.jsonl``."""

    JOB_FAILED = "job_failed"
    """A scheduled run that failed or was abandoned."""
    JOB_CAUGHT_UP = "job_caught_up"
    """A scheduled run started later than the scheduler's grace: caught up."""
    JOB_LATE = "job_late"
    """A scheduled run started late, within the grace."""
    DECISION_FAILED = "decision_failed"
    """A decision that never completed (retryable or budget-skipped)."""
    CLOB_OUTAGE = "clob_outage"
    """The CLOB order books could not be fetched."""
    ANCHOR_FAILED = "anchor_failed"
    """A commitment an anchor did not take."""


@dataclass(frozen=True)
class Timing:
    """When a run counts as late (``late_after_seconds`` after its slot) and as caught up
    (more than ``caught_up_after_seconds`` after it)."""

    late_after_seconds: float = MISSED_AFTER.total_seconds()
    caught_up_after_seconds: float = 300.0

    @classmethod
    def of(cls, settings: Settings) -> Timing:
        return cls(caught_up_after_seconds=float(settings.schedule.misfire_grace_seconds))

    def to_dict(self) -> dict[str, float]:
        return {
            "late_after_seconds": self.late_after_seconds,
            "caught_up_after_seconds": self.caught_up_after_seconds,
        }


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def delay_seconds(run: Mapping[str, Any]) -> float:
    """How long after its slot a run (a ``job_runs`` row) started."""
    return (_time(run["started_at"]) - _time(run["slot"])).total_seconds()


def run_kind(run: Mapping[str, Any], timing: Timing) -> IncidentKind | None:
    """The incident a job run is, or None (on time, or still running)."""
    status = run["status"]
    if status == JobRunStatus.RUNNING:
        return None
    if status in (JobRunStatus.FAILED, JobRunStatus.ABANDONED):
        return IncidentKind.JOB_FAILED
    delay = delay_seconds(run)
    if delay > timing.caught_up_after_seconds:
        return IncidentKind.JOB_CAUGHT_UP
    if delay >= timing.late_after_seconds:
        return IncidentKind.JOB_LATE
    return None


def job_run_incidents(runs: Iterable[Mapping[str, Any]], timing: Timing) -> list[dict[str, Any]]:
    """One line per job run that failed, ran late or was caught up."""
    lines = []
    for run in runs:
        kind = run_kind(run, timing)
        if kind is None:
            continue
        delay = round(delay_seconds(run), 3)
        if kind is IncidentKind.JOB_FAILED:
            detail = f"{run['status']}: {run['error'] or 'no error recorded'}"
        else:
            detail = f"started {delay:g} s after its slot; {run['status']}"
        lines.append(
            {
                "kind": str(kind),
                "at": run["started_at"],
                "subject": f"{run['job']} slot {run['slot']}",
                "detail": detail,
                "job_run_id": run["job_run_id"],
                "job": run["job"],
                "slot": run["slot"],
                "status": run["status"],
                "delay_seconds": delay,
            }
        )
    return lines


def decision_incidents(decisions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One line per decision left retryable or budget-skipped (``decisions`` rows)."""
    return [
        {
            "kind": str(IncidentKind.DECISION_FAILED),
            "at": row["updated_at"],
            "subject": (
                f"decision {row['decision_id']}: agent {row['agent_id']} ({row['family_id']}), "
                f"cohort {row['cohort_id']} week {row['decision_week']}"
            ),
            "detail": f"{row['status']}: {row['error'] or 'no error recorded'}",
            "decision_id": row["decision_id"],
            "agent_id": row["agent_id"],
            "cohort_id": row["cohort_id"],
            "family_id": row["family_id"],
            "status": row["status"],
        }
        for row in decisions
        if row["status"] in FAILED_DECISIONS
    ]


def outage_incidents(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One line per CLOB outage of the system log (``system_log`` rows)."""
    return [
        {
            "kind": str(IncidentKind.CLOB_OUTAGE),
            "at": row["at"],
            "subject": f"CLOB during the {row['source']}",
            "detail": row["message"],
            "log_id": row["log_id"],
        }
        for row in events
        if row["event"] == CLOB_UNAVAILABLE
    ]


def anchor_incidents(deliveries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One line per failed anchor delivery (rows with ``anchor_delivery_id``,
    ``commitment_id``, ``anchor``, ``attempts``, ``last_error``, ``updated_at``)."""
    return [
        {
            "kind": str(IncidentKind.ANCHOR_FAILED),
            "at": row["updated_at"],
            "subject": f"commitment {row['commitment_id']} to {row['anchor']}",
            "detail": f"failed after {row['attempts']} attempts: {row['last_error'] or '?'}",
            "anchor_delivery_id": row["anchor_delivery_id"],
            "commitment_id": row["commitment_id"],
        }
        for row in deliveries
    ]


def ordered(lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Incident lines in time order (then kind, then subject): the order of the log."""
    return sorted(lines, key=lambda line: (line["at"], line["kind"], line["subject"]))


def on_time_summary(runs: Iterable[Mapping[str, Any]], timing: Timing) -> dict[str, Any]:
    """The share of scheduled runs that ran on time, overall and per job, with the counts of
    each job incident kind; runs in progress are counted apart."""
    per_job: dict[str, Counter[str]] = {}
    for run in runs:
        tally = per_job.setdefault(run["job"], Counter())
        if run["status"] == JobRunStatus.RUNNING:
            tally["in_progress"] += 1
            continue
        tally["runs"] += 1
        kind = run_kind(run, timing)
        tally[str(kind) if kind else "on_time"] += 1
    total: Counter[str] = sum(per_job.values(), Counter())
    return {
        **_shares(total),
        "per_job": {job: _shares(tally) for job, tally in sorted(per_job.items())},
        "thresholds": timing.to_dict(),
    }


def _shares(tally: Counter[str]) -> dict[str, Any]:
    runs = tally["runs"]
    return {
        "scheduled_runs": runs,
        "on_time": tally["on_time"],
        "on_time_share": round(tally["on_time"] / runs, 6) if runs else None,
        "failed": tally[IncidentKind.JOB_FAILED],
        "late": tally[IncidentKind.JOB_LATE],
        "caught_up": tally[IncidentKind.JOB_CAUGHT_UP],
        "in_progress": tally["in_progress"],
    }


# -- reading the database (publishing) -------------------------------------------------------


@dataclass(frozen=True)
class IncidentLog:
    """The incident lines and the summary of one database snapshot."""

    lines: list[dict[str, Any]]
    summary: dict[str, Any]


def incident_log(session: Session, timing: Timing) -> IncidentLog:
    """Every incident of the database as :func:`incidents_part` publishes it."""
    runs = text_rows(session, JOB_RUNS)
    decisions = text_rows(session, DECISIONS, Decision.status.in_(FAILED_DECISIONS))
    lines = ordered(
        [
            *job_run_incidents(runs, timing),
            *decision_incidents(decisions),
            *outage_incidents(text_rows(session, SYSTEM_LOG)),
            *anchor_incidents(_failed_deliveries(session)),
        ]
    )
    kinds = Counter(line["kind"] for line in lines)
    summary = {
        **on_time_summary(runs, timing),
        "incidents": {str(kind): kinds[kind] for kind in IncidentKind},
    }
    return IncidentLog(lines, summary)


def _failed_deliveries(session: Session) -> list[dict[str, Any]]:
    rows = session.execute(
        select(AnchorDelivery)
        .where(AnchorDelivery.status == ANCHOR_FAILED)
        .order_by(AnchorDelivery.id)
    ).scalars()
    return [
        {
            "anchor_delivery_id": row.id,
            "commitment_id": row.commitment_id,
            "anchor": masked_text(row.anchor),
            "attempts": row.attempts,
            "last_error": None if row.last_error is None else masked_text(row.last_error),
            "updated_at": iso_utc(row.updated_at),
        }
        for row in rows
    ]


def incidents_part(settings: Settings) -> Part:
    """The dataset part writing ``incidents.jsonl`` and ``analysis/incidents.json``."""
    timing = Timing.of(settings)

    def write(session: Session, staged: Path) -> list[str]:
        log = incident_log(session, timing)
        with (staged / INCIDENTS).open("wb") as handle:
            for line in log.lines:
                handle.write(canonical(line) + b"\n")
        (staged / SUMMARY).parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(log.summary, indent=2, sort_keys=True) + "\n"
        (staged / SUMMARY).write_text(text, encoding="utf-8")
        return [INCIDENTS, SUMMARY]

    return write
