"""Execution of a validated decision on the ledger, inside the claim-checking transaction.

Everything here runs in the caller's transaction, after :func:`arena.jobs.claims.lock_claim`
confirmed the claim still holds, so trades of a decision are written exactly once. Trades
execute only on a market still open and accepting orders at execution time:

* mode gamma: at the frozen universe's prices;
* mode book: against the live order book the caller fetched right before (:class:`BookPrices`),
  up to a limit set from the touch the model was shown (methodology, "Executable prices"),
  recording the fill in full (levels, fee, slippage, fill ratio, the book's hash).

A single execution that fails (price outside (0, 1), too little cash, position gone, no book,
no liquidity within the limit) is recorded as a refusal with its kind and skipped; the caller
stores a BET/SELL whose executions *all* failed as retryable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.domain import ledger
from arena.domain.book import (
    PRICE_PLACES,
    FeeSchedule,
    Fill,
    OrderBook,
    Pricing,
    TradeSide,
    levels_json,
    limit_price,
    walk_buy,
    walk_sell,
)
from arena.domain.decisions import Action, ValidDecision
from arena.domain.markets import MarketView
from arena.domain.states import MarketStatus, PositionStatus
from arena.errors import ExecutionError, NoBook, NoLiquidity
from arena.jobs.books import touch_fee
from arena.store.models import Agent, Forecast, Market, Position, Trade


@dataclass(frozen=True)
class BookPrices:
    """What a mode-book execution trades against: each token's live book (or why there is
    none), each market's fee schedule by condition id, and the slippage allowed past the
    touch shown."""

    books: Mapping[str, OrderBook | NoBook]
    fees: Mapping[str, FeeSchedule]
    max_slippage: Decimal


@dataclass(frozen=True)
class Desk:
    """Where one decision's trades and forecasts are written: the caller's session (its
    transaction), the decision row and the agent they belong to, the frozen markets of its
    universe, the instant, and in mode book the live books its orders walk (None: mode
    gamma)."""

    session: Session
    decision_id: int
    agent: Agent
    markets: Mapping[str, MarketView]
    now: datetime
    book: BookPrices | None = None


@dataclass
class ExecutionResult:
    """What executing one decision came to: the trades made and the executions refused."""

    trades: int = 0
    failures: list[str] = field(default_factory=list)
    refusals: list[dict[str, object]] = field(default_factory=list)

    @property
    def all_failed(self) -> bool:
        return self.trades == 0 and bool(self.failures)

    def refuse(self, where: str, market_id: str | None, side: str | None, exc: Exception) -> None:
        self.failures.append(f"{where} {market_id or ''} {side or ''}: {exc}".replace("  ", " "))
        self.refusals.append(
            {"where": where, "market_id": market_id, "side": side, "kind": refusal_kind(exc),
             "reason": str(exc)[:500]}
        )  # fmt: skip


def refusal_kind(exc: Exception) -> str:
    """liquidity | no_book | unavailable | refused: how an execution failed."""
    if isinstance(exc, NoLiquidity):
        return "liquidity"
    if isinstance(exc, NoBook):
        return "unavailable" if exc.unavailable else "no_book"
    return "refused"


def execute_decision(
    desk: Desk, decision: ValidDecision, cash_shown: Decimal, max_bet_fraction: Decimal
) -> ExecutionResult:
    """Apply the decision's bets or sells to the agent's cash and positions (the desk's
    ``book``: mode book, else mode gamma)."""
    result = ExecutionResult()
    trade = _Trade(desk)
    if decision.action is Action.BET:
        for index, bet in enumerate(decision.bets):
            try:
                trade.buy(bet.market_id, bet.side, bet.amount, bet.probability, cash_shown,
                          max_bet_fraction)  # fmt: skip
                result.trades += 1
            except ExecutionError as exc:
                result.refuse(f"bets[{index}]", bet.market_id, bet.side, exc)
    elif decision.action is Action.SELL:
        for index, order in enumerate(decision.sells):
            try:
                trade.sell(int(order.position_id), order.percentage)
                result.trades += 1
            except (ExecutionError, ValueError) as exc:
                result.refuse(f"sells[{index}] position {order.position_id}", None, None, exc)
    return result


def require_open(session: Session, market_id: str) -> Market:
    """Refuse an execution on a market that is closed, resolved, inactive or not accepting
    orders now (methodology: "Fresh prices, open markets only"), whatever the frozen
    universe showed. A plain read: a settlement committing after it finds the new position,
    as settlement takes every OPEN position whatever the market's local state."""
    row = session.get(Market, market_id)
    if row is None:
        raise ExecutionError(f"market {market_id} is unknown")
    state = (
        row.status
        if row.status != MarketStatus.OPEN
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
    return row


class _Trade:
    """The BUY and SELL of one decision, writing positions and trades in the caller's
    transaction."""

    def __init__(self, desk: Desk) -> None:
        self.session, self.decision_id, self.agent = desk.session, desk.decision_id, desk.agent
        self.markets, self.now, self.book = desk.markets, desk.now, desk.book

    def buy(
        self,
        market_id: str,
        side: str,
        amount: Decimal,
        probability: Decimal | None,
        cash_shown: Decimal,
        max_bet_fraction: Decimal,
    ) -> None:
        market = self.markets.get(market_id)
        if market is None:
            raise ExecutionError(f"market {market_id} is not in the frozen universe")
        row = require_open(self.session, market_id)
        position = self._open_position(market_id, side)
        holding = ledger.Holding(position.shares, position.cost_basis) if position else None
        requested = ledger.money_floor(amount)
        if self.book is None:
            bought = ledger.buy(self.agent.cash, holding, requested, market.side_price(side))
            record: dict[str, Any] = {"pricing": Pricing.GAMMA}
        else:
            fill = self._fill(market, row, side, TradeSide.BUY, min(requested, self.agent.cash))
            bought = ledger.buy_filled(self.agent.cash, holding, fill.cash, fill.shares, fill.price)
            record = _fill_record(fill, market.side_token(side))
            record["requested_amount"] = requested
            record["fill_ratio"] = _ratio(fill.cash, requested)
        if position is None:
            position = Position(
                agent_id=self.agent.id,
                cohort_id=self.agent.cohort_id,
                market_id=market_id,
                side=side,
                shares=bought.holding_after.shares,
                cost_basis=bought.holding_after.cost_basis,
                status=PositionStatus.OPEN,
                realized_pnl=Decimal(0),
                opened_at=self.now,
                updated_at=self.now,
            )
            self.session.add(position)
            self.session.flush()
        else:
            position.shares = bought.holding_after.shares
            position.cost_basis = bought.holding_after.cost_basis
            position.updated_at = self.now
        self.agent.cash = bought.cash_after
        # Implied confidence is the model's stated stake, whatever the book let it fill.
        confidence = ledger.implied_confidence(
            requested if self.book else bought.amount, cash_shown, max_bet_fraction
        )
        self.session.add(
            Trade(
                decision_id=self.decision_id,
                agent_id=self.agent.id,
                cohort_id=self.agent.cohort_id,
                position_id=position.id,
                market_id=market_id,
                side=side,
                trade_type=TradeSide.BUY,
                amount=bought.amount,
                shares=bought.shares,
                price=bought.price,
                implied_confidence=confidence,
                probability=probability,
                cash_shown=cash_shown,
                cash_after=bought.cash_after,
                executed_at=self.now,
                **record,
            )
        )

    def sell(self, position_id: int, percentage: Decimal) -> None:
        position = self.session.execute(
            select(Position)
            .where(Position.id == position_id, Position.agent_id == self.agent.id)
            .with_for_update()
        ).scalar_one_or_none()
        if position is None or position.status != PositionStatus.OPEN:
            raise ExecutionError(f"position {position_id} is not an open position of this agent")
        market = self.markets.get(position.market_id)
        if market is None:
            raise ExecutionError(f"market {position.market_id} has no frozen price")
        row = require_open(self.session, position.market_id)
        holding = ledger.Holding(position.shares, position.cost_basis)
        if self.book is None:
            sold = ledger.sell(
                self.agent.cash, holding, percentage, market.side_price(position.side)
            )
            record: dict[str, Any] = {"pricing": Pricing.GAMMA}
        else:
            wanted = ledger.shares_to_sell(holding, percentage)
            fill = self._fill(market, row, position.side, TradeSide.SELL, wanted)
            sale = ledger.Sale(fill.shares, fill.cash, fill.price)
            sold = ledger.sell_filled(self.agent.cash, holding, percentage, sale)
            record = _fill_record(fill, market.side_token(position.side))
            record["requested_shares"] = wanted
            record["fill_ratio"] = _ratio(fill.shares, wanted)
        self.agent.cash = sold.cash_after
        self.agent.realized_pnl += sold.realized_pnl
        position.realized_pnl += sold.realized_pnl
        position.updated_at = self.now
        if sold.holding_after is None:
            position.shares, position.cost_basis = Decimal(0), Decimal(0)
            position.status, position.closed_at = PositionStatus.CLOSED, self.now
        else:
            position.shares = sold.holding_after.shares
            position.cost_basis = sold.holding_after.cost_basis
        self.session.add(
            Trade(
                decision_id=self.decision_id,
                agent_id=self.agent.id,
                cohort_id=self.agent.cohort_id,
                position_id=position.id,
                market_id=position.market_id,
                side=position.side,
                trade_type=TradeSide.SELL,
                amount=sold.proceeds,
                shares=sold.shares_sold,
                price=sold.price,
                percentage=percentage,
                basis_out=sold.basis_out,
                realized_pnl=sold.realized_pnl,
                cash_after=sold.cash_after,
                executed_at=self.now,
                **record,
            )
        )

    def _open_position(self, market_id: str, side: str) -> Position | None:
        return self.session.execute(
            select(Position)
            .where(
                Position.agent_id == self.agent.id,
                Position.market_id == market_id,
                Position.side == side,
                Position.status == PositionStatus.OPEN,
            )
            .with_for_update()  # FOR UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE serialises
        ).scalar_one_or_none()

    def _fill(
        self, market: MarketView, row: Market, side: str, trade: TradeSide, quantity: Decimal
    ) -> Fill:
        """Walk the live book of a side's token up to the limit set from the touch shown."""
        assert self.book is not None
        token = market.side_token(side)
        live = self.book.books.get(token)
        if live is None:
            raise NoBook(f"no order book was fetched for token {token}", unavailable=True)
        if isinstance(live, NoBook):
            raise live
        fee = touch_fee(self.book.fees, row.condition_id)
        touch = market.side_touch(side)
        shown = touch.best_ask if trade is TradeSide.BUY else touch.best_bid
        if shown is None:
            what = "ask" if trade is TradeSide.BUY else "bid"
            raise NoLiquidity(f"token {token} showed no {what} when the universe was frozen")
        limit = limit_price(shown, self.book.max_slippage, trade)
        if trade is TradeSide.BUY:
            return walk_buy(live, quantity, limit, fee)
        return walk_sell(live, quantity, limit, fee)


def _fill_record(fill: Fill, token_id: str) -> dict[str, Any]:
    """The columns a mode-book trade records beside the ledger's (methodology: "Recorded
    with every execution")."""
    return {
        "pricing": Pricing.BOOK,
        "fee": fill.fee.quantize(PRICE_PLACES, rounding=ROUND_HALF_EVEN),
        "touch_price": fill.touch,
        "mid_price": fill.mid,
        "slippage_touch_bps": fill.slippage_bps(fill.touch),
        "slippage_mid_bps": fill.slippage_bps(fill.mid),
        "book_hash": fill.book_hash,
        "book_timestamp": fill.book_timestamp,
        "token_id": token_id,
        "levels": levels_json(fill.levels),
    }


def _ratio(filled: Decimal, requested: Decimal) -> Decimal:
    if requested <= 0:
        return Decimal(0)
    return min(Decimal(1), filled / requested).quantize(PRICE_PLACES, rounding=ROUND_HALF_EVEN)


def store_forecasts(desk: Desk, decision: ValidDecision) -> int:
    """Methodology v2: the panel forecasts and every bet's stated probability."""
    rows: dict[tuple[str, str], Forecast] = {}
    for forecast in decision.forecasts:
        rows[(forecast.market_id, forecast.outcome)] = _forecast_row(
            desk, forecast.market_id, forecast.outcome, forecast.probability, "panel"
        )
    for bet in decision.bets:
        key = (bet.market_id, bet.side)
        if bet.probability is not None and key not in rows:
            rows[key] = _forecast_row(desk, bet.market_id, bet.side, bet.probability, "bet")
    desk.session.add_all(rows.values())
    return len(rows)


def _forecast_row(
    desk: Desk, market_id: str, outcome: str, probability: Decimal, source: str
) -> Forecast:
    agent = desk.agent
    market = desk.markets.get(market_id)
    return Forecast(
        decision_id=desk.decision_id,
        agent_id=agent.id,
        cohort_id=agent.cohort_id,
        family_id=agent.family_id,
        market_id=market_id,
        outcome=outcome,
        probability=probability,
        market_probability=None if market is None else shown_price(desk, market, outcome),
        source=source,
        forecast_at=desk.now,
    )


def shown_price(desk: Desk, market: MarketView, outcome: str) -> Decimal | None:
    """The market forecaster of a forecast (methodology, "Skill against the market"): the
    price of ``outcome`` the model was shown in its frozen universe. Mode book: the mid of
    that side's frozen book (a NO side: the NO token's own book), ``None`` when the book was
    one-sided; mode gamma: Gamma's display price. Never a fallback from one to the other."""
    try:
        if desk.book is not None:
            return market.side_touch(outcome).mid
        return None if market.prices is None else market.side_price(outcome)
    except ExecutionError:
        return None
