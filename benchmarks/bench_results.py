"""Time and peak memory of the leaderboard, the category breakdown, risk for every agent and
family, a Parquet export and the trend.

Measured: ``arena leaderboard``, ``arena analyze breakdown --by category`` (its database side:
this arena holds no forecasts), risk and return for every agent and family from all snapshots
(``arena analyze risk``, also printing the snapshots read per second), a full Parquet export
and the trend (``arena analyze trend``: read its inputs from the database, then compute), at
two sizes.

Generates a large stored arena: ``50 * scale`` cohorts x 7 families x 52 weekly decisions, each
with a ~45 KB prompt (system prompt plus a 500-market list drawn from 2,000 synthetic markets)
and a ~1.5 KB raw answer, 10% of them repaired once; about 3 BUY trades per decision (each a
position, most of them settled and scored); a portfolio snapshot per agent every 3.5 hours
(48 a week) and weekly market prices. At scale 1 that is 18,200 decisions, ~20,000 attempts
(~0.9 GB of prompts), ~55,000 trades, ~870,000 snapshots: about a million trades + snapshots.

Rows are bulk-loaded with Core ``executemany`` into a fresh SQLite file (default) or a scratch
database on ``--postgres-url`` (created and dropped), then analysed as a daemon would have it
(``job``: :func:`arena.analytics.stored.refresh_analysis`, which stores the snapshots' columns
that risk reads, :mod:`arena.analytics.snapshot_columns`). Each measurement then runs in a fresh
process, so its peak RSS (``ru_maxrss``) is its own; the RSS after imports is printed too, and
the difference is what the work itself needed. Flat memory: the difference must not grow with
the data.

Run: ``.venv/bin/python benchmarks/bench_results.py`` (scales 0.2 and 1), or e.g.
``--scale 0.02 --scale 0.2`` for a quick look, ``--smoke`` for the smallest, ``--postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test``,
``--only trend`` (repeatable) to measure only some of them.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, insert, text
from sqlalchemy.engine import make_url

from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import (
    Agent,
    BrierScore,
    Cohort,
    Decision,
    DecisionAttempt,
    Family,
    Market,
    MarketPrice,
    PortfolioSnapshot,
    Position,
    Trade,
)

FAMILIES = (
    "gpt-5.1",
    "claude-opus-4.5",
    "grok-4",
    "qwen-3-next",
    "market-follower",
    "always-hold",
    "random-bettor",
)
WEEKS = 52
MARKETS = 2_000
PROMPT_MARKETS = 500
SNAPSHOTS_PER_WEEK = 48
BATCH = 2_000
START = datetime(2025, 1, 5, tzinfo=UTC)  # a Sunday
KINDS = ("leaderboard", "breakdown", "risk", "export", "trend")
ANALYSED = "job"
"""Measured first, always: the daemon's analysis job, which stores the forecasts' and the
snapshots' columns that readers start from, so the measurements meet a database a daemon has
analysed."""
WEEK = timedelta(days=7)
WORDS = (
    "election",
    "rate cut",
    "bitcoin",
    "championship",
    "senate",
    "inflation",
    "merger",
    "launch",
    "ceasefire",
    "earnings",
    "recession",
    "record",
    "tariff",
    "summit",
    "verdict",
)
D = Decimal


def rss_mib() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- generation --------------------------------------------------------------------------------


ORDER = (
    Family,
    Market,
    MarketPrice,
    Cohort,
    Agent,
    Decision,
    DecisionAttempt,
    Position,
    Trade,
    BrierScore,
    PortfolioSnapshot,
)  # foreign-key order


class Loader:
    """Buffers rows and writes them with executemany, all tables in foreign-key order, once
    about :data:`BATCH` rows (or 200 attempts, ~9 MB of prompts) are waiting."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.buffers: dict[Any, list[dict[str, Any]]] = {m.__table__: [] for m in ORDER}
        self.counts: dict[str, int] = {}
        self.waiting = 0

    def add(self, model: Any, row: dict[str, Any]) -> None:
        self.buffers[model.__table__].append(row)
        self.waiting += 1
        if self.waiting >= BATCH or len(self.buffers[DecisionAttempt.__table__]) >= 200:
            self.flush()

    def flush(self) -> None:
        with self.engine.begin() as conn:
            for table, rows in self.buffers.items():
                if rows:
                    conn.execute(insert(table), rows)
                    self.counts[table.name] = self.counts.get(table.name, 0) + len(rows)
                    rows.clear()
        self.waiting = 0


