"""Settlement job: resolve traded markets and settle their open positions.

Methodology, "Settlement" and "Scores"; gamma-api.md, "Resolution". For every market the arena
traded that is not yet resolved locally, fetch it fresh from Gamma, classify it
(:func:`arena.domain.resolution.classify`) and act:

* resolved with a winner: each OPEN position is WON (``shares * 1``) or LOST (0);
* resolved 50-50: every OPEN position is VOID (``shares * 0.5``), no Brier rows;
* ambiguous, or closed and still unresolved ``cancel_after_days`` after its close (also when
  proposed or disputed that long): CANCELLED, the remaining cost basis is refunded, no Brier;
* open, closed awaiting a proposal, proposed, disputed: wait.

Choices made here:

* **Which markets**: every locally open market with *any* position, not only those with an
  OPEN position, so a bet that was sold before resolution is still scored when its market
  resolves (a market whose positions were all sold is marked resolved with nothing to pay).
* **Gone markets**: a market Gamma no longer returns (404, delisted) is logged and waits. It is
  treated as closed for the overdue rule, with its stored close instant (``closed_time``, else
  ``end_date``): ``cancel_after_days`` after that it is CANCELLED and refunded, so an agent's
  money is never stuck forever; with neither date it waits and is reported every run.
* **One transaction per market**: it locks the market row (``FOR NO KEY UPDATE`` on
  PostgreSQL, which a concurrent BUY's foreign keys do not wait for; SQLite's
  ``BEGIN IMMEDIATE`` serialises writers), re-checks that the market is still open
  locally, settles every OPEN position and its agent (rows locked, arithmetic in exact Python
  decimals), writes the Brier rows of every BUY trade on the market (insert-or-nothing on the
  trade), scores methodology v2 forecasts, and marks the market resolved or cancelled. Any
  failure rolls all of it back and leaves the market for the next run; a PostgreSQL deadlock or
  serialization failure is retried. Two processes at once settle each market exactly once.
* **What is stored**: positions become SETTLED (WON/LOST/VOID) or CANCELLED with their payout,
  keeping the shares and cost basis they were settled with; ``markets.status`` becomes
  ``resolved`` (winner, 50-50) or ``cancelled`` (refund), ``resolution_state`` the classified
  state (``resolved_winner``, ``resolved_50_50``, ``ambiguous``) or ``overdue``. Brier:
  ``(implied_confidence - won)^2`` and the market's ``(price paid - won)^2``; v2 forecasts
  get ``resolved_value`` 1 for the winning outcome, else 0, and their Brier (winner only).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock
from arena.config import Settings
from arena.domain.book import TradeSide
from arena.domain.ledger import ZERO, Holding, SettlementOutcome, settle
from arena.domain.resolution import Verdict, same_side, settlement_verdict
from arena.domain.scores import brier
from arena.domain.states import MarketStatus, PositionStatus
from arena.errors import ArenaError, JobFailed
from arena.jobs.prices import store_markets
from arena.jobs.universe import market_from_row
from arena.jsonable import jsonable
from arena.record.chain import record_settlements
from arena.sources.gamma import MarketSource
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import Agent, Forecast, Market, Position, Trade
from arena.store.queries import held_market_ids
from arena.store.upsert import insert_ignore

log = logging.getLogger(__name__)

SCORE = Decimal("0.0000000001")  # the Price column's scale
INSERT_CHUNK = 500
RETRYABLE_SQLSTATES = {"40P01", "40001"}  # deadlock detected, serialization failure
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class MarketSettlement:
    """What one market's settling transaction did."""

    market_id: str
    state: str
    positions: int
    payout: Decimal
    brier_rows: int
    forecasts: int


@dataclass
class SettleReport:
    """What a settlement did (a :class:`arena.jobs.report.JobReport`)."""

    checked: int = 0  # locally open traded markets looked at
    resolved: int = 0  # settled with a winner
    voided: int = 0  # settled 50-50
    cancelled: int = 0  # refunded (ambiguous or overdue)
    waiting: int = 0
    gone: list[str] = field(default_factory=list)  # ids Gamma did not return
    already_settled: int = 0  # settled meanwhile by another process
    positions_settled: int = 0
    payout: Decimal = ZERO
    brier_rows: int = 0
    forecasts_scored: int = 0
    failures: list[str] = field(default_factory=list)  # "market <id>: <error>"
    cohorts_completed: list[int] = field(default_factory=list)  # by the settlement job

    @property
    def ok(self) -> bool:
        return not self.failures

    def counts(self) -> dict[str, Any]:
        """The settlement's figures (lists of markets as their lengths)."""
        figures = {
            "checked": self.checked,
            "resolved": self.resolved,
            "voided": self.voided,
            "cancelled": self.cancelled,
            "waiting": self.waiting,
            "gone": len(self.gone),
            "already_settled": self.already_settled,
            "positions_settled": self.positions_settled,
            "payout": self.payout,
            "brier_rows": self.brier_rows,
            "forecasts_scored": self.forecasts_scored,
            "failures": len(self.failures),
            "cohorts_completed": self.cohorts_completed,
        }
        return dict(jsonable(figures))

    def failure(self) -> str | None:
        """Failed when a market failed to settle (it is rolled back and retried next run)."""
        if not self.failures:
            return None
        return f"{len(self.failures)} market(s) failed to settle: " + "; ".join(self.failures[:5])

    def summary(self) -> str:
        text = (
            f"settlement: {self.checked} markets checked, {self.resolved} resolved, "
            f"{self.voided} void, {self.cancelled} cancelled, {self.waiting} waiting"
            f" ({len(self.gone)} gone from Gamma); {self.positions_settled} positions settled,"
            f" payout ${self.payout}, {self.brier_rows} Brier rows"
        )
        if self.cohorts_completed:
            text += f"; cohorts completed: {', '.join(map(str, self.cohorts_completed))}"
        if self.failures:
            text += f"; {len(self.failures)} failed"
        return text


