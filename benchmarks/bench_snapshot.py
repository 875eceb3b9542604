"""Time and memory of one snapshot tick at arena scale, on SQLite and PostgreSQL.

Builds ``cohorts x 7 agents x 50 open positions`` (100 cohorts: 35,000 positions; 1,000
cohorts: 350,000), plus per agent 10 settled positions with their BUY trades and Brier rows
(so the Brier aggregate has work to do), over binary and named-outcome markets, some of them
never priced (valued at cost basis). The synthetic rows are bulk-loaded (Core executemany on
SQLite, ``COPY`` on PostgreSQL) in a child process, so the measuring process never holds them
and its peak RSS is the ticks' own. Then times snapshot ticks
(:func:`arena.jobs.snapshots.take_snapshots` without the Gamma refresh: the consistent read,
the valuation and the bulk insert of one row per agent), each on a fresh 10-minute slot: the
first tick of a day on its own, then the later ones (best and median), the read-and-value
part alone, the peak of traced Python allocations of one more tick (tracemalloc), a tick half
a day on, the largest ``IN (...)`` list executed and the process's peak RSS.

``--pricing book`` (run beside ``gamma`` by default) makes every cohort a mode-book cohort and
gives every priced binary market a plausible book on the fake CLOB, served over local HTTP: a
tick then also fetches the book of every held token in batch (``POST /books``, 500 tokens a
request), stores their marks, values positions at them, and stores each agent's exit value
(every open position sold into the bids, fees included). Every answer of the fake CLOB comes
``--latency`` seconds late (default 50 ms). The first tick of a day also fetches the fee
schedule of every held market (``GET /clob-markets/{id}``, one per market: about 1,750 at
scale 1, 16 in flight); a tick half a day on refreshes up to 300 of them ahead of expiry.
Targets at scale 1: the first tick of a day under 5 s, the others under 1.5 s; at scale 10
every tick well inside the 10-minute slot, with the process's peak RSS under 500 MiB.

PostgreSQL runs when ``--postgres-url`` or ``ARENA_TEST_POSTGRES_URL`` is given; the script
creates its own scratch database there and drops it afterwards.

Run: ``.venv/bin/python benchmarks/bench_snapshot.py [--scales 1,10] [--pricing gamma,book]
[--postgres-url URL] [--latency 0.05] [--repeat 5] [--smoke]``
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import multiprocessing
import os
import random
import re
import resource
import statistics
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Table, create_engine, event, text
from sqlalchemy.engine import make_url

from arena.clock import FixedClock
from arena.config import Polymarket, Settings
from arena.domain.book import NO_FEE
from arena.fakes.book_world import CENT, DEMO_FEE
from arena.fakes.clob import FakeClobWorld, plausible_book, serve_fake_clob
from arena.jobs.snapshots import insert_snapshots, take_snapshots, value_agents
from arena.sources.clob import ClobClient
from arena.store.db import make_engine, session_factory, transaction, upgrade
from arena.store.models import (
    Agent,
    BrierScore,
    Cohort,
    Decision,
    Family,
    Market,
    Position,
    Trade,
)

AGENTS_PER_COHORT = 7
OPEN_PER_AGENT = 50
SETTLED_PER_AGENT = 10
MARKETS_PER_COHORT = 20  # 2,000 markets for 100 cohorts
NOW = datetime(2027, 6, 2, 12, 3, tzinfo=UTC)
PLACEHOLDER = r"(?:\?|%\(\w+\)s(?:::\w+)?|%s)"  # SQLite's, psycopg's (with a cast)
IN_LIST = re.compile(rf"\bIN \(({PLACEHOLDER}(?:, {PLACEHOLDER})*)\)", re.IGNORECASE)
CHUNK = 20_000
TEAMS = ("Falcons", "Otters", "Comets")


def token_ids(index: int) -> list[str]:
    """The YES and NO tokens of synthetic market ``index`` (77-digit decimal strings)."""
    return [str(10**76 + 2 * index), str(10**76 + 2 * index + 1)]


def condition_id(index: int) -> str:
    return f"0x{index:064x}"


def synthetic_rows(
    cohorts: int, seed: int = 0, pricing: str = "gamma"
) -> dict[Table, list[dict[str, Any]]]:
    """Every row of the synthetic arena, keyed by table, with explicit ids."""
    rng = random.Random(seed)
    start = NOW - timedelta(days=7 * cohorts)
    families = [f"family-{i}" for i in range(AGENTS_PER_COHORT)]
    models = (Family, Cohort, Market, Agent, Decision, Position, Trade, BrierScore)
    tables: dict[str, Table] = {m.__table__.name: m.__table__ for m in models}  # type: ignore[attr-defined]
    rows: dict[Table, list[dict[str, Any]]] = {table: [] for table in tables.values()}
    for family in families:
        rows[tables["families"]].append(
            {
                "id": family,
                "kind": "baseline",
                "display_name": family,
                "provider": "bench",
                "openrouter_id": None,
                "strategy": "random",
                "active": True,
                "first_seen_at": start,
                "updated_at": start,
            }
        )
    markets = []
    for index in range(max(cohorts * MARKETS_PER_COHORT, OPEN_PER_AGENT + SETTLED_PER_AGENT)):
        named = index % 10 == 0
        outcomes = list(TEAMS) if named else ["Yes", "No"]
        if index % 97 == 0:
            prices = None  # never priced: valued at cost basis
        elif named:
            prices = ["0.2", "0.3", "0.5"]
        else:
            yes = Decimal(rng.randint(1, 999)) / 1000
            prices = [str(yes), str(1 - yes)]
        markets.append((str(100000 + index), outcomes))
        rows[tables["markets"]].append(
            {
                "id": str(100000 + index),
                "question": f"Synthetic market {index}?",
                "slug": None,
                "description": None,
                "category": "Bench",
                "outcomes": outcomes,
                "prices": prices,
                "yes_price": None if named or prices is None else Decimal(prices[0]),
                "last_raw_prices": prices,
                "volume": Decimal(1000 + index),
                "volume_24h": None,
                "liquidity": None,
                "end_date": None,
                "closed_time": None,
                "active": True,
                "closed": False,
                "accepting_orders": True,
                "uma_resolution_status": None,
                "condition_id": condition_id(index),
                "clob_token_ids": None if named else token_ids(index),
                "neg_risk": False,
                "neg_risk_market_id": None,
                "group_item_title": None,
                "event_id": None,
                "event_slug": None,
                "event_title": None,
                "first_seen_at": start,
                "updated_at": start,
                "prices_updated_at": start,
                "status": "open",
                "resolution_state": None,
                "winning_outcome": None,
                "resolved_at": None,
            }
        )
    agent_id = position_id = 0
    for cohort_id in range(1, cohorts + 1):
        week = start + timedelta(days=7 * (cohort_id - 1))
        rows[tables["cohorts"]].append(
            {
                "id": cohort_id,
                "week_start": week,
                "created_at": week,
                "methodology_version": "v1",
                "prompt_version": "v1",
                "pricing": pricing,
                "starting_balance": Decimal(10000),
                "status": "active",
                "completed_at": None,
            }
        )
        for family in families:
            agent_id += 1
            cash = Decimal(10000)
            held = rng.sample(markets, OPEN_PER_AGENT + SETTLED_PER_AGENT)
            rows[tables["decisions"]].append(
                {
                    "id": agent_id,
                    "agent_id": agent_id,
                    "cohort_id": cohort_id,
                    "decision_week": 1,
                    "universe_id": None,
                    "status": "completed",
                    "action": "BET",
                    "system_hold": False,
                    "claim_token": None,
                    "lease_until": None,
                    "claim_count": 1,
                    "cash_shown": cash,
                    "reasoning": None,
                    "payload": None,
                    "error": None,
                    "prompt_version": "v1",
                    "methodology_version": "v1",
                    "created_at": week,
                    "updated_at": week,
                    "completed_at": week,
                }
            )
            for number, (market_id, outcomes) in enumerate(held):
                position_id += 1
                side = rng.choice(TEAMS) if len(outcomes) == 3 else rng.choice(("YES", "NO"))
                basis = Decimal(rng.randint(50, 150))
                cash -= basis
                settled = number >= OPEN_PER_AGENT
                rows[tables["positions"]].append(
                    {
                        "id": position_id,
                        "agent_id": agent_id,
                        "cohort_id": cohort_id,
                        "market_id": market_id,
                        "side": side,
                        "shares": basis * 2,
                        "cost_basis": basis,
                        "status": "SETTLED" if settled else "OPEN",
                        "settlement_outcome": "LOST" if settled else None,
                        "payout": Decimal(0) if settled else None,
                        "realized_pnl": Decimal(0),
                        "opened_at": week,
                        "updated_at": week,
                        "closed_at": None,
                    }
                )
                if settled:
                    rows[tables["trades"]].append(
                        {
                            "id": position_id,
                            "decision_id": agent_id,
                            "agent_id": agent_id,
                            "cohort_id": cohort_id,
                            "position_id": position_id,
                            "market_id": market_id,
                            "side": side,
                            "trade_type": "BUY",
                            "amount": basis,
                            "shares": basis * 2,
                            "price": Decimal("0.5"),
                            "percentage": None,
                            "basis_out": None,
                            "realized_pnl": None,
                            "implied_confidence": basis / 2500,
                            "probability": None,
                            "cash_shown": Decimal(10000),
                            "cash_after": cash,
                            "executed_at": week,
                        }
                    )
                    rows[tables["brier_scores"]].append(
                        {
                            "id": position_id,
                            "trade_id": position_id,
                            "agent_id": agent_id,
                            "cohort_id": cohort_id,
                            "family_id": family,
                            "market_id": market_id,
                            "side": side,
                            "implied_confidence": basis / 2500,
                            "price_paid": Decimal("0.5"),
                            "won": False,
                            "brier": (basis / 2500) ** 2,
                            "market_brier": Decimal("0.25"),
                            "scored_at": week,
                        }
                    )
            rows[tables["agents"]].append(
                {
                    "id": agent_id,
                    "cohort_id": cohort_id,
                    "family_id": family,
                    "kind": "baseline",
                    "display_name": family,
                    "provider": "bench",
                    "openrouter_id": None,
                    "strategy": "random",
                    "prompt_version": "v1",
                    "methodology_version": "v1",
                    "starting_balance": Decimal(10000),
                    "cash": cash,
                    "realized_pnl": Decimal(0),
                    "created_at": week,
                }
            )
    return rows


def load(engine: Engine, rows: dict[Table, list[dict[str, Any]]]) -> None:
    """Bulk-load the rows: ``COPY`` on PostgreSQL, Core executemany on SQLite."""
    if engine.dialect.name == "postgresql":
        raw = engine.raw_connection()
        try:
            with raw.cursor() as cursor:  # type: ignore[attr-defined]
                for table, table_rows in rows.items():
                    if not table_rows:
                        continue
                    columns = [c.name for c in table.columns if c.name in table_rows[0]]
                    json_columns = {
                        c.name for c in table.columns if c.type.__class__.__name__ == "JSON"
                    }
                    with cursor.copy(
                        f'COPY "{table.name}" ({", ".join(columns)}) FROM STDIN'
                    ) as copy:
                        for row in table_rows:
                            copy.write_row(
                                [
                                    json.dumps(row[c])
                                    if c in json_columns and row[c] is not None
                                    else row[c]
                                    for c in columns
                                ]
                            )
            raw.commit()
        finally:
            raw.close()
        with engine.begin() as conn:
            conn.execute(text("ANALYZE"))
        return
    with engine.begin() as conn:
        for table, table_rows in rows.items():
            for start in range(0, len(table_rows), CHUNK):
                conn.execute(table.insert(), table_rows[start : start + CHUNK])
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))


@contextmanager
def postgres_database(base_url: str) -> Iterator[str]:
    """The URL of a scratch database on the server, dropped afterwards."""
    admin_url = make_url(base_url).set(drivername="postgresql+psycopg")
    name = f"arena_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def timed(work: Callable[[], Any], repeat: int) -> tuple[float, float, float]:
    """(best wall, median wall, best CPU of this process) over ``repeat`` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return min(walls), statistics.median(walls), min(cpus)


