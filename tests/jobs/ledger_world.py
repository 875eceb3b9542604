"""A small builder of ledger states for job tests, and an in-memory market source.

:class:`World` writes cohorts, agents and markets into a test database and trades through the
real execution (:func:`arena.jobs.execute.execute_decision`, mode gamma), so settlement,
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

from arena.domain.decisions import Action, BetOrder, SellOrder, ValidDecision
from arena.domain.markets import MarketView, is_binary_outcomes, side_index, yes_index
from arena.domain.states import PositionStatus
from arena.errors import GammaError
from arena.jobs.execute import Desk, execute_decision
from arena.store.models import Agent, Cohort, Decision, Family, Market, Position
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
) -> MarketView:
    """A domain market as Gamma would give it, accepting orders (other fields: set them with
    :func:`dataclasses.replace`)."""
    return MarketView(
        id=market_id,
        question=f"Question {market_id}?",
        outcomes=tuple(outcomes),
        prices=None if prices is None else tuple(Decimal(p) for p in prices),
        closed=closed,
        uma_resolution_status=uma,
        closed_time=closed_time,
        accepting_orders=True,
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
        """BUY at ``price`` (the side price) through the real execution; returns the position
        id."""
        with self.db.factory.begin() as session:
            agent = session.get_one(Agent, agent_id)
            order = BetOrder(market_id, side, D(amount))
            self._execute(session, agent, ValidDecision(Action.BET, bets=(order,)), side, price)
            return session.execute(
                select(Position.id).where(
                    Position.agent_id == agent_id,
                    Position.market_id == market_id,
                    Position.side == side,
                    Position.status == PositionStatus.OPEN,
                )
            ).scalar_one()

    def sell(self, position_id: int, percentage: str, price: str) -> None:
        """SELL ``percentage`` of a position at ``price`` through the real execution."""
        with self.db.factory.begin() as session:
            position = session.get_one(Position, position_id)
            agent = session.get_one(Agent, position.agent_id)
            order = SellOrder(str(position_id), D(percentage))
            decision = ValidDecision(Action.SELL, sells=(order,))
            self._execute(session, agent, decision, position.side, price, position.market_id)

    def _execute(
        self,
        session: Any,
        agent: Agent,
        decision: ValidDecision,
        side: str,
        price: str,
        market_id: str | None = None,
    ) -> None:
        """Run :func:`arena.jobs.execute.execute_decision` (mode gamma) with the market frozen
        at ``price`` for ``side``; a refused execution fails the test."""
        market_id = market_id or decision.bets[0].market_id
        row = session.get_one(Market, market_id)
        frozen = priced_at(market_id, row.outcomes, side, D(price))
        desk = Desk(session, self._decision(session, agent), agent, {market_id: frozen}, self.now)
        done = execute_decision(desk, decision, agent.cash, MAX_BET_FRACTION)
        assert done.trades == 1, done.failures


def priced_at(market_id: str, outcomes: list[str], side: str, price: Decimal) -> MarketView:
    """A frozen market whose ``side`` trades at ``price`` (the other outcomes at their
    complement share, which no test trades)."""
    others = (1 - price) / max(len(outcomes) - 1, 1)
    index = side_index(outcomes, side)
    if is_binary_outcomes(outcomes):
        p_yes = price if index == yes_index(outcomes) else 1 - price
        prices = tuple(p_yes if i == yes_index(outcomes) else 1 - p_yes for i in range(2))
    else:
        prices = tuple(price if i == index else others for i in range(len(outcomes)))
    return MarketView(id=market_id, question="", outcomes=tuple(outcomes), prices=prices)


def days_before(now: datetime, days: float) -> datetime:
    return now - timedelta(days=days)
