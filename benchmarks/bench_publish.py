"""Time and peak memory of ``arena publish``: a first publish, a republish after one new week,
and the full Parquet export it builds on, on the arena of ``bench_results.py``.

The arena (``50 * scale`` cohorts x 7 families x 52 weeks, ~0.9 GB of prompts at scale 1) is
bulk-loaded by :func:`bench_results.generate`, then chained by the genesis pass
(:func:`arena.record.chain.chain_backlog`, every decision, settlement and cohort "after the
fact"), so ``chain.jsonl`` is as long as a real arena's. Then, each in a fresh process (its peak
RSS its own): the full Parquet export; ``arena publish`` into a new directory; one more week
(a decision, its attempt and trades, and 48 snapshots per agent of the newest cohorts) is
added and chained; ``arena publish`` into the same directory again.

Run: ``.venv/bin/python benchmarks/bench_publish.py`` (scale 1), ``--scale 0.1`` for a quick
look, ``--smoke`` for the smallest.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_results import (
    FAMILIES,
    SNAPSHOTS_PER_WEEK,
    START,
    WEEK,
    WEEKS,
    Loader,
    _decision,
    _Seat,
    _Source,
    fresh_sqlite,
    generate,
    market_lines,
    rss_mib,
)
from sqlalchemy import func, select

from arena.clock import SystemClock
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import (
    Agent,
    Decision,
    DecisionAttempt,
    PortfolioSnapshot,
    Position,
    Trade,
)


def add_week(url: str, seed: int = 2) -> int:
    """One more week for every agent of the newest cohorts: a decision (attempt, trades) and a
    week of snapshots; the rows added."""
    engine = make_engine(url)
    rng = random.Random(seed)
    loader = Loader(engine)
    factory = session_factory(engine)
    with factory() as session:
        ids = {
            "agent": 0,
            "decision": session.scalar(select(func.max(Decision.id))) or 0,
            "attempt": session.scalar(select(func.max(DecisionAttempt.id))) or 0,
            "position": session.scalar(select(func.max(Position.id))) or 0,
            "trade": session.scalar(select(func.max(Trade.id))) or 0,
        }
        newest = session.scalar(select(func.max(Agent.cohort_id))) or 1
        agents = session.execute(
            select(Agent.id, Agent.cohort_id, Agent.family_id).where(Agent.cohort_id > newest - 5)
        ).all()
        held: dict[int, dict[tuple[int, int, str], int]] = {}
        for position_id, agent_id, market_id, side in session.execute(
            select(Position.id, Position.agent_id, Position.market_id, Position.side).where(
                Position.status == "OPEN"
            )
        ):
            held.setdefault(agent_id, {})[(agent_id, int(market_id) - 500_000, side)] = position_id
    source = _Source(loader, rng, ids, market_lines(random.Random(1)), "System prompt.\n" * 50)
    for agent_id, cohort_id, family_id in agents:
        start = START + (cohort_id - 1) * WEEK
        run_at = start + WEEKS * WEEK
        _decision(
            source, _Seat(cohort_id, agent_id, family_id, held.get(agent_id, {})), WEEKS + 1, run_at
        )
        for slot in range(SNAPSHOTS_PER_WEEK):
            loader.add(
                PortfolioSnapshot,
                {
                    "agent_id": agent_id,
                    "cohort_id": cohort_id,
                    "taken_at": run_at + slot * timedelta(hours=3.5),
                    "cash": 5000,
                    "positions_value": 0,
                    "total_value": 5000,
                    "pnl": 0,
                    "pnl_pct": 0,
                    "realized_pnl": 0,
                    "unrealized_pnl": 0,
                    "brier": None,
                    "resolved_bets": 0,
                    "open_positions": 0,
                },
            )
    loader.flush()
    engine.dispose()
    return sum(loader.counts.values())


def chain(url: str) -> int:
    from arena.record.chain import chain_backlog

    engine = make_engine(url)
    try:
        return chain_backlog(session_factory(engine), SystemClock().now())
    finally:
        engine.dispose()


# -- measurement (in a fresh process) ----------------------------------------------------------


def measure(kind: str, url: str, out: str) -> dict[str, Any]:
    from arena.config import Settings
    from arena.export.writer import ExportTarget, export
    from arena.publish.dataset import publish_dataset
    from arena.publish.parts import dataset_parts

    engine = make_engine(url)
    factory = session_factory(engine)
    baseline = rss_mib()
    start = time.perf_counter()
    if kind == "export":
        manifest = export(factory, ExportTarget(out, "parquet"))
        size = sum(f.bytes for f in manifest.files)
        detail = f"{sum(f.rows for f in manifest.files):,} rows, {size / 2**20:,.0f} MiB parquet"
    else:
        report = publish_dataset(
            factory, Path(out), SystemClock().now(), parts=dataset_parts(Settings())
        )
        detail = (
            f"version {report.version}, {len(report.changed)} files written, "
            f"{len(report.unchanged)} unchanged, {report.records:,} records"
        )
    seconds = time.perf_counter() - start
    engine.dispose()
    return {"seconds": seconds, "baseline_mib": baseline, "peak_mib": rss_mib(), "detail": detail}


def run_measure(kind: str, url: str, out: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", kind, "--url", url, "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def show(label: str, result: dict[str, Any]) -> None:
    work = result["peak_mib"] - result["baseline_mib"]
    print(
        f"  {label:<24} {result['seconds']:7.1f} s   peak RSS {result['peak_mib']:7.1f} MiB "
        f"(after imports {result['baseline_mib']:6.1f}, work +{work:6.1f})   {result['detail']}",
        flush=True,
    )


def bench_scale(scale: float, workdir: Path) -> None:
    url = fresh_sqlite(workdir / f"arena_{scale}.db")
    engine = make_engine(url)
    upgrade(engine)
    start = time.perf_counter()
    counts = generate(engine, scale)
    engine.dispose()
    print(
        f"\nscale {scale} (sqlite): {sum(counts.values()):,} rows loaded in "
        f"{time.perf_counter() - start:.0f} s; {len(FAMILIES)} families",
        flush=True,
    )
    start = time.perf_counter()
    chained = chain(url)
    print(
        f"  genesis: {chained:,} records chained in {time.perf_counter() - start:.0f} s", flush=True
    )
    show("parquet export", run_measure("export", url, workdir / "export"))
    shutil.rmtree(workdir / "export", ignore_errors=True)
    dataset = workdir / "dataset"
    show("publish (first)", run_measure("publish", url, dataset))
    show("republish, no change", run_measure("publish", url, dataset))
    added = add_week(url)
    chained = chain(url)
    print(f"  one more week: {added:,} rows, {chained:,} records", flush=True)
    show("republish, one new week", run_measure("publish", url, dataset))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="arena size (1: 50 cohorts)")
    parser.add_argument("--workdir", type=Path, help="where to keep the files")
    parser.add_argument("--smoke", action="store_true", help="the smallest size, in seconds")
    parser.add_argument("--measure", choices=("export", "publish"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.url, args.out)))
        return
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="arena_bench_publish_"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        bench_scale(0.002 if args.smoke else args.scale, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
