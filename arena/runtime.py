"""The arena's jobs wired to their sources: one object both the daemon and the demo drive.

Production builds it with the real Gamma client and OpenRouter; the demo and the tests build it
with fake transports and a simulated clock. Everything else (the job code, the database, the
guard) is the same. Each job method takes the clock to act at and returns counts for the job
log; :meth:`Runtime.run_job` runs one under the database guard for its slot.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, FixedClock, floor_to_minutes, week_start
from arena.config import Settings, parse_weekly
from arena.errors import JobFailed
from arena.jobs.budget import Budget
from arena.jobs.cohorts import complete_cohorts, start_cohort
from arena.jobs.decide import DecideReport, DecisionRun
from arena.jobs.guard import GuardedRun, run_guarded
from arena.jobs.markets import sync_markets
from arena.jobs.settle import resolve_markets
from arena.jobs.snapshots import take_snapshots
from arena.jobs.universe import freeze_universe
from arena.sources.gamma import GammaClient
from arena.sources.registry import ProviderRegistry

log = logging.getLogger(__name__)

# The order `--once` runs due jobs in: a cohort exists before its decisions; markets are fresh
# before decisions and settlement; snapshots see the state after everything else.
JOBS = ("cohort_start", "market_sync", "decision_run", "resolution", "snapshot")
_DAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def weekly_slot(spec: str, now: datetime) -> datetime:
    """The most recent fire time of a weekly ``"sun 00:05"`` schedule at or before ``now``."""
    day, hour, minute = parse_weekly(spec)
    sunday = week_start(now)
    offset = (_DAYS[day] + 1) % 7  # days after Sunday
    slot = sunday + timedelta(days=offset, hours=hour, minutes=minute)
    return slot if slot <= now else slot - timedelta(days=7)


class Runtime:
    def __init__(
        self,
        settings: Settings,
        factory: sessionmaker[Session],
        gamma: GammaClient,
        providers: ProviderRegistry,
        *,
        sleep: Callable[[float], None] | None = None,
        wall_clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.factory = factory
        self.gamma = gamma
        self.providers = providers
        self.sleep = sleep
        self.wall_clock = wall_clock
        self.stop_event = threading.Event()
        self.last_decide: DecideReport | None = None
        self._settled: dict[str, datetime] = {}  # job -> last slot this process saw finished

    # --- the jobs ------------------------------------------------------------------------

    def cohort_start(self, clock: Clock) -> dict[str, Any]:
        report = start_cohort(self.factory, self.settings, clock)
        return {"cohort_id": report.cohort_id, "created": report.created, "agents": report.agents}

    def market_sync(self, clock: Clock) -> dict[str, Any]:
        return dict(
            _jsonable(sync_markets(self.factory, self.gamma, self.settings, clock).counts())
        )

    def decision_run(self, clock: Clock) -> dict[str, Any]:
        """Refresh the market universe, then decide for every agent in the window."""
        listed: list[str] | None = None
        try:
            sync = sync_markets(self.factory, self.gamma, self.settings, clock)
            listed = sync.top_ids
        except Exception as exc:  # decide on the stored markets rather than not at all
            log.warning("decision run: market sync failed, using stored markets: %s", exc)
        budget = Budget(
            self.settings.budget,
            self.providers.worst_case,
            rounds=self.settings.benchmark.malformed_retries + 1,
        )
        run = DecisionRun(
            self.factory,
            self.settings,
            clock,
            self.providers.for_agent,
            lambda ids: freeze_universe(self.factory, self.settings, clock.now(), ids, listed),
            sleep=self.sleep,
            budget=budget,
            should_stop=self.stop_event.is_set,
            lease_clock=self.wall_clock,
        )
        report = run.run()
        self.last_decide = report
        counts = {
            "decided": sum(r.status == "completed" for r in report.results),
            "failed": sum(r.failed for r in report.results),
            "skipped": sum(r.status == "skipped" for r in report.results),
            "trades": sum(r.trades for r in report.results),
            "cost_usd": str(sum((r.cost_usd for r in report.results), Decimal(0))),
            "aborted": report.aborted,
        }
        if report.failed:
            raise JobFailed(f"decision run failed: {counts}")
        return counts

    def resolution(self, clock: Clock) -> dict[str, Any]:
        report = resolve_markets(self.factory, self.settings, clock, self.gamma)
        completed = complete_cohorts(
            self.factory, self.settings.benchmark.decision_cohort_limit, clock
        )
        counts = dict(_jsonable(dataclasses.asdict(report)))
        counts["cohorts_completed"] = completed
        if report.failures:
            raise JobFailed(f"settlement failed for {len(report.failures)} markets")
        return counts

    def snapshot(self, clock: Clock) -> dict[str, Any]:
        report = take_snapshots(self.factory, self.settings, clock, self.gamma)
        return dict(_jsonable(dataclasses.asdict(report)))

    # --- slots and the guard ---------------------------------------------------------------

    def slot(self, job: str, now: datetime) -> datetime:
        schedule = self.settings.schedule
        if job == "cohort_start":
            return weekly_slot(schedule.cohort_start, now)
        if job == "decision_run":
            return weekly_slot(schedule.decision_run, now)
        minutes = {
            "market_sync": schedule.market_sync_minutes,
            "snapshot": schedule.snapshot_minutes,
            "resolution": schedule.resolution_minutes,
        }[job]
        return floor_to_minutes(now, minutes)

    def run_job(self, job: str, clock: Clock) -> GuardedRun:
        """Run ``job`` for its slot at ``clock.now()`` under the database guard."""
        slot = self.slot(job, clock.now())
        if self._settled.get(job) == slot:
            return GuardedRun(job, slot, False, "skipped")
        method: Callable[[Clock], dict[str, Any]] = getattr(self, job)
        # A weekly job acts as of its slot's week, even when it runs late (catch-up).
        result = run_guarded(
            self.factory, job, slot, lambda: method(clock), clock=clock, wall_clock=self.wall_clock
        )
        if result.status == "succeeded":
            self._settled[job] = slot  # done here: no need to ask the database again
        return result

    def run_due(self, at: datetime) -> list[GuardedRun]:
        """``--once``: every job whose current slot has not run yet, in dependency order."""
        clock = FixedClock(at)
        return [self.run_job(job, clock) for job in JOBS if not self.stop_event.is_set()]

    def close(self) -> None:
        self.gamma.close()
        self.providers.close()


def production_runtime(settings: Settings, factory: sessionmaker[Session]) -> Runtime:
    """The runtime with the real Gamma client and OpenRouter (key read when first needed)."""
    return Runtime(settings, factory, GammaClient(settings.polymarket), ProviderRegistry(settings))