def settle_markets(
    factory: sessionmaker[Session], settings: Settings, clock: Clock, source: MarketSource
) -> SettleReport:
    """Settle every traded market that Gamma says is over; see the module docstring.

    Raises :class:`JobFailed` when Gamma cannot be read at all. A market whose settlement fails
    is rolled back, listed in ``report.failures`` and retried at the next run.
    """
    now = clock.now()
    report = SettleReport()
    with transaction(factory) as session:
        stored = {row.id: market_from_row(row) for row in _candidates(session)}
    report.checked = len(stored)
    if not stored:
        return report
    try:
        fresh = source.markets_by_ids(list(stored), include_closed=True)
    except ArenaError as exc:
        raise JobFailed(f"resolve: cannot read markets from Gamma: {exc}") from exc
    try:
        with transaction(factory) as session:
            store_markets(session, fresh.values(), now)
    except SQLAlchemyError as exc:  # the stored copy is for display; settling goes on
        log.exception("resolve: storing the fresh market state failed")
        report.failures.append(f"storing fresh market state: {exc}")

    for market_id, known in stored.items():
        market = fresh.get(market_id)
        if market is None:
            report.gone.append(market_id)
            log.warning("market %s: Gamma no longer returns it", market_id)
        verdict = settlement_verdict(market, known, now, settings.benchmark.cancel_after_days)
        if verdict is None:
            report.waiting += 1
            continue
        try:
            done = settle_market(factory, market_id, verdict, now)
        except Exception as exc:
            log.exception("market %s: settlement failed and was rolled back", market_id)
            report.failures.append(f"market {market_id}: {exc}")
            continue
        if done is None:
            report.already_settled += 1
            continue
        if verdict.cancelled:
            report.cancelled += 1
        elif verdict.void:
            report.voided += 1
        else:
            report.resolved += 1
        report.positions_settled += done.positions
        report.payout += done.payout
        report.brier_rows += done.brier_rows
        report.forecasts_scored += done.forecasts
        log.info(
            "market %s %s (%s): %d positions settled, payout %s, %d Brier rows",
            market_id,
            verdict.status,
            verdict.reason,
            done.positions,
            done.payout,
            done.brier_rows,
        )
    return report


def settle_market(
    factory: sessionmaker[Session], market_id: str, verdict: Verdict, now: datetime
) -> MarketSettlement | None:
    """Settle one market in one transaction; ``None`` if it was already settled.

    Retries the whole transaction on a PostgreSQL deadlock or serialization failure.
    """
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            with transaction(factory) as session:
                return _settle_locked(session, market_id, verdict, now)
        except DBAPIError as exc:
            sqlstate = getattr(exc.orig, "sqlstate", None)
            if sqlstate not in RETRYABLE_SQLSTATES or attempt == MAX_ATTEMPTS:
                raise
            log.warning("market %s: %s on attempt %d, retrying", market_id, sqlstate, attempt)
    return None  # pragma: no cover - the loop returns or raises