def market_lines(rng: random.Random) -> list[tuple[str, list[str], D]]:
    lines = []
    for number in range(MARKETS):
        market_id = str(500_000 + number)
        topic = " ".join(rng.sample(WORDS, 2))
        yes = D(rng.randrange(3, 97)) / 100
        question = f"Will the {topic} question number {number} resolve YES by 2025-12-31?"
        line = (
            f'- id {market_id} | "{question}" | category {rng.choice(WORDS)} | prices '
            f"Yes {yes} / No {1 - yes} | volume ${rng.randrange(10_000, 90_000_000):,} | "
            f"closes 2025-12-{rng.randrange(1, 29):02d}"
        )
        lines.append((line, [str(yes), str(1 - yes)], yes))
    return lines


BENCH_CATEGORIES = ("Politics", "Sports", "Crypto", "Economy", "Tech", "Culture", None)


def generate(engine: Engine, scale: float, seed: int = 1) -> dict[str, int]:
    rng = random.Random(seed)
    loader = Loader(engine)
    markets = market_lines(rng)
    system = "You are a forecaster in a paper-trading benchmark. Rules follow.\n" * 50
    for family_id in FAMILIES:
        loader.add(
            Family,
            {
                "id": family_id,
                "kind": "openrouter",
                "display_name": family_id.title(),
                "provider": "bench",
                "openrouter_id": f"bench/{family_id}",
                "strategy": None,
                "active": True,
                "first_seen_at": START,
                "updated_at": START,
            },
        )
    for number, (_line, prices, yes) in enumerate(markets):
        market_id = str(500_000 + number)
        settled = number % 10 < 7
        loader.add(
            Market,
            {
                "id": market_id,
                "question": f"Question {market_id}",
                "outcomes": ["Yes", "No"],
                "prices": prices,
                "yes_price": yes,
                "volume": D(1000),
                "active": True,
                "closed": settled,
                "first_seen_at": START,
                "updated_at": START,
                "status": "resolved" if settled else "open",
                "resolution_state": "resolved_winner" if settled else None,
                "winning_outcome": ("YES" if number % 2 else "NO") if settled else None,
                "resolved_at": START + 40 * WEEK if settled else None,
                # the category breakdown's groups: six named, one in seven "other" (None)
                "category": BENCH_CATEGORIES[number % len(BENCH_CATEGORIES)],
            },
        )
        for week in range(WEEKS):
            loader.add(
                MarketPrice,
                {
                    "market_id": market_id,
                    "observed_at": START + week * WEEK,
                    "prices": prices,
                    "yes_price": yes,
                    "volume": D(1000 + week),
                },
            )
    cohorts = max(1, round(50 * scale))
    ids = {"agent": 0, "decision": 0, "attempt": 0, "position": 0, "trade": 0}
    source = _Source(loader, rng, ids, markets, system)
    for cohort in range(1, cohorts + 1):
        start = START + (cohort - 1) * WEEK
        loader.add(
            Cohort,
            {
                "id": cohort,
                "week_start": start,
                "created_at": start,
                "methodology_version": "v1",
                "prompt_version": "v1",
                "starting_balance": D(10000),
                "status": "active",
            },
        )
        for family_id in FAMILIES:
            ids["agent"] += 1
            agent = ids["agent"]
            loader.add(
                Agent,
                {
                    "id": agent,
                    "cohort_id": cohort,
                    "family_id": family_id,
                    "kind": "openrouter",
                    "display_name": family_id,
                    "provider": "bench",
                    "prompt_version": "v1",
                    "methodology_version": "v1",
                    "starting_balance": D(10000),
                    "cash": D(rng.randrange(2_000_00, 9_000_00)) / 100,
                    "realized_pnl": D(rng.randrange(-3_000_00, 3_000_00)) / 100,
                    "created_at": start,
                },
            )
            seat = _Seat(cohort, agent, family_id, {})
            for week in range(1, WEEKS + 1):
                _decision(source, seat, week, start + (week - 1) * WEEK)
            for slot in range(WEEKS * SNAPSHOTS_PER_WEEK):
                taken = start + slot * timedelta(hours=3.5)
                value = D(rng.randrange(0, 800_000)) / 100
                loader.add(
                    PortfolioSnapshot,
                    {
                        "agent_id": agent,
                        "cohort_id": cohort,
                        "taken_at": taken,
                        "cash": D(5000),
                        "positions_value": value,
                        "total_value": D(5000) + value,
                        "pnl": value - D(5000),
                        "pnl_pct": (value - D(5000)) / 100,
                        "realized_pnl": D(0),
                        "unrealized_pnl": value - D(5000),
                        "brier": D("0.21"),
                        "resolved_bets": slot // 100,
                        "open_positions": 3,
                    },
                )
    loader.flush()
    return loader.counts


