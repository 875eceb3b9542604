"""When each job runs: its slot (the latest fire time at or before an instant) and the next one.

One definition for the runtime (a job run is keyed by its slot), the scheduler's triggers
(:func:`arena.scheduler.triggers` fires exactly at these slots), ``arena status`` and the web
status page. Interval jobs fire every N minutes counted from midnight UTC, N dividing the day
(the configuration refuses others); weekly jobs at their day and time. Pure: no database, no
scheduler library. The jobs and their order are :class:`arena.domain.states.Job`; each job's
schedule is :meth:`arena.config.Schedule.weekly_spec` or
:meth:`~arena.config.Schedule.every_minutes`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from arena.clock import WEEK, floor_to_minutes, week_start
from arena.config import Settings, weekly_offset
from arena.domain.states import Job

MISSED_AFTER = timedelta(seconds=30)
"""An interval slot with no run this long after its fire time was missed: the scheduler starts
its own run at the fire time, so the catch-up does not race it. A run that starts this late
ran late (the incident log of a published dataset, :mod:`arena.publish.incidents`)."""


def weekly_slot(spec: str, now: datetime) -> datetime:
    """The most recent fire time of a weekly ``"sun 00:05"`` schedule at or before ``now``."""
    slot = week_start(now) + weekly_offset(spec)
    return slot if slot <= now else slot - WEEK


def job_slot(settings: Settings, job: Job, now: datetime) -> datetime:
    """The slot (latest scheduled fire time at or before ``now``) of ``job``."""
    if job.weekly:
        return weekly_slot(settings.schedule.weekly_spec(job), now)
    return floor_to_minutes(now, settings.schedule.every_minutes(job))


def next_slot(settings: Settings, job: Job, now: datetime) -> datetime:
    """The first fire time of ``job`` strictly after ``now``."""
    if job.weekly:
        return job_slot(settings, job, now) + WEEK
    minutes = settings.schedule.every_minutes(job)
    candidate = job_slot(settings, job, now) + timedelta(minutes=minutes)
    next_midnight = floor_to_minutes(now, 24 * 60) + timedelta(days=1)
    return min(candidate, next_midnight)  # slots restart at midnight
