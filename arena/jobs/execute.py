"""Execution of a validated decision on the ledger, inside the claim-checking transaction.

Everything here runs in the caller's transaction, after :func:`arena.jobs.claims.lock_claim`
confirmed the claim still holds, so trades of a decision are written exactly once. Trades
execute at the frozen universe's prices, and only on a market still open and accepting
orders at execution time. A single execution that the ledger refuses (price
outside (0, 1), too little cash, position gone) is recorded as a failure and skipped; the
caller stores a BET/SELL whose executions *all* failed as retryable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.domain import ledger
from arena.domain.decisions import Action, ValidDecision
from arena.domain.markets import Market
from arena.errors import ExecutionError
from arena.store.models import Agent, Forecast, Position, Trade
from arena.store.models import Market as MarketRow


@dataclass
class Execution:
    trades: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def all_failed(self) -> bool:
        return self.trades == 0 and bool(self.failures)


def execute_decision(
    session: Session,
    *,
    decision_id: int,
    agent: Agent,
    decision: ValidDecision,
    markets: Mapping[str, Market],
    cash_shown: Decimal,
    max_bet_fraction: Decimal,
    now: datetime,
) -> Execution:
    """Apply the decision's bets or sells to the agent's cash and positions."""
    result = Execution()
    if decision.action is Action.BET:
        for index, bet in enumerate(decision.bets):
            try:
                _buy(
                    session,
                    decision_id,
                    agent,
                    bet.market_id,
                    bet.side,
                    bet.amount,
                    bet.probability,
                    markets,
                    cash_shown,
                    max_bet_fraction,
                    now,
                )
                result.trades += 1
            except ExecutionError as exc:
                result.failures.append(f"bets[{index}] {bet.market_id} {bet.side}: {exc}")
    elif decision.action is Action.SELL:
        for index, order in enumerate(decision.sells):
            try:
                _sell(
                    session,
                    decision_id,
                    agent,
                    int(order.position_id),
                    order.percentage,
                    markets,
                    now,
                )
                result.trades += 1
            except (ExecutionError, ValueError) as exc:
                result.failures.append(f"sells[{index}] position {order.position_id}: {exc}")
    return result


def require_open(session: Session, market_id: str) -> None:
    """Refuse an execution on a market that is closed, resolved, inactive or not accepting
    orders now (methodology: "Fresh prices, open markets only"), whatever the frozen
    universe showed. A plain read: a settlement committing after it finds the new position,
    as settlement takes every OPEN position whatever the market's local state."""
    row = session.get(MarketRow, market_id)
    if row is None:
        raise ExecutionError(f"market {market_id} is unknown")
    state = (
        row.status
        if row.status != "open"
        else "closed"
        if row.closed
        else "inactive"
        if not row.active
        else "not accepting orders"
        if row.accepting_orders is False
        else None
    )
    if state is not None:
        raise ExecutionError(f"market {market_id} is {state} at execution time")


def _buy(
    session: Session,
    decision_id: int,
    agent: Agent,
    market_id: str,
    side: str,
    amount: Decimal,
    probability: Decimal | None,
    markets: Mapping[str, Market],
    cash_shown: Decimal,
    max_bet_fraction: Decimal,
    now: datetime,
) -> None:
    market = markets.get(market_id)
    if market is None:
        raise ExecutionError(f"market {market_id} is not in the frozen universe")
    require_open(session, market_id)
    price = market.side_price(side)
    position = session.execute(
        select(Position)
        .where(
            Position.agent_id == agent.id,
            Position.market_id == market_id,
            Position.side == side,
            Position.status == "OPEN",
        )
        .with_for_update()  # FOR UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE serialises
    ).scalar_one_or_none()
    holding = ledger.Holding(position.shares, position.cost_basis) if position else None
    bought = ledger.buy(agent.cash, holding, amount, price)
    if position is None:
        position = Position(
            agent_id=agent.id,
            cohort_id=agent.cohort_id,
            market_id=market_id,
            side=side,
            shares=bought.holding_after.shares,
            cost_basis=bought.holding_after.cost_basis,
            status="OPEN",
            realized_pnl=Decimal(0),
            opened_at=now,
            updated_at=now,
        )
        session.add(position)
        session.flush()
    else:
        position.shares = bought.holding_after.shares
        position.cost_basis = bought.holding_after.cost_basis
        position.updated_at = now
    agent.cash = bought.cash_after
    session.add(
        Trade(
            decision_id=decision_id,
            agent_id=agent.id,
            cohort_id=agent.cohort_id,
            position_id=position.id,
            market_id=market_id,
            side=side,
            trade_type="BUY",
            amount=bought.amount,
            shares=bought.shares,
            price=price,
            implied_confidence=ledger.implied_confidence(
                bought.amount, cash_shown, max_bet_fraction
            ),
            probability=probability,
            cash_shown=cash_shown,
            cash_after=bought.cash_after,
            executed_at=now,
        )
    )