@dataclass
class _Source:
    """What every generated decision draws from: the loader its rows go to, the random
    source, the id counters, the market lines and the system prompt."""

    loader: Loader
    rng: random.Random
    ids: dict[str, int]
    markets: list[Any]
    system: str


@dataclass
class _Seat:
    """One agent being generated: its cohort, its id, its family, and its open positions
    (by agent, market number and side)."""

    cohort: int
    agent: int
    family_id: str
    held: dict[tuple[int, int, str], int]


def _decision(source: _Source, seat: _Seat, week: int, run_at: datetime) -> None:
    loader, rng, ids = source.loader, source.rng, source.ids
    markets, system = source.markets, source.system
    cohort, agent, family_id, held = seat.cohort, seat.agent, seat.family_id, seat.held
    at = run_at + timedelta(minutes=5)
    ids["decision"] += 1
    decision = ids["decision"]
    loader.add(
        Decision,
        {
            "id": decision,
            "agent_id": agent,
            "cohort_id": cohort,
            "decision_week": week,
            "status": "completed",
            "action": "BET",
            "system_hold": False,
            "claim_count": 1,
            "cash_shown": D(8000),
            "reasoning": "Edge on three markets. " * 20,
            "payload": {"action": "BET", "bets": []},
            "prompt_version": "v1",
            "methodology_version": "v1",
            "created_at": at,
            "updated_at": at,
            "completed_at": at,
        },
    )
    listing = "\n".join(line for line, _, _ in rng.sample(markets, PROMPT_MARKETS))
    user = f"Date {at:%Y-%m-%d}. Week {week}. Cash $8,000.00. Markets:\n{listing}"
    answer = json.dumps({"action": "BET", "reasoning": "Because. " * 150, "bets": []})
    for number in (1, 2) if rng.random() < 0.1 else (1,):
        ids["attempt"] += 1
        loader.add(
            DecisionAttempt,
            {
                "id": ids["attempt"],
                "decision_id": decision,
                "attempt_no": number,
                "claim_token": "t",
                "kind": "initial" if number == 1 else "repair",
                "outcome": "valid",
                "request_messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                "raw_response": answer,
                "raw_body": {"id": f"gen-{ids['attempt']}"},
                "parsed": {"action": "BET"},
                "provider": "bench",
                "model": family_id,
                "generation_id": f"gen-{ids['attempt']}",
                "prompt_tokens": 12_000,
                "completion_tokens": 400,
                "cost_usd": D("0.0123456789"),
                "latency_ms": 4000,
                "prompt_version": "v1",
                "started_at": at,
                "finished_at": at,
            },
        )
    for _ in range(rng.choice((2, 3, 4))):
        number = rng.randrange(MARKETS)
        _line, _prices, yes = markets[number]
        side = rng.choice(("YES", "NO"))
        price = yes if side == "YES" else 1 - yes
        amount = D(rng.randrange(50_00, 2_000_00)) / 100
        shares = (amount / price).quantize(D("0.000001"))
        confidence = (amount / D(2000)).quantize(D("0.000001"))
        settled = number % 10 < 7
        key = (agent, number, side)
        ids["trade"] += 1
        if not settled and key in held:  # one open position per market side: add to it
            position = held[key]
        else:
            ids["position"] += 1
            position = ids["position"]
            if not settled:
                held[key] = position
            loader.add(
                Position,
                {
                    "id": position,
                    "agent_id": agent,
                    "cohort_id": cohort,
                    "market_id": str(500_000 + number),
                    "side": side,
                    "shares": shares,
                    "cost_basis": amount,
                    "status": "SETTLED" if settled else "OPEN",
                    "realized_pnl": D(0),
                    "opened_at": at,
                    "updated_at": at,
                },
            )
        loader.add(
            Trade,
            {
                "id": ids["trade"],
                "decision_id": decision,
                "agent_id": agent,
                "cohort_id": cohort,
                "position_id": position,
                "market_id": str(500_000 + number),
                "side": side,
                "trade_type": "BUY",
                "amount": amount,
                "shares": shares,
                "price": price,
                "implied_confidence": confidence,
                "cash_shown": D(8000),
                "cash_after": D(8000),
                "executed_at": at,
            },
        )
        if settled:
            won = (side == "YES") == bool(number % 2)
            hit = D(1) if won else D(0)
            loader.add(
                BrierScore,
                {
                    "trade_id": ids["trade"],
                    "agent_id": agent,
                    "cohort_id": cohort,
                    "family_id": family_id,
                    "market_id": str(500_000 + number),
                    "side": side,
                    "implied_confidence": confidence,
                    "price_paid": price,
                    "won": won,
                    "brier": (confidence - hit) ** 2,
                    "market_brier": (price - hit) ** 2,
                    "scored_at": START + 40 * WEEK,
                },
            )