def _settle_locked(
    session: Session, market_id: str, verdict: Verdict, now: datetime
) -> MarketSettlement | None:
    # FOR NO KEY UPDATE: two settlements (and market-state writers) of the market queue, but a
    # decision run's BUY, whose new position and trade reference the market (FOR KEY SHARE),
    # is not waited for: it holds its agent, which is locked next, and would deadlock.
    row = session.execute(
        select(Market).where(Market.id == market_id).with_for_update(key_share=True)
    ).scalar_one_or_none()
    if row is None:
        return None
    # Lock order agents -> positions, as the decision run takes them, so a concurrent SELL
    # and this settlement queue instead of deadlocking.
    open_positions = (Position.market_id == market_id, Position.status == PositionStatus.OPEN)
    holders = session.execute(select(Position.agent_id).where(*open_positions)).scalars()
    agents = _lock_agents(session, set(holders))
    positions: Sequence[Position] = (
        session.execute(
            select(Position).where(*open_positions).order_by(Position.id).with_for_update()
        )
        .scalars()
        .all()
    )
    if row.status != MarketStatus.OPEN and not positions:
        return None  # settled before, and no position opened since
    late = {position.agent_id for position in positions} - set(agents)
    if late:  # an agent bought in between the two reads
        agents.update(_lock_agents(session, late))

    total_payout = ZERO
    for position in positions:
        agent = agents[position.agent_id]
        outcome = verdict.outcome_for(position.side)
        result = settle(agent.cash, Holding(position.shares, position.cost_basis), outcome)
        position.status = (
            PositionStatus.CANCELLED
            if outcome is SettlementOutcome.CANCELLED
            else PositionStatus.SETTLED
        )
        position.settlement_outcome = outcome.value
        position.payout = result.payout
        position.realized_pnl = position.realized_pnl + result.realized_pnl
        position.closed_at = now
        position.updated_at = now
        agent.cash = result.cash_after
        agent.realized_pnl = agent.realized_pnl + result.realized_pnl
        total_payout += result.payout

    brier_rows = 0
    forecasts = 0
    if verdict.winner is not None:
        brier_rows = _write_brier_rows(session, market_id, verdict.winner, now)
        forecasts = _score_forecasts(session, market_id, verdict.winner, now)

    session.flush()
    record_settlements(session, [position.id for position in positions], now)
    if row.status != MarketStatus.OPEN:  # a position opened after the market settled (an orphan)
        return MarketSettlement(
            market_id, verdict.state, len(positions), total_payout, brier_rows, forecasts
        )
    row.status = verdict.status
    row.resolution_state = verdict.state
    row.winning_outcome = verdict.winner
    row.resolved_at = now
    row.updated_at = now
    session.flush()
    return MarketSettlement(
        market_id, verdict.state, len(positions), total_payout, brier_rows, forecasts
    )


def _lock_agents(session: Session, agent_ids: set[int]) -> dict[int, Agent]:
    """Load and lock (PostgreSQL ``FOR UPDATE``) these agents, in id order."""
    if not agent_ids:
        return {}
    statement = select(Agent).where(Agent.id.in_(agent_ids)).order_by(Agent.id).with_for_update()
    return {agent.id: agent for agent in session.execute(statement).scalars()}


def _write_brier_rows(session: Session, market_id: str, winner: str, now: datetime) -> int:
    """One Brier row per BUY trade on the market, sold positions included."""
    trades = session.execute(
        select(
            Trade.id,
            Trade.agent_id,
            Trade.cohort_id,
            Agent.family_id,
            Trade.side,
            Trade.implied_confidence,
            Trade.price,
        )
        .join(Agent, Agent.id == Trade.agent_id)
        .where(Trade.market_id == market_id, Trade.trade_type == TradeSide.BUY)
        .order_by(Trade.id)
    ).all()
    rows: list[dict[str, Any]] = []
    for trade_id, agent_id, cohort_id, family_id, side, confidence, price in trades:
        if confidence is None:
            log.warning("trade %s: BUY without implied confidence, not scored", trade_id)
            continue
        won = same_side(side, winner)
        rows.append(
            {
                "trade_id": trade_id,
                "agent_id": agent_id,
                "cohort_id": cohort_id,
                "family_id": family_id,
                "market_id": market_id,
                "side": side,
                "implied_confidence": confidence,
                "price_paid": price,
                "won": won,
                "brier": _stored(brier(confidence, won)),
                "market_brier": _stored(brier(price, won)),
                "scored_at": now,
            }
        )
    written = 0
    for start in range(0, len(rows), INSERT_CHUNK):
        written += insert_ignore(
            session,
            schema.brier_scores,
            rows[start : start + INSERT_CHUNK],
            conflict=["trade_id"],
        )
    return written


def _score_forecasts(session: Session, market_id: str, winner: str, now: datetime) -> int:
    """Methodology v2: resolve the stated probabilities on this market (1 for the winner)."""
    forecasts = (
        session.execute(
            select(Forecast).where(
                Forecast.market_id == market_id, Forecast.resolved_value.is_(None)
            )
        )
        .scalars()
        .all()
    )
    for forecast in forecasts:
        value = 1 if same_side(forecast.outcome, winner) else 0
        forecast.resolved_value = value
        forecast.brier = _stored(brier(forecast.probability, value == 1))
        forecast.scored_at = now
    return len(forecasts)


def _candidates(session: Session) -> Sequence[Market]:
    """Locally open markets with at least one position (of any status), or with a methodology
    v2 forecast still waiting for its score (panel markets nobody traded); and every market
    with an OPEN position whatever its local state, so no position is ever orphaned."""
    traded = select(Position.market_id).distinct()
    forecast = select(Forecast.market_id).where(Forecast.resolved_value.is_(None)).distinct()
    held = held_market_ids()
    return (
        session.execute(
            select(Market)
            .where(
                (
                    (Market.status == MarketStatus.OPEN)
                    & (Market.id.in_(traded) | Market.id.in_(forecast))
                )
                | Market.id.in_(held)
            )
            .order_by(Market.id)
        )
        .scalars()
        .all()
    )


def _stored(score: Decimal) -> Decimal:
    """A score at the Price column's scale."""
    return score.quantize(SCORE, ROUND_HALF_EVEN)
