"""Time and peak memory of ``sync_markets`` against the fake Gamma served over local HTTP.

The fake server runs in a child process (so its own work and allocations are not counted); the
sync runs here, against a fresh SQLite file (or ``--database-url``, whose tables it DROPS). For
each universe size it prints the wall time of a first sync (every market new) and of a rerun
(nothing changed), with the pages and requests used, then the tracemalloc peak of a first sync
into another empty database (measured separately: tracing slows Python down).

    .venv/bin/python benchmarks/bench_market_sync.py [--sizes 500 5000] [--database-url URL]
    .venv/bin/python benchmarks/bench_market_sync.py --smoke
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import FixedClock
from arena.config import Polymarket, Settings
from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.jobs.markets import sync_markets
from arena.sources.gamma import GammaClient
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import Base

NOW = datetime(2026, 11, 22, 0, 5, tzinfo=UTC)


def serve(n_markets: int, pipe: Connection) -> None:
    """Child process: build the world, serve it, report the URL, wait to be told to stop."""
    world = FakeGammaWorld(n_markets=n_markets, seed=1, start=NOW - timedelta(hours=1))
    with serve_fake_gamma(world) as base_url:
        pipe.send(base_url)
        pipe.recv()


def measure(size: int, database_url: str | None) -> None:
    n_markets = int(size * 2.4)  # as in the tests: 1,200 markets for a 500 universe
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    server = context.Process(target=serve, args=(n_markets, child))
    server.start()
    child.close()  # so recv() raises EOFError if the server dies instead of waiting forever
    try:
        base_url = parent.recv()
        settings = Settings(benchmark={"universe_size": size})
        with GammaClient(Polymarket(timeout_seconds=30), base_url=base_url) as client:
            with fresh_database(database_url) as factory:
                for label, at in (("first sync", NOW), ("rerun", NOW + timedelta(minutes=5))):
                    start = time.perf_counter()
                    report = sync_markets(factory, client, settings, FixedClock(at))
                    seconds = time.perf_counter() - start
                    print(
                        f"{size:>5} markets  {label:<10}  {seconds:6.2f} s  {report.pages:>3} pages"
                        f"  {report.requests:>3} requests  {report.inserted:>5} new  "
                        f"{report.price_changes:>5} price rows  (world of {n_markets})"
                    )
            with fresh_database(database_url) as factory:
                tracemalloc.start()
                sync_markets(factory, client, settings, FixedClock(NOW))
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
            print(f"{size:>5} markets  first sync peak traced memory {peak / 2**20:.1f} MiB")
    finally:
        parent.send("stop")
        server.join(timeout=10)


@contextmanager
def fresh_database(database_url: str | None) -> Iterator[sessionmaker[Session]]:
    """A migrated empty database: a temporary SQLite file, or ``database_url`` emptied."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(database_url or f"sqlite:///{Path(tmp) / 'bench.db'}")
        if database_url:
            with engine.begin() as connection:
                connection.execute(text("DROP TABLE IF EXISTS alembic_version"))
                Base.metadata.drop_all(connection)
        upgrade(engine)
        try:
            yield session_factory(engine)
        finally:
            engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args()
    for size in [50] if args.smoke else args.sizes:
        measure(size, args.database_url)


if __name__ == "__main__":
    main()
