"""Standings per model family, computed from stored rows (``arena leaderboard``).

Every number is recomputed from the tables, never from a cache, so the leaderboard always
agrees with an export of the same database:

* ``total_value`` is the *live* valuation: for each agent its cash plus each open position
  marked at the market's stored last valid price (``markets.prices``, side-correct, to the
  cent), summed over the family's agents. The latest portfolio snapshot would say the same up
  to ten minutes earlier; the live figure is used because an export carries exactly these
  rows (agents, positions, markets), so anyone can reproduce it;
* ``pnl = total_value - sum of the agents' starting balances``, ``return_pct = pnl / that sum *
  100``; with replicates (a family's ``replicates: N``), ``pnl_mean`` is the mean over the
  family's replicates of each replicate's P/L (replicate r's agents over the cohorts in scope)
  and ``pnl_spread`` their sample standard deviation (null for one replicate), and families
  rank on ``pnl_mean`` (which is ``pnl`` for a family without replicates); ``realized_pnl`` is
  the agents' realized P/L (sells and settlements), ``unrealized_pnl`` the open positions'
  marked value minus their cost basis;
* mode book (executable prices): ``exit_pnl`` is the latest ``exit_value`` of each mode-book
  agent's snapshots (cash plus selling every open position into the bids, fees included)
  minus its starting balance, summed over those agents (null when none has one);
  ``slippage_mid_bps`` and ``fill_ratio`` are means over the family's mode-book trades,
  ``fees_usd`` their sum, and ``liquidity_refusals`` the executions refused because the book
  held too little within the limit price;
* scores come from ``brier_scores`` (one row per scored BUY; family Brier across cohorts is the
  mean over all of its scored trades), cost and tokens from ``decision_attempts``, reliability
  from ``decisions`` and ``decision_attempts``.

Memory stays flat as the arena grows: rows are streamed in batches and folded into one small
accumulator per family; counts that need no exact decimals are aggregated in SQL. Money is
summed in Python as ``Decimal`` (on SQLite money is stored as text, so SQL ``SUM`` would go
through floats).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import IO, Any, TypeVar

from sqlalchemy import Select, case, func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.analytics.execution_quality import (
    ExecutionQuality,
    add_executions,
    held_book_marks,
    open_mark,
)
from arena.analytics.ledger_breakdown import Scope, ledger_cells
from arena.csv_safe import csv_text
from arena.domain.ledger import ZERO, to_money
from arena.domain.markets import stored_prices
from arena.domain.scores import (
    ScoreSummary,
    ScoreTally,
    brier_band,
    return_band,
    return_pct,
)
from arena.domain.states import FAILED_CALLS, AttemptOutcome, DecisionStatus, PositionStatus
from arena.domain.tracks import track_of
from arena.domain.valuation import position_value
from arena.errors import UserError
from arena.store.consistent_read import consistent_read
from arena.store.models import (
    Agent,
    BrierScore,
    Cohort,
    Decision,
    DecisionAttempt,
    Family,
    Market,
    Position,
)

STREAM_BATCH = 1_000
FAILED_OUTCOMES = FAILED_CALLS
FAILED_DECISION_STATUS = DecisionStatus.RETRYABLE
NOT_A_CALL = (
    AttemptOutcome.BUDGET_SKIPPED
)  # an attempt row written when the budget forbade the call
SCORE_PLACES = 6
RETURN_PLACES = 4


@dataclass
class Reliability:
    """How cleanly a family's decisions went (counts over the decisions in scope)."""

    decisions: int = 0
    attempts: int = 0  # model calls (and baseline answers); budget-skipped rows are not calls
    malformed_attempts: int = 0
    failures: int = 0  # model calls that ended in an error (transient, permanent or fatal)
    retries: int = 0  # attempts beyond the first of each decision (repairs and re-tries)
    system_holds: int = 0  # decisions that became a HOLD after exhausting the repairs
    failed_decisions: int = 0  # decisions currently waiting in a retryable failure state

    @property
    def malformed_share(self) -> Decimal | None:
        if self.attempts == 0:
            return None
        return Decimal(self.malformed_attempts) / self.attempts


