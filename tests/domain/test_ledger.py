"""Ledger rules and the money invariant, driven by random operation sequences (hypothesis)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from arena.domain.ledger import (
    MONEY,
    Holding,
    SettlementOutcome,
    buy,
    implied_confidence,
    max_bet,
    sell,
    settle,
)
from arena.domain.markets import side_price
from arena.domain.valuation import position_value
from arena.errors import ExecutionError

START = Decimal("10000.00")
prices = st.decimals(min_value="0.0005", max_value="0.9995", places=4)
amounts = st.decimals(min_value="0.01", max_value="3000", places=3)
percentages = st.decimals(min_value="0.01", max_value="100", places=2)


def test_buy_then_full_sell_at_same_price_round_trips() -> None:
    bought = buy(START, None, Decimal("500"), Decimal("0.40"))
    assert bought.shares == Decimal("1250")
    assert bought.cash_after == Decimal("9500")
    assert bought.holding_after.avg_entry_price == Decimal("0.4")
    sold = sell(bought.cash_after, bought.holding_after, Decimal(100), Decimal("0.40"))
    assert sold.proceeds == Decimal("500.00")
    assert sold.realized_pnl == 0 and sold.holding_after is None
    assert sold.cash_after == START


def test_partial_sell_takes_basis_proportionally() -> None:
    holding = Holding(Decimal("1000"), Decimal("300.00"))
    sold = sell(Decimal("0"), holding, Decimal("25"), Decimal("0.50"))
    assert sold.shares_sold == Decimal("250")
    assert sold.proceeds == Decimal("125.00")
    assert sold.basis_out == Decimal("75.00")
    assert sold.realized_pnl == Decimal("50.00")
    assert sold.holding_after == Holding(Decimal("750"), Decimal("225.00"))


@pytest.mark.parametrize(
    ("outcome", "payout", "pnl"),
    [
        (SettlementOutcome.WON, Decimal("1000.00"), Decimal("700.00")),
        (SettlementOutcome.LOST, Decimal("0.00"), Decimal("-300.00")),
        (SettlementOutcome.VOID, Decimal("500.00"), Decimal("200.00")),
        (SettlementOutcome.CANCELLED, Decimal("300.00"), Decimal("0.00")),
    ],
)
def test_settlement(outcome: SettlementOutcome, payout: Decimal, pnl: Decimal) -> None:
    result = settle(Decimal("10"), Holding(Decimal("1000"), Decimal("300.00")), outcome)
    assert (result.payout, result.realized_pnl, result.cash_after) == (payout, pnl, 10 + payout)


def test_side_prices() -> None:
    assert side_price(["Yes", "No"], [Decimal("0.3"), Decimal("0.7")], "no") == Decimal("0.7")
    assert side_price(["No", "Yes"], [Decimal("0.7"), Decimal("0.3")], "YES") == Decimal("0.3")
    assert side_price(["FaZe", "illwill"], [Decimal("0.6"), Decimal("0.4")], "ILLWILL") == Decimal(
        "0.4"
    )
    with pytest.raises(ExecutionError):
        side_price(["Yes", "No"], [Decimal("1"), Decimal("0")], "YES")
    with pytest.raises(ExecutionError):
        side_price(["A", "B"], [Decimal("0.5"), Decimal("0.5")], "C")


def test_refusals_change_nothing() -> None:
    with pytest.raises(ExecutionError):
        buy(Decimal("100"), None, Decimal("100.01"), Decimal("0.5"))
    with pytest.raises(ExecutionError):
        buy(Decimal("100"), None, Decimal("10"), Decimal("0"))
    with pytest.raises(ExecutionError):
        sell(Decimal("0"), Holding(Decimal("1"), Decimal("1")), Decimal("0"), Decimal("0.5"))
    with pytest.raises(ExecutionError):
        sell(Decimal("0"), Holding(Decimal("1"), Decimal("1")), Decimal("100.5"), Decimal("0.5"))


def test_implied_confidence_and_max_bet() -> None:
    quarter = Decimal("0.25")
    assert implied_confidence(Decimal("500"), Decimal("10000"), quarter) == Decimal("0.2")
    assert implied_confidence(Decimal("50"), Decimal("10000"), quarter) == Decimal("0.02")
    assert implied_confidence(Decimal("9000"), Decimal("10000"), quarter) == 1
    assert implied_confidence(Decimal("10"), Decimal("0"), quarter) == 0
    assert max_bet(Decimal("9999.99"), quarter) == Decimal("2499.99")


@given(amount=amounts, price=prices)
def test_buy_never_buys_more_than_paid(amount: Decimal, price: Decimal) -> None:
    bought = buy(START, None, amount, price)
    assert bought.shares * price <= bought.amount
    assert bought.amount == amount.quantize(MONEY, rounding="ROUND_DOWN")


class LedgerMachine(RuleBasedStateMachine):
    """Random sequences of buys, sells, price moves and settlements on a few markets."""

    @initialize()
    def setup(self) -> None:
        self.cash = START
        self.realized = Decimal(0)
        self.holdings: dict[tuple[int, str], Holding] = {}
        self.prices = {m: Decimal("0.5") for m in range(3)}

    def _price(self, market: int, side: str) -> Decimal:
        return side_price(["Yes", "No"], [self.prices[market], 1 - self.prices[market]], side)

    @rule(market=st.integers(0, 2), price=prices)
    def move_price(self, market: int, price: Decimal) -> None:
        self.prices[market] = price

    @rule(market=st.integers(0, 2), side=st.sampled_from(["YES", "NO"]), amount=amounts)
    def buy(self, market: int, side: str, amount: Decimal) -> None:
        key = (market, side)
        try:
            result = buy(self.cash, self.holdings.get(key), amount, self._price(market, side))
        except ExecutionError:
            return
        self.cash = result.cash_after
        self.holdings[key] = result.holding_after

    @precondition(lambda self: bool(self.holdings))
    @rule(data=st.data(), pct=percentages)
    def sell(self, data: st.DataObject, pct: Decimal) -> None:
        key = data.draw(st.sampled_from(sorted(self.holdings)))
        try:
            result = sell(self.cash, self.holdings[key], pct, self._price(*key))
        except ExecutionError:
            return
        self.cash = result.cash_after
        self.realized += result.realized_pnl
        if result.holding_after is None:
            del self.holdings[key]
        else:
            self.holdings[key] = result.holding_after

    @rule(market=st.integers(0, 2), outcome=st.sampled_from(list(SettlementOutcome)))
    def settle_market(self, market: int, outcome: SettlementOutcome) -> None:
        for key in [k for k in self.holdings if k[0] == market]:
            side_outcome = outcome
            if outcome in (SettlementOutcome.WON, SettlementOutcome.LOST) and key[1] == "NO":
                side_outcome = (
                    SettlementOutcome.LOST
                    if outcome is SettlementOutcome.WON
                    else SettlementOutcome.WON
                )
            result = settle(self.cash, self.holdings.pop(key), side_outcome)
            self.cash = result.cash_after
            self.realized += result.realized_pnl

    @invariant()
    def money_is_conserved(self) -> None:
        basis = sum((h.cost_basis for h in self.holdings.values()), Decimal(0))
        assert self.cash + basis == START + self.realized
        assert self.cash >= 0
        assert self.cash == self.cash.quantize(MONEY)
        for holding in self.holdings.values():
            assert holding.shares > 0 and holding.cost_basis >= 0
            assert position_value(holding.shares, holding.cost_basis, Decimal("0.5")) >= 0


LedgerMachine.TestCase.settings = settings(max_examples=3000, stateful_step_count=30, deadline=None)
TestLedger = LedgerMachine.TestCase
