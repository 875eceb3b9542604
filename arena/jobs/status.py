"""What ``arena status`` (and the daemon's status page) shows, read in a fixed number of queries.

The latest run of every job with its next fire time, the cohorts still tracked, and the open
warnings: the current week's missing and unfinished work (:mod:`arena.jobs.due`) and held
markets that have waited long for resolution. Everything is judged at ``now`` (``--at``);
claim and run leases are judged on ``lease_now``, the real clock they are renewed on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.config import Settings
from arena.domain.states import CLOB_UNAVAILABLE, MarketStatus, PositionStatus
from arena.jobs.cohorts import decision_window, unfinished_cohorts
from arena.jobs.due import current_week_due
from arena.jobs.guard import latest_runs
from arena.slots import JOBS, next_slot
from arena.store.models import Agent, Market, Position, SystemLog
from arena.store.queries import held_market_ids

AWAITING_TOO_LONG = timedelta(days=3)
OUTAGE_WINDOW = timedelta(hours=24)
OUTAGE_LINES = 1000


@dataclass(frozen=True)
class JobLine:
    job: str
    last_slot: datetime | None
    status: str  # the last run's status, or "never"
    finished_at: datetime | None
    next_run: datetime
    error: str | None


@dataclass(frozen=True)
class CohortLine:
    cohort_id: int
    week_start: datetime
    phase: str  # "deciding" (in the decision window) or "tracking"
    agents: int
    open_positions: int


@dataclass(frozen=True)
class Status:
    now: datetime
    jobs: list[JobLine]
    cohorts: list[CohortLine]
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            if isinstance(value, datetime):
                return value.isoformat()
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, list):
                return [plain(v) for v in value]
            return value

        result: dict[str, Any] = plain(asdict(self))
        return result


def read_status(session: Session, settings: Settings, now: datetime, lease_now: datetime) -> Status:
    """The status at ``now``."""
    runs = {r.job: r for r in latest_runs(session, now)}
    jobs = [
        JobLine(
            job=job,
            last_slot=runs[job].slot if job in runs else None,
            status=runs[job].status if job in runs else "never",
            finished_at=runs[job].finished_at if job in runs else None,
            next_run=next_slot(settings, job, now),
            error=runs[job].error if job in runs else None,
        )
        for job in JOBS
    ]
    window = {c.id for c in decision_window(session, settings.benchmark.decision_cohort_limit, now)}
    cohorts = unfinished_cohorts(session, now)
    ids = [c.id for c in cohorts]
    agents = _counts(session, select(Agent.cohort_id, func.count()).where(Agent.cohort_id.in_(ids)))
    positions = _counts(
        session,
        select(Position.cohort_id, func.count()).where(
            Position.cohort_id.in_(ids), Position.status == PositionStatus.OPEN
        ),
    )
    lines = [
        CohortLine(
            cohort_id=c.id,
            week_start=c.week_start,
            phase="deciding" if c.id in window else "tracking",
            agents=agents.get(c.id, 0),
            open_positions=positions.get(c.id, 0),
        )
        for c in cohorts
    ]
    warnings = current_week_due(settings, session, now, lease_now).warnings()
    warnings += awaiting_resolution(session, now)
    warnings += clob_outages(session, now)
    return Status(now=now, jobs=jobs, cohorts=lines, warnings=warnings)


def _counts(session: Session, statement: Any) -> dict[int, int]:
    grouped = statement.group_by(statement.selected_columns[0])
    return dict(session.execute(grouped).all())


def clob_outages(session: Session, now: datetime) -> list[str]:
    """The Polymarket CLOB outages of the last :data:`OUTAGE_WINDOW` (mode book: decisions
    and snapshots that could not get an order book), newest first, with how many there were."""
    rows = session.execute(
        select(SystemLog.at, SystemLog.source, SystemLog.message)
        .where(
            SystemLog.event == CLOB_UNAVAILABLE,
            SystemLog.at <= now,
            SystemLog.at > now - OUTAGE_WINDOW,
        )
        .order_by(SystemLog.at.desc(), SystemLog.id.desc())
        .limit(OUTAGE_LINES)
    ).all()
    if not rows:
        return []
    at, source, message = rows[0]
    more = f" ({len(rows)} in the last 24 h)" if len(rows) > 1 else ""
    return [f"CLOB outage at {at.isoformat()} during the {source}{more}: {message}"]


def awaiting_resolution(session: Session, now: datetime) -> list[str]:
    """Held markets closed for more than :data:`AWAITING_TOO_LONG` that still await resolution."""
    warnings: list[str] = []
    markets = (
        select(Market)
        .where(Market.id.in_(held_market_ids()), Market.status == MarketStatus.OPEN)
        .order_by(Market.id)
    )
    for market in session.scalars(markets):
        closed_at = market.closed_time or (market.end_date if market.closed else None)
        if market.closed and closed_at and now - closed_at > AWAITING_TOO_LONG:
            warnings.append(
                f"market {market.id} closed {closed_at.date()} and still awaits "
                f"resolution ({market.uma_resolution_status or 'no proposal'})"
            )
    return warnings