@dataclass
class FamilyStanding:
    """One leaderboard row. Money is exact ``Decimal``; see :meth:`to_json` for the output."""

    family_id: str
    display_name: str
    kind: str
    cohort_id: int | None = None
    track: str = ""  # its newest agent's in scope (arena.domain.tracks)
    cohorts: int = 0
    agents: int = 0
    starting_balance: Decimal = ZERO
    cash: Decimal = ZERO
    positions_value: Decimal = ZERO
    open_cost_basis: Decimal = ZERO
    realized_pnl: Decimal = ZERO
    cost_usd: Decimal = ZERO
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tally: ScoreTally = field(default_factory=ScoreTally)
    reliability: Reliability = field(default_factory=Reliability)
    execution: ExecutionQuality = field(default_factory=ExecutionQuality)
    min_scored_bets: int = 0
    replicate_pnl: dict[int, Decimal] = field(default_factory=dict)  # replicate -> its P/L

    def add_replicate_pnl(self, replicate: int, amount: Decimal) -> None:
        self.replicate_pnl[replicate] = self.replicate_pnl.get(replicate, ZERO) + amount

    @property
    def replicates(self) -> int:
        return max(len(self.replicate_pnl), 1)

    @property
    def pnl_mean(self) -> Decimal:
        """The mean P/L of the family's replicates (``pnl`` without a split by replicate)."""
        if not self.replicate_pnl:
            return self.pnl
        return sum(self.replicate_pnl.values(), ZERO) / len(self.replicate_pnl)

    @property
    def pnl_spread(self) -> Decimal | None:
        """The sample standard deviation of the replicates' P/L (None for fewer than two)."""
        values = list(self.replicate_pnl.values())
        if len(values) < 2:
            return None
        mean = sum(values, ZERO) / len(values)
        return (sum(((v - mean) ** 2 for v in values), ZERO) / (len(values) - 1)).sqrt()

    @property
    def total_value(self) -> Decimal:
        return self.cash + self.positions_value

    @property
    def pnl(self) -> Decimal:
        return self.total_value - self.starting_balance

    @property
    def unrealized_pnl(self) -> Decimal:
        return self.positions_value - self.open_cost_basis

    @property
    def return_pct(self) -> Decimal | None:
        return return_pct(self.pnl, self.starting_balance)

    @property
    def scores(self) -> ScoreSummary:
        return self.tally.summary()

    @property
    def provisional(self) -> bool:
        """Too few scored bets to read much into the scores (still shown, flagged)."""
        return self.tally.n < self.min_scored_bets

    def to_json(self) -> dict[str, Any]:
        """The leaderboard row as JSON-ready values: money as decimal strings to the cent,
        scores and rates as numbers (rounded), counts as integers, None as null."""
        s = self.scores
        r = self.reliability
        x = self.execution
        ret = self.return_pct
        return {
            "family_id": self.family_id,
            "display_name": self.display_name,
            "kind": self.kind,
            "track": self.track,
            "cohort_id": self.cohort_id,
            "cohorts": self.cohorts,
            "agents": self.agents,
            "starting_balance": money_text(self.starting_balance),
            "total_value": money_text(self.total_value),
            "pnl": money_text(self.pnl),
            "replicates": self.replicates,
            "pnl_mean": money_text(self.pnl_mean),
            "pnl_spread": None if self.pnl_spread is None else money_text(self.pnl_spread),
            "return_pct": _number(ret, RETURN_PLACES),
            "realized_pnl": money_text(self.realized_pnl),
            "unrealized_pnl": money_text(self.unrealized_pnl),
            "brier": _number(s.brier),
            "market_brier": _number(s.market_brier),
            "bss_uniform": _number(s.bss_uniform),
            "bss_market": _number(s.bss_market),
            "p_vs_uniform": _round(s.p_vs_uniform),
            "p_vs_market": _round(s.p_vs_market),
            "scored_bets": s.scored_bets,
            "wins": s.wins,
            "losses": s.losses,
            "win_rate": _number(s.win_rate),
            "cost_usd": plain_text(self.cost_usd),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "decisions": r.decisions,
            "attempts": r.attempts,
            "malformed_attempts": r.malformed_attempts,
            "malformed_share": _number(r.malformed_share),
            "system_holds": r.system_holds,
            "failures": r.failures,
            "failed_decisions": r.failed_decisions,
            "retries": r.retries,
            "exit_pnl": None if x.exit_pnl is None else money_text(x.exit_pnl),
            "slippage_mid_bps": _number(x.slippage_mid_bps, 2),
            "fees_usd": plain_text(x.fees),
            "fill_ratio": _number(x.fill_ratio),
            "liquidity_refusals": x.liquidity_refusals,
            "provisional": self.provisional,
            "brier_band": brier_band(s.brier) if s.brier is not None else None,
            "return_band": return_band(ret) if ret is not None else None,
        }


