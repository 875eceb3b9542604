"""Methodology v2 at scale: time to read the forecasts, and time and peak memory of the full
analysis (what the ``analysis`` job stores and every page serves), on SQLite and PostgreSQL.

Generates a lean v2 arena: ``50 * scale`` cohorts x 7 families x 52 weekly decisions, each
with 20 panel forecasts (binary markets drawn from 2,000, 70% of them resolved, each a member
of one of 400 event groups): at scale 1 that is 18,200 decisions and 364,000 forecasts, the
arena of issue 24. Decisions carry no prompt (``bench_results.py`` measures those).

Each measurement runs in a fresh process, so its peak RSS (``ru_maxrss``) is its own:

* ``rows``: the forecasts read row by row (:func:`arena.export.writer.table_columns`), as
  every read did before the stored columns, and as the first analysis job still does;
* ``job``: :func:`arena.analytics.stored.refresh_analysis`, twice: the first reads row by row,
  stores the forecast columns (:mod:`arena.export.forecast_columns`), computes and stores the
  result; the second finds the data unchanged and stores nothing;
* ``read``: the forecasts as the analyses take them
  (:func:`arena.analytics.stored.stored_forecasts`), in a new process: the stored columns and
  what changed since;
* ``write``: one decision run's forecasts written (140), then ``read`` in the same process:
  what a page or the job meets after a write;
* ``analysis``: ``read`` and :func:`arena.analytics.report.full_analysis` with the configured
  resamples (``--resamples``, default 10,000 as in ``analysis.resamples``);
* ``report``: ``arena analyze report --bootstrap 1000 --format json`` as a reader runs it (a new
  process, imports included), its wall time and peak RSS.

Targets (issue 24): reading under 1 s, the full analysis under 5 s and 400 MiB, ``arena analyze
report`` with 1,000 resamples under 10 s, at scale 1.

Run: ``.venv/bin/python benchmarks/bench_analysis.py`` (scale 1, SQLite), ``--postgres-url
postgresql+psycopg://postgres@127.0.0.1:5432/test`` for PostgreSQL, ``--scale 0.1`` for a
quick look, ``--smoke`` for the smallest.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench_results import FAMILIES, START, WEEK, WEEKS, fresh_sqlite, rss_mib, scratch_postgres
from sqlalchemy import Engine, insert, select, text
from sqlalchemy.engine import make_url

from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import Agent, Cohort, Decision, Family, Forecast, Market

MARKETS = 2_000
GROUPS = 400
PANEL = 20
BATCH = 5_000
D = Decimal
TARGET_READ_S = 1.0
TARGET_ANALYSIS_S = 5.0
TARGET_ANALYSIS_MIB = 400
TARGET_REPORT_S = 10.0
KINDS = ("rows", "job", "read", "write", "analysis", "report")


def generate(engine: Engine, scale: float, seed: int = 1) -> dict[str, int]:
    """Families, markets, cohorts, agents, decisions and their panel forecasts."""
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    pending: dict[Any, list[dict[str, Any]]] = {}

    def add(model: Any, row: dict[str, Any]) -> None:
        pending.setdefault(model.__table__, []).append(row)
        if sum(len(rows) for rows in pending.values()) >= BATCH:
            flush()

    def flush() -> None:
        with engine.begin() as conn:
            for model in (Family, Market, Cohort, Agent, Decision, Forecast):
                rows = pending.pop(model.__table__, [])
                if rows:
                    conn.execute(insert(model.__table__), rows)
                    name = model.__table__.name
                    counts[name] = counts.get(name, 0) + len(rows)

    for family_id in FAMILIES:
        kind = "baseline" if family_id in ("market-follower", "always-hold") else "openrouter"
        add(
            Family,
            {
                "id": family_id,
                "kind": kind,
                "display_name": family_id.title(),
                "provider": "bench",
                "openrouter_id": f"bench/{family_id}",
                "active": True,
                "first_seen_at": START,
                "updated_at": START,
            },
        )
    truth, price = {}, {}
    cohorts = max(1, round(50 * scale))
    horizon = START + (cohorts + WEEKS) * WEEK
    for number in range(MARKETS):
        market_id = str(600_000 + number)
        yes = D(rng.randrange(3, 97)) / 100
        settled = number % 10 < 7
        truth[market_id] = (1 if rng.random() < float(yes) else 0) if settled else None
        price[market_id] = yes
        closes = START + timedelta(days=rng.randrange(7, (horizon - START).days))
        add(
            Market,
            {
                "id": market_id,
                "question": f"Question {market_id}",
                "outcomes": ["Yes", "No"],
                "prices": [str(yes), str(1 - yes)],
                "yes_price": yes,
                "volume": D(1000),
                "active": True,
                "closed": settled,
                "first_seen_at": START,
                "updated_at": START,
                "end_date": closes,
                "event_id": f"event-{number % GROUPS}",
                "status": "resolved" if settled else "open",
                "resolution_state": "resolved_winner" if settled else None,
                "winning_outcome": ("YES" if truth[market_id] else "NO") if settled else None,
                "resolved_at": closes + timedelta(hours=6) if settled else None,
            },
        )
    market_ids = list(truth)
    skill = {family_id: 0.05 + 0.04 * i for i, family_id in enumerate(FAMILIES)}
    agent = decision = 0
    for cohort in range(1, cohorts + 1):
        start = START + (cohort - 1) * WEEK
        add(
            Cohort,
            {
                "id": cohort,
                "week_start": start,
                "created_at": start,
                "methodology_version": "v2",
                "prompt_version": "v2",
                "starting_balance": D(10000),
                "status": "active",
            },
        )
        for family_id in FAMILIES:
            agent += 1
            add(
                Agent,
                {
                    "id": agent,
                    "cohort_id": cohort,
                    "family_id": family_id,
                    "kind": "openrouter",
                    "display_name": family_id,
                    "provider": "bench",
                    "prompt_version": "v2",
                    "methodology_version": "v2",
                    "starting_balance": D(10000),
                    "cash": D(10000),
                    "realized_pnl": D(0),
                    "created_at": start,
                },
            )
            for week in range(WEEKS):
                decision += 1
                at = start + week * WEEK + timedelta(minutes=5)
                add(
                    Decision,
                    {
                        "id": decision,
                        "agent_id": agent,
                        "cohort_id": cohort,
                        "decision_week": week + 1,
                        "status": "completed",
                        "action": "HOLD",
                        "system_hold": False,
                        "claim_count": 1,
                        "cash_shown": D(10000),
                        "payload": {"action": "HOLD"},
                        "prompt_version": "v2",
                        "methodology_version": "v2",
                        "created_at": at,
                        "updated_at": at,
                        "completed_at": at,
                    },
                )
                for market_id in rng.sample(market_ids, PANEL):
                    hit = truth[market_id]
                    base = float(price[market_id]) if hit is None else 0.5 * hit + 0.25
                    noisy = min(0.99, max(0.01, base + rng.gauss(0, skill[family_id])))
                    add(
                        Forecast,
                        {
                            "decision_id": decision,
                            "agent_id": agent,
                            "cohort_id": cohort,
                            "family_id": family_id,
                            "market_id": market_id,
                            "outcome": "YES",
                            "probability": D(f"{noisy:.4f}"),
                            "market_probability": price[market_id],
                            "source": "panel",
                            "forecast_at": at,
                            "resolved_value": hit,
                            "brier": None if hit is None else D(f"{(noisy - hit) ** 2:.4f}"),
                            "scored_at": None if hit is None else horizon,
                        },
                    )
    flush()
    return counts


# -- measurement (in a fresh process) ----------------------------------------------------------


def measure(kind: str, url: str, resamples: int) -> dict[str, Any]:
    if kind == "report":
        return measure_report(url)
    from arena.analytics.report import configured_options, full_analysis
    from arena.analytics.stored import refresh_analysis, stored_forecasts
    from arena.config import Settings
    from arena.export.forecast_columns import forecast_columns  # noqa: F401 - before the clock
    from arena.export.writer import table_columns

    engine = make_engine(url)
    factory = session_factory(engine)
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    settings = Settings.model_validate({"analysis": {"resamples": resamples}})
    at = datetime.now(UTC)
    baseline = rss_mib()
    start = time.perf_counter()
    detail = ""
    if kind == "rows":
        with factory() as session:
            detail = f"{len(table_columns(session, 'forecasts')['forecast_id']):,} forecasts"
    elif kind == "read":
        with factory() as session:
            detail = f"{len(stored_forecasts(session)):,} forecasts"
    elif kind == "write":
        with factory() as session:
            stored_forecasts(session)
        written = _write_forecasts(engine, 140)
        start = time.perf_counter()
        with factory() as session:
            detail = f"{len(stored_forecasts(session)):,} forecasts after {written} written"
    elif kind == "analysis":
        with factory() as session:
            forecasts = stored_forecasts(session)
        read = time.perf_counter() - start
        report = full_analysis(forecasts, configured_options(settings, as_of=at))
        detail = f"read {read:.2f} s, {len(report['ranking']['rows'])} ranking rows"
    else:
        first = refresh_analysis(factory, settings, at)
        middle = time.perf_counter()
        second = refresh_analysis(factory, settings, at + timedelta(minutes=10))
        detail = (
            f"first run {middle - start:.2f} s ({first.describe()}), unchanged data "
            f"{time.perf_counter() - middle:.2f} s ({second.describe()})"
        )
    seconds = time.perf_counter() - start
    engine.dispose()
    return {"seconds": seconds, "baseline_mib": baseline, "peak_mib": rss_mib(), "detail": detail}


def _write_forecasts(engine: Engine, count: int) -> int:
    """Up to ``count`` new forecasts: copies of the latest, each on the decision before its own
    (skipping a market that decision already forecast)."""
    table = Forecast.__table__
    with engine.begin() as conn:
        latest = conn.execute(select(table).order_by(table.c.id.desc()).limit(count)).mappings()
        rows = [{**row, "decision_id": row["decision_id"] - 1} for row in latest]
        taken = set(
            conn.execute(
                select(table.c.decision_id, table.c.market_id).where(
                    table.c.decision_id.in_({row["decision_id"] for row in rows})
                )
            ).all()
        )
        rows = [row for row in rows if (row["decision_id"], row["market_id"]) not in taken]
        for row in rows:
            del row["id"]
        conn.execute(insert(table), rows)
    return len(rows)


def measure_report(url: str) -> dict[str, Any]:
    """``arena analyze report`` in a child process: its wall time and peak RSS (this measuring
    process's only child, so ``RUSAGE_CHILDREN`` is its own)."""
    arena = Path(sys.executable).with_name("arena")
    command = [str(arena), "analyze", "report", "--bootstrap", "1000", "--format", "json"]
    environment = {**os.environ, "ARENA_DATABASE_URL": url}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    seconds = time.perf_counter() - start
    report = json.loads(done.stdout)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows = len(report["ranking"]["rows"])
    return {"seconds": seconds, "baseline_mib": 0.0, "peak_mib": peak, "detail": f"{rows} rows"}


def run_measure(kind: str, url: str, resamples: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", kind, "--url", url]
    command += ["--resamples", str(resamples)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_scale(scale: float, args: argparse.Namespace, workdir: Path) -> None:
    admin: Engine | None = None
    if args.postgres_url:
        url, admin = scratch_postgres(args.postgres_url)
    else:
        url = fresh_sqlite(workdir / f"arena_v2_{scale}.db")
    try:
        engine = make_engine(url)
        upgrade(engine)
        start = time.perf_counter()
        counts = generate(engine, scale)
        engine.dispose()
        facts = ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items()))
        backend = "postgresql" if args.postgres_url else "sqlite"
        print(
            f"\nscale {scale} ({backend}): loaded in {time.perf_counter() - start:.0f} s: {facts}"
        )
        for kind in KINDS:
            result = run_measure(kind, url, args.resamples)
            print(
                f"  {kind:<9} {result['seconds']:7.2f} s   peak RSS {result['peak_mib']:7.1f} MiB"
                f" (after imports {result['baseline_mib']:6.1f} MiB)   {result['detail']}"
            )
        print(
            f"  targets at scale 1: read < {TARGET_READ_S:.0f} s; analysis < "
            f"{TARGET_ANALYSIS_S:.0f} s and {TARGET_ANALYSIS_MIB} MiB peak; report < "
            f"{TARGET_REPORT_S:.0f} s"
        )
    finally:
        if admin is not None:
            name = make_url(url).database
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, action="append", help="1 = 50 cohorts (repeat)")
    parser.add_argument("--postgres-url", help="PostgreSQL server URL (default: SQLite)")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--workdir", type=Path, help="where to keep the SQLite files")
    parser.add_argument("--smoke", action="store_true", help="the smallest size, in seconds")
    parser.add_argument("--measure", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.url, args.resamples)))
        return
    if args.smoke:
        args.resamples = 200
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="arena_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        for scale in [0.02] if args.smoke else args.scale or [1.0]:
            bench_scale(scale, args, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
