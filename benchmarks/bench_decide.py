"""Wall time of a decision run of 12 families x 3 replicates against fakes with 2 s of model
latency, arena's overhead per agent, and what two ``arena decide`` sharing the run on PostgreSQL
gain.

The fake Gamma (1,200 markets, 2.4 per universe slot as in the tests), the fake CLOB (a
plausible book, none of them thin, for every open binary market) and the fake OpenRouter are
served over real HTTP on 127.0.0.1 from this process. Every model call is answered after
``--latency`` seconds (default 2 s; the fake's per-answer ``delay``), never failing, so there is
no retry and no repair: each answer is a valid BET of $100 on each of two booked markets of the
universe. Gamma and the CLOB answer without added latency. A cohort of ``--families`` model
families x ``--replicates`` (default 12 x 3 = 36 agents) is opened in mode ``book`` (the
default) with the default universe of 500 markets, then ``arena decide --at`` runs as a real
process: it starts, syncs the markets from Gamma, freezes the universe with its books, and
decides the agents **one after another** (:mod:`arena.jobs.decide`: claim and prompt, on a
thread while the agent before is asked; call, validate; then, on another thread while the next
agent is asked, refresh the traded markets, walk their books, execute, record), so each agent
waits for its one call.

Measured, per database:

* **one process**: the wall time from starting ``arena decide`` to its exit, and arena's
  overhead per agent = (wall - agents x latency) / agents: everything but the model's own
  time, the process start-up, market sync and universe freeze included (target under
  100 ms). Also printed, from when each call reached the fake: the time before the first
  model call (start-up, sync, freeze), the median time between two calls beyond the latency
  (one agent's own work) and the time from the last answer to the exit.
* **two processes** (PostgreSQL only): two ``arena decide`` started together on a fresh copy
  of the same arena; the wall time until both have exited, the speed-up = one-process wall /
  two-process wall (target 1.8x or better), how the agents split between them, and a check
  that nothing was duplicated: one decision per agent, each claimed once and completed, one
  model call per agent, and one trade set per decision (two trades each). A failed check
  exits 1; a time never does.

arena is byte-compiled first, as an installed package is (:mod:`installed`), so a machine
with ``PYTHONDONTWRITEBYTECODE`` set does not count compiling its source in every process.

SQLite runs unless ``--no-sqlite``; PostgreSQL runs when ``--postgres-url`` or
``ARENA_TEST_POSTGRES_URL`` is given, in scratch databases created and dropped here. The
fakes run in this process and share its two cores with the decide processes: quote figures
from a quiet machine.

Run: ``.venv/bin/python benchmarks/bench_decide.py --postgres-url
postgresql+psycopg://postgres@127.0.0.1:5432/test`` (about 4 minutes: 36 agents x 2 s, three
times), ``--runs 3`` for the median of three one-process runs per database (the host's speed
varies from run to run), ``--families 4 --replicates 3`` for a quick look, ``--smoke`` for the
smallest (2 x 2 agents, 50 ms latency, a 40-market universe, on PostgreSQL alone when it is
given).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_snapshot import postgres_database
from installed import byte_compile_arena

from arena.clock import FixedClock
from arena.config import load_settings
from arena.fakes.book_world import BookWorld
from arena.fakes.clob import serve_fake_clob
from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.fakes.openrouter import FakeOpenRouter, answer
from arena.jobs.cohorts import start_cohort
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import Agent, Decision, Trade

TARGET_OVERHEAD_MS = 100
TARGET_SPEEDUP = 1.8
COHORT_AT = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)  # a Sunday: the cohort's week
DECIDE_AT = "2026-11-22T00:05:00Z"
MARKETS_PER_SLOT = 2.4  # the fake Gamma world's size per universe slot, as in the tests
BETS_PER_ANSWER = 2
BET_USD = 100
BET_MARKETS = 8  # the booked markets the answers rotate over


class TimedOpenRouter(FakeOpenRouter):
    """The fake OpenRouter, noting when each chat completion arrives (``perf_counter``)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    def dispatch(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[float, tuple[int, dict[str, str], bytes]]:
        if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
            self.arrivals.append(time.perf_counter())
        return super().dispatch(method, path, headers, body)


@dataclass(frozen=True)
class Plan:
    """One measured arena: its families and replicates, the model latency and the universe."""

    families: int
    replicates: int
    latency: float
    universe: int

    @property
    def agents(self) -> int:
        return self.families * self.replicates

    def family_ids(self) -> list[str]:
        return [f"model-{number:02d}" for number in range(1, self.families + 1)]


@dataclass(frozen=True)
class Served:
    """The fake Gamma and CLOB's URLs, and the markets the answers bet on."""

    gamma_url: str
    clob_url: str
    bet_markets: list[str]


@contextmanager
def serve_markets(plan: Plan) -> Iterator[Served]:
    """The fake Gamma and CLOB on 127.0.0.1 (no added latency), every open binary market
    booked; the markets to bet on are the highest-volume booked Yes/No ones, so in any
    universe."""
    gamma = FakeGammaWorld(
        n_markets=int(plan.universe * MARKETS_PER_SLOT),
        seed=1,
        start=COHORT_AT - timedelta(hours=1),
    )
    books = BookWorld(gamma, seed=1, thin_share=0.0)
    books.sync()
    booked = set(books.clob.markets)
    bet_markets = [
        market_id
        for market_id in gamma.expected_top(plan.universe)
        if gamma.markets[market_id].condition_id in booked
        and [o.lower() for o in gamma.markets[market_id].outcomes] == ["yes", "no"]
    ][:BET_MARKETS]
    with serve_fake_gamma(gamma) as gamma_url, serve_fake_clob(books.clob) as clob_url:
        yield Served(gamma_url, clob_url, bet_markets)


def fake_openrouter(plan: Plan, served: Served) -> TimedOpenRouter:
    """A fake whose every model answers a valid BET after the latency, rotating the markets."""
    fake = TimedOpenRouter()
    turns = itertools.count()

    def bets(_messages: list[dict[str, Any]]) -> str:
        first = next(turns) * BETS_PER_ANSWER
        markets = itertools.islice(itertools.cycle(served.bet_markets), first, None)
        return json.dumps(
            {
                "action": "BET",
                "bets": [
                    {"market_id": market_id, "side": "YES", "amount": BET_USD}
                    for market_id in itertools.islice(markets, BETS_PER_ANSWER)
                ],
                "reasoning": "The benchmark's answer: two small bets on liquid markets.",
            }
        )

    for family_id in plan.family_ids():
        model = f"bench/{family_id}"
        fake.add_model(model, "0.000001", "0.000004")
        fake.set_default(model, answer(bets, delay=plan.latency))
    return fake


def prepare(plan: Plan, served: Served, openrouter_url: str, url: str, workdir: Path) -> Path:
    """Write the config, migrate the database and open the cohort; returns the config path."""
    families = [
        {
            "id": family_id,
            "display_name": family_id.title(),
            "provider": "Bench",
            "openrouter_id": f"bench/{family_id}",
            "replicates": plan.replicates,
        }
        for family_id in plan.family_ids()
    ]
    config = {
        "database_url": url,
        "families": families,
        "benchmark": {"universe_size": plan.universe},
        "openrouter": {"base_url": openrouter_url},
        "polymarket": {"gamma_url": served.gamma_url, "clob_url": served.clob_url},
    }
    path = workdir / f"config-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    engine = make_engine(url)
    try:
        upgrade(engine)
        start_cohort(session_factory(engine), load_settings(path), FixedClock(COHORT_AT))
    finally:
        engine.dispose()
    return path


def decide(
    config: Path, fake: FakeOpenRouter, processes: int, workdir: Path
) -> tuple[float, float]:
    """Start ``processes`` ``arena decide`` together: when they started (``perf_counter``) and
    the wall time until all of them have exited. Their output goes to files (a full pipe
    would stall a process while another is waited for)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env["OPENROUTER_API_KEY"] = fake.api_key
    command = [sys.executable, "-m", "arena", "--config", str(config), "decide", "--at", DECIDE_AT]
    logs = [workdir / f"decide-{time.monotonic_ns()}-{n}.log" for n in range(processes)]
    with ExitStack() as stack:
        outputs = [stack.enter_context(log.open("w")) for log in logs]
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, text=True, env=env, cwd=workdir
            )
            for out in outputs
        ]
        codes = [p.wait() for p in procs]
        wall = time.perf_counter() - started
    for code, log in zip(codes, logs, strict=True):
        if code != 0:
            sys.exit(f"arena decide exited {code}:\n{log.read_text()}")
    return started, wall


def check(url: str, plan: Plan, fake: FakeOpenRouter) -> tuple[bool, str]:
    """Whether nothing was duplicated, and what was found; also how the agents split."""
    engine = make_engine(url)
    try:
        with session_factory(engine)() as session:
            agents = session.scalar(select(func.count()).select_from(Agent)) or 0
            decisions = session.execute(
                select(Decision.agent_id, Decision.status, Decision.claim_count, Decision.holder)
            ).all()
            trades = dict(
                session.execute(
                    select(Trade.decision_id, func.count()).group_by(Trade.decision_id)
                ).all()
            )
            ids = list(session.scalars(select(Decision.id)))
    finally:
        engine.dispose()
    calls = len(fake.chat_requests())
    per_agent = {agent_id for agent_id, *_ in decisions}
    claimed_once = all(claims == 1 for _a, _s, claims, _h in decisions)
    completed = all(status == "completed" for _a, status, _c, _h in decisions)
    trade_sets = [trades.get(decision_id, 0) for decision_id in ids]
    ok = (
        agents == plan.agents
        and len(decisions) == len(per_agent) == agents
        and claimed_once
        and completed
        and calls == agents
        and all(count == BETS_PER_ANSWER for count in trade_sets)
    )
    holders = Counter(holder for *_rest, holder in decisions)
    split = "/".join(str(n) for n in sorted(holders.values(), reverse=True))
    found = (
        f"{len(decisions)} decisions for {agents} agents, "
        f"{'each claimed once' if claimed_once else 'some claimed twice'}, "
        f"{'all completed' if completed else 'not all completed'}; {calls} model calls; "
        f"{sum(trade_sets)} trades ({', '.join(sorted({str(n) for n in trade_sets}))} per "
        f"decision); agents per process {split}"
    )
    return ok, found


def one_process(plan: Plan, served: Served, url: str, backend: str, workdir: Path) -> float:
    """Measure and print one ``arena decide`` over the whole run; returns its wall time."""
    fake = fake_openrouter(plan, served)
    with fake.serve() as openrouter_url:
        config = prepare(plan, served, openrouter_url, url, workdir)
        started, wall = decide(config, fake, 1, workdir)
    ok, found = check(url, plan, fake)
    overhead = (wall - plan.agents * plan.latency) / plan.agents
    arrivals = fake.arrivals
    first = arrivals[0] - started if arrivals else float("nan")
    gaps = [b - a - plan.latency for a, b in itertools.pairwise(arrivals)]
    between = statistics.median(gaps) if gaps else float("nan")
    last = started + wall - arrivals[-1] - plan.latency if arrivals else float("nan")
    print(
        f"{backend}, one process: wall {wall:.1f} s = {plan.agents} x {plan.latency:g} s + "
        f"{wall - plan.agents * plan.latency:.1f} s; overhead per agent {overhead * 1000:.0f} ms "
        f"(target < {TARGET_OVERHEAD_MS} ms)"
    )
    print(f"  before the first model call {first:.1f} s (start-up, market sync, universe freeze)")
    print(
        f"  between two calls, beyond the latency: median {between * 1000:.0f} ms (an agent's work)"
    )
    print(f"  after the last answer {last:.1f} s (its execution, the commitment, the exit)")
    if not ok:
        sys.exit(f"the one-process run went wrong: {found}")
    return wall


def median_of(plan: Plan, walls: list[float], backend: str) -> float:
    """The median one-process wall time, and its overhead per agent when there are runs to
    take it of."""
    wall = statistics.median(walls)
    if len(walls) > 1:
        overheads = sorted(
            round((w - plan.agents * plan.latency) / plan.agents * 1000) for w in walls
        )
        print(
            f"{backend}, median of {len(walls)} runs: overhead per agent "
            f"{(wall - plan.agents * plan.latency) / plan.agents * 1000:.0f} ms "
            f"(runs: {', '.join(f'{o} ms' for o in overheads)})"
        )
    return wall


def two_processes(plan: Plan, served: Served, url: str, one_wall: float, workdir: Path) -> bool:
    """Measure and print two ``arena decide`` sharing the run; whether nothing duplicated."""
    fake = fake_openrouter(plan, served)
    with fake.serve() as openrouter_url:
        config = prepare(plan, served, openrouter_url, url, workdir)
        _started, wall = decide(config, fake, 2, workdir)
    ok, found = check(url, plan, fake)
    print(
        f"postgresql, two processes: wall {wall:.1f} s; speed-up {one_wall / wall:.2f}x "
        f"(target >= {TARGET_SPEEDUP}x)"
    )
    print(f"  duplicates: {'none' if ok else 'FOUND'} ({found})")
    return ok


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", type=int, default=12, help="model families (default 12)")
    parser.add_argument("--replicates", type=int, default=3, help="agents per family (default 3)")
    parser.add_argument(
        "--latency", type=float, default=2.0, help="seconds each model call takes (default 2)"
    )
    parser.add_argument("--universe", type=int, default=500, help="universe size (default 500)")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("ARENA_TEST_POSTGRES_URL"),
        help="server for scratch PostgreSQL databases (default: $ARENA_TEST_POSTGRES_URL)",
    )
    parser.add_argument("--no-sqlite", action="store_true", help="skip SQLite")
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="one-process runs per database, each on a fresh one; the median is the figure "
        "(default 1; the host's speed varies from run to run)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args(argv)
    if args.smoke:  # one database: PostgreSQL when given (it runs both measurements)
        args.families, args.replicates, args.latency, args.universe = 2, 2, 0.05, 40
        args.no_sqlite = args.no_sqlite or bool(args.postgres_url)
    plan = Plan(args.families, args.replicates, args.latency, args.universe)
    logging.disable(logging.WARNING)
    byte_compile_arena()  # as an installed arena is (benchmarks/installed.py)
    print(
        f"decision run: {plan.families} families x {plan.replicates} replicates = {plan.agents} "
        f"agents, asked one after another;\n{plan.latency:g} s per model call, a "
        f"{plan.universe}-market universe in mode book"
    )
    duplicated = False
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp, serve_markets(plan) as served:
        workdir = Path(tmp)
        if not args.no_sqlite:
            walls = [
                one_process(plan, served, f"sqlite:///{workdir / f'one-{n}.db'}", "sqlite", workdir)
                for n in range(args.runs)
            ]
            median_of(plan, walls, "sqlite")
        if args.postgres_url:
            walls = []
            for _run in range(args.runs):
                with postgres_database(args.postgres_url) as url:
                    walls.append(one_process(plan, served, url, "postgresql", workdir))
            one_wall = median_of(plan, walls, "postgresql")
            with postgres_database(args.postgres_url) as url:
                duplicated = not two_processes(plan, served, url, one_wall, workdir)
        else:
            print("PostgreSQL skipped: pass --postgres-url or set ARENA_TEST_POSTGRES_URL")
    if duplicated:
        sys.exit(1)


if __name__ == "__main__":
    main()