FIELDS = (
    "family_id",
    "display_name",
    "kind",
    "track",
    "cohort_id",
    "cohorts",
    "agents",
    "starting_balance",
    "total_value",
    "pnl",
    "replicates",
    "pnl_mean",
    "pnl_spread",
    "return_pct",
    "realized_pnl",
    "unrealized_pnl",
    "brier",
    "market_brier",
    "bss_uniform",
    "bss_market",
    "p_vs_uniform",
    "p_vs_market",
    "scored_bets",
    "wins",
    "losses",
    "win_rate",
    "cost_usd",
    "prompt_tokens",
    "completion_tokens",
    "decisions",
    "attempts",
    "malformed_attempts",
    "malformed_share",
    "system_holds",
    "failures",
    "failed_decisions",
    "retries",
    "exit_pnl",
    "slippage_mid_bps",
    "fees_usd",
    "fill_ratio",
    "liquidity_refusals",
    "provisional",
    "brier_band",
    "return_band",
)  # the keys of FamilyStanding.to_json, in order (the CSV header)
SelectT = TypeVar("SelectT", bound=Select)
RowFor = Callable[[str], FamilyStanding]  # the standing of a family id, created on first use


def compute_leaderboard(
    factory: sessionmaker[Session],
    *,
    cohort_id: int | None = None,
    min_scored_bets: int = 10,
    scope: Scope | None = None,
    track: str | None = None,
) -> list[FamilyStanding]:
    """Standings per family across all cohorts, or within one cohort with ``cohort_id``; with
    ``scope``, the money and scores of the positions and bets in its category and horizon
    bucket only (:mod:`arena.analytics.ledger_breakdown` says what each field then means);
    with ``track``, the families on that track only.

    Only families with at least one agent in scope appear. A family's track is its newest
    agent's in scope (:func:`arena.domain.tracks.track_of` of its frozen kind and web search
    settings). Sorted by P/L per replicate (best first), then Brier (lower first, unscored
    last), then family id.
    """
    with consistent_read(factory) as session:
        return standings(
            session,
            cohort_id=cohort_id,
            min_scored_bets=min_scored_bets,
            scope=scope,
            track=track,
        )


def standings(
    session: Session,
    *,
    cohort_id: int | None = None,
    min_scored_bets: int = 10,
    scope: Scope | None = None,
    track: str | None = None,
) -> list[FamilyStanding]:
    """:func:`compute_leaderboard` on a session the caller holds (a published dataset reads
    it in the snapshot its tables come from)."""
    rows = _standings(session, cohort_id, min_scored_bets, scope or Scope())
    return sorted((r for r in rows if track in (None, r.track)), key=_rank_key)


def family_tracks(session: Session, cohort_id: int | None = None) -> dict[str, str]:
    """Each family's track (every family with an agent, in ``cohort_id`` when given): its
    newest agent's, :func:`arena.domain.tracks.track_of` of the frozen kind and web search."""
    frozen = select(Agent.family_id, Agent.kind, Agent.web_search).order_by(Agent.cohort_id)
    return {
        family_id: track_of(kind, web_search)  # the newest agent's comes last
        for family_id, kind, web_search in _stream(
            session, _in_cohort(frozen, Agent.cohort_id, cohort_id)
        )
    }


def stored_agent_tracks(session: Session) -> dict[str, str]:
    """Each stored agent's track by its id (as text, as the forecasts carry it)."""
    frozen = select(Agent.id, Agent.kind, Agent.web_search)
    return {str(i): track_of(kind, web_search) for i, kind, web_search in _stream(session, frozen)}


def _rank_key(row: FamilyStanding) -> tuple[Decimal, bool, Decimal, str]:
    brier = row.tally.sum_brier / row.tally.n if row.tally.n else None
    return (-row.pnl_mean, brier is None, brier if brier is not None else ZERO, row.family_id)