# -- measurement (in a fresh process) ----------------------------------------------------------


def measure(kind: str, url: str, out: str | None) -> dict[str, Any]:
    from arena.analytics.breakdown_view import breakdown_report  # imported before the clock
    from arena.analytics.leaderboard import compute_leaderboard
    from arena.analytics.risk_report import risk  # noqa: F401 - imported before the clock
    from arena.analytics.stored import refresh_analysis
    from arena.analytics.trend_inputs import read_stored_trend_inputs
    from arena.analytics.trend_report import trend
    from arena.config import Settings
    from arena.export.writer import ExportTarget, export

    engine = make_engine(url)
    factory = session_factory(engine)
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    baseline = rss_mib()
    start = time.perf_counter()
    if kind == "leaderboard":
        rows = len(compute_leaderboard(factory))
        detail = f"{rows} families"
    elif kind == "trend":  # as the CLI and the dashboard run it: read the inputs, compute
        with factory() as session:
            inputs = read_stored_trend_inputs(session)
        rows = len(trend(inputs)["rows"])
        detail = f"{rows} family-weeks from {len(inputs.snapshots.taken_at):,} snapshots kept"
    elif kind == "breakdown":
        detail = _breakdown(factory, breakdown_report)
    elif kind == "risk":
        detail = measure_risk(factory)
    elif kind == ANALYSED:
        detail = refresh_analysis(factory, Settings(), datetime.now(UTC)).describe()
    else:
        assert out is not None
        manifest = export(factory, ExportTarget(out, "parquet"))
        size = sum(f.bytes for f in manifest.files)
        detail = f"{sum(f.rows for f in manifest.files):,} rows, {size / 2**20:,.0f} MiB parquet"
    seconds = time.perf_counter() - start
    engine.dispose()
    return {"seconds": seconds, "baseline_mib": baseline, "peak_mib": rss_mib(), "detail": detail}


def _breakdown(factory: Any, breakdown_report: Any) -> str:
    """``arena analyze breakdown --by category`` as the dashboard computes it: the ledger
    side, and the forecast side when the database holds forecasts (this one holds none)."""
    from arena.analytics.options import AnalysisOptions
    from arena.analytics.records import Forecasts
    from arena.analytics.stored import stored_forecasts

    with factory() as session:
        forecasts: Forecasts | None = stored_forecasts(session)
        if forecasts is not None and len(forecasts) == 0:
            forecasts = None
        report = breakdown_report(session, forecasts, "category", AnalysisOptions())
    groups = len({row["group"] for row in report["ledger"]})
    return f"{len(report['ledger'])} family x category rows, {groups} categories"


