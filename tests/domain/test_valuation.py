"""Valuation: one rule for snapshots, the leaderboard and the prompt."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from arena.domain.valuation import position_value, side_mark

D = Decimal


def value(
    shares: Decimal,
    basis: Decimal,
    outcomes: Sequence[str],
    prices: Sequence[Decimal] | None,
    side: str,
) -> Decimal:
    return position_value(shares, basis, side_mark(outcomes, prices, side))


def test_a_position_is_valued_side_correct_and_never_at_zero() -> None:
    yes_no = ["Yes", "No"]
    prices = [D("0.40"), D("0.60")]
    assert value(D(1250), D(500), yes_no, prices, "YES") == D("500.00")
    assert value(D(1250), D(500), yes_no, prices, "NO") == D("750.00")
    three = ["Red", "Blue", "Green"]
    assert value(D(10), D(3), three, [D("0.5"), D("0.3"), D("0.2")], "Blue") == D("3.00")
    assert value(D("3.333333"), D(1), yes_no, prices, "YES") == D("1.33")
    # Without a usable price the position keeps its cost basis.
    assert value(D(1250), D(500), yes_no, None, "YES") == D(500)
    assert value(D(1250), D(500), yes_no, [D(0), D(1)], "YES") == D(500)
