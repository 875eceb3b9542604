"""Queries several jobs share, written once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select

from arena.domain.states import PositionStatus
from arena.store.models import Position


def held_market_ids(cohort_ids: list[int] | None = None) -> Select[Any]:
    """Ids of the markets with an OPEN position (in these cohorts, when given), distinct and
    sorted; usable as a subquery (``Market.id.in_(held_market_ids())``)."""
    statement = select(Position.market_id).where(Position.status == PositionStatus.OPEN)
    if cohort_ids is not None:
        statement = statement.where(Position.cohort_id.in_(cohort_ids))
    return statement.distinct().order_by(Position.market_id)
