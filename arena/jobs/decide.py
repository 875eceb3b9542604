"""The weekly decision run (methodology: "What the model sees" through "Execution").

For every agent of the cohorts in the decision window, one after another in a stable order:
claim the decision row, render the prompt from the frozen universe and the agent's portfolio,
call the family's provider (transient failures retried with backoff, every attempt stored the
moment it ends, a paid answer before it is parsed), parse and validate the answer (malformed
answers repaired up to ``malformed_retries`` times, then a system HOLD), and execute it in a
transaction that re-checks the claim (a valid answer's verdict written just before). The work
around each model call overlaps it: while an agent is asked, the next one is claimed and
prompted on a thread (:meth:`DecisionRun.prepare_agent`) and the one before is executed on
another (the traded markets refreshed, their books fetched, the trades and the record written),
executions one at a time in the agents' order, each under its claim's lease. The run ends when
the last execution has; an agent prepared but never asked (the run stopped) has its claim given
back.

Failure states (``Decision.status``):

* ``completed``: a valid decision (or a system HOLD) was executed; final.
* ``retryable``: provider failure, or a BET/SELL whose executions all failed; the next run
  takes the same row over and tries again.
* ``budget_skipped``: the budget could not cover the worst-case cost of the call; retried by
  a later run (with a fresh budget).
* ``claimed``: in flight (or its worker died: taken over at once when the dead holder ran on
  this host, else once its lease expires).

A run never decides on a broken universe: when the freeze is refused
(:class:`UniverseUnavailable`) it claims nothing and the run fails retryably. A universe older
than ``max_price_age_minutes`` is replaced by a fresh one before the next agent is prompted.
Decisions held by another live process are waited for, up to their lease; what is still held
afterwards is reported (``held by HOST:PID until T``) and makes the run unfinished.

A 401/402 from OpenRouter stops the whole run at once (:class:`RunAborted`): the decision in
hand goes back to ``retryable`` and the agents not reached are simply not claimed.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, SystemClock, decision_week
from arena.config import Settings
from arena.domain.book import Pricing
from arena.domain.decisions import (
    Action,
    MalformedResponse,
    ValidationContext,
    ValidDecision,
    extract_json_object,
    validate_decision,
)
from arena.domain.prompting import (
    PromptContext,
    PromptTemplates,
    render_messages,
    render_repair,
)
from arena.domain.states import (
    AttemptKind,
    AttemptOutcome,
    Blocked,
    DecisionStatus,
    FamilyKind,
    Methodology,
)
from arena.domain.tracks import web_search_settings
from arena.errors import (
    BudgetExceeded,
    FatalProviderError,
    ProviderCallError,
    RunAborted,
    UniverseUnavailable,
)
from arena.jobs.budget import Budget
from arena.jobs.claims import (
    LeaseKeeper,
    LeaseTerms,
    Refused,
    claim_decision,
    lock_claim,
    release_completed,
    release_failed,
    withdraw_claim,
)
from arena.jobs.decide_report import AgentResult, AttemptLog, DecideReport
from arena.jobs.decide_view import book_prices, prompt_context, traded_sides
from arena.jobs.execute import Desk, execute_decision, store_forecasts
from arena.jobs.turn import Turn
from arena.jobs.universe import FrozenUniverse, load_universe
from arena.prompts import load_templates
from arena.record.chain import record_decision
from arena.sources.providers import ModelProvider, ModelReply, ModelRequest, call_with_retries
from arena.store.db import transaction
from arena.store.models import Agent, Cohort, Decision
from arena.store.queries import decision_window

if TYPE_CHECKING:
    from arena.sources.clob import BookSource

log = logging.getLogger(__name__)
T = TypeVar("T")

ProviderFor = Callable[[Agent], ModelProvider]
FreezeUniverse = Callable[[Sequence[int]], int]


@dataclass(frozen=True)
class RunSources:
    """What a decision run calls out to: the model provider of each agent, the freeze of a
    fresh universe for the cohorts being decided, the refresh of the markets a decision
    trades (before it executes), and the CLOB that mode-book executions trade against."""

    provider_for: ProviderFor
    freeze_universe: FreezeUniverse
    refresh_markets: Callable[[Sequence[str]], object] | None = None
    books: BookSource | None = None


@dataclass(frozen=True)
class Prompt:
    """What one agent is shown: the context, the cash in it, the templates and the rendered
    messages."""

    ctx: PromptContext
    cash_shown: Decimal
    templates: PromptTemplates
    messages: list[dict[str, str]]


@dataclass(frozen=True)
class Prepared:
    """An agent claimed and prompted, not yet asked (``turn`` None: nothing to ask), with its
    claim's lease renewed until it is asked and executed, or withdrawn."""

    result: AgentResult
    turn: Turn | None = None
    prompt: Prompt | None = None
    lease_kept: ExitStack | None = None


