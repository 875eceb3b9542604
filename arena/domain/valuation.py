"""Valuation (methodology, "Valuation and snapshots"): one rule for the snapshots, the
leaderboard and the prompt.

An open position is worth ``shares x`` its side's price at the market's last valid mark
(NO = 1 - YES), to the cent. Without a usable mark (never expected: stored marks are always the
last *valid* prices) it is held at its cost basis, never at 0 or 0.5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from arena.domain.ledger import to_money
from arena.domain.markets import side_index, side_price
from arena.errors import ExecutionError


def side_mark(
    outcomes: Sequence[str] | None, prices: Sequence[Decimal] | None, side: str
) -> Decimal | None:
    """The price of ``side`` at the stored mark, or None when there is no usable one."""
    if outcomes is None or prices is None:
        return None
    try:
        return side_price(list(outcomes), list(prices), side)
    except (ExecutionError, ArithmeticError, ValueError):
        return None


def position_mark(
    outcomes: Sequence[str] | None,
    prices: Sequence[Decimal] | None,
    tokens: Sequence[object] | None,
    token_marks: Mapping[str, Decimal],
    side: str,
    book: bool,
) -> Decimal | None:
    """The mark an open position is valued at: in mode book (``book``) its token's last valid
    book mark (``token_marks`` by token id); else, or when the token never had one, its side's
    price at the market's last valid Gamma mark (:func:`side_mark`)."""
    if book and outcomes and tokens and len(tokens) == len(outcomes):
        try:
            token_mark = token_marks.get(str(tokens[side_index(list(outcomes), side)]))
        except ExecutionError:
            token_mark = None
        if token_mark is not None:
            return token_mark
    return side_mark(outcomes, prices, side)


def position_value(shares: Decimal, cost_basis: Decimal, mark: Decimal | None) -> Decimal:
    """``shares x mark`` to the cent; the cost basis when there is no mark."""
    return cost_basis if mark is None else to_money(shares * mark)
