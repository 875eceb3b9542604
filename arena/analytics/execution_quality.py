"""Execution quality of mode-book trades, per family (methodology, "Executable prices"):
slippage against the mid, fill ratios, fees, executions refused for liquidity, and P/L at exit
value. Part of the leaderboard (:mod:`arena.analytics.leaderboard`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from arena.domain.book import Pricing
from arena.domain.ledger import ZERO
from arena.domain.markets import side_index
from arena.domain.valuation import side_mark
from arena.errors import ExecutionError
from arena.store.models import Agent, BookMark, Decision, PortfolioSnapshot, Trade
from arena.store.queries import held_market_ids

Stream = Callable[[Session, Select], Iterator[Any]]
InCohort = Callable[[Any, Any, "int | None"], Any]


@dataclass
class ExecutionQuality:
    """How a family's mode-book trades filled (methodology, "Executable prices")."""

    trades: int = 0
    slippage_mid_sum: Decimal = ZERO
    slippage_mid_n: int = 0
    fill_ratio_sum: Decimal = ZERO
    fees: Decimal = ZERO
    liquidity_refusals: int = 0
    exit_value: Decimal | None = None  # latest exit values of the mode-book agents
    exit_start: Decimal = ZERO  # their starting balances

    @property
    def slippage_mid_bps(self) -> Decimal | None:
        return self.slippage_mid_sum / self.slippage_mid_n if self.slippage_mid_n else None

    @property
    def fill_ratio(self) -> Decimal | None:
        return self.fill_ratio_sum / self.trades if self.trades else None

    @property
    def exit_pnl(self) -> Decimal | None:
        return None if self.exit_value is None else self.exit_value - self.exit_start


def held_book_marks(session: Session) -> dict[str, Decimal]:
    """The last valid mark of every token of a market held in an open position."""
    return dict(
        session.execute(
            select(BookMark.token_id, BookMark.mark).where(
                BookMark.market_id.in_(held_market_ids())
            )
        ).all()
    )


def book_mark(
    marks: dict[str, Decimal], outcomes: list[str], tokens: list[Any] | None, side: str
) -> Decimal | None:
    """A mode-book position's mark: its token's last valid mark, if it has one."""
    if not tokens or len(tokens) != len(outcomes):
        return None
    try:
        return marks.get(str(tokens[side_index(outcomes, side)]))
    except ExecutionError:
        return None


def open_mark(
    marks: dict[str, Decimal],
    outcomes: list[str],
    prices: Any,
    tokens: list[Any] | None,
    side: str,
    pricing: str,
) -> Decimal | None:
    """An open position's mark as the leaderboard values it: in mode book its token's last
    valid mark when it has one, else the side's stored last valid price (``prices`` as
    :func:`arena.domain.markets.stored_prices` gives them)."""
    mark = book_mark(marks, outcomes, tokens, side) if pricing == Pricing.BOOK else None
    return mark if mark is not None else side_mark(outcomes, prices, side)


def add_executions(
    session: Session,
    cohort_id: int | None,
    execution_of: Callable[[str], ExecutionQuality],
    stream: Stream,
    in_cohort: InCohort,
) -> None:
    """Mode book: slippage, fill ratios and fees of the trades, refusals for liquidity, and
    the latest exit value of each agent, added to ``execution_of(family_id)``."""
    trades = (
        select(Agent.family_id, Trade.slippage_mid_bps, Trade.fill_ratio, Trade.fee)
        .join(Agent, Agent.id == Trade.agent_id)
        .where(Trade.pricing == Pricing.BOOK)
    )
    for family_id, slippage, ratio, fee in stream(
        session, in_cohort(trades, Trade.cohort_id, cohort_id)
    ):
        x = execution_of(family_id)
        x.trades += 1
        if slippage is not None:
            x.slippage_mid_sum += slippage
            x.slippage_mid_n += 1
        x.fill_ratio_sum += ratio or ZERO
        x.fees += fee or ZERO
    refused = (
        select(Agent.family_id, Decision.refusals)
        .join(Agent, Agent.id == Decision.agent_id)
        .where(Decision.refusals.is_not(None))
    )
    for family_id, refusals in stream(session, in_cohort(refused, Decision.cohort_id, cohort_id)):
        execution_of(family_id).liquidity_refusals += sum(
            1 for r in refusals or () if isinstance(r, dict) and r.get("kind") == "liquidity"
        )
    with_exit = PortfolioSnapshot.exit_value.is_not(None)
    latest = (
        select(PortfolioSnapshot.agent_id, func.max(PortfolioSnapshot.taken_at).label("at"))
        .where(with_exit)
        .group_by(PortfolioSnapshot.agent_id)
        .subquery()
    )
    exits = (
        select(Agent.family_id, Agent.starting_balance, PortfolioSnapshot.exit_value)
        .join(latest, latest.c.agent_id == PortfolioSnapshot.agent_id)
        .join(Agent, Agent.id == PortfolioSnapshot.agent_id)
        .where(PortfolioSnapshot.taken_at == latest.c.at, with_exit)
    )
    for family_id, start, exit_value in stream(
        session, in_cohort(exits, Agent.cohort_id, cohort_id)
    ):
        x = execution_of(family_id)
        x.exit_value = (x.exit_value or ZERO) + exit_value
        x.exit_start += start