def _never() -> bool:
    return False


@dataclass
class _RunState:
    """What a decision run carries from one agent to the next, and from one round to the
    next: its report, each agent's result, the cohorts decided and the universe in use."""

    report: DecideReport
    cohort_ids: list[int]
    results: dict[int, AgentResult] = field(default_factory=dict)
    universe: FrozenUniverse | None = None


@dataclass(frozen=True)
class RunHooks:
    """How a decision run keeps time with its host: the real clock its leases run on, the
    sleep between a call's retries (None: the provider's default backoff), the wait between
    looks at decisions held by another process, the shutdown flag it checks before each
    agent, and who hears of each agent's result."""

    lease_clock: Clock = field(default_factory=SystemClock)
    sleep: Callable[[float], None] | None = None
    wait: Callable[[float], None] = time.sleep
    should_stop: Callable[[], bool] = _never
    on_progress: Callable[[AgentResult], None] | None = None


class DecisionRun:
    """One decision run over the decision window; construct, then :meth:`run`."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        settings: Settings,
        clock: Clock,
        sources: RunSources,
        *,
        budget: Budget | None = None,
        hooks: RunHooks | None = None,
    ) -> None:
        self.factory = factory
        self.settings = settings
        self.clock = clock
        self.sources = sources
        self.budget = budget or Budget(settings.budget, pricing=None)
        self.hooks = hooks or RunHooks()
        self._deferred: list[Callable[[], object]] = []

    def defer(self, job: Callable[[], object]) -> None:
        """Do ``job``, work no decision needs (the panel's fee schedules, after a freeze),
        while a model call is in flight: on the look-ahead thread, after the next agent is
        prepared. What no call was left to overlap is done as the run ends. A failure is
        logged."""
        self._deferred.append(job)

    def _do_deferred(self, pool: ThreadPoolExecutor | None = None) -> None:
        while self._deferred:
            job = self._deferred.pop(0)
            if pool is None:
                _logged(job)
            else:
                pool.submit(_logged, job)

    def agents_to_decide(self) -> list[tuple[Cohort, Agent]]:
        now = self.clock.now()
        with self.factory() as session:
            window = decision_window(self.settings.benchmark.decision_cohort_limit, now)
            cohorts = sorted(
                session.scalars(select(Cohort).from_statement(window)), key=lambda c: c.week_start
            )
            pairs: list[tuple[Cohort, Agent]] = []
            for cohort in cohorts:
                agents = session.scalars(
                    select(Agent).where(Agent.cohort_id == cohort.id).order_by(Agent.id)
                )
                pairs.extend((cohort, agent) for agent in agents)
        return pairs

    def run(self) -> DecideReport:
        report = DecideReport()
        pairs = self.agents_to_decide()
        if not pairs:
            return report
        for _cohort, agent in pairs:  # a missing key fails here, before anything is claimed
            self.sources.provider_for(agent)
        run = _RunState(report, sorted({c.id for c, _ in pairs}))
        with (
            ThreadPoolExecutor(1, thread_name_prefix="arena-execute") as executions,
            ThreadPoolExecutor(1, thread_name_prefix="arena-prepare") as lookahead,
        ):
            for round_no in range(2):  # the second round retakes what live holders released
                todo = [
                    (c, a)
                    for c, a in pairs
                    if a.id not in run.results or run.results[a.id].status == Blocked.HELD
                ]
                if round_no and todo:
                    self._wait_for_holders([run.results[a.id] for _c, a in todo])
                self._round(run, todo, executions, lookahead)
                if report.aborted or not any(
                    r.status == Blocked.HELD for r in run.results.values()
                ):
                    break
        self._do_deferred()
        report.results = [run.results[a.id] for _c, a in pairs if a.id in run.results]
        return report

    def _round(
        self,
        run: _RunState,
        todo: list[tuple[Cohort, Agent]],
        executions: ThreadPoolExecutor,
        lookahead: ThreadPoolExecutor,
    ) -> None:
        """Decide ``todo`` in order: each agent asked while the next is prepared and the one
        before is executed; returns once the last execution has run."""
        in_flight: Future[None] | None = None
        ahead: Future[Prepared] | None = None
        try:
            for index, (cohort, agent) in enumerate(todo):
                if self.hooks.should_stop():
                    run.report.aborted = "stopped by shutdown; the remaining agents stay undecided"
                    log.warning("decision run stopped by shutdown before agent %s", agent.id)
                    break
                try:
                    if ahead is not None:
                        prepared, ahead = ahead.result(), None
                    else:
                        run.universe = self._fresh_universe(run.universe, run.cohort_ids)
                        run.report.universe_id = run.universe.id
                        prepared = self.prepare_agent(cohort, agent, run.universe)
                    # the next agent is claimed and prompted while this one is asked
                    universe = run.universe
                    if index + 1 < len(todo) and universe is not None and not self._stale(universe):
                        ahead = lookahead.submit(self.prepare_agent, *todo[index + 1], universe)
                    self._do_deferred(lookahead)  # after the next agent's preparation
                    result, rest = self.ask_agent(prepared)
                except (UniverseUnavailable, RunAborted) as exc:
                    run.report.aborted = str(exc)
                    refused = isinstance(exc, UniverseUnavailable)
                    log.error("decision run %s: %s", "refused" if refused else "aborted", exc)
                    break
                run.results[agent.id] = result
                if in_flight is not None:
                    in_flight.result()  # one execution at a time, in the agents' order
                in_flight = executions.submit(self._end_agent, result, rest)
        finally:
            if ahead is not None:  # prepared for an agent the run stopped before
                self._withdraw(ahead)
        if in_flight is not None:
            in_flight.result()

    def _end_agent(self, result: AgentResult, rest: Callable[[], None]) -> None:
        """Run what is left of an agent's decision (its execution), then report the result."""
        rest()
        if self.hooks.on_progress is not None:
            self.hooks.on_progress(result)

    def _stale(self, universe: FrozenUniverse) -> bool:
        """Whether the universe is older than the price age (the next agent gets a fresh one)."""
        return universe.stale(self.clock.now(), self.settings.benchmark.max_price_age_minutes)

    def _fresh_universe(
        self, universe: FrozenUniverse | None, cohort_ids: list[int]
    ) -> FrozenUniverse:
        """The run's universe, replaced by a fresh one once it is older than the price age."""
        if universe is not None and not self._stale(universe):
            return universe
        universe_id = self.sources.freeze_universe(cohort_ids)
        with self.factory() as session:
            return load_universe(session, universe_id)

    def _wait_for_holders(self, held: list[AgentResult]) -> None:
        """Wait until every held decision is final or its lease has run out (real clock)."""
        ends = [r.lease_until for r in held if r.lease_until is not None]
        deadline = max(ends, default=self.hooks.lease_clock.now())
        ids = [r.decision_id for r in held if r.decision_id is not None]
        beats = int((deadline - self.hooks.lease_clock.now()).total_seconds()) + 2
        for _beat in range(max(beats, 0)):
            if self.hooks.should_stop():
                return
            with self.factory() as session:
                pending = session.scalar(
                    select(func.count())
                    .select_from(Decision)
                    .where(Decision.id.in_(ids), Decision.status == DecisionStatus.CLAIMED)
                )
            if not pending:
                return
            self.hooks.wait(1.0)

    # --- one agent -----------------------------------------------------------------------

    def prepare_agent(self, cohort: Cohort, agent: Agent, universe: FrozenUniverse) -> Prepared:
        """One agent claimed and prompted, not yet asked: the run prepares the next agent this
        way (on a thread) while the one before is asked. A claim refused, or a failure before
        the prompt, leaves nothing to ask."""
        now = self.clock.now()
        week = decision_week(cohort.week_start, now)
        result = AgentResult(cohort.id, agent.id, agent.family_id, None, Blocked.HELD)
        lease = LeaseTerms(self.hooks.lease_clock, self.settings.benchmark.claim_lease_seconds)
        claim = claim_decision(
            self.factory, agent, decision_week=week, universe_id=universe.id, now=now, lease=lease
        )
        if isinstance(claim, Refused):
            result.decision_id = claim.decision_id
            result.status = Blocked.HELD if claim.held else Blocked.ALREADY_FINAL
            result.lease_until = claim.lease_until
            if claim.held:
                result.error = claim.describe()
                return Prepared(result)
            with self.factory() as session:
                existing = session.get(Decision, claim.decision_id)
                if existing is not None:
                    result.action, result.system_hold = existing.action, existing.system_hold
            return Prepared(result)
        result.decision_id = claim.decision_id
        attempts = AttemptLog(self.factory, claim, agent.prompt_version, self.clock)
        turn = Turn(claim, agent, week, universe, cohort.pricing, attempts, result)
        lease_kept = ExitStack()
        lease_kept.enter_context(LeaseKeeper(self.factory, claim, lease))
        prompt = self._guarded(turn, lambda: self._prompt(turn))
        if prompt is None:
            lease_kept.close()
            return Prepared(result)
        return Prepared(result, turn, prompt, lease_kept)

    def ask_agent(self, prepared: Prepared) -> tuple[AgentResult, Callable[[], None]]:
        """Ask a prepared agent and validate its answer. Returns the result and what is left to
        do (the execution, under the same lease), which the run does in the background while
        the next agent is asked; the result is final once that has run."""
        turn, prompt, lease_kept = prepared.turn, prepared.prompt, prepared.lease_kept
        if turn is None or prompt is None or lease_kept is None:
            return prepared.result, _nothing
        try:
            execute = self._guarded(turn, lambda: self._decide_claimed(turn, prompt))
        except BaseException:
            lease_kept.close()
            raise
        if execute is None:
            lease_kept.close()
            return prepared.result, _nothing

        def rest() -> None:
            with lease_kept:  # the lease is renewed until the execution has run
                self._guarded(turn, execute)

        return prepared.result, rest

    def _withdraw(self, ahead: Future[Prepared]) -> None:
        """Give back the claim of an agent prepared ahead that the run stopped before asking
        (or failed before: then what failed goes on up). Its lease ends either way; a claim
        that cannot be given back now is taken over once the lease has run out."""
        try:
            prepared = ahead.result()
        except Exception:
            log.exception("the agent prepared ahead failed before it was asked")
            return
        if prepared.turn is None or prepared.lease_kept is None:
            return
        with prepared.lease_kept:
            try:
                withdraw_claim(self.factory, prepared.turn.claim, self.clock.now())
            except Exception:
                log.exception("decision %s: claim not given back", prepared.turn.claim.decision_id)

    def _guarded(self, turn: Turn, step: Callable[[], T]) -> T | None:
        """``step()``; an unexpected failure leaves the decision retryable (None), as one
        agent's failure never blocks the agents after it. A run-wide abort goes through."""
        try:
            return step()
        except RunAborted:
            raise
        except Exception as exc:
            log.exception("decision %s: failed; left retryable", turn.claim.decision_id)
            self._finish(
                turn, DecisionStatus.RETRYABLE, error=f"internal error: {type(exc).__name__}: {exc}"
            )
            return None

    def _prompt(self, turn: Turn) -> Prompt:
        """What the turn's agent is shown, rendered."""
        ctx, cash_shown = prompt_context(self.factory, self.settings, self.clock.now(), turn)
        templates = load_templates(turn.agent.prompt_version)
        return Prompt(ctx, cash_shown, templates, render_messages(ctx, templates))

    def _decide_claimed(self, turn: Turn, prompt: Prompt) -> Callable[[], None] | None:
        """Call and parse one claimed and prompted decision; its execution, left to run, or
        None when the decision ended before one (a failure, or the budget). The budget counts
        what the decision's earlier claims paid, and settles what this one paid whatever
        follows."""
        agent, attempts = turn.agent, turn.attempts
        ctx, cash_shown, templates, messages = (
            prompt.ctx,
            prompt.cash_shown,
            prompt.templates,
            prompt.messages,
        )
        validation = ValidationContext.from_prompt(ctx)
        provider = self.sources.provider_for(agent)
        model = agent_model(agent)
        max_tokens = self.settings.max_tokens(agent.family_id)
        web_search = web_search_settings(agent.web_search)  # frozen at cohort open
        self.budget.carry(agent.family_id, turn.claim.cost_before)
        try:
            self.budget.reserve(
                agent.family_id,
                model,
                messages,
                max_tokens,
                unpaid=agent.kind != FamilyKind.OPENROUTER,
                searched=web_search is not None,
            )
        except BudgetExceeded as exc:
            attempts.store(
                AttemptKind.INITIAL,
                AttemptOutcome.BUDGET_SKIPPED,
                messages,
                self.clock.now(),
                message=str(exc),
            )
            self._finish(turn, DecisionStatus.BUDGET_SKIPPED, error=str(exc))
            return None
        decision: ValidDecision | None = None
        verdict: Callable[[], None] = _nothing  # a valid answer's, written with its execution
        parsed: dict[str, Any] | None = None
        kind = AttemptKind.INITIAL
        last_error = ""
        try:
            for _round in range(self.settings.benchmark.malformed_retries + 1):
                repair = last_error if kind == AttemptKind.REPAIR else None
                request = ModelRequest(
                    agent.family_id,
                    model,
                    list(messages),
                    max_tokens,
                    ctx,
                    repair=repair,
                    web_search=web_search,
                )
                answered = self._call(turn, provider, request, kind)
                if answered is None:
                    return None  # failure already recorded
                reply, attempt_id = answered
                try:
                    parsed = extract_json_object(reply.content)
                    decision = validate_decision(parsed, validation)
                except MalformedResponse as exc:
                    last_error = str(exc)
                    attempts.verdict(attempt_id, AttemptOutcome.MALFORMED, parsed, last_error)
                    messages = [
                        *messages,
                        *render_repair(last_error, reply.content, templates),
                    ]
                    kind, parsed = AttemptKind.REPAIR, None
                    continue
                # written off the path to the next agent's call, right before the execution
                verdict = functools.partial(
                    attempts.verdict, attempt_id, AttemptOutcome.VALID, decision.to_json_dict()
                )
                break
        finally:
            self.budget.settle(agent.family_id, attempts.cost, uncosted=attempts.uncosted)
        if decision is None:
            decision = ValidDecision(
                action=Action.HOLD,
                reasoning=f"system HOLD: still malformed after "
                f"{self.settings.benchmark.malformed_retries} repairs: {last_error}",
            )
            turn.result.system_hold = True
        valid = decision

        def execute() -> None:
            verdict()
            self._execute(turn, valid, cash_shown)

        return execute

    def _call(
        self, turn: Turn, provider: ModelProvider, request: ModelRequest, kind: str
    ) -> tuple[ModelReply, int] | None:
        """The answer and the id of its attempt row (stored ``received`` on arrival), or None
        when the call failed (recorded on the decision)."""
        attempts, messages = turn.attempts, request.messages
        started = [self.clock.now()]
        received: list[int] = []

        def on_attempt(number: int, outcome: ModelReply | ProviderCallError) -> None:
            if isinstance(outcome, ProviderCallError):
                attempts.store(
                    AttemptKind.RETRY if number > 1 else kind,
                    AttemptOutcome(f"{outcome.kind}_error"),
                    messages,
                    started[0],
                    answer=outcome,
                )
            else:
                received.append(
                    attempts.store(
                        kind, AttemptOutcome.RECEIVED, messages, started[0], answer=outcome
                    )
                )
            started[0] = self.clock.now()

        retry_kwargs: dict[str, Any] = {}
        if self.hooks.sleep is not None:
            retry_kwargs["sleep"] = self.hooks.sleep
        try:
            reply = call_with_retries(
                provider,
                request,
                max_attempts=self.settings.openrouter.max_attempts,
                on_attempt=on_attempt,
                **retry_kwargs,
            )
        except FatalProviderError as exc:
            self._finish(turn, DecisionStatus.RETRYABLE, error=f"provider refused: {exc}")
            raise RunAborted(f"{turn.agent.family_id}: {exc}") from exc
        except ProviderCallError as exc:
            self._finish(turn, DecisionStatus.RETRYABLE, error=f"provider failed: {exc}")
            return None
        return reply, received[-1]

    def _execute(self, turn: Turn, decision: ValidDecision, cash_shown: Decimal) -> None:
        claim, agent, universe, result = turn.claim, turn.agent, turn.universe, turn.result
        traded = traded_sides(decision, universe, self.factory, agent.id)
        if self.sources.refresh_markets is not None:
            self.sources.refresh_markets([market_id for market_id, _side in traded])
        book = (
            book_prices(
                self.factory, self.settings, self.sources.books, self.clock.now(), universe, traded
            )
            if turn.pricing == Pricing.BOOK
            else None
        )
        now = self.clock.now()
        with transaction(self.factory) as session:
            row = lock_claim(session, claim)
            if row is None:
                log.warning(
                    "decision %s: claim lost before execution; no trades written", claim.decision_id
                )
                result.status, result.error = Blocked.HELD, "claim lost to another holder"
                return
            locked_agent = session.execute(
                select(Agent).where(Agent.id == agent.id).with_for_update()
            ).scalar_one()
            desk = Desk(session, row.id, locked_agent, universe.by_id, now, book)
            fraction = self.settings.benchmark.max_bet_fraction
            execution = execute_decision(desk, decision, cash_shown, fraction)
            if execution.all_failed:
                session.rollback()
                self._finish(
                    turn,
                    DecisionStatus.RETRYABLE,
                    error="all executions failed: " + "; ".join(execution.failures),
                    decision=decision,
                    refusals=execution.refusals,
                )
                return
            if agent.methodology_version == Methodology.V2:
                store_forecasts(desk, decision)
            release_completed(row, decision, result.system_hold, cash_shown, execution, now)
            record_decision(session, row.id, now)  # same transaction: never one without other
        result.status, result.action = DecisionStatus.COMPLETED, decision.action.value
        result.trades, result.attempts, result.cost_usd = (
            execution.trades,
            turn.attempts.count,
            turn.attempts.cost,
        )

    def _finish(
        self,
        turn: Turn,
        status: str,
        *,
        error: str,
        decision: ValidDecision | None = None,
        refusals: list[dict[str, object]] | None = None,
    ) -> None:
        """Record a failure state on the decision (only while the claim still holds)."""
        now = self.clock.now()
        with transaction(self.factory) as session:
            row = lock_claim(session, turn.claim)
            if row is not None:
                release_failed(row, status, error, decision, refusals, now)
        result = turn.result
        result.status, result.error = status, error
        result.attempts, result.cost_usd = turn.attempts.count, turn.attempts.cost
        if decision is not None:
            result.action = decision.action.value


def _logged(job: Callable[[], object]) -> None:
    """Do ``job``, which no caller waits for: a failure is logged."""
    try:
        job()
    except Exception:
        log.exception("work deferred by the decision run failed")


def _nothing() -> None:
    """What is left of a decision that ended before its execution."""


def agent_model(agent: Agent) -> str:
    """The model name a decision's calls and budget go by: the OpenRouter id, else
    ``baseline/<strategy>`` or ``agent/<family id>``."""
    if agent.openrouter_id:
        return agent.openrouter_id
    if agent.kind == FamilyKind.AGENT:
        return f"agent/{agent.family_id}"
    return f"baseline/{agent.strategy}"