def _sell(
    session: Session,
    decision_id: int,
    agent: Agent,
    position_id: int,
    percentage: Decimal,
    markets: Mapping[str, Market],
    now: datetime,
) -> None:
    position = session.execute(
        select(Position)
        .where(Position.id == position_id, Position.agent_id == agent.id)
        .with_for_update()
    ).scalar_one_or_none()
    if position is None or position.status != "OPEN":
        raise ExecutionError(f"position {position_id} is not an open position of this agent")
    market = markets.get(position.market_id)
    if market is None:
        raise ExecutionError(f"market {position.market_id} has no frozen price")
    require_open(session, position.market_id)
    price = market.side_price(position.side)
    sold = ledger.sell(
        agent.cash, ledger.Holding(position.shares, position.cost_basis), percentage, price
    )
    agent.cash = sold.cash_after
    agent.realized_pnl += sold.realized_pnl
    position.realized_pnl += sold.realized_pnl
    position.updated_at = now
    if sold.holding_after is None:
        position.shares, position.cost_basis = Decimal(0), Decimal(0)
        position.status, position.closed_at = "CLOSED", now
    else:
        position.shares = sold.holding_after.shares
        position.cost_basis = sold.holding_after.cost_basis
    session.add(
        Trade(
            decision_id=decision_id,
            agent_id=agent.id,
            cohort_id=agent.cohort_id,
            position_id=position.id,
            market_id=position.market_id,
            side=position.side,
            trade_type="SELL",
            amount=sold.proceeds,
            shares=sold.shares_sold,
            price=price,
            percentage=percentage,
            basis_out=sold.basis_out,
            realized_pnl=sold.realized_pnl,
            cash_after=sold.cash_after,
            executed_at=now,
        )
    )


def store_forecasts(
    session: Session,
    *,
    decision_id: int,
    agent: Agent,
    decision: ValidDecision,
    markets: Mapping[str, Market],
    now: datetime,
) -> int:
    """Methodology v2: the panel forecasts and every bet's stated probability."""
    rows: dict[tuple[str, str], Forecast] = {}
    for forecast in decision.forecasts:
        rows[(forecast.market_id, forecast.outcome)] = _forecast_row(
            decision_id,
            agent,
            forecast.market_id,
            forecast.outcome,
            forecast.probability,
            "panel",
            markets,
            now,
        )
    for bet in decision.bets:
        key = (bet.market_id, bet.side)
        if bet.probability is not None and key not in rows:
            rows[key] = _forecast_row(
                decision_id, agent, bet.market_id, bet.side, bet.probability, "bet", markets, now
            )
    session.add_all(rows.values())
    return len(rows)


def _forecast_row(
    decision_id: int,
    agent: Agent,
    market_id: str,
    outcome: str,
    probability: Decimal,
    source: str,
    markets: Mapping[str, Market],
    now: datetime,
) -> Forecast:
    market = markets.get(market_id)
    market_probability = None
    if market is not None and market.prices is not None:
        try:
            market_probability = market.side_price(outcome)
        except ExecutionError:
            market_probability = None
    return Forecast(
        decision_id=decision_id,
        agent_id=agent.id,
        cohort_id=agent.cohort_id,
        family_id=agent.family_id,
        market_id=market_id,
        outcome=outcome,
        probability=probability,
        market_probability=market_probability,
        source=source,
        forecast_at=now,
    )
