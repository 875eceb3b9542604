"""Prompt size for a full 500-market universe, in o200k tokens (v1, v2; modes gamma and book).

Run: .venv/bin/python benchmarks/bench_prompt_size.py [--markets 500] [--positions 8] [--smoke]

The universe is synthetic but shaped like Polymarket's top markets by volume: 7-digit Gamma
ids, questions of realistic length (elections, macro, crypto, sports, culture), about one in
ten markets with named outcomes, three-decimal prices, volumes from thousands to billions.
In mode book every outcome shows its frozen bid/ask (a spread of one or two ticks around the
price), as the v1-book and v2-book prompts do. Target: under 30,000 tokens with bid and ask.
Tokens are counted offline with the ``bpe-openai`` package (o200k_base, the GPT-4o/GPT-5
vocabulary); other model families' tokenizers differ by some percent.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from bpe_openai import get_encoding

from arena.domain.book import Touch
from arena.domain.markets import MarketView
from arena.domain.prompting import PositionView, PromptContext, ordered_markets, render_messages
from arena.prompts import templates_for

PEOPLE = [
    "Gavin Newsom",
    "J.D. Vance",
    "Alexandria Ocasio-Cortez",
    "Marco Rubio",
    "Josh Shapiro",
    "Pete Buttigieg",
    "Ron DeSantis",
    "Gretchen Whitmer",
    "Andy Beshear",
]
COUNTRIES = ["Germany", "France", "Brazil", "Japan", "Canada", "India", "Poland", "Chile"]
TEAMS = [
    "Lakers",
    "Celtics",
    "Warriors",
    "Knicks",
    "Nuggets",
    "Heat",
    "Bucks",
    "Suns",
    "Real Madrid",
    "Arsenal",
    "Bayern Munich",
    "Inter Miami",
    "Chiefs",
    "Eagles",
]
COINS = ["Bitcoin", "Ethereum", "Solana", "XRP", "Dogecoin"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def question(rng: random.Random) -> tuple[str, str | None]:
    kind = rng.randrange(8)
    month, year = rng.choice(MONTHS), rng.choice([2026, 2027, 2028])
    if kind == 0:
        return (
            f"Will {rng.choice(PEOPLE)} win the {year} Democratic presidential nomination?",
            "Politics",
        )
    if kind == 1:
        price = rng.choice([80, 100, 120, 150, 200]) * 1000
        return f"Will {rng.choice(COINS)} reach ${price:,} by {month} 31, {year}?", "Crypto"
    if kind == 2:
        bps = rng.choice([25, 50])
        return f"Fed decreases interest rates by {bps} bps after {month} {year} meeting?", "Economy"
    if kind == 3:
        return f"Will {rng.choice(COUNTRIES)} hold a snap election before {month} {year}?", "World"
    if kind == 4:
        return f"Will the {rng.choice(TEAMS)} win the {year} championship?", "Sports"
    if kind == 5:
        n = rng.choice([3, 5, 10])
        return f"US recession in {year}? (NBER declares, GDP negative for {n} months)", None
    if kind == 6:
        return f"Will OpenAI release GPT-6 before {month} 1, {year}?", "Tech"
    return (
        f"Will Taylor Swift announce a new album before {month} {year}, as reported by a "
        "major outlet?",
        "Culture",
    )


def universe(size: int, seed: int = 1) -> list[MarketView]:
    rng = random.Random(seed)
    markets: list[MarketView] = []
    start = datetime(2026, 3, 1, tzinfo=UTC)
    for index in range(size):
        market_id = str(rng.randrange(500_000, 1_300_000))
        volume = Decimal(int(10 ** rng.uniform(4.5, 9.3)))
        end = start + timedelta(days=rng.randrange(3, 900))
        if index % 10 == 9:
            a, b = rng.sample(TEAMS, 2)
            p = Decimal(rng.randrange(50, 950)) / 1000
            markets.append(
                MarketView(
                    id=market_id,
                    question=f"{a} vs. {b}",
                    outcomes=(a, b),
                    prices=(p, 1 - p),
                    category="Sports",
                    volume=volume,
                    end_date=end,
                )
            )
            continue
        text, category = question(rng)
        p_yes = Decimal(rng.randrange(2, 999)) / 1000
        markets.append(
            MarketView(
                id=market_id,
                question=text,
                outcomes=("Yes", "No"),
                prices=(p_yes, 1 - p_yes),
                category=category,
                tags=("Trending",) if category is None else (),
                volume=volume,
                end_date=end,
            )
        )
    return markets


TICK = Decimal("0.001")


def with_books(markets: list[MarketView], seed: int = 3) -> list[MarketView]:
    """The same markets with each outcome's frozen touch: bid and ask a tick or two around
    its price, as the fake CLOB's plausible books have them."""
    rng = random.Random(seed)

    def touch(market_id: str, index: int, price: Decimal) -> Touch:
        half = TICK * rng.choice([1, 1, 2])
        bid, ask = max(TICK, price - half), min(1 - TICK, price + half)
        return Touch(
            token_id=str(rng.randrange(10**76, 10**77)),
            best_bid=bid,
            best_ask=ask,
            mid=(bid + ask) / 2,
            bid_size=Decimal(rng.randrange(50, 5000)),
            ask_size=Decimal(rng.randrange(50, 5000)),
            book_hash=f"{rng.getrandbits(160):040x}",
            book_timestamp=1_772_000_000_000 + index,
        )

    return [
        replace(m, books=tuple(touch(m.id, i, p) for i, p in enumerate(m.prices))) for m in markets
    ]


