"""What the record chain adds to a decision run, on SQLite and PostgreSQL.

Runs the production runtime on the simulated world (:mod:`arena.demo_world`, the fakes served
in-process): a cohort of ``--families`` simulated model families opens on Sunday 00:00 and the
decision run at 00:05 prompts each of them (methodology v2: bets and panel forecasts), on a
fresh database each time, once as shipped and once with the decision record replaced by a
no-op. It prints, per decision, the run's wall time with and without chaining and their
difference, and the time spent inside :func:`arena.record.chain.record_decision` (reading the
decision's rows through the export queries, hashing the universe once per connection, the
canonical JSON, the locked append). Target: chaining adds under 5 ms per decision.

PostgreSQL runs when ``--postgres-url`` or ``ARENA_TEST_POSTGRES_URL`` is given (a scratch
database is created and dropped).

Run: ``.venv/bin/python benchmarks/bench_chain.py [--families 24] [--markets 500]
[--repeat 3] [--postgres-url URL] [--smoke]``
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

import arena.jobs.commit as commit_module
import arena.jobs.decide as decide_module
from arena.config import OpenRouterFamily, Settings
from arena.demo_world import Simulation, WorldPlan
from arena.domain.states import Methodology
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import Decision, Record

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_snapshot import postgres_database

SUNDAY = datetime(2026, 11, 1, tzinfo=UTC)


@contextmanager
def database(backend: str, postgres_url: str | None, workdir: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{workdir / f'chain-{uuid.uuid4().hex[:8]}.db'}"
        return
    assert postgres_url
    with postgres_database(postgres_url) as url:
        yield url


def settings_for(url: str, families: int, markets: int) -> Settings:
    lineup = [
        OpenRouterFamily(
            id=f"sim-skill-{index:02d}",
            display_name=f"Sim {index}",
            provider="Simulated",
            openrouter_id=f"sim/skill-{index:02d}",
        )
        for index in range(families)
    ]
    base = Settings(database_url=url, families=lineup, methodology=Methodology.V2)
    benchmark = base.benchmark.model_copy(update={"universe_size": markets})
    return base.model_copy(update={"benchmark": benchmark})


def one_run(url: str, families: int, markets: int, chained: bool) -> dict[str, float]:
    """Open the cohort, then time the decision run; seconds spent in record_decision."""
    engine = make_engine(url)
    upgrade(engine)
    factory = session_factory(engine)
    settings = settings_for(url, families, markets)
    skills = {f"sim-skill-{i:02d}": (i % 10) / 10 for i in range(families)}
    sim = Simulation(
        settings, factory, WorldPlan(SUNDAY, 7, n_markets=markets, seed=5), skills=skills
    )
    real: Callable[..., Any] = decide_module.record_decision
    spent = [0.0]

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    backlog = commit_module.chain_backlog
    decide_module.record_decision = timed if chained else (lambda *_a, **_k: None)  # type: ignore[assignment]
    if not chained:  # the commitment after the run would chain the decisions after the fact
        commit_module.chain_backlog = lambda *_a, **_k: 0  # type: ignore[assignment]
    try:
        sim.step(SUNDAY)  # the cohort (and the market sync)
        started = time.perf_counter()
        sim.step(SUNDAY + timedelta(minutes=5))  # the universe freeze and the decision run
        wall = time.perf_counter() - started
    finally:
        decide_module.record_decision = real  # type: ignore[assignment]
        commit_module.chain_backlog = backlog  # type: ignore[assignment]
        sim.close()
    with factory() as session:
        decided = session.scalar(
            select(func.count()).select_from(Decision).where(Decision.status == "completed")
        )
        records = session.scalar(
            select(func.count()).select_from(Record).where(Record.kind == "decision")
        )
    engine.dispose()
    assert decided == families, f"{decided} of {families} decisions completed"
    assert records == (families if chained else 0)
    return {"wall": wall, "in_chain": spent[0], "decisions": float(decided or 0)}


def bench(backend: str, args: argparse.Namespace, workdir: Path) -> None:
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    with database(backend, args.postgres_url, workdir) as url:  # warm-up: imports, caches
        one_run(url, args.families, args.markets, True)
    for _ in range(args.repeat):
        for chained in (False, True):
            with database(backend, args.postgres_url, workdir) as url:
                runs[chained].append(one_run(url, args.families, args.markets, chained))
    per = {
        chained: statistics.median(r["wall"] / r["decisions"] for r in results) * 1000
        for chained, results in runs.items()
    }
    inside = statistics.median(r["in_chain"] / r["decisions"] for r in runs[True]) * 1000
    print(
        f"{backend:>8}  {args.families} decisions x {args.repeat} runs, universe {args.markets}: "
        f"per decision {per[False]:.1f} ms without the chain, {per[True]:.1f} ms with it "
        f"(difference {per[True] - per[False]:+.1f} ms); inside record_decision "
        f"{inside:.2f} ms (target < 5 ms)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", type=int, default=24)
    parser.add_argument("--markets", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres-url", default=os.environ.get("ARENA_TEST_POSTGRES_URL"))
    parser.add_argument("--smoke", action="store_true", help="the smallest size, once")
    args = parser.parse_args(argv)
    if args.smoke:
        args.families, args.markets, args.repeat = 3, 40, 1
    logging.disable(logging.WARNING)
    backends = ["sqlite"] + (["postgres"] if args.postgres_url else [])
    with tempfile.TemporaryDirectory() as workdir:
        for backend in backends:
            bench(backend, args, Path(workdir))


if __name__ == "__main__":
    main()
