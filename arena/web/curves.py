"""Portfolio-value curves for the charts, downsampled on the server.

A family's curve is the mean total value of its agents at each snapshot time (with a cohort,
that is the one agent's value), and its return is their summed P/L over their summed starting
balances. Any range is cut into :data:`BUCKETS` equal time buckets; each bucket keeps its
first, last, minimum and maximum point, so a series never has more than ``4 * BUCKETS``
points (800) and no peak or trough disappears.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from arena.domain.states import Job, JobRunStatus
from arena.store.models import Agent, Family, JobRun, PortfolioSnapshot

BUCKETS = 200
MAX_POINTS = 4 * BUCKETS


class CurveRange(enum.StrEnum):
    """The chart's time ranges, ending at the newest snapshot in scope."""

    TEN_MINUTES = "10M"
    HOUR = "1H"
    DAY = "1D"
    WEEK = "1W"
    MONTH = "1M"
    ALL = "ALL"

    @property
    def span(self) -> timedelta | None:
        return {
            "10M": timedelta(minutes=10),
            "1H": timedelta(hours=1),
            "1D": timedelta(days=1),
            "1W": timedelta(weeks=1),
            "1M": timedelta(days=30),
            "ALL": None,
        }[self.value]


@dataclass
class Series:
    family_id: str
    display_name: str
    kind: str
    t: list[int] = field(default_factory=list)  # Unix seconds
    value: list[float] = field(default_factory=list)  # dollars
    pct: list[float] = field(default_factory=list)  # return in percent

    def to_json(self) -> dict[str, Any]:
        return {
            "family_id": self.family_id,
            "display_name": self.display_name,
            "kind": self.kind,
            "points": len(self.t),
            "t": self.t,
            "value": self.value,
            "pct": self.pct,
        }


def curves(
    session: Session,
    curve_range: CurveRange,
    *,
    cohort_id: int | None = None,
    family_id: str | None = None,
) -> dict[str, Any]:
    """The downsampled series of every family in scope, decision-run markers and the break-even
    value: three queries whatever the data size."""
    scope = _scoped(select(func.max(PortfolioSnapshot.taken_at)), cohort_id, family_id)
    end = session.scalar(scope)
    series: dict[str, Series] = {}
    markers: list[int] = []
    start: datetime | None = None
    break_even: float | None = None
    if end is not None:
        span = curve_range.span
        start = end - span if span is not None else None
        rows = _points(session, start, cohort_id, family_id)
        names = _names(session)
        grouped: dict[str, list[tuple[int, float, float, float]]] = {}
        for fid, taken_at, total, pnl, agents in rows:
            total_f, pnl_f = float(total), float(pnl)
            base = total_f - pnl_f
            grouped.setdefault(fid, []).append(
                (
                    _epoch(taken_at),
                    total_f / agents,
                    pnl_f / base * 100 if base else 0.0,
                    base / agents,
                )
            )
        bases = []
        for fid, points in sorted(grouped.items()):
            display_name, kind = names.get(fid, (fid, ""))
            s = Series(fid, display_name, kind)
            for t, value, pct in downsample([(p[0], p[1], p[2]) for p in points], BUCKETS):
                s.t.append(t)
                s.value.append(round(value, 2))
                s.pct.append(round(pct, 3))
            series[fid] = s
            bases.append(points[-1][3])
        break_even = round(sum(bases) / len(bases), 2) if bases else None
        markers = _markers(session, start, end)
    return {
        "range": curve_range.value,
        "cohort": cohort_id,
        "family": family_id,
        "start": _epoch(start) if start else (min((s.t[0] for s in series.values()), default=None)),
        "end": _epoch(end) if end else None,
        "break_even": break_even,
        "decision_markers": markers,
        "max_points": MAX_POINTS,
        "series": [s.to_json() for s in series.values()],
    }


def downsample(
    points: list[tuple[int, float, float]], buckets: int
) -> Iterable[tuple[int, float, float]]:
    """Per equal-time bucket: first, last, min and max of the value (time order, no duplicate);
    points must be sorted by time."""
    if len(points) <= 4 * buckets:
        return points
    t0, t1 = points[0][0], points[-1][0]
    width = (t1 - t0) / buckets or 1
    kept: list[tuple[int, float, float]] = []
    bucket: list[tuple[int, float, float]] = []
    current = 0
    for point in points:
        index = min(int((point[0] - t0) / width), buckets - 1)
        if index != current and bucket:
            kept.extend(_extremes(bucket))
            bucket = []
        current = index
        bucket.append(point)
    if bucket:
        kept.extend(_extremes(bucket))
    return kept


def _extremes(bucket: list[tuple[int, float, float]]) -> list[tuple[int, float, float]]:
    low = min(bucket, key=lambda p: p[1])
    high = max(bucket, key=lambda p: p[1])
    chosen = {id(p): p for p in (bucket[0], low, high, bucket[-1])}
    return sorted(chosen.values(), key=lambda p: p[0])


def _scoped(statement: Select, cohort_id: int | None, family_id: str | None) -> Select:
    if family_id is not None:
        agents = select(Agent.id).where(Agent.family_id == family_id)
        if cohort_id is not None:
            agents = agents.where(Agent.cohort_id == cohort_id)
        statement = statement.where(PortfolioSnapshot.agent_id.in_(agents))
    if cohort_id is not None:
        statement = statement.where(PortfolioSnapshot.cohort_id == cohort_id)
    return statement


def _points(
    session: Session, start: datetime | None, cohort_id: int | None, family_id: str | None
) -> list[Any]:
    statement = (
        select(
            Agent.family_id,
            PortfolioSnapshot.taken_at,
            func.sum(PortfolioSnapshot.total_value),
            func.sum(PortfolioSnapshot.pnl),
            func.count(),
        )
        .join(Agent, Agent.id == PortfolioSnapshot.agent_id)
        .group_by(Agent.family_id, PortfolioSnapshot.taken_at)
        .order_by(Agent.family_id, PortfolioSnapshot.taken_at)
    )
    if start is not None:
        statement = statement.where(PortfolioSnapshot.taken_at >= start)
    if family_id is not None:
        statement = statement.where(Agent.family_id == family_id)
    if cohort_id is not None:
        statement = statement.where(PortfolioSnapshot.cohort_id == cohort_id)
    return list(session.execute(statement))


def _names(session: Session) -> dict[str, tuple[str, str]]:
    rows = session.execute(select(Family.id, Family.display_name, Family.kind))
    return {fid: (name, kind) for fid, name, kind in rows}


def _markers(session: Session, start: datetime | None, end: datetime) -> list[int]:
    statement = select(JobRun.slot).where(
        JobRun.job == Job.DECISION_RUN, JobRun.status == JobRunStatus.SUCCEEDED, JobRun.slot <= end
    )
    if start is not None:
        statement = statement.where(JobRun.slot >= start)
    return sorted({_epoch(slot) for slot in session.scalars(statement)})


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())
