"""The arena's jobs wired to their sources: one object the daemon, the CLI and the demo drive.

Production builds it with the real Gamma client and OpenRouter; the demo and the tests build it
with fake transports and a simulated clock. Everything else (the job code, the database, the
guard) is the same. Each job (:class:`arena.domain.states.Job`) is one method named after it,
returning its report (:class:`arena.jobs.report.JobReport`): :meth:`Runtime.cohort_start`,
:meth:`~Runtime.market_sync`, :meth:`~Runtime.decision_run`, :meth:`~Runtime.settlement`,
:meth:`~Runtime.snapshot`, :meth:`~Runtime.commitment`. Its CLI command calls it and prints
the report; the daemon runs it for its slot under the database guard (:meth:`Runtime.run_job`,
through one table of the jobs), and the report decides, for both, whether the job failed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, FixedClock, SystemClock, iso_utc, week_start
from arena.config import Settings
from arena.domain.book import Pricing
from arena.domain.states import Blocked, Job, JobRunStatus
from arena.errors import UniverseUnavailable
from arena.jobs.budget import Budget
from arena.jobs.cohorts import CohortReport, complete_cohorts, start_cohort
from arena.jobs.commit import CommitReport, commit_record, signing_key_from_environment
from arena.jobs.decide import DecisionRun, RunHooks, RunSources
from arena.jobs.decide_report import AgentResult, DecideReport
from arena.jobs.due import WeekDue, current_week_due, retry_pause, weekly_fire_time
from arena.jobs.guard import GuardedRun, JobSlot, mark_abandoned, run_guarded
from arena.jobs.markets import SyncReport, sync_markets
from arena.jobs.prices import refresh_markets
from arena.jobs.report import JobReport, raise_failure
from arena.jobs.settle import SettleReport, settle_markets
from arena.jobs.snapshots import SnapshotReport, take_snapshots
from arena.jobs.universe import BooksAhead, freeze_universe
from arena.logs import load_renderer_in_background
from arena.slots import MISSED_AFTER, job_slot
from arena.sources.anchors import Anchor, build_anchors
from arena.sources.clob import BookSource, ClobClient
from arena.sources.gamma import GammaClient
from arena.sources.openrouter import load_sdk_in_background
from arena.sources.registry import ProviderRegistry
from arena.store.models import Cohort, JobRun
from arena.store.system_log import LogMessage, log_event

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from arena.analytics.stored import AnalysisReport

log = logging.getLogger(__name__)

DECISION_RETRY_MINUTES = 30
ANALYSED_AFTER = frozenset({Job.DECISION_RUN, Job.SETTLEMENT})
"""The jobs that write what the stored v2 analysis reads (forecasts, their results): the
analysis job runs right after each of them."""


class SupportsClose(Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True)
class Sources:
    """The outside world the jobs talk to: Gamma, the model providers, the CLOB order
    books that mode-book cohorts freeze, trade against and are marked at (None: no CLOB), the
    anchors commitments are sent to and the key they are signed with (None: unsigned; from
    ``ARENA_SIGNING_KEY``). ``owned``: what of it the runtime made and so closes
    (:func:`production_runtime`); the rest stays open for whoever made it."""

    gamma: GammaClient
    providers: ProviderRegistry
    clob: BookSource | None = None
    owned: Sequence[SupportsClose] = ()
    anchors: Sequence[Anchor] = ()
    signing_key: Ed25519PrivateKey | None = None


class Runtime:
    def __init__(
        self,
        settings: Settings,
        factory: sessionmaker[Session],
        sources: Sources,
        *,
        sleep: Callable[[float], None] | None = None,
        wall_clock: Clock | None = None,
        wait: Callable[[float], None] = time.sleep,
    ) -> None:
        """``sleep``: the pause between a provider's retries; ``wall_clock``: the real time
        that leases are taken and renewed on; ``wait``: the pause while waiting for a job or
        a decision held by another process (the tests hand in instant ones)."""
        self.settings = settings
        self.factory = factory
        self.gamma = sources.gamma
        self.clob = sources.clob
        self.providers = sources.providers
        self.anchors = sources.anchors
        self.signing_key = sources.signing_key
        self.sleep = sleep
        self.wall_clock = wall_clock
        self.wait = wait
        self.stop_event = threading.Event()
        self._settled: dict[Job, datetime] = {}  # job -> last slot this process saw finished
        self._owned = list(sources.owned)

    # --- the jobs, one method each, named after the job (the CLI commands call these) ------

    def cohort_start(self, clock: Clock) -> CohortReport:
        """This week's cohort with one agent per active family (``arena cohort start``)."""
        return start_cohort(self.factory, self.settings, clock)

    def market_sync(self, clock: Clock) -> SyncReport:
        """The Gamma universe and every market the store needs fresh (``arena markets sync``)."""
        return sync_markets(self.factory, self.gamma, self.settings, clock)

    def settlement(self, clock: Clock) -> SettleReport:
        """Settle what Gamma reports over, then complete the cohorts that have nothing left to
        decide or settle (``arena settle``, alias ``arena resolve``)."""
        report = settle_markets(self.factory, self.settings, clock, self.gamma)
        report.cohorts_completed = complete_cohorts(
            self.factory, self.settings.benchmark.decision_cohort_limit, clock
        )
        return report

    def snapshot(self, clock: Clock, refresh: bool = True) -> SnapshotReport:
        """Value every agent at this slot, after refreshing held markets' prices from Gamma
        unless ``refresh`` is off (``arena snapshot``)."""
        return take_snapshots(
            self.factory,
            self.settings,
            clock,
            self.gamma if refresh else None,
            books=self.clob if refresh else None,
        )

    def commitment(self, clock: Clock) -> CommitReport:
        """Commit the record chain's head if it moved, and deliver every commitment an anchor
        has not taken yet (``arena record commit``)."""
        return commit_record(self.factory, clock, self.signing_key, self.anchors)

    def analysis(self, clock: Clock) -> AnalysisReport:
        """Bring the stored v2 analysis, which the dashboard serves, up to date as of now
        (numpy, pyarrow and scipy load only when it first runs)."""
        from arena.analytics.stored import refresh_analysis

        return refresh_analysis(self.factory, self.settings, clock.now())

    def _commit_after_decisions(self, clock: Clock) -> None:
        """The commitment that follows a decision run; its failure is logged (the next
        commitment run tries again), never the decision run's."""
        try:
            report = self.commitment(clock)
        except Exception as exc:
            log.error("commitment after the decision run failed: %s: %s", type(exc).__name__, exc)
            return
        log.info("after the decision run: %s", report.summary().replace("\n", "; "))

    def decision_run(
        self,
        clock: Clock,
        on_progress: Callable[[AgentResult], None] | None = None,
        *,
        slot: datetime | None = None,
    ) -> DecideReport:
        """The decision run (``arena decide``): before each freeze, sync the markets from
        Gamma and offer only what it just listed; a failed sync or a too-small universe
        decides nothing. ``slot``: the scheduled slot this run is for (:meth:`run_job`); when
        its week had no cohort as the run started, the report says so (its ``missing_cohort``)
        and fails, so the slot is not done and the catch-up decides that cohort once it exists.
        By hand (no slot), nothing to decide is no failure: the rule is the slot's, and this
        is its one home."""
        load_sdk_in_background()  # ready by the first call, after the sync and the freeze
        load_renderer_in_background()  # ready by the sync's first log record
        week = week_start(slot) if slot is not None else None
        if week is not None:
            with self.factory() as session:
                if session.scalar(select(Cohort.id).where(Cohort.week_start == week)) is not None:
                    week = None  # the slot's cohort existed: nothing missing

        def freeze(cohort_ids: Sequence[int]) -> int:
            books = self._books_for(cohort_ids)
            # mode book: the listing's books are fetched while the sync stores the listing,
            # the panel's fees while a model call is in flight (``run``: the run made below)
            size = self.settings.benchmark.universe_size
            ahead = BooksAhead(books, size, lambda job: run.defer(job)) if books else None
            try:
                try:
                    sync = sync_markets(
                        self.factory,
                        self.gamma,
                        self.settings,
                        clock,
                        on_listed=ahead.fetch if ahead is not None else None,
                    )
                except Exception as exc:
                    raise UniverseUnavailable(
                        f"market sync failed, no decision stored: {exc}"
                    ) from exc
                return freeze_universe(
                    self.factory, self.settings, clock.now(), cohort_ids, sync.top_ids, ahead
                )
            finally:
                if ahead is not None:
                    ahead.close()

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
        report.missing_cohort = week
        self._commit_after_decisions(clock)
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

    # --- slots and the guard ---------------------------------------------------------------

    def slot(self, job: Job, now: datetime) -> datetime:
        return job_slot(self.settings, job, now)

    def run_job(
        self, job: Job, clock: Clock, *, reopen: bool = False, analyse: bool = True
    ) -> GuardedRun:
        """Run ``job`` for its slot at ``clock.now()`` under the database guard; ``reopen``:
        even when the slot succeeded before (the catch-up, for agents still undecided). The
        run fails (and is retried) when its report says so (:func:`raise_failure`); else its
        counts are stored on the ``job_runs`` row. ``analyse``: the analysis job follows a job
        of :data:`ANALYSED_AFTER` (``--once`` runs it in its own turn instead)."""
        slot = self.slot(job, clock.now())
        if self._settled.get(job) == slot and not reopen:
            return GuardedRun(job, slot, False, Blocked.ALREADY_FINAL)
        jobs: dict[Job, Callable[[], JobReport]] = {
            Job.COHORT_START: lambda: self.cohort_start(clock),
            Job.MARKET_SYNC: lambda: self.market_sync(clock),
            Job.DECISION_RUN: lambda: self.decision_run(clock, slot=slot),
            Job.SETTLEMENT: lambda: self.settlement(clock),
            Job.SNAPSHOT: lambda: self.snapshot(clock),
            Job.COMMITMENT: lambda: self.commitment(clock),
            Job.ANALYSIS: lambda: self.analysis(clock),
        }

        def run() -> dict[str, Any]:
            report = jobs[job]()
            raise_failure(report)
            return report.counts()

        # A weekly job acts as of its slot's week, even when it runs late (catch-up).
        result = run_guarded(
            self.factory,
            JobSlot(job, slot),
            run,
            clock=clock,
            wall_clock=self.wall_clock,
            reopen=reopen,
        )
        if result.status == JobRunStatus.SUCCEEDED:
            self._settled[job] = slot  # done here: no need to ask the database again
        if analyse and result.ran and job in ANALYSED_AFTER:
            self._analyse_after(job, clock)
        return result

    def _analyse_after(self, job: Job, clock: Clock) -> None:
        """The analysis job right after a job that writes what it reads (:data:`ANALYSED_AFTER`),
        for its own current slot again: its failure is its own run's (recorded and retried at
        its next slot), never ``job``'s."""
        result = self.run_job(Job.ANALYSIS, clock, reopen=True)
        log.info("analysis after %s: %s", job, result.describe())

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
        for job in [job for job in Job if job.weekly]:
            due = self.week_due(now)  # again after the cohort start: its agents are now due
            slot = self.slot(job, now)
            if job == Job.COHORT_START:
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
        for job in Job:
            if job.weekly:
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
                LogMessage(
                    f"slot {iso_utc(result.slot)} caught up {int(late.total_seconds())} s late: "
                    f"{result.describe()}",
                    "WARNING",
                ),
            )
        return result

    def _paused(self, job: Job, slot: datetime, now: datetime) -> bool:
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
            if job != Job.DECISION_RUN:
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
        for job in Job:
            if self.stop_event.is_set():
                break
            slot = self.slot(job, at)
            if job.weekly and weekly_fire_time(slot, at) is None:
                results.append(GuardedRun(job, slot, False, Blocked.WEEK_OVER))
            else:
                results.append(self.run_job(job, clock, analyse=False))
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
    """The runtime with the real Gamma client and OpenRouter (key read when first needed), the
    configured anchors and the signing key of ``ARENA_SIGNING_KEY`` (checked here, at
    start-up); it owns the clients and closes them."""
    key = signing_key_from_environment()
    gamma, providers = GammaClient(settings.polymarket), ProviderRegistry(settings)
    clob = ClobClient(settings.polymarket, base_url=str(settings.polymarket.clob_url))
    anchors = build_anchors(settings.record.anchors)
    owned: list[SupportsClose] = [gamma, providers, clob, *anchors]
    return Runtime(
        settings,
        factory,
        Sources(gamma, providers, clob, owned=owned, anchors=anchors, signing_key=key),
    )
