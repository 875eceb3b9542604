"""Latency of every dashboard page and API route under 8 concurrent clients, and the server's
peak memory, on the scale-1 arena of ``bench_results.py`` (50 cohorts x 7 families x 52 weeks:
18,200 decisions with ~45 KB prompts, ~55,000 trades, ~874,000 snapshots).

The arena is bulk-loaded by :func:`bench_results.generate` into a SQLite file and, with
``--postgres-url``, into a scratch PostgreSQL database (dropped at the end). For each database
the app is served by uvicorn in a fresh process (``arena serve``'s code path); every route is
requested once to warm it (the *cold* column: the leaderboard, curves and metrics are computed
then and cached until the data changes), then ``--clients`` threads each request every route
``--rounds`` times in shuffled order. It prints p50 and p95 latency per route, the largest
response, and the server's peak RSS.

The arena is methodology v2: every decision also carries 20 panel forecasts
(:func:`add_forecasts`, 364,000 at scale 1), and before the server starts the daemon's analysis
job stores the v2 analysis. While the clients run, a *daemon* process writes as the daemon
does, every ``--write-every`` seconds (10; the real daemon every 10 minutes): a forecast is
scored and a snapshot taken, then the analysis job runs
(:func:`arena.analytics.stored.refresh_analysis`), so the data version changes under the
clients and the analysis is recomputed beside them, never inside a request.

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
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from bench_results import START, generate, scratch_postgres
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


def add_forecasts(url: str) -> int:
    """20 panel forecasts for every decision of the arena (markets drawn per decision, 70%
    resolved), the cohorts made methodology v2; how many were written."""
    from sqlalchemy import bindparam, insert, select, update

    from arena.store.models import Agent, Cohort, Decision, Forecast, Market

    engine = make_engine(url)
    rng = random.Random(7)
    with engine.begin() as conn:
        conn.execute(update(Cohort).values(methodology_version="v2"))
        markets = conn.execute(select(Market.id, Market.winning_outcome, Market.yes_price)).all()
        decisions = conn.execute(
            select(Decision.id, Decision.agent_id, Decision.cohort_id, Agent.family_id)
            .add_columns(Decision.created_at)
            .join(Agent, Agent.id == Decision.agent_id)
        ).all()
    ends = {market_id: rng.randrange(1, 360) for market_id, _w, _p in markets}
    with engine.begin() as conn:
        conn.execute(
            update(Market.__table__)
            .where(Market.__table__.c.id == bindparam("mid"))
            .values(end_date=bindparam("end")),
            [
                {"mid": market_id, "end": START + timedelta(days=ends[market_id])}
                for market_id, _w, _p in markets
            ],
        )
    written, rows = 0, []
    for decision, agent, cohort, family, at in decisions:
        for market_id, winner, price in rng.sample(markets, 20):
            hit = None if winner is None else int(winner == "YES")
            noisy = min(0.99, max(0.01, float(price) + rng.gauss(0, 0.1)))
            rows.append(
                {
                    "decision_id": decision,
                    "agent_id": agent,
                    "cohort_id": cohort,
                    "family_id": family,
                    "market_id": market_id,
                    "outcome": "YES",
                    "probability": Decimal(f"{noisy:.4f}"),
                    "market_probability": price,
                    "source": "panel",
                    "forecast_at": at,
                    "resolved_value": hit,
                    "scored_at": None if hit is None else at + timedelta(days=200),
                }
            )
        if len(rows) >= 20_000:
            with engine.begin() as conn:
                conn.execute(insert(Forecast), rows)
            written, rows = written + len(rows), []
    if rows:
        with engine.begin() as conn:
            conn.execute(insert(Forecast), rows)
        written += len(rows)
    engine.dispose()
    return written


def daemon(url: str, every: float) -> None:
    """The child process writing as the daemon does, every ``every`` seconds until SIGINT: a
    forecast revised, a snapshot taken, and the analysis job run. Prints how many writes it
    did and its longest analysis."""
    from arena.config import Settings
    from arena.store.db import session_factory

    engine = make_engine(url)
    factory = session_factory(engine)
    settings = Settings.model_validate({"database_url": url})
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    longest = _write_once(engine, factory, settings, 0)
    writes = 1
    print("ready", flush=True)  # the clients start now
    while not stop.wait(every):
        longest = max(longest, _write_once(engine, factory, settings, writes))
        writes += 1
    print(json.dumps({"writes": writes, "longest_analysis_s": longest}), flush=True)


def _write_once(engine: Any, factory: Any, settings: Any, writes: int) -> float:
    """One daemon write and the analysis job after it; the job's seconds."""
    from sqlalchemy import func, insert, select, update

    from arena.analytics.stored import refresh_analysis
    from arena.store.models import Forecast, PortfolioSnapshot

    with engine.begin() as conn:
        first = conn.scalar(select(func.min(Forecast.id)))
        conn.execute(
            update(Forecast)
            .where(Forecast.id == first + writes)
            .values(probability=Decimal(f"0.{writes % 90 + 10}"))
        )
        latest = (
            conn.execute(select(PortfolioSnapshot).order_by(PortfolioSnapshot.id.desc()).limit(1))
            .mappings()
            .one()
        )
        row = {k: v for k, v in latest.items() if k != "id"}
        row["taken_at"] = row["taken_at"] + timedelta(minutes=10)
        conn.execute(insert(PortfolioSnapshot), [row])
    t = time.perf_counter()
    refresh_analysis(factory, settings, datetime.now(UTC))
    return time.perf_counter() - t


