"""The one source of "now", and week arithmetic.

Every job takes a :class:`Clock`; production uses :class:`SystemClock`, tests and the demo use
:class:`FixedClock` (or move it by hand), and ``--at T`` on the CLI builds a FixedClock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

WEEK = timedelta(days=7)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that stands still until moved; for ``--at``, tests and the demo."""

    def __init__(self, at: datetime) -> None:
        self._at = ensure_utc(at)

    def now(self) -> datetime:
        return self._at

    def set(self, at: datetime) -> None:
        self._at = ensure_utc(at)

    def advance(self, delta: timedelta) -> None:
        self._at += delta


def ensure_utc(value: datetime) -> datetime:
    """Return ``value`` as aware UTC; naive datetimes are taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO 8601 timestamp (``Z`` allowed) into aware UTC."""
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    return ensure_utc(datetime.fromisoformat(cleaned))


def iso_utc(moment: datetime) -> str:
    """The one written form of an instant: ISO 8601 in UTC with a ``Z``, microseconds only when
    present (``2026-11-22T00:05:00Z``); what the CLI, the JSON API, the logs and the exports
    print. Naive instants are taken to be UTC already."""
    return ensure_utc(moment).isoformat().replace("+00:00", "Z")


def week_start(at: datetime) -> datetime:
    """Sunday 00:00:00 UTC at or before ``at``."""
    at = ensure_utc(at)
    days_since_sunday = (at.weekday() + 1) % 7  # Monday=0 ... Sunday=6
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=days_since_sunday)


def decision_week(cohort_week_start: datetime, run_time: datetime) -> int:
    """``floor((run_time - week_start) / 7 days) + 1`` (methodology, Cohorts and weeks)."""
    elapsed = ensure_utc(run_time) - ensure_utc(cohort_week_start)
    return elapsed // WEEK + 1


def floor_to_minutes(at: datetime, minutes: int) -> datetime:
    """Floor ``at`` to the ``minutes`` mark of its hour/day (10 -> :00, :10, :20 ...)."""
    at = ensure_utc(at)
    midnight = at.replace(hour=0, minute=0, second=0, microsecond=0)
    slot = timedelta(minutes=minutes)
    return midnight + ((at - midnight) // slot) * slot
