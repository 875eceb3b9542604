"""Which rows a slice keeps: by cohort, family and time on each fact table, and for the
dimension tables (families, cohorts, markets, prices, universes) the rows the kept facts refer
to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Select, select, union

from arena.export.spec import ExportFilters, Restrict
from arena.store.models import (
    Agent,
    BookMark,
    BrierScore,
    Cohort,
    Decision,
    Family,
    Forecast,
    Market,
    MarketPrice,
    Position,
    Trade,
    UniverseMarket,
)


def slice_on(
    cohort: Any = None,
    family: Any = None,
    time: Any = None,
) -> Restrict:
    """Restrict a query by cohort id, family id and time range on the given columns."""

    def restrict(statement: Select, f: ExportFilters) -> Select:
        if f.cohorts and cohort is not None:
            statement = statement.where(cohort.in_(f.cohorts))
        if f.families and family is not None:
            statement = statement.where(family.in_(f.families))
        if time is not None and f.since is not None:
            statement = statement.where(time >= f.since)
        if time is not None and f.until is not None:
            statement = statement.where(time < f.until)
        return statement

    return restrict


def agent_join(table: Any, agent_id: Any) -> Callable[[Select], Select]:
    return lambda statement: statement.select_from(table).join(Agent, Agent.id == agent_id)


# The slice of each fact table, reused to find the markets a slice refers to.
TRADES_SLICE = slice_on(Trade.cohort_id, Agent.family_id, Trade.executed_at)
POSITIONS_SLICE = slice_on(Position.cohort_id, Agent.family_id, Position.opened_at)
DECISIONS_SLICE = slice_on(Decision.cohort_id, Agent.family_id, Decision.created_at)
BRIER_SLICE = slice_on(BrierScore.cohort_id, BrierScore.family_id, BrierScore.scored_at)
FORECASTS_SLICE = slice_on(Forecast.cohort_id, Forecast.family_id, Forecast.forecast_at)


def referenced_markets(f: ExportFilters) -> Any:
    """Ids of the markets a slice refers to: traded, held, shown in a universe, scored, forecast."""
    traded = TRADES_SLICE(agent_join(Trade, Trade.agent_id)(select(Trade.market_id)), f)
    held = POSITIONS_SLICE(agent_join(Position, Position.agent_id)(select(Position.market_id)), f)
    shown = DECISIONS_SLICE(
        select(UniverseMarket.market_id)
        .select_from(UniverseMarket)
        .join(Decision, Decision.universe_id == UniverseMarket.universe_id)
        .join(Agent, Agent.id == Decision.agent_id),
        f,
    )
    scored = BRIER_SLICE(select(BrierScore.market_id), f)
    forecast = FORECASTS_SLICE(select(Forecast.market_id), f)
    return union(traded, held, shown, scored, forecast)


def of_referenced_markets(market_id: Any) -> Restrict:
    """With any filter, only rows of the markets the slice refers to; without, every row."""

    def restrict(statement: Select, f: ExportFilters) -> Select:
        return statement.where(market_id.in_(referenced_markets(f))) if f.any else statement

    return restrict


markets_restrict = of_referenced_markets(Market.id)
book_marks_restrict = of_referenced_markets(BookMark.market_id)  # current state: no time cut


def market_prices_restrict(statement: Select, f: ExportFilters) -> Select:
    statement = slice_on(time=MarketPrice.observed_at)(statement, f)
    return of_referenced_markets(MarketPrice.market_id)(statement, f)


def families_restrict(statement: Select, f: ExportFilters) -> Select:
    if f.families:
        statement = statement.where(Family.id.in_(f.families))
    if f.cohorts:
        members = select(Agent.family_id).where(Agent.cohort_id.in_(f.cohorts))
        statement = statement.where(Family.id.in_(members))
    return statement


def cohorts_restrict(statement: Select, f: ExportFilters) -> Select:
    if f.cohorts:
        statement = statement.where(Cohort.id.in_(f.cohorts))
    if f.families:
        members = select(Agent.cohort_id).where(Agent.family_id.in_(f.families))
        statement = statement.where(Cohort.id.in_(members))
    return statement


def universes_restrict(statement: Select, f: ExportFilters) -> Select:
    """With any filter, the universes the slice's decisions were made on."""
    if not f.any:
        return statement
    used = DECISIONS_SLICE(
        select(Decision.universe_id)
        .select_from(Decision)
        .join(Agent, Agent.id == Decision.agent_id),
        f,
    )
    return statement.where(UniverseMarket.universe_id.in_(used))
