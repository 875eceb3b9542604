"""The ledger side of the category and horizon breakdowns (methodology v1): positions, their
P/L and cost, and scored bets, per family and market category or horizon bucket, read from the
database in one streamed pass each (see :mod:`arena.analytics.groups` for the rules).

A position's *cost* is what its buys paid (fees included, the cost basis they added); its
*P/L* is its realized P/L (sells and settlement) plus, while open, its marked value minus its
open cost basis, marked as the leaderboard marks it. Its horizon runs from its opening buy; a
scored bet's from its trade. Summed over every group these are the family's totals, and the
leaderboard's ``realized_pnl + unrealized_pnl`` (a test holds this).

Under a filter (``arena leaderboard --category``/``--horizon``), a family's money is that of
the matching positions alone: ``starting_balance`` is their cost, ``cash`` what they returned
(sale proceeds and payouts), ``total_value`` that plus their open value, so ``pnl`` is their
P/L and ``return_pct`` the return on the money put into them. Scores are the matching scored
bets. Decisions, model calls, tokens and execution quality concern whole decisions (one
decision may trade several markets) and stay the family's own; ``exit_pnl`` (a whole book's
exit value) is null.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from arena.analytics.execution_quality import held_book_marks, open_mark
from arena.analytics.groups import (
    HORIZONS,
    PROVISIONAL_QUESTIONS,
    category_name,
    check_category,
    check_horizon,
    horizon_bucket,
)
from arena.domain.book import TradeSide
from arena.domain.ledger import ZERO, to_money
from arena.domain.markets import stored_prices
from arena.domain.scores import ScoreTally
from arena.domain.states import PositionStatus
from arena.domain.valuation import position_value
from arena.store.models import Agent, BrierScore, Cohort, Market, Position, Trade

STREAM_BATCH = 1_000


@dataclass(frozen=True)
class Scope:
    """``--category`` and ``--horizon``: which markets (and decisions) a result counts."""

    category: str | None = None
    horizon: str | None = None

    def __bool__(self) -> bool:
        return self.category is not None or self.horizon is not None

    def keeps(self, category: str, horizon: str) -> bool:
        return (self.category is None or category == self.category) and (
            self.horizon is None or horizon == self.horizon
        )


@dataclass
class LedgerCell:
    """One family's positions and scored bets in one group (or in a scope)."""

    positions: int = 0
    open_positions: int = 0
    cost: Decimal = ZERO
    realized_pnl: Decimal = ZERO
    open_value: Decimal = ZERO
    open_basis: Decimal = ZERO
    tally: ScoreTally = field(default_factory=ScoreTally)

    @property
    def pnl(self) -> Decimal:
        return self.realized_pnl + self.open_value - self.open_basis

    @property
    def returned(self) -> Decimal:
        """Cash the positions gave back: proceeds of sells and payouts of settlements."""
        return self.cost - self.open_basis + self.realized_pnl


def known_categories(session: Session) -> list[str]:
    """Every category name a market has (``other`` included)."""
    stored = session.scalars(select(Market.category).distinct())
    return sorted({category_name(value) for value in stored} | {category_name(None)})


def checked_scope(session: Session, category: str | None, horizon: str | None) -> Scope:
    """The scope of ``--category``/``--horizon``, refusing an unknown category or bucket with
    the one-line error listing the known ones."""
    check_horizon(horizon)
    if category is not None:
        check_category(category, known_categories(session))
    return Scope(category, horizon)


def ledger_cells(
    session: Session, by: str, *, cohort_id: int | None = None, scope: Scope | None = None
) -> dict[tuple[str, str], LedgerCell]:
    """Each (family, group) cell, where the group is the category name (``by="category"``),
    the horizon bucket (``"horizon"``) or ``""`` (``"all"``: one cell per family, in
    ``scope``)."""
    scope = scope or Scope()
    cells: dict[tuple[str, str], LedgerCell] = {}

    def cell(family_id: str, category: str, horizon: str) -> LedgerCell | None:
        if not scope.keeps(category, horizon):
            return None
        group = category if by == "category" else horizon if by == "horizon" else ""
        return cells.setdefault((family_id, group), LedgerCell())

    for family_id, category, horizon, status, cost, realized, value, basis in position_rows(
        session, cohort_id
    ):
        target = cell(family_id, category, horizon)
        if target is None:
            continue
        target.positions += 1
        target.cost += cost
        target.realized_pnl += realized
        if status == PositionStatus.OPEN:
            target.open_positions += 1
            target.open_value += value
            target.open_basis += basis
    for family_id, category, horizon, brier, market_brier, won in score_rows(session, cohort_id):
        target = cell(family_id, category, horizon)
        if target is not None:
            target.tally.add(brier, market_brier, bool(won))
    return cells