def context(
    markets: list[MarketView], positions: int, methodology: str, panel_size: int
) -> PromptContext:
    rng = random.Random(2)
    held = [
        PositionView(
            position_id=f"{rng.randrange(1, 10**6)}",
            market=m,
            side=m.sides()[0],
            shares=Decimal("1234.567891"),
            avg_entry_price=Decimal("0.4213"),
            current_price=m.side_price(m.sides()[0]),
            cost_basis=Decimal("520.13"),
        )
        for m in rng.sample(markets, positions)
    ]
    panel = [
        m
        for m in ordered_markets(markets)
        if m.prices and all(Decimal("0.03") <= p <= Decimal("0.97") for p in m.prices)
    ]
    return PromptContext(
        now=datetime(2026, 3, 8, 0, 5, tzinfo=UTC),
        decision_week=2,
        cash=Decimal("7421.35"),
        max_bet=Decimal("1855.33"),
        min_bet=Decimal(50),
        positions=held,
        markets=markets,
        methodology=methodology,
        panel=panel[:panel_size] if methodology == "v2" else [],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markets", type=int, default=500)
    parser.add_argument("--positions", type=int, default=8)
    parser.add_argument("--panel", type=int, default=20)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args()
    if args.smoke:
        args.markets, args.positions, args.panel = 20, 2, 5
    encoding = get_encoding("o200k_base")
    plain = universe(args.markets)
    booked = with_books(plain)
    print(f"{args.markets} markets, {args.positions} open positions, v2 panel of {args.panel}")
    print(f"{'version':8} {'pricing':7} {'part':7} {'chars':>8} {'tokens':>8}")
    for pricing, markets in (("gamma", plain), ("book", booked)):
        for methodology in ("v1", "v2"):
            ctx = context(markets, args.positions, methodology, args.panel)
            total_chars = total_tokens = 0
            for message in render_messages(ctx, templates_for(ctx.methodology, pricing)):
                chars, tokens = len(message["content"]), len(encoding.encode(message["content"]))
                total_chars, total_tokens = total_chars + chars, total_tokens + tokens
                print(f"{methodology:8} {pricing:7} {message['role']:7} {chars:8,} {tokens:8,}")
            target = "  (target < 30,000)" if pricing == "book" else ""
            total = f"{total_chars:8,} {total_tokens:8,}{target}"
            print(f"{methodology:8} {pricing:7} {'total':7} {total}")
    markets = plain
    v1 = templates_for("v1")
    rows = [render_messages(context(markets, 0, "v1", 0), v1)[1]["content"]]
    rows.append(render_messages(context(markets[:0], 0, "v1", 0), v1)[1]["content"])
    per_market = (len(encoding.encode(rows[0])) - len(encoding.encode(rows[1]))) / args.markets
    print(f"one market row: {per_market:.1f} tokens on average")


if __name__ == "__main__":
    main()
