"""Fill rules of mode book (methodology, "Executable prices"), proven on random books."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.domain import ledger
from arena.domain.book import (
    FeeSchedule,
    Level,
    OrderBook,
    TradeSide,
    exit_proceeds,
    limit_price,
    mark,
    walk_buy,
    walk_sell,
)
from arena.errors import NoLiquidity

D = Decimal
TICK = D("0.01")


def book(bids: list[tuple[str, str]], asks: list[tuple[str, str]], **kw: object) -> OrderBook:
    """A book in wire order: bids ascending, asks descending (worst to best)."""
    return OrderBook(
        token_id="111061902544814266207267295505639408607400625795891618462682726460921782993748",
        market="0xabc",
        timestamp=1791259305517,
        hash="5a181104ed750420c6bc2e0ada7131f34b969d78",
        bids=tuple(Level(D(p), D(s)) for p, s in sorted(bids, key=lambda x: D(x[0]))),
        asks=tuple(Level(D(p), D(s)) for p, s in sorted(asks, key=lambda x: -D(x[0]))),
        min_order_size=D(str(kw.get("min_order_size", "5"))),
        tick_size=TICK,
        last_trade_price=D(str(kw["last"])) if "last" in kw else None,
    )


def test_best_prices_are_computed_not_read_from_a_position() -> None:
    b = book([("0.01", "100"), ("0.42", "10"), ("0.30", "5")], [("0.99", "1"), ("0.43", "2")])
    assert b.bids[-1].price == D("0.42") and b.best_bid == D("0.42")
    assert b.best_ask == D("0.43")
    assert b.mid == D("0.425") and b.spread == D("0.01")


def test_levels_of_size_zero_are_never_the_best_price() -> None:
    """The model was shown YES=0.97/0.03 for a book whose real touch was 0.11/0.12."""
    b = book([("0.11", "100"), ("0.97", "0")], [("0.12", "100"), ("0.03", "0")])
    assert (b.best_bid, b.best_ask, b.mid) == (D("0.11"), D("0.12"), D("0.115"))
    assert mark(b) == D("0.115") and not b.crossed


@pytest.mark.parametrize("bid", ["0.42", "0.43"])
def test_a_crossed_or_locked_book_has_no_mark(bid: str) -> None:
    b = book([(bid, "100")], [("0.42", "100")], last="0.42")
    assert b.crossed and mark(b) is None


def test_buy_takes_three_levels_and_stops_at_the_limit() -> None:
    b = book(
        [("0.40", "100")], [("0.50", "100"), ("0.47", "100"), ("0.46", "100"), ("0.45", "100")]
    )
    limit = limit_price(D("0.45"), D("0.02"), TradeSide.BUY)  # 0.47
    fill = walk_buy(b, D("1000"), limit)
    assert [lv.price for lv in fill.levels] == [D("0.45"), D("0.46"), D("0.47")]
    assert fill.shares == D("300") and fill.cash == D("138.00")
    assert fill.price == D("0.46") and fill.touch == D("0.45")
    assert fill.slippage_bps(fill.touch) == D("222.22")
    assert fill.slippage_bps(b.mid) == D("823.53")


def test_buy_with_fee_takes_a_partial_level() -> None:
    fee = FeeSchedule(D("0.04"), D(1))
    b = book([("0.40", "100")], [("0.60", "1000"), ("0.50", "100")])
    fill = walk_buy(b, D("100"), D("0.60"), fee)
    # 100 shares at 0.50 cost 50 + 100 * 0.04 * 0.25 = 51; the rest buys at 0.60 + 0.0096
    assert fill.levels[0].shares == D("100")
    assert fill.levels[1].shares == D("80.380577")
    assert fill.cash <= D("100")
    assert fill.fee == D("1") + D("80.380577") * D("0.0096")


def test_buy_under_the_minimum_order_size_is_refused() -> None:
    b = book([("0.40", "100")], [("0.45", "3")], min_order_size="5")
    with pytest.raises(NoLiquidity, match="minimum order size"):
        walk_buy(b, D("1000"), D("0.50"))
    with pytest.raises(NoLiquidity, match="no ask"):
        walk_buy(book([("0.40", "100")], [("0.60", "100")]), D("50"), D("0.50"))


def test_sell_walks_the_bids_down_to_the_limit_and_leaves_the_rest() -> None:
    b = book([("0.30", "1000"), ("0.38", "10"), ("0.39", "20"), ("0.40", "30")], [("0.45", "5")])
    fill = walk_sell(b, D("100"), limit_price(D("0.40"), D("0.02"), TradeSide.SELL))
    assert fill.shares == D("60") and fill.cash == D("23.60")
    assert fill.slippage_bps(fill.touch) == D("166.67")  # a worse price is positive


def test_mark_is_the_mid_or_the_last_trade_when_the_spread_is_wide() -> None:
    assert mark(book([("0.42", "1")], [("0.43", "1")], last="0.5")) == D("0.425")
    assert mark(book([("0.20", "1")], [("0.60", "1")], last="0.35")) == D("0.35")
    # the book's last trade is the market's: a NO book may carry the YES side's price
    assert mark(book([("0.70", "1")], [("0.85", "1")], last="0.19")) == D("0.81")
    assert mark(book([], [], last="0.5")) == D("0.5")
    assert mark(book([("0.20", "1")], [("0.60", "1")])) is None


def test_exit_proceeds_sell_into_the_bids_with_fees() -> None:
    fee = FeeSchedule(D("0.04"), D(1))
    b = book([("0.30", "10"), ("0.40", "10")], [("0.45", "5")])
    # 10 * (0.40 - 0.0096) + 5 * (0.30 - 0.0084) = 3.904 + 1.458 = 5.362 -> 5.36
    assert exit_proceeds(b, D("15"), fee) == D("5.36")
    assert exit_proceeds(book([], [("0.5", "1")]), D("15"), fee) == D("0")


def test_fee_exponent_two() -> None:
    assert FeeSchedule(D("0.25"), D(2)).per_share(D("0.5")) == D("0.015625")


# --- properties ----------------------------------------------------------------------------

prices = st.integers(min_value=1, max_value=99).map(lambda c: D(c) / 100)
sizes = st.decimals(min_value=D("0.01"), max_value=D("5000"), places=2)
levels = st.dictionaries(prices, sizes, min_size=1, max_size=12)
fees = st.sampled_from(
    [
        FeeSchedule(),
        FeeSchedule(D("0.04"), D(1)),
        FeeSchedule(D("0.07"), D(1)),
        FeeSchedule(D("0.25"), D(2)),
    ]
)
money = st.decimals(min_value=D("50"), max_value=D("10000"), places=2)


def random_book(
    bids: dict[Decimal, Decimal], asks: dict[Decimal, Decimal], minimum: Decimal
) -> OrderBook:
    return book(
        [(str(p), str(s)) for p, s in bids.items()],
        [(str(p), str(s)) for p, s in asks.items()],
        min_order_size=minimum,
    )


@settings(max_examples=400, deadline=None)
@given(
    asks=levels,
    amount=money,
    cash=money,
    fee=fees,
    slippage=st.sampled_from([D("0"), D("0.01"), D("0.05"), D("0.2")]),
    minimum=st.sampled_from([D("0"), D("5")]),
)
def test_buy_properties(
    asks: dict[Decimal, Decimal],
    amount: Decimal,
    cash: Decimal,
    fee: FeeSchedule,
    slippage: Decimal,
    minimum: Decimal,
) -> None:
    b = random_book({}, asks, minimum)
    assert b.best_ask is not None
    limit = limit_price(b.best_ask, slippage, TradeSide.BUY)
    budget = min(amount, cash)
    try:
        fill = walk_buy(b, budget, limit, fee)
    except NoLiquidity:
        return
    # cash out (levels + fees) never exceeds the amount or the cash
    assert fill.cash <= amount and fill.cash <= cash
    assert fill.notional + fill.fee <= fill.cash
    # the volume-weighted price lies between the touch and the last level taken
    assert fill.touch <= fill.price <= fill.levels[-1].price
    # no level beyond the limit is taken, no level gives more than it holds
    assert all(lv.price <= limit for lv in fill.levels)
    book_sizes = {lv.price: lv.size for lv in b.asks}
    assert all(lv.shares <= book_sizes[lv.price] for lv in fill.levels)
    assert fill.shares >= minimum
    assert fill.slippage_bps(fill.touch) is not None and fill.slippage_bps(fill.touch) >= 0
    # the ledger takes it: fees are part of the cost basis
    bought = ledger.buy_filled(cash, None, fill.cash, fill.shares, fill.price)
    assert bought.cash_after + bought.holding_after.cost_basis == cash


@settings(max_examples=400, deadline=None)
@given(
    bids=levels,
    held=st.decimals(min_value=D("0.000001"), max_value=D("50000"), places=6),
    percentage=st.sampled_from([D("100"), D("50"), D("33.3"), D("1")]),
    fee=fees,
    slippage=st.sampled_from([D("0"), D("0.05"), D("1")]),
)
def test_sell_properties(
    bids: dict[Decimal, Decimal],
    held: Decimal,
    percentage: Decimal,
    fee: FeeSchedule,
    slippage: Decimal,
) -> None:
    b = random_book(bids, {}, D(0))
    assert b.best_bid is not None
    holding = ledger.Holding(held, ledger.to_money(held * D("0.5")) + D("0.01"))
    try:
        wanted = ledger.shares_to_sell(holding, percentage)
    except Exception:
        return
    limit = limit_price(b.best_bid, slippage, TradeSide.SELL)
    fill = walk_sell(b, wanted, limit, fee)
    # a SELL never sells more than is held (nor more than was asked)
    assert fill.shares <= wanted <= held
    assert all(lv.price >= limit for lv in fill.levels)
    assert fill.levels[-1].price <= fill.price <= fill.touch
    assert fill.cash <= fill.notional - fill.fee + D("0.01") and fill.cash >= 0
    # the ledger invariant holds with fees: cash + open basis = start + realized
    start = D("1000.00")
    sale = ledger.Sale(fill.shares, fill.cash, fill.price)
    sold = ledger.sell_filled(start, holding, percentage, sale)
    left = sold.holding_after.cost_basis if sold.holding_after else D(0)
    assert sold.cash_after + left == start + holding.cost_basis + sold.realized_pnl
    if sold.holding_after is not None:
        assert sold.holding_after.shares == held - fill.shares


@settings(max_examples=400, deadline=None)
@given(
    bids=st.one_of(st.just({}), levels),
    shares=st.decimals(min_value=D("0"), max_value=D("50000"), places=6),
    fee=fees,
)
def test_exit_proceeds_are_the_cash_of_an_unlimited_sell(
    bids: dict[Decimal, Decimal], shares: Decimal, fee: FeeSchedule
) -> None:
    b = random_book(bids, {}, D(0))
    try:
        expected = walk_sell(b, shares, None, fee).cash
    except NoLiquidity:
        expected = D(0)
    assert exit_proceeds(b, shares, fee) == expected


@settings(max_examples=200, deadline=None)
@given(
    script=st.lists(
        st.tuples(
            st.sampled_from(["buy", "sell"]),
            money,
            levels,
            fees,
            st.sampled_from([D("100"), D("50"), D("10")]),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_ledger_invariant_holds_with_fees_over_any_sequence(
    script: list[tuple[str, Decimal, dict[Decimal, Decimal], FeeSchedule, Decimal]],
) -> None:
    start = D("10000.00")
    cash, holding, realized = start, None, D(0)
    for action, amount, side_levels, fee, pct in script:
        if action == "buy":
            b = random_book({}, side_levels, D(0))
            try:
                fill = walk_buy(b, min(amount, cash), b.best_ask + D("0.05"), fee)  # type: ignore[operator]
            except NoLiquidity:
                continue
            bought = ledger.buy_filled(cash, holding, fill.cash, fill.shares, fill.price)
            cash, holding = bought.cash_after, bought.holding_after
        elif holding is not None:
            b = random_book(side_levels, {}, D(0))
            wanted = ledger.shares_to_sell(holding, pct)
            fill = walk_sell(b, wanted, b.best_bid - D("0.05"), fee)  # type: ignore[operator]
            sale = ledger.Sale(fill.shares, fill.cash, fill.price)
            sold = ledger.sell_filled(cash, holding, pct, sale)
            cash, holding, realized = (
                sold.cash_after,
                sold.holding_after,
                realized + sold.realized_pnl,
            )
        basis = holding.cost_basis if holding else D(0)
        assert cash >= 0
        assert cash + basis == start + realized
