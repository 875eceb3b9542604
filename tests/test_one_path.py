"""Every scheduled job has one path: its CLI command and the daemon's runtime do the same.

Two copies of one starting database go through the same weeks, one job at a time against the
same fake Gamma (over real HTTP): copy A through the real ``arena`` commands in fresh
processes, copy B through :class:`arena.runtime.Runtime`. Afterwards the two databases are
equal row for row, except for what names the process or reads the wall clock (a decision
claim's holder and lease). The weeks include a decision run on a universe from which a held
market dropped out of Gamma's listing, and a resolution that completes a cohort.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from arena.clock import FixedClock
from arena.config import load_settings
from arena.domain.states import Job
from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.runtime import Runtime, production_runtime
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import Base, Cohort, Decision, Position, UniverseMarket
from tests.helpers import cli_env, run_arena, write_config

W1 = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
W2, W3 = W1 + timedelta(days=7), W1 + timedelta(days=14)
FAMILIES = [
    {"id": "market-follower", "kind": "baseline", "strategy": "market-follower"},
    {"id": "random-bettor", "kind": "baseline", "strategy": "random", "seed": 3},
    {"id": "always-hold", "kind": "baseline", "strategy": "always-hold"},
]
# A claim's random token, the process that held it and its real-clock lease: they differ
# between two processes by design (methodology, "Idempotent decision claims").
PROCESS_COLUMNS = {
    ("decisions", "claim_token"),
    ("decisions", "holder"),
    ("decisions", "lease_until"),
    ("decision_attempts", "claim_token"),
}


class Arena:
    """One database, driven either through the CLI or through the runtime."""

    def __init__(self, path: Path, config: Path) -> None:
        self.path, self.config = path, config

    def cli(self, *args: str) -> None:
        env = cli_env(ARENA_DATABASE_URL=f"sqlite:///{self.path}")
        done = run_arena("--config", str(self.config), *args, env=env, timeout=300)
        assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"

    @contextmanager
    def runtime(self) -> Iterator[Runtime]:
        settings = load_settings(self.config, database_url=f"sqlite:///{self.path}")
        engine = make_engine(settings.database_url)
        upgrade(engine)
        try:
            with production_runtime(settings, session_factory(engine)) as runtime:
                yield runtime
        finally:
            engine.dispose()  # checkpoints SQLite's WAL, so the file can be copied


JOBS: dict[Job, tuple[list[str], Any]] = {
    Job.COHORT_START: (["cohort", "start"], lambda rt, clock: rt.cohort_start(clock)),
    Job.MARKET_SYNC: (["markets", "sync"], lambda rt, clock: rt.market_sync(clock)),
    Job.DECISION_RUN: (["decide"], lambda rt, clock: rt.decision_run(clock)),
    Job.SETTLEMENT: (["settle"], lambda rt, clock: rt.settlement(clock)),
    Job.SNAPSHOT: (["snapshot"], lambda rt, clock: rt.snapshot(clock)),
    Job.COMMITMENT: (["record", "commit"], lambda rt, clock: rt.commitment(clock)),
}


def both(cli: Arena, runtime: Arena, job: Job, at: datetime) -> Any:
    """Run ``job`` at ``at`` on both copies: the CLI first, then the runtime."""
    command, method = JOBS[job]
    cli.cli(*command, "--at", at.isoformat())
    with runtime.runtime() as rt:
        report = method(rt, FixedClock(at))
    return report


def rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    engine = make_engine(f"sqlite:///{path}")
    tables: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            columns = [c for c in table.columns if (table.name, c.name) not in PROCESS_COLUMNS]
            order = list(table.primary_key.columns)
            result = conn.execute(select(*columns).order_by(*order))
            tables[table.name] = [tuple(row) for row in result]
        tables["alembic_version"] = list(conn.execute(text("SELECT * FROM alembic_version")))
    engine.dispose()
    return tables


def held_by(path: Path, cohort_id: int) -> set[str]:
    engine = make_engine(f"sqlite:///{path}")
    with session_factory(engine)() as session:
        held = set(
            session.scalars(
                select(Position.market_id).where(
                    Position.cohort_id == cohort_id, Position.status == "OPEN"
                )
            )
        )
    engine.dispose()
    return held


@pytest.fixture
def world() -> FakeGammaWorld:
    return FakeGammaWorld(n_markets=120, seed=5, start=W1 - timedelta(hours=1))


def test_cli_and_runtime_leave_equal_databases(tmp_path: Path, world: FakeGammaWorld) -> None:
    with serve_fake_gamma(world) as gamma_url:
        config = write_config(
            tmp_path / "config.yaml",
            "sqlite:///unused.db",
            families=FAMILIES,
            polymarket={"gamma_url": gamma_url},
            benchmark={"universe_size": 40, "decision_cohort_limit": 2},
        )
        # The starting database: a first cohort that decided and holds positions.
        start = tmp_path / "start.db"
        with Arena(start, config).runtime() as rt:
            rt.cohort_start(FixedClock(W1))
            first = rt.decision_run(FixedClock(W1 + timedelta(minutes=5)))
            assert first.universe_id is not None
            rt.snapshot(FixedClock(W1 + timedelta(minutes=10)))
        held = sorted(held_by(start, 1), key=int)
        assert held, "the first cohort holds positions"
        for name in ("a.db", "b.db"):
            shutil.copy(start, tmp_path / name)
        cli, runtime = Arena(tmp_path / "a.db", config), Arena(tmp_path / "b.db", config)

        # Week 2: a held market falls out of the top of Gamma's listing (still open).
        dropped = held[0]
        world.markets[dropped].volume = Decimal(1)
        assert dropped not in world.expected_top(40)
        both(cli, runtime, Job.COHORT_START, W2)
        both(cli, runtime, Job.MARKET_SYNC, W2 + timedelta(minutes=1))
        report = both(cli, runtime, Job.DECISION_RUN, W2 + timedelta(minutes=5))
        assert report.failure() is None
        both(cli, runtime, Job.SNAPSHOT, W2 + timedelta(minutes=10))

        # Every market the first cohort holds resolves; its settlement runs in week 3, when
        # the first cohort has left the decision window, so the settlement completes it.
        for market_id in sorted(held_by(tmp_path / "b.db", 1), key=int):
            world.resolve(market_id, 0)
        both(cli, runtime, Job.COHORT_START, W3)
        settled = both(cli, runtime, Job.SETTLEMENT, W3 + timedelta(minutes=20))
        assert 1 in settled.cohorts_completed
        both(cli, runtime, Job.SNAPSHOT, W3 + timedelta(minutes=30))
        committed = both(cli, runtime, Job.COMMITMENT, W3 + timedelta(hours=1))
        assert committed.committed is not None  # the settlements since the decision run's

    a, b = rows(tmp_path / "a.db"), rows(tmp_path / "b.db")
    assert a.keys() == b.keys()
    for table in a:
        for left, right in zip(a[table], b[table], strict=True):
            diff = [(i, x, y) for i, (x, y) in enumerate(zip(left, right, strict=True)) if x != y]
            assert not diff, f"table {table} row {left[0]}: {diff}"
    # What the test is about did happen, in both.
    engine = make_engine(f"sqlite:///{tmp_path / 'a.db'}")
    with session_factory(engine)() as session:
        cohort = session.get(Cohort, 1)
        assert cohort is not None and cohort.status == "completed"
        week2 = session.scalars(
            select(Decision.universe_id).where(Decision.decision_week == 2).distinct()
        ).all()
        frozen = session.execute(
            select(UniverseMarket.market_id, UniverseMarket.held_only).where(
                UniverseMarket.universe_id.in_(week2)
            )
        ).all()
        offered = {market_id for market_id, held_only in frozen if not held_only}
        assert offered and dropped not in offered  # not offered as a new opportunity...
        assert (dropped, True) in frozen  # ...only shown under the positions that hold it
    engine.dispose()
