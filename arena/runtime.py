"""The arena's jobs wired to their sources: one object the daemon, the CLI and the demo drive.

Production builds it with the real Gamma client and OpenRouter; the demo and the tests build it
with fake transports and a simulated clock. Everything else (the job code, the database, the
guard) is the same. Each job is one method returning its report (:meth:`Runtime.start_cohort`,
:meth:`~Runtime.sync_markets`, :meth:`~Runtime.decide`, :meth:`~Runtime.settle`,
:meth:`~Runtime.take_snapshots`): its CLI command calls it and prints the report; the scheduled
job of the same name (:data:`arena.slots.JOBS`) calls it under the database guard for its slot
(:meth:`Runtime.run_job`) and logs the report's counts.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, FixedClock, SystemClock, week_start
from arena.config import Settings
from arena.domain.book import Pricing
from arena.domain.states import Blocked, DecisionStatus, JobRunStatus
from arena.errors import JobFailed, UniverseUnavailable
from arena.jobs.budget import Budget
from arena.jobs.cohorts import CohortReport, complete_cohorts, start_cohort
from arena.jobs.decide import DecisionRun, RunHooks, RunSources
from arena.jobs.decide_report import AgentResult, DecideReport
from arena.jobs.due import WeekDue, current_week_due, retry_pause, weekly_fire_time
from arena.jobs.guard import GuardedRun, JobSlot, mark_abandoned, run_guarded
from arena.jobs.markets import SyncReport, sync_markets
from arena.jobs.prices import refresh_markets
from arena.jobs.settle import SettleReport, settle_markets
from arena.jobs.snapshots import SnapshotReport, take_snapshots
from arena.jobs.universe import freeze_universe
from arena.slots import JOBS, WEEKLY_JOBS, job_slot
from arena.sources.clob import BookSource, ClobClient
from arena.sources.gamma import GammaClient
from arena.sources.registry import ProviderRegistry
from arena.store.models import Cohort, JobRun
from arena.store.system_log import log_event

log = logging.getLogger(__name__)

DECISION_RETRY_MINUTES = 30
# An interval slot with no run this long after its fire time was missed: the scheduler starts
# its own run at the fire time, so the catch-up does not race it.
MISSED_AFTER = timedelta(seconds=30)


class SupportsClose(Protocol):
    def close(self) -> None: ...


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
        wait: Callable[[float], None] = time.sleep,
        owned: Sequence[SupportsClose] = (),
        clob: BookSource | None = None,
    ) -> None:
        """``owned``: what this runtime made and so closes (:func:`production_runtime`); the
        clients handed in stay open for whoever made them. ``clob``: the order books that
        mode-book cohorts freeze, trade against and are marked at."""
        self.settings = settings
        self.factory = factory
        self.gamma = gamma
        self.clob = clob
        self.providers = providers
        self.sleep = sleep
        self.wall_clock = wall_clock
        self.wait = wait
        self.stop_event = threading.Event()
        self.last_decide: DecideReport | None = None
        self._settled: dict[str, datetime] = {}  # job -> last slot this process saw finished
        self._owned = list(owned)

    # --- the jobs, one method each (the CLI commands call these) ---------------------------

    def start_cohort(self, clock: Clock) -> CohortReport:
        """This week's cohort with one agent per active family (``arena cohort start``)."""
        return start_cohort(self.factory, self.settings, clock)

    def sync_markets(self, clock: Clock) -> SyncReport:
        """The Gamma universe and every market the store needs fresh (``arena markets sync``)."""
        return sync_markets(self.factory, self.gamma, self.settings, clock)

    def settle(self, clock: Clock) -> SettleReport:
        """Settle what Gamma reports over, then complete the cohorts that have nothing left to
        decide or settle (``arena resolve``)."""
        report = settle_markets(self.factory, self.settings, clock, self.gamma)
        report.cohorts_completed = complete_cohorts(
            self.factory, self.settings.benchmark.decision_cohort_limit, clock
        )
        return report

    def take_snapshots(self, clock: Clock, refresh: bool = True) -> SnapshotReport:
        """Value every agent at this slot, after refreshing held markets' prices from Gamma
        unless ``refresh`` is off (``arena snapshot``)."""
        return take_snapshots(
            self.factory,
            self.settings,
            clock,
            self.gamma if refresh else None,
            books=self.clob if refresh else None,
        )

    def decide(
        self, clock: Clock, on_progress: Callable[[AgentResult], None] | None = None
    ) -> DecideReport:
        """The decision run: before each freeze, sync the markets from Gamma and offer only
        what it just listed; a failed sync or a too-small universe decides nothing."""

        def freeze(cohort_ids: Sequence[int]) -> int:
            try:
                sync = sync_markets(self.factory, self.gamma, self.settings, clock)
            except Exception as exc:
                raise UniverseUnavailable(f"market sync failed, no decision stored: {exc}") from exc
            return freeze_universe(
                self.factory,
                self.settings,
                clock.now(),
                cohort_ids,
                sync.top_ids,
                books=self._books_for(cohort_ids),
            )

        budget = Budget(
            self.settings.budget,
            self.providers.worst_case,
            rounds=self.settings.benchmark.malformed_retries + 1,
        )
        sources = RunSources(
            self.providers.for_agent,
            freeze,
            refresh_markets=lambda ids: refresh_markets(self.factory, self.gamma, ids, clock),
            books=self.clob,
        )
        hooks = RunHooks(
            lease_clock=self.wall_clock or SystemClock(),
            sleep=self.sleep,
            wait=self.wait,
            should_stop=self.stop_event.is_set,
            on_progress=on_progress,
        )
        run = DecisionRun(self.factory, self.settings, clock, sources, budget=budget, hooks=hooks)
        report = run.run()
        self.last_decide = report
        return report

    def _books_for(self, cohort_ids: Sequence[int]) -> BookSource | None:
        """The CLOB when a cohort being decided trades in mode book (its universe then
        freezes books), else None; mode book without a CLOB decides nothing."""
        with self.factory() as session:
            modes = set(session.scalars(select(Cohort.pricing).where(Cohort.id.in_(cohort_ids))))
        if Pricing.BOOK not in modes:
            return None
        if self.clob is None:
            raise UniverseUnavailable("mode book needs the CLOB (polymarket.clob_url)")
        return self.clob

    def decision_run(self, clock: Clock) -> dict[str, Any]:
        """The scheduled decision run; fails (retryably) unless every decision is final and
        the slot's week had its cohort when the run started: a slot with no cohort to decide
        is not done (the catch-up decides that cohort once it exists)."""
        week = week_start(self.slot("decision_run", clock.now()))
        with self.factory() as session:
            cohort = session.scalar(select(Cohort.id).where(Cohort.week_start == week))
        report = self.decide(clock)
        counts = {
            "decided": sum(r.status == DecisionStatus.COMPLETED for r in report.results),
            "already_final": sum(r.status == Blocked.ALREADY_FINAL for r in report.results),
            "unfinished": len(report.unfinished),
            "trades": sum(r.trades for r in report.results),
            "cost_usd": str(sum((r.cost_usd for r in report.results), Decimal(0))),
            "aborted": report.aborted,
        }
        if report.failed:
            reason = report.aborted or "; ".join(
                f"{r.family_id}: {r.describe()}" for r in report.unfinished[:5]
            )
            raise JobFailed(f"decision run unfinished: {reason}")
        if cohort is None:
            raise JobFailed(
                f"no cohort for the week of {week.date()} when the run started: its agents are "
                "decided once it exists"
            )
        return counts

    # --- the scheduled jobs (names as in arena.slots.JOBS): a report's counts for the log ---

    def cohort_start(self, clock: Clock) -> dict[str, Any]:
        report = self.start_cohort(clock)
        return {"cohort_id": report.cohort_id, "created": report.created, "agents": report.agents}

    def market_sync(self, clock: Clock) -> dict[str, Any]:
        return dict(_jsonable(self.sync_markets(clock).counts()))

    def resolution(self, clock: Clock) -> dict[str, Any]:
        report = self.settle(clock)
        if report.failures:
            raise JobFailed(f"settlement failed for {len(report.failures)} markets")
        return dict(_jsonable(dataclasses.asdict(report)))

    def snapshot(self, clock: Clock) -> dict[str, Any]:
        return dict(_jsonable(dataclasses.asdict(self.take_snapshots(clock))))

    # --- slots and the guard ---------------------------------------------------------------

    def slot(self, job: str, now: datetime) -> datetime:
        return job_slot(self.settings, job, now)

    def run_job(self, job: str, clock: Clock, *, reopen: bool = False) -> GuardedRun:
        """Run ``job`` for its slot at ``clock.now()`` under the database guard; ``reopen``:
        even when the slot succeeded before (the catch-up, for agents still undecided)."""
        slot = self.slot(job, clock.now())
        if self._settled.get(job) == slot and not reopen:
            return GuardedRun(job, slot, False, Blocked.ALREADY_FINAL)
        method: Callable[[Clock], dict[str, Any]] = getattr(self, job)
        # A weekly job acts as of its slot's week, even when it runs late (catch-up).
        result = run_guarded(
            self.factory,
            JobSlot(job, slot),
            lambda: method(clock),
            clock=clock,
            wall_clock=self.wall_clock,
            reopen=reopen,
        )
        if result.status == JobRunStatus.SUCCEEDED:
            self._settled[job] = slot  # done here: no need to ask the database again
        return result

    def week_due(self, now: datetime) -> WeekDue:
        """What the week of ``now`` still owes (missing cohort, decision run, decisions)."""
        with self.factory() as session:
            return current_week_due(
                self.settings, session, now, (self.wall_clock or SystemClock()).now()
            )

    def catch_up(self, clock: Clock) -> list[GuardedRun]:
        """At daemon start-up and every tick: mark abandoned the runs whose holder is gone,
        catch up the week's weekly work (:meth:`catch_up_week`), and take the current slot of
        each interval job that was missed or lost (:meth:`catch_up_slots`)."""
        mark_abandoned(self.factory, clock, self.wall_clock)
        return self.catch_up_week(clock) + self.catch_up_slots(clock)

    def catch_up_week(self, clock: Clock) -> list[GuardedRun]:
        """Run this week's cohort start and decision run when due and not done, until
        ``schedule.catch_up_hours`` into the week. The decision run is due while any agent of
        the decision window is undecided for its week, whatever its slot's row says (a slot
        that succeeded is reopened for them). A failed decision run is retried every
        ``DECISION_RETRY_MINUTES``, except for a cohort created since it started (never tried:
        decided at once); a missing or crashed one at once. Every slot caught up late is
        recorded in the system log."""
        now = clock.now()
        if now - week_start(now) > timedelta(hours=self.settings.schedule.catch_up_hours):
            return []
        results = []
        for job in WEEKLY_JOBS:
            due = self.week_due(now)  # again after the cohort start: its agents are now due
            slot = self.slot(job, now)
            if job == "cohort_start":
                owed, reopen = due.missing_cohort is not None, False
            else:
                reopen = bool(due.unfinished) and due.missing_decision_run is None
                owed = due.missing_decision_run is not None or bool(due.unfinished)
            if not owed or (self._settled.get(job) == slot and not reopen):
                continue
            if self._paused(job, slot, now):
                continue
            results.append(self._caught_up(self.run_job(job, clock, reopen=reopen), clock))
        return results

    def catch_up_slots(self, clock: Clock) -> list[GuardedRun]:
        """Take the current slot of each interval job while it is within
        ``misfire_grace_seconds`` of its fire time and was missed (no run
        :data:`MISSED_AFTER` after it: the daemon was down or the database unreachable then)
        or lost (its run abandoned by a holder that died). Later than that it is left: the
        next slot comes, and ``arena status`` shows the gap."""
        now = clock.now()
        grace = timedelta(seconds=self.settings.schedule.misfire_grace_seconds)
        results = []
        for job in JOBS:
            if job in WEEKLY_JOBS:
                continue
            slot = self.slot(job, now)
            if now - slot > grace or self._settled.get(job) == slot:
                continue
            with self.factory() as session:
                status = session.scalar(
                    select(JobRun.status).where(JobRun.job == job, JobRun.slot == slot)
                )
            missed = status is None and now - slot >= MISSED_AFTER
            if missed or status == JobRunStatus.ABANDONED:
                results.append(self._caught_up(self.run_job(job, clock), clock))
        return results

    def _caught_up(self, result: GuardedRun, clock: Clock) -> GuardedRun:
        """``result``, recorded in the system log when it ran (a slot run late)."""
        if result.ran:
            late = clock.now() - result.slot
            log_event(
                self.factory,
                clock.now(),
                result.job,
                "caught_up",
                f"slot {result.slot.isoformat()} caught up {int(late.total_seconds())} s late: "
                f"{result.describe()}",
                level="WARNING",
            )
        return result

    def _paused(self, job: str, slot: datetime, now: datetime) -> bool:
        """A failed run is retried only every ``DECISION_RETRY_MINUTES``; a decision run not
        at all before a cohort created since it started, which it never saw."""
        with self.factory() as session:
            run = session.execute(
                select(JobRun).where(JobRun.job == job, JobRun.slot == slot)
            ).scalar_one_or_none()
            if run is None or run.status != JobRunStatus.FAILED:
                return False
            if not retry_pause(run.finished_at, now, DECISION_RETRY_MINUTES):
                return False
            if job != "decision_run":
                return True
            newer = session.scalar(
                select(Cohort.id).where(
                    Cohort.week_start == week_start(slot), Cohort.created_at >= run.started_at
                )
            )
        return newer is None

    def run_due(self, at: datetime) -> list[GuardedRun]:
        """``--once``: every job whose current slot has not run yet, in dependency order,
        after marking abandoned the runs whose holder died. A weekly job whose latest slot lies
        in a past week is not run: that week is over (the same rule as :meth:`catch_up`, which
        owes only the current week's work)."""
        clock = FixedClock(at)
        mark_abandoned(self.factory, clock, self.wall_clock)
        results = []
        for job in JOBS:
            if self.stop_event.is_set():
                break
            slot = self.slot(job, at)
            if job in WEEKLY_JOBS and weekly_fire_time(slot, at) is None:
                results.append(GuardedRun(job, slot, False, Blocked.WEEK_OVER))
            else:
                results.append(self.run_job(job, clock))
        return results

    def finish_held(self, at: datetime, results: list[GuardedRun]) -> list[GuardedRun]:
        """Wait for jobs held by another live process, up to their lease, then run each again
        (taking over a holder that died); the results with the held ones replaced."""
        clock, wall = FixedClock(at), self.wall_clock or SystemClock()
        out = []
        for result in results:
            if result.status == Blocked.HELD and result.lease_until is not None:
                for _beat in range(int((result.lease_until - wall.now()).total_seconds()) + 2):
                    with self.factory() as session:
                        status = session.scalar(
                            select(JobRun.status).where(
                                JobRun.job == result.job, JobRun.slot == result.slot
                            )
                        )
                    if status != JobRunStatus.RUNNING or self.stop_event.is_set():
                        break
                    self.wait(1.0)
                result = self.run_job(result.job, clock)
            out.append(result)
        return out

    def close(self) -> None:
        """Close what this runtime made (never the clients it was handed)."""
        while self._owned:
            self._owned.pop().close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def production_runtime(settings: Settings, factory: sessionmaker[Session]) -> Runtime:
    """The runtime with the real Gamma client and OpenRouter (key read when first needed); it
    owns both and closes them."""
    gamma, providers = GammaClient(settings.polymarket), ProviderRegistry(settings)
    clob = ClobClient(settings.polymarket, base_url=str(settings.polymarket.clob_url))
    return Runtime(settings, factory, gamma, providers, owned=(gamma, providers, clob), clob=clob)