def fake_clob(rows: dict[Table, list[dict[str, Any]]], seed: int = 0) -> FakeClobWorld:
    """A plausible book (a tick or two of spread, thinning depth) for every priced binary
    market of the synthetic arena, half of them with the 4% taker fee."""
    rng = random.Random(seed)
    world = FakeClobWorld(seed=seed)
    for market in rows[Market.__table__]:  # type: ignore[index]
        tokens, prices = market["clob_token_ids"], market["prices"]
        if not tokens or not prices or not Decimal("0.02") < Decimal(prices[0]) < Decimal("0.98"):
            continue
        sides = plausible_book(Decimal(prices[0]), CENT, Decimal(20_000), rng)
        world.add_market(
            *sides,
            condition_id=market["condition_id"],
            yes_token=tokens[0],
            no_token=tokens[1],
            last_trade_price=sides.bids[-1].price,
            fee=DEMO_FEE if rng.random() < 0.5 else NO_FEE,
        )
    return world


def serve_clob(cohorts: int, latency: float, pipe: Connection) -> None:
    """Child process: serve the synthetic arena's books, each answer ``latency`` seconds late,
    report the URL, wait to be told to stop (so the server's own work is not counted)."""
    logging.disable(logging.WARNING)
    world = fake_clob(synthetic_rows(cohorts, pricing="book"))
    world.latency = latency
    with serve_fake_clob(world) as url:
        pipe.send(url)
        pipe.recv()


