"""Exact-decimal ledger rules (methodology: Execution, Valuation, Settlement).

Pure functions over immutable values; no I/O. Precision and rounding, the one place they live:

* money (cash, amounts, cost basis, proceeds, payouts, P/L) is kept to the cent
  (``MONEY = 0.01``); a model's bet amount is rounded *down* to the cent, every computed sum
  (proceeds, payouts, basis taken out by a partial SELL) is rounded half-even to the cent;
* shares are kept to 1e-6 (``SHARES``), rounded *down* on BUY so a bet never buys more than it paid;
* prices are used exactly as stored (Gamma quotes at most a few decimals).

Because realized P/L is always defined as ``proceeds - basis_out`` (or ``payout - basis``) in
cents, the invariant ``cash + open cost basis = starting balance + realized P/L`` holds exactly,
to the cent, after any sequence of operations; rounding only ever moves money between "cash"
and "realized P/L" together, never creates or destroys it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal

from arena.errors import ExecutionError

MONEY = Decimal("0.01")
SHARES = Decimal("0.000001")
CONFIDENCE = Decimal("0.000001")
ZERO = Decimal(0)
ONE = Decimal(1)
HUNDRED = Decimal(100)


def to_money(value: Decimal | int | str) -> Decimal:
    """Round a computed amount half-even to the cent."""
    return Decimal(value).quantize(MONEY, rounding=ROUND_HALF_EVEN)


def money_floor(value: Decimal | int | str) -> Decimal:
    """Round an amount down to the cent (used for amounts a model asks to spend)."""
    return Decimal(value).quantize(MONEY, rounding=ROUND_DOWN)


def check_price(price: Decimal) -> Decimal:
    """A tradable side price is strictly between 0 and 1."""
    if not price.is_finite() or not (ZERO < price < ONE):
        raise ExecutionError(f"price {price} is outside (0, 1)")
    return price


class SettlementOutcome(enum.StrEnum):
    WON = "WON"
    LOST = "LOST"
    VOID = "VOID"  # 50-50 resolution: every share pays 0.50, not scored
    CANCELLED = "CANCELLED"  # no determinable winner or overdue: cost basis refunded


@dataclass(frozen=True)
class Holding:
    """An open position's quantities: one per (agent, market, side)."""

    shares: Decimal
    cost_basis: Decimal

    @property
    def avg_entry_price(self) -> Decimal:
        return self.cost_basis / self.shares if self.shares else ZERO


@dataclass(frozen=True)
class Buy:
    amount: Decimal
    price: Decimal
    shares: Decimal
    cash_after: Decimal
    holding_after: Holding


@dataclass(frozen=True)
class Sell:
    percentage: Decimal
    price: Decimal
    shares_sold: Decimal
    proceeds: Decimal
    basis_out: Decimal
    realized_pnl: Decimal
    cash_after: Decimal
    holding_after: Holding | None  # None: the position closed


@dataclass(frozen=True)
class Sale:
    """What a SELL got: the shares sold, the cash they brought in (net of fees, in cents) and
    the price recorded for them."""

    shares: Decimal
    proceeds: Decimal
    price: Decimal


@dataclass(frozen=True)
class Settlement:
    outcome: SettlementOutcome
    payout: Decimal
    realized_pnl: Decimal
    cash_after: Decimal


def buy(cash: Decimal, holding: Holding | None, amount: Decimal, price: Decimal) -> Buy:
    """BUY ``amount`` dollars of a side at ``price``: ``shares = amount / price`` (mode gamma)."""
    check_price(price)
    amount = money_floor(amount)
    if amount <= ZERO:
        raise ExecutionError(f"amount {amount} must be positive")
    shares = (amount / price).quantize(SHARES, rounding=ROUND_DOWN)
    if shares <= ZERO:
        raise ExecutionError(f"amount {amount} buys no shares at {price}")
    return buy_filled(cash, holding, amount, shares, price)


def buy_filled(
    cash: Decimal, holding: Holding | None, cost: Decimal, shares: Decimal, price: Decimal
) -> Buy:
    """Book ``shares`` bought for ``cost`` dollars (fees included: they are part of the cost
    basis). The one rule every BUY ends in, whatever priced it."""
    if cost <= ZERO or cost != cost.quantize(MONEY):
        raise ExecutionError(f"cost {cost} must be a positive amount in cents")
    if cost > cash:
        raise ExecutionError(f"amount {cost} exceeds cash {cash}")
    if shares <= ZERO:
        raise ExecutionError("a buy must add shares")
    before = holding or Holding(ZERO, ZERO)
    after = Holding(before.shares + shares, before.cost_basis + cost)
    return Buy(cost, price, shares, cash - cost, after)


