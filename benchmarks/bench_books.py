"""Time and requests to freeze the order books of a 500-market universe (mode book).

The fake Gamma world (2.4 markets per universe slot, as in the tests) is synced into a fresh
SQLite file (or ``--database-url``, whose tables it DROPS); every open binary market has a
plausible book on the fake CLOB, served over local HTTP with ``--latency`` seconds added to
every answer (default 0.05 s, a transatlantic round trip). The timed part is what a decision run
does after the market sync: ``freeze_universe`` with the CLOB as its book source, which keeps
only booked markets and freezes each token's touch and hash (``POST /books``, 500 tokens a
request), then stores their marks. Target: under 2 s, in at most 3 requests.

    .venv/bin/python benchmarks/bench_books.py [--size 500] [--latency 0.05] [--runs 3] [--smoke]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_market_sync import fresh_database

from arena.clock import FixedClock
from arena.config import Settings
from arena.fakes.book_world import BookWorld
from arena.fakes.clob import serve_fake_clob
from arena.fakes.gamma import FakeGammaWorld
from arena.jobs.markets import sync_markets
from arena.jobs.universe import freeze_universe
from arena.sources.clob import ClobClient
from arena.sources.gamma import GammaClient
from arena.store.models import UniverseMarket

NOW = datetime(2026, 11, 22, 0, 5, tzinfo=UTC)
TARGET_SECONDS = 2.0
TARGET_REQUESTS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args()
    if args.smoke:
        args.size, args.latency, args.runs = 20, 0.0, 1
    logging.disable(logging.WARNING)  # the tokens without a book are expected here
    gamma = FakeGammaWorld(n_markets=int(args.size * 2.4), seed=1, start=NOW - timedelta(hours=1))
    books = BookWorld(gamma, seed=1)
    books.sync()
    books.clob.latency = args.latency
    settings = Settings(benchmark={"universe_size": args.size, "pricing": "book"})
    times: list[float] = []
    requests: list[int] = []
    kept = 0
    with (
        serve_fake_clob(books.clob) as clob_url,
        httpx.Client(transport=gamma.mock_transport()) as gamma_http,
        ClobClient(settings.polymarket, base_url=clob_url) as clob,
    ):
        for _ in range(args.runs):
            with fresh_database(args.database_url) as factory:
                gamma_client = GammaClient(
                    settings.polymarket, base_url="http://gamma.test", http=gamma_http
                )
                report = sync_markets(factory, gamma_client, settings, FixedClock(NOW))
                before = len(books.clob.requests)
                started = time.perf_counter()
                universe_id = freeze_universe(
                    factory, settings, NOW, [], listed=report.top_ids, books=clob
                )
                times.append(time.perf_counter() - started)
                requests.append(len(books.clob.requests) - before)
                with factory() as session:
                    kept = session.scalars(
                        select(func.count())
                        .select_from(UniverseMarket)
                        .where(UniverseMarket.universe_id == universe_id)
                    ).one()
    print(
        f"universe of {args.size}: {kept} booked markets frozen,"
        f" {args.latency * 1000:.0f} ms latency per request ({args.runs} runs)"
    )
    print(
        f"freeze  min {min(times):.3f} s  median {statistics.median(times):.3f} s"
        f"  (target < {TARGET_SECONDS:.0f} s)"
    )
    print(f"requests  {max(requests)}  (target <= {TARGET_REQUESTS})")


if __name__ == "__main__":
    main()