@contextmanager
def clob_server(cohorts: int, latency: float) -> Iterator[str]:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    server = context.Process(target=serve_clob, args=(cohorts, latency, child))
    server.start()
    child.close()  # so recv() raises EOFError if the server dies instead of waiting forever
    try:
        yield parent.recv()
    finally:
        parent.send("stop")
        server.join(timeout=30)


def build(url: str, cohorts: int, pricing: str, pipe: Connection) -> None:
    """Child process: migrate the database at ``url`` and bulk-load the synthetic arena, so the
    measuring process never holds the synthetic rows (its peak RSS is the ticks' own)."""
    engine = make_engine(url)
    try:
        upgrade(engine)
        rows = synthetic_rows(cohorts, pricing=pricing)
        figures = {
            "positions": sum(1 for r in rows[Position.__table__] if r["status"] == "OPEN"),  # type: ignore[index]
            "agents": len(rows[Agent.__table__]),  # type: ignore[index]
        }
        start = time.perf_counter()
        load(engine, rows)
        figures["load"] = time.perf_counter() - start
        pipe.send(figures)
    finally:
        engine.dispose()


def built(url: str, cohorts: int, pricing: str) -> dict[str, Any]:
    """Run :func:`build` in a fresh process; its figures (positions, agents, load time)."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=build, args=(url, cohorts, pricing, child))
    process.start()
    child.close()  # so recv() raises EOFError if the build dies instead of waiting forever
    figures: dict[str, Any] = parent.recv()
    process.join()
    return figures


def bench(args: argparse.Namespace, label: str, url: str, cohorts: int, pricing: str) -> None:
    figures = built(url, cohorts, pricing)
    engine = make_engine(url)
    with ExitStack() as stack:
        stack.callback(engine.dispose)
        books = None
        if pricing == "book":
            clob_url = stack.enter_context(clob_server(cohorts, args.latency))
            books = stack.enter_context(
                ClobClient(Polymarket(timeout_seconds=60), base_url=clob_url)
            )
        measure(f"{label}, mode {pricing}", engine, figures, cohorts, args.repeat, books)


def measure(
    label: str,
    engine: Engine,
    figures: dict[str, Any],
    cohorts: int,
    repeat: int,
    books: ClobClient | None,
) -> None:
    agents = figures["agents"]
    factory = session_factory(engine)
    settings = Settings()
    slots = iter(NOW + timedelta(minutes=10 * i) for i in range(10_000))
    in_lists: list[int] = []

    @event.listens_for(engine, "before_cursor_execute")
    def count_in_lists(_c: Any, _cur: Any, statement: str, _p: Any, _x: Any, _m: bool) -> None:
        in_lists.extend(m.count(",") + 1 for m in IN_LIST.findall(statement))

    requests: list[int] = []

    def tick(at: datetime | None = None) -> None:
        sent = books.requests if books is not None else 0
        report = take_snapshots(factory, settings, FixedClock(at or next(slots)), books=books)
        assert report.written == agents, report
        assert report.books_error is None, report
        requests.append((books.requests if books is not None else 0) - sent)

    def read() -> None:
        value_agents(factory, NOW, NOW)

    first = timed(tick, 1)  # the first tick of a day: every held market's fee schedule fetched
    first_requests = requests[-1]
    results = {"later ticks": timed(tick, repeat), "read+value": timed(read, repeat)}
    later_requests = max(requests[1:])
    snapshot_rows, _, _ = value_agents(factory, NOW, NOW)

    def write() -> None:
        slot = next(slots)
        with transaction(factory) as session:
            written = insert_snapshots(session, [{**r, "taken_at": slot} for r in snapshot_rows])
        assert written == agents

    results["insert"] = timed(write, repeat)
    gc.collect()
    tracemalloc.start()
    tick()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # half a day on: the schedules about to expire are refreshed ahead, a bounded number a tick
    ahead = timed(lambda: tick(NOW + timedelta(hours=12, minutes=10)), 1)
    ahead_requests = requests[-1]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{label}: {cohorts} cohorts, {agents} agents, {figures['positions']:,} open positions"
        f" (bulk load {figures['load']:.1f} s, in a child process)"
    )
    print(f"  first tick of a day {first[0]:7.3f} s  ({first_requests} CLOB requests)")
    for name, (best, median, cpu) in results.items():
        print(
            f"  {name:<11} best {best:7.3f} s  median {median:7.3f} s  "
            f"(client CPU best {cpu:6.3f} s)"
        )
    print(
        f"  CLOB requests per later tick at most {later_requests};"
        f" 12 h on (early fee refresh) {ahead[0]:.3f} s, {ahead_requests} requests"
    )
    print(
        f"  largest IN list {max(in_lists, default=0)} ids;"
        f" one tick: peak traced Python memory {peak / 2**20:.1f} MiB;"
        f" process peak RSS {rss:.0f} MiB",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,10", help="multiples of 100 cohorts (e.g. 0.1,1,10)")
    parser.add_argument("--repeat", type=int, default=5, help="timed later ticks per measurement")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("ARENA_TEST_POSTGRES_URL"),
        help="server for a scratch PostgreSQL database (default: $ARENA_TEST_POSTGRES_URL)",
    )
    parser.add_argument("--no-sqlite", action="store_true", help="skip SQLite")
    parser.add_argument("--pricing", default="gamma,book", help="pricing modes (gamma,book)")
    parser.add_argument(
        "--latency", type=float, default=0.05, help="seconds each fake CLOB answer is delayed"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args(argv)
    if args.smoke:  # one cohort in mode book, which runs the gamma mode's work too
        args.scales, args.pricing, args.repeat, args.latency = "0.01", "book", 1, 0.0
    logging.disable(logging.WARNING)  # a few synthetic markets have no book, by design
    scales = [float(s) for s in args.scales.split(",") if s.strip()]
    modes = [m.strip() for m in args.pricing.split(",") if m.strip()]
    for scale in scales:
        cohorts = max(1, round(100 * scale))
        for pricing in modes:
            if not args.no_sqlite:
                with tempfile.TemporaryDirectory(prefix="arena-bench-") as directory:
                    url = f"sqlite:///{Path(directory) / 'bench.db'}"
                    bench(args, "sqlite", url, cohorts, pricing)
            if args.postgres_url:
                with postgres_database(args.postgres_url) as url:
                    bench(args, "postgresql", url, cohorts, pricing)
    if not args.postgres_url:
        print("PostgreSQL skipped: pass --postgres-url or set ARENA_TEST_POSTGRES_URL")


if __name__ == "__main__":
    main()