def sell(cash: Decimal, holding: Holding, percentage: Decimal, price: Decimal) -> Sell:
    """SELL ``percentage`` (0, 100] of a holding at ``price``; 100 closes the position."""
    check_price(price)
    sold = shares_to_sell(holding, percentage)
    basis_out = (
        None if percentage == HUNDRED else to_money(holding.cost_basis * percentage / HUNDRED)
    )
    return sell_filled(
        cash, holding, percentage, Sale(sold, to_money(sold * price), price), basis_out
    )


def shares_to_sell(holding: Holding, percentage: Decimal) -> Decimal:
    """The shares a SELL of ``percentage`` asks for: all of them at 100, else the fraction
    rounded down to 1e-6."""
    if not percentage.is_finite() or not (ZERO < percentage <= HUNDRED):
        raise ExecutionError(f"percentage {percentage} is outside (0, 100]")
    if holding.shares <= ZERO:
        raise ExecutionError("position holds no shares")
    if percentage == HUNDRED:
        return holding.shares
    sold = (holding.shares * percentage / HUNDRED).quantize(SHARES, rounding=ROUND_DOWN)
    if sold <= ZERO:
        raise ExecutionError(f"selling {percentage}% sells no shares")
    return sold


def sell_filled(
    cash: Decimal,
    holding: Holding,
    percentage: Decimal,
    sale: Sale,
    basis_out: Decimal | None = None,
) -> Sell:
    """Book the sale of some shares of a holding (net of fees). The basis taken
    out is the sold fraction of the cost basis (mode gamma passes ``percentage`` of it, its
    rule since the first cohort); selling every share closes the position, and whatever basis
    is left goes out with the last share. The one rule every SELL ends in (a partial fill of
    the book sells fewer shares than asked)."""
    sold, proceeds, price = sale.shares, sale.proceeds, sale.price
    if not (ZERO < sold <= holding.shares):
        raise ExecutionError(f"cannot sell {sold} of {holding.shares} shares")
    if proceeds < ZERO or proceeds != proceeds.quantize(MONEY):
        raise ExecutionError(f"proceeds {proceeds} must be a non-negative amount in cents")
    if sold == holding.shares:
        basis_out = holding.cost_basis
    elif basis_out is None:
        basis_out = to_money(holding.cost_basis * sold / holding.shares)
    remaining = Holding(holding.shares - sold, holding.cost_basis - basis_out)
    closed = remaining.shares <= ZERO
    if closed:
        basis_out += remaining.cost_basis
    return Sell(
        percentage=percentage,
        price=price,
        shares_sold=sold,
        proceeds=proceeds,
        basis_out=basis_out,
        realized_pnl=proceeds - basis_out,
        cash_after=cash + proceeds,
        holding_after=None if closed else remaining,
    )


PAYOUT_PER_SHARE = {
    SettlementOutcome.WON: ONE,
    SettlementOutcome.LOST: ZERO,
    SettlementOutcome.VOID: Decimal("0.5"),
}


def settle(cash: Decimal, holding: Holding, outcome: SettlementOutcome) -> Settlement:
    """Close a holding at resolution: $1/$0/$0.50 a share, or refund the basis if CANCELLED."""
    if outcome is SettlementOutcome.CANCELLED:
        payout = holding.cost_basis
    else:
        payout = to_money(holding.shares * PAYOUT_PER_SHARE[outcome])
    return Settlement(outcome, payout, payout - holding.cost_basis, cash + payout)


def implied_confidence(amount: Decimal, cash_shown: Decimal, max_bet_fraction: Decimal) -> Decimal:
    """``amount / (max_bet_fraction * cash shown in the prompt)``, clipped to [0, 1]."""
    cap = cash_shown * max_bet_fraction
    if cap <= ZERO:
        return ZERO
    return min(ONE, max(ZERO, amount / cap)).quantize(CONFIDENCE, rounding=ROUND_HALF_EVEN)


def max_bet(cash_shown: Decimal, max_bet_fraction: Decimal) -> Decimal:
    """The largest single bet allowed for a decision: a fraction of the cash shown, to the cent."""
    return money_floor(cash_shown * max_bet_fraction)