def _standings(
    session: Session, cohort_id: int | None, min_scored: int, scope: Scope
) -> list[FamilyStanding]:
    if cohort_id is not None and session.get(Cohort, cohort_id) is None:
        raise UserError(f"cohort {cohort_id} does not exist")
    names = {
        family_id: (display_name, kind)
        for family_id, display_name, kind in session.execute(
            select(Family.id, Family.display_name, Family.kind)
        )
    }
    table: dict[str, FamilyStanding] = {}

    def row(family_id: str) -> FamilyStanding:
        if family_id not in table:
            display_name, kind = names.get(family_id, (family_id, ""))
            table[family_id] = FamilyStanding(
                family_id, display_name, kind, cohort_id=cohort_id, min_scored_bets=min_scored
            )
        return table[family_id]

    counts = select(Agent.family_id, func.count(func.distinct(Agent.cohort_id)), func.count())
    for family_id, cohorts, agents in session.execute(
        _in_cohort(counts, Agent.cohort_id, cohort_id).group_by(Agent.family_id)
    ):
        row(family_id).cohorts, row(family_id).agents = int(cohorts), int(agents)

    for family_id, track in family_tracks(session, cohort_id).items():
        row(family_id).track = track

    money = select(
        Agent.family_id, Agent.replicate, Agent.starting_balance, Agent.cash, Agent.realized_pnl
    )
    for family_id, replicate, start, cash, realized in _stream(
        session, _in_cohort(money, Agent.cohort_id, cohort_id)
    ):
        if scope:  # the money of the matching positions alone: see _scoped
            continue
        standing = row(family_id)
        standing.starting_balance += start
        standing.cash += cash
        standing.realized_pnl += realized
        standing.add_replicate_pnl(replicate, cash - start)

    if scope:
        _scoped(session, cohort_id, scope, row)
    else:
        marks = held_book_marks(session)
        for family_id, replicate, side, shares, basis, outcomes, prices, tokens, pricing in _stream(
            session, _in_cohort(_open_positions(), Position.cohort_id, cohort_id)
        ):
            standing = row(family_id)
            mark = open_mark(marks, outcomes, stored_prices(prices), tokens, side, pricing)
            value = position_value(shares, basis, mark)
            standing.positions_value += value
            standing.add_replicate_pnl(replicate, value)
            standing.open_cost_basis += basis

        scored = select(
            BrierScore.family_id, BrierScore.brier, BrierScore.market_brier, BrierScore.won
        )
        for family_id, brier, market_brier, won in _stream(
            session, _in_cohort(scored, BrierScore.cohort_id, cohort_id)
        ):
            row(family_id).tally.add(brier, market_brier, bool(won))

    _add_attempts(session, cohort_id, row)
    _add_decisions(session, cohort_id, row)
    add_executions(session, cohort_id, lambda f: row(f).execution, _stream, _in_cohort)
    if scope:
        for standing in table.values():
            standing.execution.exit_value = None  # a whole book's exit value: not split by market
    return [standing for standing in table.values() if standing.agents > 0]


def _scoped(session: Session, cohort_id: int | None, scope: Scope, row: RowFor) -> None:
    """Money and scores of the positions and scored bets in ``scope``: the matching positions'
    cost is the starting balance, what they returned the cash, their open value and basis the
    positions' (so ``pnl`` is their P/L)."""
    for (family_id, _group), cell in ledger_cells(
        session, "all", cohort_id=cohort_id, scope=scope
    ).items():
        standing = row(family_id)
        standing.starting_balance += cell.cost
        standing.cash += cell.returned
        standing.realized_pnl += cell.realized_pnl
        standing.positions_value += cell.open_value
        standing.open_cost_basis += cell.open_basis
        standing.tally = cell.tally


def _open_positions() -> Select:
    return (
        select(
            Agent.family_id,
            Agent.replicate,
            Position.side,
            Position.shares,
            Position.cost_basis,
            Market.outcomes,
            Market.prices,
            Market.clob_token_ids,
            Cohort.pricing,
        )
        .join(Agent, Agent.id == Position.agent_id)
        .join(Market, Market.id == Position.market_id)
        .join(Cohort, Cohort.id == Position.cohort_id)
        .where(Position.status == PositionStatus.OPEN)
    )


