"""Builders of markets, positions and prompt contexts for the prompting/decision tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from arena.domain.markets import MarketView
from arena.domain.prompting import PositionView, PromptContext

NOW = datetime(2026, 3, 1, 0, 5, tzinfo=UTC)


def binary(
    market_id: str, p_yes: str = "0.62", volume: str | int = 1000, question: str = "", **kw: Any
) -> MarketView:
    return MarketView(
        id=market_id,
        question=question or f"Will event {market_id} happen?",
        outcomes=("Yes", "No"),
        prices=(Decimal(p_yes), 1 - Decimal(p_yes)),
        volume=Decimal(volume),
        end_date=datetime(2026, 12, 31, tzinfo=UTC),
        category=kw.pop("category", "Politics"),
        **kw,
    )


def named(
    market_id: str,
    outcomes: Sequence[str] = ("Lakers", "Celtics"),
    prices: Sequence[str] = ("0.55", "0.45"),
    volume: str | int = 500,
    question: str = "",
    **kw: Any,
) -> MarketView:
    return MarketView(
        id=market_id,
        question=question or f"Who wins match {market_id}?",
        outcomes=tuple(outcomes),
        prices=tuple(Decimal(p) for p in prices),
        volume=Decimal(volume),
        category=kw.pop("category", "Sports"),
        **kw,
    )


def position(
    position_id: str,
    market: MarketView,
    side: str = "YES",
    shares: str = "100",
    avg: str = "0.5",
    price: str | None = "market",
) -> PositionView:
    """A held position valued at its market's price (``price``: another price, or None for
    none); its cost basis is unknown (set one with :func:`dataclasses.replace`)."""
    if price == "market":
        current: Decimal | None = market.side_price(side)
    else:
        current = None if price is None else Decimal(price)
    return PositionView(
        position_id=position_id,
        market=market,
        side=side,
        shares=Decimal(shares),
        avg_entry_price=Decimal(avg),
        current_price=current,
    )


def context(
    markets: Sequence[MarketView] = (),
    positions: Sequence[PositionView] = (),
    cash: str = "10000",
    methodology: str = "v1",
    panel: Sequence[MarketView] = (),
    **kw: Any,
) -> PromptContext:
    cash_d = Decimal(cash)
    return PromptContext(
        now=kw.pop("now", NOW),
        decision_week=kw.pop("decision_week", 1),
        cash=cash_d,
        max_bet=kw.pop("max_bet", (cash_d * Decimal("0.25")).quantize(Decimal("0.01"))),
        min_bet=kw.pop("min_bet", Decimal(50)),
        positions=tuple(positions),
        markets=tuple(markets),
        methodology=methodology,
        panel=tuple(panel),
        **kw,
    )
