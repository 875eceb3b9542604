"""APScheduler 3 wiring of the runtime's jobs, and nothing else.

UTC cron triggers from ``schedule`` in the config; no job overlaps itself
(``max_instances=1``), missed runs coalesce into one, and a run later than
``misfire_grace_seconds`` is skipped until its next slot. Every job additionally goes through
the database guard (:mod:`arena.jobs.guard`), so two daemons never do the same slot twice.
At start-up and every minute, :meth:`Runtime.catch_up` runs the week's cohort start and
decision run when they are due and not done (a missed fire time, a database outage at it, a
crashed run, a start after the fire time), and retries a failed decision run every
``DECISION_RETRY_MINUTES`` within its week. It also marks abandoned the runs whose holder died,
and takes an interval job's current slot that was missed or abandoned while it is within the
grace: APScheduler's own misfire handling cannot, as a restart forgets what it missed.
"""

from __future__ import annotations

import logging
import signal
import threading
from datetime import UTC, datetime
from types import FrameType

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from arena.clock import SystemClock, iso_utc
from arena.config import Settings, parse_weekly
from arena.domain.states import Job
from arena.runtime import Runtime

log = logging.getLogger(__name__)
CATCH_UP_MINUTES = 1


# Interval slots count from midnight UTC (arena.slots); an interval dividing the day keeps
# every later midnight on the grid, so one anchor serves every day.
SLOT_ANCHOR = datetime(2000, 1, 2, tzinfo=UTC)


def interval_trigger(minutes: int) -> IntervalTrigger:
    """Every ``minutes`` from midnight UTC (10: :00, :10, ...; 90: 00:00, 01:30, 03:00, ...),
    the slots of :func:`arena.slots.job_slot`."""
    return IntervalTrigger(minutes=minutes, start_date=SLOT_ANCHOR, timezone=UTC)


def weekly_trigger(spec: str) -> CronTrigger:
    day, hour, minute = parse_weekly(spec)
    return CronTrigger(day_of_week=day, hour=hour, minute=minute, timezone=UTC)


def triggers(settings: Settings) -> dict[Job, BaseTrigger]:
    """One trigger per job, firing at the job's slots (:mod:`arena.slots`)."""
    schedule = settings.schedule
    return {
        job: weekly_trigger(schedule.weekly_spec(job))
        if job.weekly
        else interval_trigger(schedule.every_minutes(job))
        for job in Job
    }


def build_scheduler(runtime: Runtime) -> BackgroundScheduler:
    settings = runtime.settings
    scheduler = BackgroundScheduler(
        timezone=UTC,
        job_defaults={
            "max_instances": 1,
            "coalesce": True,
            "misfire_grace_time": settings.schedule.misfire_grace_seconds,
        },
    )
    clock = SystemClock()
    for job, trigger in triggers(settings).items():
        scheduler.add_job(runtime.run_job, trigger, args=[job, clock], id=job.value, name=job.value)
    scheduler.add_job(
        catch_up,
        interval_trigger(CATCH_UP_MINUTES),
        args=[runtime],
        id="catch_up",
        name="catch_up",
        next_run_time=datetime.now(UTC),  # at start-up too
    )
    return scheduler


def catch_up(runtime: Runtime) -> None:
    """Catch up the week's missed weekly work; never raises (a database outage is logged and
    the next tick tries again)."""
    try:
        for result in runtime.catch_up(SystemClock()):
            log.info("catch-up %s slot %s: %s", result.job, result.slot, result.describe())
    except Exception as exc:
        log.error("catch-up failed (retried next minute): %s: %s", type(exc).__name__, exc)


def next_run_times(scheduler: BackgroundScheduler) -> dict[str, datetime | None]:
    return {job.id: getattr(job, "next_run_time", None) for job in scheduler.get_jobs()}


def run_forever(runtime: Runtime, stop: threading.Event | None = None) -> None:
    """Run the scheduler until SIGTERM/SIGINT (or ``stop``); the job in flight finishes, a
    decision run stops between agents, leaving the rest claimable by the next run."""
    stop = stop or threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s: shutting down after the job in flight", signal.Signals(signum).name)
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    scheduler = build_scheduler(runtime)
    scheduler.start()
    for job, at in sorted(next_run_times(scheduler).items()):
        log.info("job %s next runs at %s", job, iso_utc(at) if at else "never")
    try:
        while not stop.wait(1.0):
            pass
    finally:
        runtime.stop_event.set()
        scheduler.shutdown(wait=True)
        log.info("scheduler stopped")