def _add_attempts(session: Session, cohort_id: int | None, row: RowFor) -> None:
    """One streamed pass over the attempts (on SQLite the cost and token columns sit behind the
    prompt's overflow pages, so every extra scan reads the prompts again), plus an index-only
    count of the decisions that made a call."""
    for family_id, outcome, cost, prompt, completion in _stream(session, attempts_usage(cohort_id)):
        standing = row(family_id)
        reliability = standing.reliability
        reliability.attempts += 1
        reliability.malformed_attempts += outcome == AttemptOutcome.MALFORMED
        reliability.failures += outcome in FAILED_OUTCOMES
        standing.prompt_tokens += prompt or 0
        standing.completion_tokens += completion or 0
        if cost is not None:
            standing.cost_usd += cost

    called = (
        select(DecisionAttempt.id)
        .where(DecisionAttempt.decision_id == Decision.id, DecisionAttempt.outcome != NOT_A_CALL)
        .exists()
    )
    decided = (
        select(Agent.family_id, func.count())
        .select_from(Decision)
        .join(Agent, Agent.id == Decision.agent_id)
    )
    decided = _in_cohort(decided.where(called), Decision.cohort_id, cohort_id)
    for family_id, count in session.execute(decided.group_by(Agent.family_id)):
        reliability = row(family_id).reliability
        reliability.retries = reliability.attempts - int(count)


def attempts_usage(cohort_id: int | None) -> Select:
    """Each model call's family, outcome, cost and tokens (``ix_decision_attempts_usage``
    covers the attempt's columns)."""
    attempts = (
        select(
            Agent.family_id,
            DecisionAttempt.outcome,
            DecisionAttempt.cost_usd,
            DecisionAttempt.prompt_tokens,
            DecisionAttempt.completion_tokens,
        )
        .join(Decision, Decision.id == DecisionAttempt.decision_id)
        .join(Agent, Agent.id == Decision.agent_id)
        .where(DecisionAttempt.outcome != NOT_A_CALL)
    )
    return _in_cohort(attempts, Decision.cohort_id, cohort_id)


def _add_decisions(session: Session, cohort_id: int | None, row: RowFor) -> None:
    holds = func.sum(case((Decision.system_hold.is_(True), 1), else_=0))
    failed = func.sum(case((Decision.status == FAILED_DECISION_STATUS, 1), else_=0))
    counts = select(Agent.family_id, func.count(), holds, failed).join(
        Agent, Agent.id == Decision.agent_id
    )
    counts = _in_cohort(counts, Decision.cohort_id, cohort_id).group_by(Agent.family_id)
    for family_id, decisions, system_holds, failed_decisions in session.execute(counts):
        reliability = row(family_id).reliability
        reliability.decisions = int(decisions)
        reliability.system_holds = int(system_holds or 0)
        reliability.failed_decisions = int(failed_decisions or 0)


def _in_cohort(statement: SelectT, column: Any, cohort_id: int | None) -> SelectT:
    return statement if cohort_id is None else statement.where(column == cohort_id)


def _stream(session: Session, statement: Select) -> Iterator[Any]:
    """Rows in batches (a server-side cursor on PostgreSQL), never a whole table at once."""
    yield from session.execute(statement.execution_options(yield_per=STREAM_BATCH))


def money_text(value: Decimal) -> str:
    """Money as a decimal string with exactly two places (``"10234.50"``)."""
    return format(to_money(value), "f")


def plain_text(value: Decimal) -> str:
    """An exact decimal in plain notation, trailing zeros trimmed to at least two places."""
    text = format(value, "f")
    if "." in text:
        whole, fraction = text.split(".")
        fraction = fraction.rstrip("0").ljust(2, "0")
        return f"{whole}.{fraction}"
    return f"{text}.00"


def _number(value: Decimal | None, places: int = SCORE_PLACES) -> float | None:
    if value is None:
        return None
    return float(round(value, places))


def _round(value: float | None, places: int = SCORE_PLACES) -> float | None:
    return None if value is None else round(value, places)


def to_json(standings: Iterable[FamilyStanding]) -> list[dict[str, Any]]:
    """The ``arena leaderboard --format json`` array."""
    return [standing.to_json() for standing in standings]


def write_csv(standings: Iterable[FamilyStanding], out: IO[str]) -> None:
    """The leaderboard as CSV with the JSON field names as header (null -> empty cell)."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS)
    for standing in standings:
        data = standing.to_json()
        writer.writerow([csv_text(data[name]) for name in FIELDS])
