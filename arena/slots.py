"""When each job runs: its slot (the latest fire time at or before an instant) and the next one.

One definition for the runtime (a job run is keyed by its slot), the scheduler's triggers
(:func:`arena.scheduler.triggers` fires exactly at these slots), ``arena status`` and the web
status page. Interval jobs fire every N minutes counted from midnight UTC, N dividing the day
(the configuration refuses others); weekly jobs at their day and time. Pure: no database, no
scheduler library.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from arena.clock import WEEK, floor_to_minutes, week_start
from arena.config import Settings, weekly_offset

# The order `--once` runs due jobs in: a cohort exists before its decisions; markets are fresh
# before decisions and settlement; snapshots see the state after everything else.
JOBS = ("cohort_start", "market_sync", "decision_run", "resolution", "snapshot")
WEEKLY_JOBS = ("cohort_start", "decision_run")


def weekly_slot(spec: str, now: datetime) -> datetime:
    """The most recent fire time of a weekly ``"sun 00:05"`` schedule at or before ``now``."""
    slot = week_start(now) + weekly_offset(spec)
    return slot if slot <= now else slot - WEEK


def interval_minutes(settings: Settings, job: str) -> int:
    schedule = settings.schedule
    return {
        "market_sync": schedule.market_sync_minutes,
        "snapshot": schedule.snapshot_minutes,
        "resolution": schedule.resolution_minutes,
    }[job]


def job_slot(settings: Settings, job: str, now: datetime) -> datetime:
    """The slot (latest scheduled fire time at or before ``now``) of ``job``."""
    if job in WEEKLY_JOBS:
        return weekly_slot(getattr(settings.schedule, job), now)
    return floor_to_minutes(now, interval_minutes(settings, job))


def next_slot(settings: Settings, job: str, now: datetime) -> datetime:
    """The first fire time of ``job`` strictly after ``now``."""
    if job in WEEKLY_JOBS:
        return job_slot(settings, job, now) + WEEK
    minutes = interval_minutes(settings, job)
    candidate = job_slot(settings, job, now) + timedelta(minutes=minutes)
    next_midnight = floor_to_minutes(now, 24 * 60) + timedelta(days=1)
    return min(candidate, next_midnight)  # slots restart at midnight