def position_rows(session: Session, cohort_id: int | None) -> Iterator[tuple[Any, ...]]:
    """Per position: family, category name, horizon bucket, status, cost, realized P/L, and
    (open positions) marked value and open cost basis. Only open positions read their
    market's prices (JSON); the rest need the market's category and dates, read once."""
    markets = _market_facts(session)
    buys = select(Trade.position_id, Trade.amount).where(Trade.trade_type == TradeSide.BUY)
    cost: dict[int, Decimal] = {}
    for position_id, amount in _stream(session, _in_cohort(buys, Trade.cohort_id, cohort_id)):
        cost[position_id] = cost.get(position_id, ZERO) + amount
    marks = held_book_marks(session)
    held = (
        select(
            Position.id,
            Position.side,
            Position.shares,
            Position.cost_basis,
            Market.outcomes,
            Market.prices,
            Market.clob_token_ids,
            Cohort.pricing,
        )
        .select_from(Position)
        .join(Market, Market.id == Position.market_id)
        .join(Cohort, Cohort.id == Position.cohort_id)
        .where(Position.status == PositionStatus.OPEN)
    )
    value: dict[int, Decimal] = {}
    for position_id, side, shares, basis, outcomes, prices, tokens, pricing in _stream(
        session, _in_cohort(held, Position.cohort_id, cohort_id)
    ):
        mark = open_mark(marks, outcomes, stored_prices(prices), tokens, side, pricing)
        value[position_id] = position_value(shares, basis, mark)
    positions = (
        select(
            Agent.family_id,
            Position.id,
            Position.market_id,
            Position.status,
            Position.cost_basis,
            Position.realized_pnl,
            Position.opened_at,
        )
        .select_from(Position)
        .join(Agent, Agent.id == Position.agent_id)
    )
    for family_id, position_id, market_id, status, basis, realized, opened_at in _stream(
        session, _in_cohort(positions, Position.cohort_id, cohort_id)
    ):
        category, resolved_at, end_date = markets.get(market_id, (category_name(None), None, None))
        yield (
            family_id,
            category,
            horizon_bucket(opened_at, resolved_at, end_date),
            status,
            cost.get(position_id, ZERO),
            realized,
            value.get(position_id, ZERO),
            basis,
        )


def score_rows(session: Session, cohort_id: int | None) -> Iterator[tuple[Any, ...]]:
    """Per scored bet: family, category name, horizon bucket (from its trade), Brier, the
    market's Brier and whether it won."""
    markets = _market_facts(session)
    scores = (
        select(
            BrierScore.family_id,
            BrierScore.market_id,
            Trade.executed_at,
            BrierScore.brier,
            BrierScore.market_brier,
            BrierScore.won,
        )
        .select_from(BrierScore)
        .join(Trade, Trade.id == BrierScore.trade_id)
    )
    for family_id, market_id, traded_at, brier, market, won in _stream(
        session, _in_cohort(scores, BrierScore.cohort_id, cohort_id)
    ):
        category, resolved_at, end_date = markets.get(market_id, (category_name(None), None, None))
        yield (
            family_id,
            category,
            horizon_bucket(traded_at, resolved_at, end_date),
            brier,
            market,
            won,
        )


def _market_facts(session: Session) -> dict[str, tuple[str, Any, Any]]:
    """Each market's category name, resolution time and scheduled end."""
    facts = select(Market.id, Market.category, Market.resolved_at, Market.end_date)
    return {
        market_id: (category_name(category), resolved_at, end_date)
        for market_id, category, resolved_at, end_date in session.execute(facts)
    }


def _in_cohort(statement: Select, column: Any, cohort_id: int | None) -> Select:
    return statement if cohort_id is None else statement.where(column == cohort_id)


def _stream(session: Session, statement: Select) -> Iterator[Any]:
    """Rows in batches, through Core (plain tuples: no ORM row loading, a third of the time)."""
    yield from session.connection().execute(statement.execution_options(yield_per=STREAM_BATCH))


HORIZON_RULE = (
    "horizon: days from the decision to the market's resolution; unresolved markets are "
    "bucketed by their scheduled end date, markets with neither date count as gt30"
)


def ledger_rows(
    session: Session, by: str, *, cohort_id: int | None = None, scope: Scope | None = None
) -> list[dict[str, Any]]:
    """The ledger side of the breakdown as JSON rows, one per family and group (groups in
    order: categories by name, horizon buckets short to long): positions (and how many are
    open), their P/L and cost, scored bets and their mean Brier; provisional below 30 scored
    bets in the group."""
    cells = ledger_cells(session, by, cohort_id=cohort_id, scope=scope)
    order = {name: i for i, name in enumerate(HORIZONS)} if by == "horizon" else {}
    rows = []
    for (family_id, group), cell in sorted(
        cells.items(), key=lambda item: (order.get(item[0][1], 0), item[0][1], item[0][0])
    ):
        summary = cell.tally.summary()
        rows.append(
            {
                "group": group,
                "family_id": family_id,
                "positions": cell.positions,
                "open_positions": cell.open_positions,
                "pnl": _money(cell.pnl),
                "cost": _money(cell.cost),
                "scored_bets": summary.scored_bets,
                "brier": None if summary.brier is None else float(round(summary.brier, 6)),
                "provisional": summary.scored_bets < PROVISIONAL_QUESTIONS,
            }
        )
    return rows


def _money(value: Decimal) -> str:
    return format(to_money(value), "f")  # as the leaderboard writes money
