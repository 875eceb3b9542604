"""A snapshot slot killed mid-run is redone or flagged (issue 22, finding 9), on SQLite and
PostgreSQL.

A real ``arena run --once`` process is SIGKILLed while its snapshot job waits on Gamma (the
price refresh of the held markets), which leaves the slot's run ``running`` by a dead holder
and no snapshot. Then:

* a restart within ``misfire_grace_seconds``: the daemon's catch-up (what ``arena run`` calls
  at start-up and every minute, here on the fake clock) takes the slot over and every agent
  gets its snapshot;
* a restart past the grace: the run is marked ``abandoned``, and ``arena status`` (text and
  JSON) and ``/metrics`` show it, with the snapshot slots that have no snapshot.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from arena.clock import FixedClock, iso_utc
from arena.config import load_settings
from arena.demo_world import Simulation, WorldPlan
from arena.domain.states import Job
from arena.fakes.serving import Reply, serve_handler
from arena.jobs.cohorts import start_cohort
from arena.jobs.guard import mark_abandoned
from arena.jobs.holders import this_process
from arena.jobs.status import read_status
from arena.store.db import transaction
from arena.store.models import Agent, JobRun, PortfolioSnapshot
from arena.web.app import create_app
from tests.conftest import Database
from tests.helpers import cli_env, run_arena, start_arena, write_config

SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)
KILLED = SUNDAY + timedelta(minutes=10)  # the snapshot slot the process dies in
FAMILIES = [  # baselines only: no model key in the killed process
    {"id": "market-follower", "kind": "baseline", "strategy": "market-follower"},
    {"id": "random-bettor", "kind": "baseline", "strategy": "random", "seed": 3},
    {"id": "always-hold", "kind": "baseline", "strategy": "always-hold"},
]


@dataclass
class Killed:
    """The arena after a process died in the snapshot of :data:`KILLED`."""

    sim: Simulation
    config: Path
    pid: int


def _snapshots(db: Database, at: datetime) -> int:
    with db.factory() as session:
        return (
            session.scalar(
                select(func.count())
                .select_from(PortfolioSnapshot)
                .where(PortfolioSnapshot.taken_at == at)
            )
            or 0
        )


def _run(db: Database, job: str, slot: datetime) -> JobRun | None:
    with db.factory() as session:
        return session.scalars(
            select(JobRun).where(JobRun.job == job, JobRun.slot == slot)
        ).one_or_none()


@pytest.fixture
def killed(db: Database, tmp_path: Path) -> Iterator[Killed]:
    settings_path = write_config(tmp_path / "sim.yaml", db.url, families=FAMILIES)
    sim = Simulation(
        load_settings(settings_path), db.factory, WorldPlan(SUNDAY, 7, n_markets=60, seed=5)
    )
    try:
        sim.step(SUNDAY + timedelta(minutes=5))  # the cohort, decisions (positions), 00:00 snapshot
        sim.clock.set(KILLED)
        sim.world.evolve(KILLED)
        # done: the process only has the snapshot left
        for job in (Job.MARKET_SYNC, Job.SETTLEMENT):
            assert sim.runtime.run_job(job, sim.clock).status == "succeeded"
        entered, release = threading.Event(), threading.Event()

        def hanging(method: str, path: str, query: dict[str, list[str]]) -> Reply:
            entered.set()
            release.wait(120)
            return sim.world.gamma.handle(method, path, query)

        with serve_handler(hanging) as gamma_url:
            config = write_config(
                tmp_path / "config.yaml",
                db.url,
                families=FAMILIES,
                polymarket={"gamma_url": gamma_url, "max_attempts": 1, "timeout_seconds": 300},
            )
            process = start_arena(
                "--config", str(config), "run", "--once", "--at", KILLED.isoformat(),
                env=cli_env(), cwd=tmp_path,
            )  # fmt: skip
            try:
                assert entered.wait(120), "the snapshot never asked Gamma for its prices"
                deadline = time.monotonic() + 60
                while (run := _run(db, "snapshot", KILLED)) is None or run.status != "running":
                    assert time.monotonic() < deadline, "no running snapshot run"
                    time.sleep(0.05)
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=30)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait(timeout=30)
                release.set()
        run = _run(db, "snapshot", KILLED)
        assert run is not None and run.status == "running"
        assert run.holder.split(":")[1] == str(process.pid)
        assert _snapshots(db, KILLED) == 0
        yield Killed(sim, config, process.pid)
    finally:
        sim.close()


def test_a_killed_snapshot_slot_is_taken_over_by_a_restart_within_the_grace(
    db: Database, killed: Killed
) -> None:
    restart = KILLED + timedelta(minutes=3)  # misfire_grace_seconds: 300
    killed.sim.clock.set(restart)
    results = killed.sim.runtime.catch_up(killed.sim.clock)
    assert [(r.job, r.slot, r.status) for r in results] == [("snapshot", KILLED, "succeeded")]
    with db.factory() as session:
        agents = session.scalar(select(func.count()).select_from(Agent))
    assert agents == len(FAMILIES)
    assert _snapshots(db, KILLED) == agents
    run = _run(db, "snapshot", KILLED)
    assert run is not None and run.status == "succeeded"
    status = json.loads(
        run_arena(
            "--config", str(killed.config), "status", "--format", "json", "--at",
            restart.isoformat(),
        ).stdout
    )  # fmt: skip
    assert status["snapshot_gaps"]["slots"] == [] and status["abandoned_runs"] == []


def test_a_killed_snapshot_slot_past_the_grace_is_abandoned_and_shown(
    db: Database, killed: Killed
) -> None:
    restart = KILLED + timedelta(minutes=20)  # 00:30: the 00:10 and 00:20 slots are lost
    settings = load_settings(killed.config)
    with db.factory() as session:  # before any process has looked: the dead holder shows
        before = read_status(session, settings, restart, datetime.now(UTC))
    assert [(g.slot, g.run) for g in before.snapshot_gaps.slots] == [
        (KILLED, f"abandoned: holder {before.abandoned_runs[0].holder} is gone"),
        (KILLED + timedelta(minutes=10), "never ran"),
    ]
    assert [(r.job, r.slot) for r in before.abandoned_runs] == [("snapshot", KILLED)]
    killed.sim.clock.set(restart)
    killed.sim.world.evolve(restart)
    killed.sim.runtime.run_due(restart)
    killed.sim.runtime.catch_up(killed.sim.clock)
    run = _run(db, "snapshot", KILLED)
    assert run is not None and run.status == "abandoned" and run.finished_at is None
    assert _snapshots(db, KILLED) == 0
    agents = len(FAMILIES)
    at = ["--at", restart.isoformat()]

    shown = run_arena("--config", str(killed.config), "status", "--format", "json", *at)
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    gaps = status["snapshot_gaps"]
    assert [g["slot"] for g in gaps["slots"]] == [
        iso_utc(KILLED),
        iso_utc(KILLED + timedelta(minutes=10)),
    ]
    assert gaps["slots"][0]["run"].startswith("abandoned")
    assert gaps["slots"][1]["run"] == "never ran"
    assert gaps["missing_snapshots"] == 2 * agents
    assert [(r["job"], r["slot"]) for r in status["abandoned_runs"]] == [
        ("snapshot", iso_utc(KILLED))
    ]
    assert status["abandoned_runs"][0]["holder"].endswith(f":{killed.pid}")
    assert any(w.startswith("snapshot gaps: 2 slots") for w in status["warnings"])
    assert any(w.startswith("abandoned runs: 1 snapshot") for w in status["warnings"])

    text = run_arena("--config", str(killed.config), "status", "--wide", *at)
    assert text.returncode == 0, text.stderr
    assert "no warnings" not in text.stdout
    assert "snapshot gaps: 2 slots" in text.stdout and "abandoned runs: 1 snapshot" in text.stdout

    app = create_app(settings)
    app.state.ctx.clock = FixedClock(restart)
    with TestClient(app) as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    samples = {
        (sample.name, sample.labels.get("job")): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }
    assert samples[("arena_snapshot_gap_slots", None)] == 2
    assert samples[("arena_missing_snapshots", None)] == 2 * agents
    assert samples[("arena_abandoned_job_runs", "snapshot")] == 1
    assert samples[("arena_abandoned_job_runs", "market_sync")] == 0


def test_only_runs_whose_holder_is_gone_are_abandoned(db: Database, tmp_path: Path) -> None:
    """A run held elsewhere under a live lease, or by this live process, is in progress: not
    abandoned, and its slot not a gap; an expired lease elsewhere is a holder gone."""
    settings = load_settings(write_config(tmp_path / "c.yaml", db.url, families=FAMILIES))
    start_cohort(db.factory, settings, FixedClock(SUNDAY))
    wall = datetime.now(UTC)
    minute = timedelta(minutes=1)
    held = {
        ("snapshot", SUNDAY + 10 * minute): ("other-host:1:1", wall + timedelta(hours=1)),
        ("snapshot", SUNDAY + 20 * minute): ("other-host:2:1", wall - timedelta(seconds=1)),
        ("market_sync", SUNDAY + 5 * minute): (str(this_process()), wall),
    }
    with transaction(db.factory) as session:
        for (job, slot), (holder, lease) in held.items():
            session.add(
                JobRun(job=job, slot=slot, holder=holder, status="running", started_at=slot,
                       lease_until=lease)
            )  # fmt: skip
    at = SUNDAY + timedelta(minutes=30)
    assert mark_abandoned(db.factory, FixedClock(at)) == [
        ("snapshot", SUNDAY + timedelta(minutes=20))
    ]
    assert mark_abandoned(db.factory, FixedClock(at)) == []  # idempotent
    with db.factory() as session:
        status = read_status(session, settings, at, datetime.now(UTC))
    assert [(r.job, r.slot, r.holder) for r in status.abandoned_runs] == [
        ("snapshot", SUNDAY + timedelta(minutes=20), "other-host:2")
    ]
    # 00:00 never ran; 00:10 is in progress; 00:30 is within its grace
    assert [(g.slot, g.run.split(":")[0], g.missing) for g in status.snapshot_gaps.slots] == [
        (SUNDAY, "never ran", len(FAMILIES)),
        (SUNDAY + timedelta(minutes=20), "abandoned", len(FAMILIES)),
    ]
