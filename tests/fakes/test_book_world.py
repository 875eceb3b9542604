"""The fake Gamma world's markets with plausible books on the fake CLOB (mode book's demo)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from arena.fakes.book_world import BookWorld
from arena.fakes.clob import plausible_book
from arena.fakes.gamma import FakeGammaWorld
from arena.fakes.gamma_api import token_ids

START = datetime(2026, 11, 1, tzinfo=UTC)


def test_every_open_binary_market_gets_a_plausible_book_under_its_gamma_tokens() -> None:
    gamma = FakeGammaWorld(n_markets=120, seed=3, start=START)
    books = BookWorld(gamma, seed=3, thin_share=0.2)
    assert books.sync() > 50
    booked = [m for m in gamma.markets.values() if token_ids(m)[0] in books.clob.books]
    for market in booked:
        yes, no = (books.clob.books[t] for t in token_ids(market))
        assert yes.best_bid < market.prices[0] < yes.best_ask or (  # type: ignore[operator,index]
            yes.spread is not None and yes.spread <= Decimal("0.02")
        )
        assert no.best_ask == 1 - yes.best_bid  # type: ignore[operator]
    assert books.thin and books.thin <= {m.id for m in booked}
    assert books.sync() == 0  # unchanged prices: nothing to rebuild


def test_a_closed_market_loses_its_book_and_a_reopened_one_gets_it_back() -> None:
    gamma = FakeGammaWorld(n_markets=60, seed=4, start=START)
    books = BookWorld(gamma, seed=4)
    books.sync()
    market = next(m for m in gamma.markets.values() if token_ids(m)[0] in books.clob.books)
    gamma.close(market.id)
    books.sync()
    assert token_ids(market)[0] not in books.clob.books
    market.closed = False
    market.accepting_orders = True
    books.sync()
    assert token_ids(market)[0] in books.clob.books


@pytest.mark.parametrize("price", ["0.03", "0.5", "0.97"])
def test_thin_books_near_the_ends_of_the_price_range(price: str) -> None:
    for seed in range(30):
        sides = plausible_book(Decimal(price), Decimal("0.01"), Decimal(20_000),
                               random.Random(seed), thin=True)  # fmt: skip
        assert sides.bids and sides.asks
