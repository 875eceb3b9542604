"""Latency of every dashboard page and API route under 8 concurrent clients, and the server's
peak memory, on the scale-1 arena of ``bench_results.py`` (50 cohorts x 7 families x 52 weeks:
18,200 decisions with ~45 KB prompts, ~55,000 trades, ~874,000 snapshots).

The arena is bulk-loaded by :func:`bench_results.generate` into a SQLite file and, with
``--postgres-url``, into a scratch PostgreSQL database (dropped at the end). For each database
the app is served by uvicorn in a fresh process (``arena serve``'s code path); every route is
requested once to warm it (the *cold* column: the leaderboard, ranking, curves and metrics are
computed then and cached until the data changes), then ``--clients`` threads each request every
route ``--rounds`` times in shuffled order. It prints p50 and p95 latency per route, the largest
response, and the server's peak RSS.

Run: ``.venv/bin/python benchmarks/bench_dashboard.py --postgres-url
postgresql+psycopg://postgres@127.0.0.1:5432/test`` (``--scale 0.05`` for a quick look,
``--smoke`` for the smallest, ``--workdir DIR`` to keep and reuse the SQLite file).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from bench_results import generate, scratch_postgres
from sqlalchemy import text
from sqlalchemy.engine import make_url

from arena.store.db import make_engine, upgrade

TARGET_P95_MS = 250
TARGET_CURVE_BYTES = 200_000


def serve(url: str, port: int, config: Path) -> None:
    """The child process: the dashboard on ``port``; prints its peak RSS when stopped."""
    import uvicorn

    from arena.config import load_settings
    from arena.web.app import create_app

    config.write_text(json.dumps({"database_url": url}))
    app = create_app(load_settings(config))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    )
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the SIGINT it handled
        server.run()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mib": peak}), flush=True)


def routes(base: str) -> list[str]:
    """Every page and API route, with real ids."""
    board = httpx.get(f"{base}/api/v1/leaderboard", timeout=600).json()
    family = board[0]["family_id"]
    cohort = httpx.get(f"{base}/api/v1/cohorts?per_page=1", timeout=60).json()["items"][0]["id"]
    decisions = httpx.get(f"{base}/api/v1/cohorts/{cohort}", timeout=600).json()["decisions"]
    decision = decisions["items"][0]["id"]
    market = httpx.get(f"{base}/api/v1/markets?held=true", timeout=60).json()["items"][0]["id"]
    pages = [
        "/",
        f"/?cohort={cohort}",
        f"/families/{family}",
        "/cohorts",
        f"/cohorts/{cohort}",
        f"/cohorts/{cohort}/families/{family}",
        "/markets",
        "/markets?q=Question%2050012&sort=close",
        "/markets?held=true",
        f"/markets/{market}",
        f"/decisions/{decision}",
        "/status",
        "/methodology",
        "/api/docs",
    ]
    api = [
        "/api/v1/leaderboard",
        f"/api/v1/leaderboard?cohort={cohort}",
        "/api/v1/ranking",
        f"/api/v1/families/{family}",
        "/api/v1/cohorts",
        f"/api/v1/cohorts/{cohort}",
        f"/api/v1/cohorts/{cohort}/families/{family}",
        "/api/v1/markets",
        f"/api/v1/markets/{market}",
        f"/api/v1/decisions/{decision}",
        "/api/v1/status",
    ]
    curves = [f"/api/v1/curves?range={r}" for r in ("10M", "1H", "1D", "1W", "1M", "ALL")]
    curves += [
        f"/api/v1/curves?range=ALL&cohort={cohort}",
        f"/api/v1/curves?range=ALL&family={family}",
        f"/api/v1/curves?range=1W&family={family}&cohort={cohort}",
    ]
    return pages + api + curves + ["/healthz", "/readyz", "/metrics"]


def bench(url: str, label: str, clients: int, rounds: int, workdir: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", url, "--port", str(port), "--workdir", str(workdir)],
        stdout=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        started = time.perf_counter()
        paths = routes(base)
        cold: dict[str, float] = {}
        size: dict[str, int] = {}
        for path in paths:
            t = time.perf_counter()
            response = httpx.get(base + path, timeout=600)
            cold[path] = (time.perf_counter() - t) * 1000
            assert response.status_code == 200, (path, response.status_code, response.text[:300])
            size[path] = len(response.content)
        warm_up = time.perf_counter() - started
        samples: dict[str, list[float]] = {path: [] for path in paths}
        lock = threading.Lock()

        def client(seed: int) -> None:
            order = [p for _ in range(rounds) for p in paths]
            random.Random(seed).shuffle(order)
            with httpx.Client(base_url=base, timeout=600) as http:
                for path in order:
                    t = time.perf_counter()
                    response = http.get(path)
                    elapsed = (time.perf_counter() - t) * 1000
                    assert response.status_code == 200, (path, response.status_code)
                    with lock:
                        samples[path].append(elapsed)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        t = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        total = time.perf_counter() - t
    finally:
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    peak = json.loads(out.strip().splitlines()[-1])["peak_mib"] if out.strip() else float("nan")
    requests = sum(len(v) for v in samples.values())
    print(
        f"\n{label}: {clients} clients x {rounds} rounds x {len(paths)} routes = {requests} "
        f"requests in {total:.1f} s ({requests / total:.0f}/s); warm-up {warm_up:.1f} s; "
        f"server peak RSS {peak:.0f} MiB"
    )
    print("| route | cold ms | p50 ms | p95 ms | bytes |\n|---|---:|---:|---:|---:|")
    slow = []
    for path in paths:
        values = sorted(samples[path])
        p50 = statistics.median(values)
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        print(f"| `{path}` | {cold[path]:.0f} | {p50:.1f} | {p95:.1f} | {size[path]:,} |")
        if p95 > TARGET_P95_MS:
            slow.append(path)
        if "/curves" in path and size[path] > TARGET_CURVE_BYTES:
            slow.append(f"{path} ({size[path]:,} bytes)")
    verdict = "every route meets" if not slow else f"missed by {', '.join(slow)}:"
    print(f"targets (p95 < {TARGET_P95_MS} ms, curves < {TARGET_CURVE_BYTES:,} B): {verdict}")


def load(url: str, scale: float) -> None:
    engine = make_engine(url)
    upgrade(engine)
    started = time.perf_counter()
    counts = generate(engine, scale)
    engine.dispose()
    facts = ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items()))
    print(f"loaded in {time.perf_counter() - started:.0f} s: {facts}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="arena size, 1 = 50 cohorts")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5, help="requests per route per client")
    parser.add_argument("--postgres-url", help="also bench on PostgreSQL (a scratch database)")
    parser.add_argument("--workdir", type=Path, help="keep (and reuse) the SQLite file here")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.scale, args.clients, args.rounds = 0.002, 1, 1
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="arena_dash_"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.serve:
        serve(args.serve, args.port, workdir / f"config-{args.port}.yaml")
        return
    sqlite_file = workdir / f"dashboard_{args.scale}.db"
    if not sqlite_file.exists():
        print(f"loading scale {args.scale} into {sqlite_file}", flush=True)
        load(f"sqlite:///{sqlite_file}", args.scale)
    bench(
        f"sqlite:///{sqlite_file}",
        f"SQLite, scale {args.scale}",
        args.clients,
        args.rounds,
        workdir,
    )
    if args.postgres_url:
        url, admin = scratch_postgres(args.postgres_url)
        try:
            print(f"\nloading scale {args.scale} into PostgreSQL", flush=True)
            load(url, args.scale)
            with make_engine(url).connect() as conn:
                conn.execute(text("ANALYZE"))
                conn.commit()
            bench(url, f"PostgreSQL, scale {args.scale}", args.clients, args.rounds, workdir)
        finally:
            name = make_url(url).database
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