def measure_risk(factory: Any) -> str:
    """Risk for every agent and every family from all snapshots (issue 25): one read (the
    snapshots' columns the analysis job stored, and any written since), then both reports at
    the default resample count (the modules are imported before the clock starts, in
    :func:`measure`)."""
    from arena.analytics.options import AnalysisOptions
    from arena.analytics.risk_report import risk
    from arena.analytics.snapshot_columns import read_stored_snapshots

    start = time.perf_counter()
    with factory() as session:
        snapshots = read_stored_snapshots(session)
    read = time.perf_counter() - start
    options = AnalysisOptions()
    agents = risk(snapshots, options, by="agent")["rows"]
    families = risk(snapshots, options, by="family")["rows"]
    count = len(snapshots.value)
    return (
        f"{count:,} snapshots read in {read:.2f} s ({count / max(read, 1e-9):,.0f}/s), "
        f"{len(agents)} agents + {len(families)} families, {options.bootstrap_resamples:,} "
        "resamples"
    )


def run_measure(kind: str, url: str, out: Path | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", kind, "--url", url]
    if out is not None:
        command += ["--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def fresh_sqlite(path: Path) -> str:
    """The URL of an empty SQLite file at ``path``: what a run left there (``--workdir`` keeps
    its files to look at) is removed first, since every run loads its own arena."""
    for leftover in (path, *(path.with_name(path.name + end) for end in ("-wal", "-shm"))):
        leftover.unlink(missing_ok=True)
    return f"sqlite:///{path}"


def scratch_postgres(base: str) -> tuple[str, Engine]:
    admin = create_engine(
        make_url(base).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT"
    )
    name = f"arena_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(base).set(drivername="postgresql+psycopg", database=name)
    return url.render_as_string(hide_password=False), admin


def bench_scale(scale: float, args: argparse.Namespace, workdir: Path) -> None:
    admin: Engine | None = None
    if args.postgres_url:
        url, admin = scratch_postgres(args.postgres_url)
    else:
        url = fresh_sqlite(workdir / f"arena_{scale}.db")
    try:
        engine = make_engine(url)
        upgrade(engine)
        start = time.perf_counter()
        counts = generate(engine, scale)
        if args.postgres_url:  # as autovacuum would within a minute of the load: the planner's
            with engine.connect() as conn:  # statistics, without which it plans blind
                conn.execute(text("ANALYZE"))
                conn.commit()
        engine.dispose()
        load = time.perf_counter() - start
        facts = ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items()))
        backend = "postgresql" if args.postgres_url else "sqlite"
        print(f"\nscale {scale} ({backend}): loaded in {load:.0f} s: {facts}")
        if not args.postgres_url:
            size = (workdir / f"arena_{scale}.db").stat().st_size
            print(f"  database file {size / 2**20:,.0f} MiB")
        for kind in (ANALYSED, *(args.only or KINDS)):
            out = workdir / f"export_{scale}" if kind == "export" else None
            result = run_measure(kind, url, out)
            print(
                f"  {kind:<12} {result['seconds']:7.1f} s   peak RSS {result['peak_mib']:7.1f}"
                f" MiB (after imports {result['baseline_mib']:6.1f} MiB, work "
                f"+{result['peak_mib'] - result['baseline_mib']:6.1f} MiB)   {result['detail']}"
            )
            if out is not None:
                shutil.rmtree(out, ignore_errors=True)
    finally:
        if admin is not None:
            name = make_url(url).database
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale",
        type=float,
        action="append",
        help="arena size, 1 = 50 cohorts (repeat; default 0.1 and 1)",
    )
    parser.add_argument("--postgres-url", help="PostgreSQL server URL (default: SQLite)")
    parser.add_argument("--workdir", type=Path, help="where to keep the SQLite files")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    parser.add_argument(
        "--only", choices=KINDS, action="append", help="measure only this (repeat; default all)"
    )
    parser.add_argument("--measure", choices=(ANALYSED, *KINDS), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.url, args.out)))
        return
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="arena_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        for scale in [0.002] if args.smoke else args.scale or [0.2, 1.0]:
            bench_scale(scale, args, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
