"""Portfolio-value curves for the charts, downsampled on the server.

A family's curve is the *total* value of its agents at each snapshot time (the sum over the
agents that have a snapshot then; with a cohort, that is the one agent's value), the meaning of
``total_value`` in the leaderboard table, so the curve's latest point equals the table's value
at that time. Its break-even (``base``) is the agents' summed starting balances, so it steps
up when a new cohort's agent joins; its return is their summed P/L over that base.

A range ends at the newest snapshot in scope and starts ``span`` earlier (or at the first
snapshot, when that is later); each series also carries its last point at or before the start,
so even a 10-minute range (one snapshot, or none, in it) draws a line entering from the left
edge. Any range is cut into :data:`BUCKETS` equal time buckets; each bucket keeps its first,
last, minimum and maximum point, so a series never has more than ``4 * BUCKETS`` points (800) and no
peak or trough disappears. Each series carries its maximum drawdown over the range (taken
before downsampling), which the chart shades.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from arena.analytics.leaderboard import RETURN_PLACES
from arena.domain.states import Job, JobRunStatus
from arena.store.models import Agent, Family, JobRun, PortfolioSnapshot

BUCKETS = 200
MAX_POINTS = 4 * BUCKETS
BASELINE_TAG = "(baseline)"


class Point(NamedTuple):
    """One point of a family's curve: the sum over its agents at one snapshot time."""

    t: int  # Unix seconds
    value: float  # dollars
    pct: float  # return in percent
    base: float  # break-even: the agents' summed starting balances, in dollars


P = TypeVar("P", bound=tuple[Any, ...])


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
    base: list[float] = field(default_factory=list)  # break-even in dollars
    drawdown: dict[str, Any] | None = None  # the range's maximum drawdown (:func:`_drawdown`)

    def to_json(self) -> dict[str, Any]:
        return {
            "family_id": self.family_id,
            "display_name": self.display_name,
            "label": series_label(self.display_name, self.kind),
            "kind": self.kind,
            "points": len(self.t),
            "t": self.t,
            "value": self.value,
            "pct": self.pct,
            "base": self.base,
            "drawdown": self.drawdown,
        }


def series_label(display_name: str, kind: str) -> str:
    """A chart legend's name of a family: a baseline is tagged "(baseline)" exactly once,
    whether or not its configured display name already says so."""
    if kind != "baseline" or BASELINE_TAG in display_name.casefold():
        return display_name
    return f"{display_name} {BASELINE_TAG}"


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
        lead_in = _lead_in(session, start, cohort_id, family_id)
        if lead_in is None:  # the range reaches back before the first snapshot
            start = None
        rows = _points(session, lead_in, cohort_id, family_id)
        names = _names(session)
        grouped: dict[str, list[Point]] = {}
        for fid, taken_at, total, pnl in rows:
            total_f, pnl_f = float(total), float(pnl)
            base = total_f - pnl_f
            grouped.setdefault(fid, []).append(
                Point(_epoch(taken_at), total_f, pnl_f / base * 100 if base else 0.0, base)
            )
        for fid, points in sorted(grouped.items()):
            display_name, kind = names.get(fid, (fid, ""))
            s = Series(fid, display_name, kind, drawdown=_drawdown(points))
            for point in downsample(points, BUCKETS):
                s.t.append(point.t)
                s.value.append(round(point.value, 2))
                s.pct.append(round(point.pct, RETURN_PLACES))
                s.base.append(round(point.base, 2))
            series[fid] = s
        latest = sorted({s.base[-1] for s in series.values()})
        break_even = latest[-1] if latest else None
        markers = _markers(session, start, end)
    first = min((s.t[0] for s in series.values()), default=None)
    return {
        "range": curve_range.value,
        "cohort": cohort_id,
        "family": family_id,
        "start": _epoch(start) if start else first,
        "end": _epoch(end) if end else None,
        "break_even": break_even,
        "decision_markers": markers,
        "max_points": MAX_POINTS,
        "series": [s.to_json() for s in series.values()],
    }


def _drawdown(points: list[Point]) -> dict[str, Any] | None:
    """The largest fall of the curve's growth (``1 + return``, so a cohort joining the sum is
    no rise) from a running peak, over every point of the range before downsampling: its
    peak, trough and end time (the first point back at the peak, else the last point), its
    size in percent and whether it recovered. The chart shades peak to end."""
    import numpy as np

    from arena.analytics.risk_measures import drawdown_span

    span = drawdown_span(np.array([1.0 + p.pct / 100.0 for p in points]))
    if span is None:
        return None
    return {
        "peak": points[span.peak].t,
        "trough": points[span.trough].t,
        "end": points[span.end].t,
        "pct": round(100.0 * span.fraction, RETURN_PLACES),
        "recovered": span.recovered,
    }


def _lead_in(
    session: Session, start: datetime | None, cohort_id: int | None, family_id: str | None
) -> datetime | None:
    """Where the points of a range begin: the last snapshot time at or before ``start`` (so a
    short range still has a point to draw a line from); None when there is none (the range
    then starts at the first snapshot)."""
    if start is None:
        return None
    before = _scoped(
        select(func.max(PortfolioSnapshot.taken_at)).where(PortfolioSnapshot.taken_at <= start),
        cohort_id,
        family_id,
    )
    return session.scalar(before)


def downsample(points: list[P], buckets: int) -> Iterable[P]:
    """Per equal-time bucket: first, last, min and max of the value (time order, no duplicate);
    points are ``(t, value, ...)`` sorted by time."""
    if len(points) <= 4 * buckets:
        return points
    t0, t1 = points[0][0], points[-1][0]
    width = (t1 - t0) / buckets or 1
    kept: list[P] = []
    bucket: list[P] = []
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


def _extremes(bucket: list[P]) -> list[P]:
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