def routes(base: str) -> list[str]:
    """Every page and API route a reader can GET, with real ids, a category the ledger
    holds, and the horizon and track filters."""
    board = httpx.get(f"{base}/api/v1/leaderboard", timeout=600).json()
    family = board[0]["family_id"]
    cohort = httpx.get(f"{base}/api/v1/cohorts?per_page=1", timeout=60).json()["items"][0]["id"]
    decisions = httpx.get(f"{base}/api/v1/cohorts/{cohort}", timeout=600).json()["decisions"]
    decision = decisions["items"][0]["id"]
    market = httpx.get(f"{base}/api/v1/markets?held=true", timeout=60).json()["items"][0]["id"]
    # a category the ledger holds (markets without one count as "other")
    groups = httpx.get(f"{base}/api/v1/breakdown?by=category", timeout=600).json()["ledger"]
    category = quote(groups[0]["group"], safe="")
    pages = [
        "/",
        f"/?cohort={cohort}",
        f"/?category={category}",
        "/?horizon=le7",
        "/breakdown?by=category",
        "/breakdown?by=horizon",
        f"/breakdown?by=category&category={category}",
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
        f"/api/v1/leaderboard?category={category}",
        "/api/v1/leaderboard?horizon=le7",
        "/api/v1/leaderboard?track=model",
        "/api/v1/ranking",
        f"/api/v1/ranking?category={category}",
        "/api/v1/ranking?horizon=gt30",
        "/api/v1/market",
        "/api/v1/power",
        "/api/v1/replicates",
        "/api/v1/risk",
        "/api/v1/risk?by=agent",
        "/api/v1/risk?value=exit",
        "/api/v1/breakdown?by=category",
        "/api/v1/breakdown?by=horizon",
        f"/api/v1/breakdown?by=category&category={category}",
        f"/api/v1/families/{family}",
        f"/api/v1/families/{family}/trend",
        "/api/v1/cohorts",
        f"/api/v1/cohorts/{cohort}",
        f"/api/v1/cohorts/{cohort}/families/{family}",
        "/api/v1/markets",
        f"/api/v1/markets/{market}",
        f"/api/v1/decisions/{decision}",
        "/api/v1/status",
        "/api/v1/record",
        "/api/v1/methodology",
        "/api/v1/agent-schema",
        "/api/openapi.json",
    ]
    curves = [f"/api/v1/curves?range={r}" for r in ("10M", "1H", "1D", "1W", "1M", "ALL")]
    curves += [
        f"/api/v1/curves?range=ALL&cohort={cohort}",
        f"/api/v1/curves?range=ALL&family={family}",
        f"/api/v1/curves?range=1W&family={family}&cohort={cohort}",
    ]
    return pages + api + curves + ["/healthz", "/readyz", "/metrics"]


def bench(
    url: str, label: str, clients: int, rounds: int, workdir: Path, every: float = 10.0
) -> None:
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
        writer = subprocess.Popen(
            [sys.executable, __file__, "--daemon", url, "--write-every", str(every)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        t = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        total = time.perf_counter() - t
        writer.send_signal(signal.SIGINT)
        written = json.loads(writer.communicate(timeout=600)[0].strip().splitlines()[-1])
    finally:
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    peak = json.loads(out.strip().splitlines()[-1])["peak_mib"] if out.strip() else float("nan")
    requests = sum(len(v) for v in samples.values())
    print(
        f"\n{label}: {clients} clients x {rounds} rounds x {len(paths)} routes = {requests} "
        f"requests in {total:.1f} s ({requests / total:.0f}/s); warm-up {warm_up:.1f} s; "
        f"server peak RSS {peak:.0f} MiB; meanwhile the daemon wrote {written['writes']} times, "
        f"each followed by the analysis job (longest {written['longest_analysis_s']:.1f} s)"
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
    counts["forecasts"] = add_forecasts(url)
    facts = ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items()))
    print(f"loaded in {time.perf_counter() - started:.0f} s: {facts}", flush=True)
    from arena.analytics.stored import refresh_analysis
    from arena.config import Settings
    from arena.store.db import session_factory

    engine = make_engine(url)
    report = refresh_analysis(
        session_factory(engine), Settings.model_validate({"database_url": url}), datetime.now(UTC)
    )
    engine.dispose()
    print(f"the daemon's analysis job: {report.describe()}", flush=True)


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
    parser.add_argument(
        "--write-every", type=float, default=10.0, help="seconds between the daemon's writes"
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--daemon", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.scale, args.clients, args.rounds, args.write_every = 0.002, 1, 1, 0.5
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="arena_dash_"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.serve:
        serve(args.serve, args.port, workdir / f"config-{args.port}.yaml")
        return
    if args.daemon:
        daemon(args.daemon, args.write_every)
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
        args.write_every,
    )
    if args.postgres_url:
        url, admin = scratch_postgres(args.postgres_url)
        try:
            print(f"\nloading scale {args.scale} into PostgreSQL", flush=True)
            load(url, args.scale)
            with make_engine(url).connect() as conn:
                conn.execute(text("ANALYZE"))
                conn.commit()
            label = f"PostgreSQL, scale {args.scale}"
            bench(url, label, args.clients, args.rounds, workdir, args.write_every)
        finally:
            name = make_url(url).database
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
