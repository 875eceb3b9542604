"""Queries several jobs share, written once, in SQLAlchemy Core on :mod:`arena.store.schema`.

Each returns a statement, so it runs on an ORM session (the jobs) as on a plain connection
(``arena status``, which never loads the ORM), or serves as a subquery
(``Market.id.in_(held_market_ids())``); the ORM turns a statement's rows into objects with
``select(Cohort).from_statement(...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sqlalchemy import Select, func, select

from arena.domain.states import CohortStatus, PositionStatus
from arena.store.schema import cohorts, job_runs, positions

T = TypeVar("T")

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.orm import Session

    # What a read runs on: the jobs' ORM session or a Core connection.
    Reader = Session | Connection


def held_market_ids(cohort_ids: list[int] | None = None) -> Select[Any]:
    """Ids of the markets with an OPEN position (in these cohorts, when given), distinct and
    sorted; usable as a subquery (``Market.id.in_(held_market_ids())``)."""
    statement = select(positions.c.market_id).where(positions.c.status == PositionStatus.OPEN)
    if cohort_ids is not None:
        statement = statement.where(positions.c.cohort_id.in_(cohort_ids))
    return statement.distinct().order_by(positions.c.market_id)


def decision_window(limit: int, now: datetime) -> Select[Any]:
    """The newest ``limit`` cohorts that have started by ``now``, newest first: the ones that
    still decide."""
    return (
        select(cohorts)
        .where(cohorts.c.week_start <= now)
        .order_by(cohorts.c.week_start.desc())
        .limit(limit)
    )


def unfinished_cohorts(now: datetime) -> Select[Any]:
    """Cohorts started by ``now`` and not yet completed (snapshots and settlement still follow
    them), oldest first."""
    return (
        select(cohorts)
        .where(cohorts.c.status != CohortStatus.COMPLETED, cohorts.c.week_start <= now)
        .order_by(cohorts.c.week_start)
    )


def latest_runs(at: datetime | None = None) -> Select[Any]:
    """The run of every job for its latest slot (at or before ``at``, when given): one row a
    job, read through the (job, slot) unique index, however long the history."""
    newest = select(job_runs.c.job, func.max(job_runs.c.slot).label("slot")).group_by(
        job_runs.c.job
    )
    if at is not None:
        newest = newest.where(job_runs.c.slot <= at)
    latest = newest.subquery()
    return (
        select(job_runs)
        .join(latest, (job_runs.c.job == latest.c.job) & (job_runs.c.slot == latest.c.slot))
        .order_by(job_runs.c.job)
    )


_BUILT: dict[Hashable, Any] = {}


def built_once(key: Hashable, build: Callable[[], T]) -> T:
    """The statement ``build()`` returns, built the first time ``key`` is asked for and kept
    for the process. For a statement that depends on nothing but ``key`` (its values passed as
    parameters): SQLAlchemy finds its compiled form by a cache key it computes by walking the
    statement, which for a wide one costs more than running it; a statement built once is
    walked once (the key is memoized on it)."""
    if key not in _BUILT:
        _BUILT[key] = build()
    return cast(T, _BUILT[key])
