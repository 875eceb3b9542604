"""Time and peak memory of ``arena verify`` on a published dataset of ``bench_results.py``'s
arena (scale 1: 18,200 decisions, ~20,000 attempts with ~0.9 GB of prompts, ~55,000 trades,
~870,000 snapshots).

The arena is generated as in ``bench_results.py``, chained by the genesis pass (what ``arena db
upgrade`` does to data stored before the chain: every record "after the fact"), published with
``leaderboard.json``, then ``arena verify DIR --format json`` runs in a fresh process; its peak
RSS is that process's. The generated arena does not keep each agent's cash in step with its
trades (``bench_results.py`` writes cash and trades independently), so verify reports ledger
and leaderboard differences there: the figure is the time, not the verdict.

Run: ``.venv/bin/python benchmarks/bench_verify.py`` (scale 1), ``--scale 0.1``, or
``--smoke`` for the smallest.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from bench_results import fresh_sqlite, generate

from arena.analytics.leaderboard import compute_leaderboard, to_json
from arena.publish.dataset import publish_dataset
from arena.record.chain import chain_backlog
from arena.store.db import make_engine, session_factory, upgrade


def bench_scale(scale: float, workdir: Path) -> None:
    url = fresh_sqlite(workdir / f"arena_{scale}.db")
    engine = make_engine(url)
    upgrade(engine)
    start = time.perf_counter()
    counts = generate(engine, scale)
    factory = session_factory(engine)
    records = chain_backlog(factory, datetime.now(UTC))
    print(
        f"\nscale {scale}: generated and chained ({records:,} records) in "
        f"{time.perf_counter() - start:.0f} s: {sum(counts.values()):,} rows"
    )
    out = workdir / f"dataset_{scale}"
    out.mkdir()
    board = to_json(compute_leaderboard(factory))
    (out / "leaderboard.json").write_text(json.dumps(board, indent=2) + "\n", encoding="utf-8")
    start = time.perf_counter()
    publish_dataset(factory, out, datetime.now(UTC))
    engine.dispose()
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"  published in {time.perf_counter() - start:.0f} s: {size / 2**20:,.0f} MiB")
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "arena", "verify", str(out), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=workdir,
        check=False,
    )
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    report = json.loads(done.stdout)
    failed = Counter(failure["check"] for failure in report["failures"])
    print(
        f"  verify {seconds:7.1f} s   peak RSS {peak:7.1f} MiB   exit {done.returncode}   "
        f"{report['counts'].get('records', 0):,} records; failures by check: {dict(failed)}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, action="append", help="arena size (default 1)")
    parser.add_argument("--smoke", action="store_true", help="the smallest size, in seconds")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="arena_bench_verify_"))
    try:
        for scale in [0.002] if args.smoke else args.scale or [1.0]:
            bench_scale(scale, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
