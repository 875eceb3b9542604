"""What one agent sees and trades at in a decision run: the prompt context (cash, positions
at their marks, the frozen markets) and, in mode book, the live books and fee schedules its
executions walk (methodology, "What the model sees" and "Executable prices")."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.config import Settings
from arena.domain import ledger
from arena.domain.book import Pricing
from arena.domain.decisions import ValidDecision
from arena.domain.prompting import PositionView, PromptContext
from arena.domain.states import Job, Methodology, PositionStatus
from arena.domain.valuation import side_mark
from arena.errors import ClobError, ExecutionError, NoBook
from arena.jobs.books import fee_schedules, live_books, record_outage, stored_marks
from arena.jobs.execute import BookPrices
from arena.jobs.turn import Turn
from arena.jobs.universe import FrozenUniverse
from arena.store.models import Agent, Market, Position

if TYPE_CHECKING:
    from arena.sources.clob import BookSource


def prompt_context(
    factory: sessionmaker[Session], settings: Settings, now: datetime, turn: Turn
) -> tuple[PromptContext, Decimal]:
    """What the turn's agent is shown: its cash and open positions (valued at their marks:
    the token's book mark in mode book) and the frozen markets, with each side's bid and ask
    in mode book, Gamma's prices in mode gamma. Returns it with the cash shown."""
    agent, universe = turn.agent, turn.universe
    with factory() as session:
        fresh = session.get(Agent, agent.id)
        assert fresh is not None
        positions = list(
            session.scalars(
                select(Position)
                .where(Position.agent_id == agent.id, Position.status == PositionStatus.OPEN)
                .order_by(Position.id)
            )
        )
    book = turn.pricing == Pricing.BOOK
    markets = universe.ranked if book else [replace(m, books=()) for m in universe.ranked]
    marks = book_marks(factory, positions, universe) if book else {}
    views = []
    for position in positions:
        market = universe.by_id.get(position.market_id)
        if market is None:
            continue  # a held market missing from the universe cannot be priced or sold
        price = marks.get(position.id) or side_mark(market.outcomes, market.prices, position.side)
        views.append(
            PositionView(
                position_id=str(position.id),
                market=market,
                side=position.side,
                shares=position.shares,
                avg_entry_price=position.cost_basis / position.shares
                if position.shares
                else Decimal(0),
                current_price=price,
                cost_basis=position.cost_basis,
            )
        )
    bench = settings.benchmark
    methodology = Methodology(agent.methodology_version)
    ctx = PromptContext(
        now=now,
        decision_week=turn.week,
        cash=fresh.cash,
        max_bet=ledger.max_bet(fresh.cash, bench.max_bet_fraction),
        min_bet=bench.min_bet,
        positions=tuple(views),
        markets=tuple(markets),
        methodology=methodology,
        panel=tuple(universe.panel) if methodology is Methodology.V2 else (),
        max_bet_fraction=bench.max_bet_fraction,
        starting_balance=fresh.starting_balance,
        cohort_id=str(agent.cohort_id),
        agent_id=str(agent.id),
        max_slippage=bench.max_slippage,
        decision_id=str(turn.claim.decision_id),
        pricing=turn.pricing,
    )
    return ctx, fresh.cash


def book_marks(
    factory: sessionmaker[Session], positions: Sequence[Position], universe: FrozenUniverse
) -> dict[int, Decimal]:
    """Mode book: each position's token mark (its last valid mark), by position id."""
    tokens: dict[int, str] = {}
    for position in positions:
        market = universe.by_id.get(position.market_id)
        if market is not None and market.clob_token_ids:
            with contextlib.suppress(ExecutionError):
                tokens[position.id] = market.side_token(position.side)
    with factory() as session:
        marks = stored_marks(session, tokens.values())
    return {pid: marks[token] for pid, token in tokens.items() if token in marks}


def book_prices(
    factory: sessionmaker[Session],
    settings: Settings,
    source: BookSource | None,
    now: datetime,
    universe: FrozenUniverse,
    traded: list[tuple[str, str]],
) -> BookPrices:
    """Mode book: the live book of every token the decision trades, fetched now, right
    before the execution, and each market's fee schedule. What cannot be fetched fails its
    execution with the reason; nothing falls back to Gamma's prices."""
    slippage = settings.benchmark.max_slippage
    tokens = []
    for market_id, side in traded:
        market = universe.by_id.get(market_id)
        if market is not None:
            with contextlib.suppress(ExecutionError):
                tokens.append(market.side_token(side))
    if source is None:
        missing = NoBook("mode book needs the CLOB (polymarket.clob_url)", unavailable=True)
        return BookPrices(dict.fromkeys(tokens, missing), {}, slippage)
    books = live_books(factory, source, tokens, now, component=Job.DECISION_RUN)
    with factory() as session:
        conditions = session.scalars(
            select(Market.condition_id).where(
                Market.id.in_([market_id for market_id, _side in traded])
            )
        ).all()
    try:
        fees = fee_schedules(factory, source, [c for c in conditions if c], now)
    except ClobError as exc:
        record_outage(factory, now, Job.DECISION_RUN, f"fee schedule: {exc}")
        fees = {}
    return BookPrices(books, fees, slippage)


def traded_sides(
    decision: ValidDecision, universe: FrozenUniverse, factory: sessionmaker[Session], agent_id: int
) -> list[tuple[str, str]]:
    """The (market, side) pairs a decision would trade: its bets', or its sells' positions'."""
    sides = [(bet.market_id, bet.side) for bet in decision.bets if bet.market_id in universe.by_id]
    position_ids = [
        int(order.position_id) for order in decision.sells if order.position_id.isdigit()
    ]
    if position_ids:
        with factory() as session:
            sides += session.execute(
                select(Position.market_id, Position.side).where(
                    Position.id.in_(position_ids), Position.agent_id == agent_id
                )
            ).all()
    return sides
