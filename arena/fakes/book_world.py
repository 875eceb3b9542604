"""The fake Gamma world's markets given order books on the fake CLOB, for tests, the demo and
the benchmarks (mode book).

Every open two-outcome market with prices gets a plausible book around its first outcome's
price (:func:`arena.fakes.clob.plausible_book`: a spread of a tick or two, depth thinning away
from the touch), under the token ids the fake Gamma serves (:func:`token_ids`). A share of the
markets is *thin* (a few hundred dollars near the touch), so a large bet fills only partly.
Markets with more than two outcomes have no book (the fake CLOB books binary pairs), so a
mode-book universe leaves them out, as it leaves out a real market without a book.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from decimal import Decimal

from arena.domain.book import NO_FEE, FeeSchedule
from arena.fakes.clob import FakeClobWorld, plausible_book
from arena.fakes.gamma import FakeGammaWorld, FakeMarket
from arena.fakes.gamma_api import token_ids

CENT = Decimal("0.01")
DEMO_FEE = FeeSchedule(Decimal("0.04"), Decimal(1))  # Politics/Finance taker rate (clob-api.md §7)


class BookWorld:
    """Books for the Gamma world's markets, kept at their Gamma prices."""

    def __init__(
        self,
        gamma: FakeGammaWorld,
        clob: FakeClobWorld | None = None,
        *,
        seed: int = 0,
        thin_share: float = 0.1,
        depth_usd: Decimal = Decimal(20_000),
        fee_share: float = 0.5,
        fee: FeeSchedule = DEMO_FEE,
    ) -> None:
        self.gamma = gamma
        self.clob = clob or FakeClobWorld(seed=seed)
        self.rng = random.Random(seed)
        self.thin_share = thin_share
        self.depth_usd = depth_usd
        self.fee_share = fee_share
        self.fee = fee
        self.thin: set[str] = set()  # market ids with thin books
        self._booked: dict[str, Decimal] = {}  # market id -> price its book was built around

    def sync(self, market_ids: Iterable[str] | None = None) -> int:
        """Give every open, priced, two-outcome market a book around its current price (new
        markets, and markets whose price moved); remove the books of closed markets. Returns
        the number of books set."""
        changed = 0
        ids = list(market_ids) if market_ids is not None else list(self.gamma.markets)
        for market_id in ids:
            market = self.gamma.markets.get(market_id)
            if market is None:
                continue
            tokens = token_ids(market)
            if not _bookable(market):
                if market_id in self._booked:
                    for token in tokens:
                        self.clob.remove_book(token)
                    del self._booked[market_id]
                continue
            price = market.prices[0]  # type: ignore[index]
            if self._booked.get(market_id) == price:
                continue
            thin = market_id in self.thin or (
                market_id not in self._booked and self.rng.random() < self.thin_share
            )
            if thin:
                self.thin.add(market_id)
            sides = plausible_book(price, CENT, self.depth_usd, self.rng, thin=thin)
            if market.condition_id not in self.clob.markets:
                fee = self.fee if self.rng.random() < self.fee_share else NO_FEE
                self.clob.add_market(
                    *sides,
                    condition_id=market.condition_id,
                    yes_token=tokens[0],
                    no_token=tokens[1],
                    last_trade_price=sides.bids[-1].price,
                    fee=fee,
                )
            else:
                self.clob.set_book(tokens[0], *sides, last_trade_price=sides.bids[-1].price)
            self._booked[market_id] = price
            changed += 1
        return changed


def _bookable(market: FakeMarket) -> bool:
    """Open, accepting orders, two outcomes, and a first price a book can sit around."""
    return (
        market.prices is not None
        and len(market.outcomes) == 2
        and not market.closed
        and market.active
        and market.accepting_orders is not False
        and bool(market.condition_id)
        and Decimal("0.02") < market.prices[0] < Decimal("0.98")
    )
