"""A small builder of ledger states for job tests, and an in-memory market source.

:class:`World` writes cohorts, agents, markets, BUY/SELL trades and positions straight into a
test database using the real ledger rules (:mod:`arena.domain.ledger`), so settlement,
snapshots and the audit can be checked against exact hand-computed figures.
:class:`FakeSource` implements :class:`arena.jobs.prices.MarketSource` from a dict.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from arena.domain import ledger
from arena.domain.markets import MarketView
from arena.errors import GammaError
from arena.store.models import Agent, Cohort, Decision, Family, Market, Position, Trade
from tests.conftest import Database

WEEK = datetime(2026, 11, 22, tzinfo=UTC)
NOW = datetime(2026, 11, 25, 12, 37, 42, tzinfo=UTC)
MAX_BET_FRACTION = Decimal("0.25")
D = Decimal


def gamma_market(
    market_id: str,
    prices: Iterable[str] | None = ("0.6", "0.4"),
    outcomes: Iterable[str] = ("Yes", "No"),
    *,
    closed: bool = False,
    uma: str | None = None,
    closed_time: datetime | None = None,
    end_date: datetime | None = None,
    accepting_orders: bool | None = True,
) -> MarketView:
    """A domain market as Gamma would give it."""
    return MarketView(
        id=market_id,
        question=f"Question {market_id}?",
        outcomes=tuple(outcomes),
        prices=None if prices is None else tuple(Decimal(p) for p in prices),
        closed=closed,
        uma_resolution_status=uma,
        closed_time=closed_time,
        end_date=end_date,
        accepting_orders=accepting_orders,
        volume=Decimal(1000),
    )


@dataclass
class FakeSource:
    """In-memory markets by id; ``error`` makes every call fail, ``barrier`` syncs threads."""

    markets: dict[str, MarketView] = field(default_factory=dict)
    error: str | None = None
    barrier: threading.Barrier | None = None
    calls: list[list[str]] = field(default_factory=list)

    def put(self, market: MarketView) -> None:
        self.markets[market.id] = market

    def markets_by_ids(
        self, ids: Iterable[str], include_closed: bool = True
    ) -> dict[str, MarketView]:
        wanted = list(ids)
        self.calls.append(wanted)
        if self.barrier is not None:
            self.barrier.wait(timeout=30)
        if self.error:
            raise GammaError(self.error)
        return {i: self.markets[i] for i in wanted if i in self.markets}


class World:
    """Writes a ledger state through the real ledger rules."""

    def __init__(self, db: Database, now: datetime = NOW) -> None:
        self.db = db
        self.now = now
        self._weeks: dict[int, int] = {}

    def cohort(self, week_start: datetime = WEEK, status: str = "active") -> int:
        with self.db.factory.begin() as session:
            cohort = Cohort(
                week_start=week_start,
                created_at=week_start,
                methodology_version="v1",
                prompt_version="v1",
                starting_balance=D(10000),
                status=status,
            )
            session.add(cohort)
            session.flush()
            return cohort.id

    def agent(self, cohort_id: int, family_id: str = "fam-a") -> int:
        with self.db.factory.begin() as session:
            if session.get(Family, family_id) is None:
                session.add(
                    Family(
                        id=family_id,
                        kind="baseline",
                        display_name=family_id,
                        provider="test",
                        strategy="random",
                        active=True,
                        first_seen_at=self.now,
                        updated_at=self.now,
                    )
                )
                session.flush()
            agent = Agent(
                cohort_id=cohort_id,
                family_id=family_id,
                kind="baseline",
                display_name=family_id,
                provider="test",
                prompt_version="v1",
                methodology_version="v1",
                starting_balance=D(10000),
                cash=D(10000),
                realized_pnl=D(0),
                created_at=self.now,
            )
            session.add(agent)
            session.flush()
            return agent.id

    def market(self, market: MarketView, **row: Any) -> str:
        with self.db.factory.begin() as session:
            values: dict[str, Any] = {
                "id": market.id,
                "question": market.question,
                "outcomes": list(market.outcomes),
                "prices": None if market.prices is None else [str(p) for p in market.prices],
                "yes_price": market.yes_price,
                "closed": market.closed,
                "closed_time": market.closed_time,
                "end_date": market.end_date,
                "first_seen_at": self.now,
                "updated_at": self.now,
            }
            values.update(row)
            session.add(Market(**values))
        return market.id

    def _decision(self, session: Any, agent: Agent) -> int:
        week = self._weeks.get(agent.id, 0) + 1
        self._weeks[agent.id] = week
        decision = Decision(
            agent_id=agent.id,
            cohort_id=agent.cohort_id,
            decision_week=week,
            status="completed",
            prompt_version="v1",
            methodology_version="v1",
            created_at=self.now,
            updated_at=self.now,
        )
        session.add(decision)
        session.flush()
        return decision.id

    def buy(self, agent_id: int, market_id: str, side: str, amount: str, price: str) -> int:
        """BUY at ``price`` (the side price); returns the position id."""
        with self.db.factory.begin() as session:
            agent = session.get_one(Agent, agent_id)
            position = session.execute(
                select(Position).where(
                    Position.agent_id == agent_id,
                    Position.market_id == market_id,
                    Position.side == side,
                    Position.status == "OPEN",
                )
            ).scalar_one_or_none()
            holding = ledger.Holding(position.shares, position.cost_basis) if position else None
            cash_shown = agent.cash
            bought = ledger.buy(agent.cash, holding, D(amount), D(price))
            if position is None:
                position = Position(
                    agent_id=agent_id,
                    cohort_id=agent.cohort_id,
                    market_id=market_id,
                    side=side,
                    shares=bought.holding_after.shares,
                    cost_basis=bought.holding_after.cost_basis,
                    status="OPEN",
                    realized_pnl=D(0),
                    opened_at=self.now,
                    updated_at=self.now,
                )
                session.add(position)
                session.flush()
            else:
                position.shares = bought.holding_after.shares
                position.cost_basis = bought.holding_after.cost_basis
            agent.cash = bought.cash_after
            session.add(
                Trade(
                    decision_id=self._decision(session, agent),
                    agent_id=agent_id,
                    cohort_id=agent.cohort_id,
                    position_id=position.id,
                    market_id=market_id,
                    side=side,
                    trade_type="BUY",
                    amount=bought.amount,
                    shares=bought.shares,
                    price=D(price),
                    implied_confidence=ledger.implied_confidence(
                        bought.amount, cash_shown, MAX_BET_FRACTION
                    ),
                    cash_shown=cash_shown,
                    cash_after=bought.cash_after,
                    executed_at=self.now,
                )
            )
            return position.id

    def sell(self, position_id: int, percentage: str, price: str) -> None:
        with self.db.factory.begin() as session:
            position = session.get_one(Position, position_id)
            agent = session.get_one(Agent, position.agent_id)
            sold = ledger.sell(
                agent.cash,
                ledger.Holding(position.shares, position.cost_basis),
                D(percentage),
                D(price),
            )
            agent.cash = sold.cash_after
            agent.realized_pnl += sold.realized_pnl
            position.realized_pnl += sold.realized_pnl
            if sold.holding_after is None:
                position.shares, position.cost_basis = D(0), D(0)
                position.status, position.closed_at = "CLOSED", self.now
            else:
                position.shares = sold.holding_after.shares
                position.cost_basis = sold.holding_after.cost_basis
            session.add(
                Trade(
                    decision_id=self._decision(session, agent),
                    agent_id=agent.id,
                    cohort_id=agent.cohort_id,
                    position_id=position.id,
                    market_id=position.market_id,
                    side=position.side,
                    trade_type="SELL",
                    amount=sold.proceeds,
                    shares=sold.shares_sold,
                    price=D(price),
                    percentage=D(percentage),
                    basis_out=sold.basis_out,
                    realized_pnl=sold.realized_pnl,
                    cash_after=sold.cash_after,
                    executed_at=self.now,
                )
            )


def days_before(now: datetime, days: float) -> datetime:
    return now - timedelta(days=days)
