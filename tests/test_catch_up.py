"""A week is never lost (issue 10, finding 2): the daemon's catch-up runs the week's cohort
start and decision run when they are due and not done — started after the fire time, the
database unreachable at the fire time, or the run's holder killed — on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from arena.demo_world import Simulation
from arena.domain.states import Job
from arena.jobs.holders import Holder, this_process
from arena.store.db import make_engine, session_factory, transaction
from arena.store.models import Cohort, Decision, DecisionUniverse, JobRun, SystemLog
from tests.conftest import Database
from tests.helpers import WEEK_FAMILIES, week_simulation

SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)
FAMILIES = WEEK_FAMILIES


@pytest.fixture
def sim(db: Database, tmp_path: Path) -> Iterator[Simulation]:
    with week_simulation(db.url, db.factory, tmp_path / "config.yaml", SUNDAY) as simulation:
        yield simulation


def _counts(db: Database) -> tuple[int, int]:
    with db.factory() as session:
        cohorts = session.scalar(select(func.count()).select_from(Cohort)) or 0
        decisions = (
            session.scalar(
                select(func.count()).select_from(Decision).where(Decision.status == "completed")
            )
            or 0
        )
    return cohorts, decisions


def _step(sim: Simulation, at: datetime) -> None:
    sim.clock.set(at)
    sim.world.evolve(at)


def test_a_daemon_started_after_the_fire_time_catches_up(db: Database, sim: Simulation) -> None:
    at = SUNDAY + timedelta(minutes=7)  # a Sunday-morning deploy, two minutes after 00:05
    _step(sim, at)
    assert sim.runtime.week_due(at).missing_cohort == SUNDAY
    results = sim.runtime.catch_up(sim.clock)
    # and the market sync of 00:05, missed two minutes ago: within misfire_grace_seconds
    assert [r.job for r in results] == ["cohort_start", "decision_run", "market_sync"]
    assert all(r.status == "succeeded" for r in results), results
    assert _counts(db) == (1, len(FAMILIES))
    assert sim.runtime.week_due(at).warnings() == []
    with db.factory() as session:
        events = session.scalars(select(SystemLog.event).where(SystemLog.event == "caught_up"))
        assert len(list(events)) == 3  # every missed slot recorded
    assert sim.runtime.catch_up(sim.clock) == []  # nothing owed any more


def test_database_unreachable_at_the_fire_time_is_caught_up(db: Database, sim: Simulation) -> None:
    _step(sim, SUNDAY)
    sim.runtime.run_job(Job.COHORT_START, sim.clock)
    _step(sim, SUNDAY + timedelta(minutes=5))
    good = sim.runtime.factory
    sim.runtime.factory = session_factory(make_engine("postgresql+psycopg://x@127.0.0.1:9/none"))
    with pytest.raises(OperationalError):  # the fire time: no run row can be written
        sim.runtime.run_job(Job.DECISION_RUN, sim.clock)
    sim.runtime.factory = good
    later = SUNDAY + timedelta(minutes=6)
    _step(sim, later)
    due = sim.runtime.week_due(later)
    assert due.missing_decision_run == SUNDAY + timedelta(minutes=5)
    assert "missing decision run" in due.warnings()[0]
    results = sim.runtime.catch_up(sim.clock)
    assert [(r.job, r.status) for r in results] == [
        ("decision_run", "succeeded"),
        ("market_sync", "succeeded"),  # its 00:05 slot, lost in the same outage
    ]
    assert _counts(db) == (1, len(FAMILIES))


def _dead_holder() -> str:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    started = int(psutil.Process(proc.pid).create_time())
    proc.wait()
    return str(Holder(this_process().host, proc.pid, started))


def test_a_run_whose_holder_was_killed_is_taken_over_at_once(db: Database, sim: Simulation) -> None:
    _step(sim, SUNDAY)
    sim.runtime.run_job(Job.COHORT_START, sim.clock)
    fire = SUNDAY + timedelta(minutes=5)
    _step(sim, fire)
    dead = _dead_holder()
    with transaction(db.factory) as session:  # what a SIGKILL mid-run leaves behind
        session.add(
            JobRun(
                job="decision_run",
                slot=fire,
                holder=dead,
                status="running",
                started_at=fire,
                lease_until=datetime.now(UTC) + timedelta(hours=1),
            )
        )
    due = sim.runtime.week_due(fire)
    assert "which is gone" in (due.decision_run_status or "")
    results = sim.runtime.catch_up(sim.clock)
    assert [(r.job, r.status) for r in results] == [
        ("decision_run", "succeeded"),
        # the 00:00 slots this test never ran, still within misfire_grace_seconds
        ("settlement", "succeeded"),
        ("snapshot", "succeeded"),
        ("commitment", "succeeded"),
    ]
    assert _counts(db) == (1, len(FAMILIES))


def test_a_live_holder_is_reported_not_taken_over(db: Database, sim: Simulation) -> None:
    _step(sim, SUNDAY)
    sim.runtime.run_job(Job.COHORT_START, sim.clock)
    fire = SUNDAY + timedelta(minutes=5)
    _step(sim, fire)
    with transaction(db.factory) as session:
        session.add(
            JobRun(
                job="decision_run",
                slot=fire,
                holder="other-host:4242:1700000000",
                status="running",
                started_at=fire,
                lease_until=sim.clock.now() + timedelta(seconds=90),
            )
        )
    result = sim.runtime.run_job(Job.DECISION_RUN, sim.clock)
    assert result.status == "held"
    assert result.describe().startswith("held by other-host:4242 until ")
    assert _counts(db) == (1, 0)


def test_once_never_runs_last_weeks_decision_slot_in_the_new_week(
    db: Database, sim: Simulation
) -> None:
    """`run --once` (cron every few minutes) in the minutes between the new week's cohort start
    (Sunday 00:00) and its decision run (00:05), after a week whose decision run never
    succeeded: that slot's week is over, so it is not run; the new week decides at its own
    fire time, on a universe frozen then, not minutes early under last week's slot."""
    _step(sim, SUNDAY)
    sim.runtime.run_job(Job.COHORT_START, sim.clock)  # last week: the decision run never ran
    sunday = SUNDAY + timedelta(days=7)
    early = sunday + timedelta(minutes=2)
    _step(sim, early)
    results = {r.job: r for r in sim.runtime.run_due(early)}
    assert results["cohort_start"].status == "succeeded"
    assert results["decision_run"].slot == SUNDAY + timedelta(minutes=5)
    assert results["decision_run"].status == "week over"
    assert results["decision_run"].final  # nothing owed: `--once` does not fail for it
    assert not results["decision_run"].ran
    assert _counts(db) == (2, 0)
    with db.factory() as session:
        assert session.scalar(select(func.count()).select_from(DecisionUniverse)) == 0
        run = session.scalars(select(JobRun).where(JobRun.job == "decision_run")).all()
        assert run == []  # last week's slot is not marked as run
    fire = sunday + timedelta(minutes=5)
    _step(sim, fire)
    results = {r.job: r for r in sim.runtime.run_due(fire)}
    assert (results["decision_run"].slot, results["decision_run"].status) == (fire, "succeeded")
    with db.factory() as session:
        assert session.scalars(select(DecisionUniverse.frozen_at)).all() == [fire]
        weeks = session.execute(select(Decision.decision_week, Decision.completed_at)).all()
    # Both cohorts of the decision window decided at the fire time: the new one its first
    # week, last week's cohort its second.
    assert sorted(week for week, _ in weeks) == [1] * len(FAMILIES) + [2] * len(FAMILIES)
    assert {at for _, at in weeks} == {fire}
