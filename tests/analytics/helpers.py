"""Small builders of forecast rows for the analytics tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from arena.analytics.records import Forecasts

WEEK0 = datetime(2025, 1, 5, tzinfo=UTC)  # a Sunday


def row(
    family: str,
    market: str,
    p: float,
    *,
    week: int = 0,
    outcome: str | None = None,
    resolved: float | None = None,
    market_p: float | None = None,
    group: str | None = None,
    kind: str | None = None,
    agent: str | None = None,
    resolved_at: datetime | None = None,
    close_at: datetime | None = None,
) -> dict[str, Any]:
    """One forecast row; resolved rows resolve (and close) 3 days after the forecast."""
    at = WEEK0 + timedelta(weeks=week, minutes=5)
    if resolved is not None:
        resolved_at = resolved_at or at + timedelta(days=3)
        close_at = close_at or resolved_at
    return {
        "family_id": family,
        "agent_id": agent or f"{family}-agent",
        "family_kind": kind,
        "market_id": market,
        "outcome": outcome,
        "probability": p,
        "market_probability": market_p,
        "forecast_at": at,
        "event_group": group,
        "resolved_value": resolved,
        "resolved_at": resolved_at,
        "scheduled_close_at": close_at,
    }


def forecasts(*rows: dict[str, Any]) -> Forecasts:
    return Forecasts.from_rows(rows)
