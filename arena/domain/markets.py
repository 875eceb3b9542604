"""The market as the arena sees it: one domain type for binary and named-outcome markets."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from arena.domain.book import Touch
from arena.domain.ledger import ONE, ZERO
from arena.errors import ExecutionError

YES, NO = "YES", "NO"


@dataclass(frozen=True)
class MarketView:
    """A market as the jobs, the prompt and the baselines see it: parsed from Gamma (or loaded
    from a frozen universe), with exact-decimal outcome prices. Not the ``markets`` table row
    (:class:`arena.store.models.Market`).

    ``prices`` is index-aligned with ``outcomes`` (``None`` when Gamma gave none or they did
    not parse). A market is *binary* when its outcomes are exactly Yes/No (any case).
    """

    id: str
    question: str
    outcomes: tuple[str, ...]
    prices: tuple[Decimal, ...] | None
    slug: str | None = None
    description: str | None = None
    category: str | None = None
    volume: Decimal | None = None
    volume_24h: Decimal | None = None
    liquidity: Decimal | None = None
    end_date: datetime | None = None
    closed_time: datetime | None = None
    active: bool = True
    closed: bool = False
    accepting_orders: bool | None = None
    uma_resolution_status: str | None = None
    condition_id: str | None = None
    clob_token_ids: tuple[str, ...] = ()
    neg_risk: bool = False
    neg_risk_market_id: str | None = None
    neg_risk_other: bool = False
    group_item_title: str | None = None
    event_id: str | None = None
    event_slug: str | None = None
    event_title: str | None = None
    tags: tuple[str, ...] = field(default=())
    market_type: str | None = None  # Gamma `marketType`; "scalar" on legacy scalar markets
    # Mode book: each outcome token's frozen touch, index-aligned with ``outcomes``
    books: tuple[Touch, ...] = ()

    @property
    def is_binary(self) -> bool:
        return is_binary_outcomes(self.outcomes)

    @property
    def yes_price(self) -> Decimal | None:
        """The stored YES price of a binary market (``None`` otherwise)."""
        if not self.is_binary or self.prices is None:
            return None
        return self.prices[yes_index(self.outcomes)]

    @property
    def has_valid_prices(self) -> bool:
        return valid_prices(self.outcomes, self.prices)

    @property
    def is_tradable(self) -> bool:
        """Open and tradable per methodology, "The market universe"."""
        return (
            not self.closed
            and self.active
            and self.accepting_orders is not False
            and self.has_valid_prices
        )

    def sides(self) -> tuple[str, ...]:
        """The canonical sides a bet may take: YES/NO, or the outcome names."""
        return (YES, NO) if self.is_binary else self.outcomes

    def canonical_side(self, side: str) -> str:
        return canonical_side(self.outcomes, side)

    def side_price(self, side: str) -> Decimal:
        if self.prices is None:
            raise ExecutionError(f"market {self.id} has no prices")
        return side_price(self.outcomes, self.prices, side)

    def side_index(self, side: str) -> int:
        """The index in ``outcomes`` (and ``clob_token_ids``, ``books``) of a side's token."""
        return side_index(self.outcomes, side)

    def side_token(self, side: str) -> str:
        """The CLOB token id a side trades (mode book)."""
        if len(self.clob_token_ids) != len(self.outcomes):
            raise ExecutionError(f"market {self.id} has no order book tokens")
        return self.clob_token_ids[self.side_index(side)]

    def side_touch(self, side: str) -> Touch:
        """The touch of a side's book frozen with the universe (mode book)."""
        if len(self.books) != len(self.outcomes):
            raise ExecutionError(f"market {self.id} has no frozen order book")
        return self.books[self.side_index(side)]


def is_binary_outcomes(outcomes: tuple[str, ...] | list[str]) -> bool:
    return len(outcomes) == 2 and {o.strip().lower() for o in outcomes} == {"yes", "no"}


def yes_index(outcomes: tuple[str, ...] | list[str]) -> int:
    return [o.strip().lower() for o in outcomes].index("yes")


def valid_prices(
    outcomes: tuple[str, ...] | list[str], prices: tuple[Decimal, ...] | list[Decimal] | None
) -> bool:
    """As many prices as outcomes, each strictly between 0 and 1."""
    return (
        prices is not None
        and len(outcomes) >= 2
        and len(prices) == len(outcomes)
        and all(p.is_finite() and ZERO < p < ONE for p in prices)
    )


def stored_prices(raw: Sequence[object] | None) -> tuple[Decimal, ...] | None:
    """A stored price list (JSON strings, or numbers) as exact decimals; None when there is
    none or it does not read as numbers. The one converter from stored prices."""
    if not raw:
        return None
    try:
        return tuple(Decimal(str(value)) for value in raw)
    except ArithmeticError:
        return None


def canonical_side(outcomes: tuple[str, ...] | list[str], side: str) -> str:
    """Map a side as a model wrote it to its stored form (YES/NO or the outcome's own name)."""
    wanted = side.strip().lower()
    if is_binary_outcomes(outcomes):
        if wanted in ("yes", "no"):
            return wanted.upper()
    else:
        for outcome in outcomes:
            if outcome.strip().lower() == wanted:
                return outcome
    raise ExecutionError(f"side {side!r} is not one of {list(outcomes)}")


def side_index(outcomes: tuple[str, ...] | list[str], side: str) -> int:
    """The outcome index of a side: YES/NO map to the Yes/No outcomes of a binary market."""
    canonical = canonical_side(outcomes, side)
    wanted = canonical.lower() if is_binary_outcomes(outcomes) else canonical
    names = [o.strip().lower() for o in outcomes] if is_binary_outcomes(outcomes) else outcomes
    return list(names).index(wanted)


def side_price(
    outcomes: tuple[str, ...] | list[str], prices: tuple[Decimal, ...] | list[Decimal], side: str
) -> Decimal:
    """YES -> p_yes, NO -> 1 - p_yes, outcome o -> p(o); must be strictly inside (0, 1)."""
    canonical = canonical_side(outcomes, side)
    if len(prices) != len(outcomes):
        raise ExecutionError("prices do not match outcomes")
    if is_binary_outcomes(outcomes):
        p_yes = prices[yes_index(outcomes)]
        price = p_yes if canonical == YES else ONE - p_yes
    else:
        price = prices[list(outcomes).index(canonical)]
    if not price.is_finite() or not (ZERO < price < ONE):
        raise ExecutionError(f"price {price} of side {canonical!r} is outside (0, 1)")
    return price


class ResolutionState(enum.StrEnum):
    """What Gamma says about a market's end (gamma-api.md, Resolution)."""

    OPEN = "open"
    CLOSED_AWAITING = "closed_awaiting"  # closed, no proposal yet
    PROPOSED = "proposed"
    DISPUTED = "disputed"
    RESOLVED_WINNER = "resolved_winner"
    RESOLVED_50_50 = "resolved_50_50"
    AMBIGUOUS = "ambiguous"  # over, but no determinable winner (refund)


@dataclass(frozen=True)
class Resolution:
    state: ResolutionState
    winner: str | None = None  # canonical side that won (YES/NO or outcome name)
    reason: str = ""
