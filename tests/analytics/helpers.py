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
    resolved: float | None = None,
    group: str | None = None,
) -> dict[str, Any]:
    """One forecast row of ``family``'s agent in ``week``; a resolved row resolves (and closes)
    3 days after the forecast. Any other column is set by name over it:
    ``{**row("a", "m1", 0.6), "market_probability": 0.5}``."""
    at = WEEK0 + timedelta(weeks=week, minutes=5)
    resolved_at = at + timedelta(days=3) if resolved is not None else None
    return {
        "family_id": family,
        "agent_id": f"{family}-agent",
        "family_kind": None,
        "market_id": market,
        "outcome": None,
        "probability": p,
        "market_probability": None,
        "forecast_at": at,
        "event_group": group,
        "resolved_value": resolved,
        "resolved_at": resolved_at,
        "scheduled_close_at": resolved_at,
    }


def forecasts(*rows: dict[str, Any]) -> Forecasts:
    return Forecasts.from_rows(rows)
