"""Plausible order books for the fake CLOB, the demo and the benchmarks.

:func:`plausible_book` builds the two sides of a book around a price the way live Polymarket
books tend to look: a spread of one or two ticks, depth thinning away from the touch, and a
thin variant whose near levels a few hundred dollars exhaust (to exercise slippage, partial
fills and :class:`~arena.errors.NoLiquidity`). Exact decimals throughout; the only randomness
is the ``random.Random`` handed in, so a seed gives the same book every time.
"""

from __future__ import annotations

import random
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import NamedTuple

from arena.domain.book import Level

ONE = Decimal(1)
ZERO = Decimal(0)
CENT = Decimal("0.01")
MIN_SIZE = Decimal(5)  # the CLOB's minimum order size in every recorded book
LEVELS = 8  # levels per side of a plausible book
NEAR_LEVELS = 3  # the levels a thin book keeps small


class BookSides(NamedTuple):
    """Two sides of a book in wire order: bids ascending, asks descending (best last)."""

    bids: tuple[Level, ...]
    asks: tuple[Level, ...]


def plausible_book(
    price: Decimal, tick: Decimal, depth_usd: Decimal, rng: random.Random, thin: bool = False
) -> BookSides:
    """A book that looks like a live market's around ``price``: a spread of one or two ticks
    with ``price`` inside it (moved inside [tick, 1 - tick] near the ends), and up to
    :data:`LEVELS` levels a side, one tick apart.

    Normal: each side holds about ``depth_usd`` of notional, the touch the most shares and
    each further level 55-85% of the one before. Thin: the :data:`NEAR_LEVELS` levels nearest
    the touch hold $20-$120 of notional each (less the further out), so a few hundred dollars
    exhaust them, and the side's ``depth_usd`` sits two to four ticks further out. Sizes are in
    shares, to the cent, at least 5 (the minimum order size); prices are normalised (``0.4``,
    not ``0.40``), as the CLOB writes them.
    """
    if not ZERO < price < ONE or tick <= ZERO or depth_usd <= ZERO:
        raise ValueError(f"cannot build a book at {price} with tick {tick}, depth {depth_usd}")
    spread = tick * rng.choice((1, 2))
    # the bid on the grid in [price - spread, price] that best centres the spread on the price
    lowest = ((price - spread) / tick).to_integral_value(rounding=ROUND_CEILING)
    highest = (price / tick).to_integral_value(rounding=ROUND_FLOOR)
    centred = ((price - spread / 2) / tick).to_integral_value(rounding=ROUND_HALF_EVEN)
    bid = max(lowest, min(centred, highest)) * tick
    bid = max(tick, min(bid, ONE - tick - spread))
    ask = bid + spread
    bid_prices = _ladder(bid, -tick, tick, thin, rng)
    ask_prices = _ladder(ask, tick, tick, thin, rng)
    bids = _sizes(bid_prices, depth_usd, thin, rng)
    asks = _sizes(ask_prices, depth_usd, thin, rng)
    return BookSides(bids=tuple(reversed(bids)), asks=tuple(reversed(asks)))


def _ladder(
    touch: Decimal, step: Decimal, tick: Decimal, thin: bool, rng: random.Random
) -> list[Decimal]:
    """Prices from the touch outward, inside [tick, 1 - tick]; a thin book leaves a gap of
    two to four ticks after its near levels."""
    prices: list[Decimal] = []
    price = touch
    while len(prices) < LEVELS and tick <= price <= ONE - tick:
        prices.append(price.normalize())
        gap = rng.randint(2, 4) if thin and len(prices) == NEAR_LEVELS else 1
        price += step * gap
    return prices


def _sizes(
    prices: list[Decimal], depth_usd: Decimal, thin: bool, rng: random.Random
) -> list[Level]:
    """Levels at ``prices`` (touch first) with sizes that thin away from the touch."""
    weights = [ONE]
    for _ in prices[1:]:
        weights.append(weights[-1] * Decimal(rng.randint(55, 85)) / 100)
    if thin:
        dollars = sorted(Decimal(rng.randint(2000, 12000)) / 100 for _ in range(NEAR_LEVELS))
        near = [d / p for d, p in zip(reversed(dollars), prices[:NEAR_LEVELS], strict=False)]
        far_prices, far_weights = prices[NEAR_LEVELS:], weights[: max(0, len(prices) - NEAR_LEVELS)]
        shares = near + _spread_depth(far_prices, far_weights, depth_usd)
    else:
        shares = _spread_depth(prices, weights, depth_usd)
    return [
        Level(p, max(MIN_SIZE, s.quantize(CENT, rounding=ROUND_HALF_EVEN)).normalize())
        for p, s in zip(prices, shares, strict=True)
    ]


def _spread_depth(
    prices: list[Decimal], weights: list[Decimal], depth_usd: Decimal
) -> list[Decimal]:
    """Shares ``s0 * w_i`` at each price, with ``s0`` set so the notional totals ``depth_usd``."""
    notional_per_share = sum((w * p for w, p in zip(weights, prices, strict=True)), ZERO)
    if notional_per_share == ZERO:
        return []
    touch = depth_usd / notional_per_share
    return [touch * w for w in weights]
