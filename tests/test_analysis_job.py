"""The daemon's ``analysis`` job (issue 24): it runs right after a decision run and a
settlement, in its own ``job_runs`` row; when it fails, the job before it still succeeds, the
failure is recorded on the analysis run, the previous stored result stays served, and the next
run computes again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from arena.analytics.stored import V2, latest_analysis
from arena.demo_world import Simulation
from arena.domain.states import Job
from arena.store.models import JobRun
from tests.conftest import Database
from tests.helpers import week_simulation

SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)


@pytest.fixture
def sim(db: Database, tmp_path: Path) -> Iterator[Simulation]:
    with week_simulation(db.url, db.factory, tmp_path / "config.yaml", SUNDAY) as simulation:
        yield simulation


def _runs(db: Database, job: Job) -> list[tuple[datetime, str, str | None]]:
    with db.factory() as session:
        return [
            (run.slot, run.status, run.error)
            for run in session.scalars(select(JobRun).where(JobRun.job == job).order_by(JobRun.id))
        ]


def test_a_failing_analysis_fails_only_itself(
    db: Database, sim: Simulation, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = sim.runtime
    sim.clock.set(SUNDAY + timedelta(minutes=10))
    assert runtime.run_job(Job.COHORT_START, sim.clock).status == "succeeded"
    assert runtime.run_job(Job.DECISION_RUN, sim.clock).status == "succeeded"
    # the analysis ran right after the decision run, and stored its result
    assert [status for _slot, status, _error in _runs(db, Job.ANALYSIS)] == ["succeeded"]
    with db.factory() as session:
        before = latest_analysis(session, V2)
    assert before is not None

    def broken(*_args: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("arena.analytics.stored.refresh_analysis", broken)
    sim.clock.set(SUNDAY + timedelta(minutes=20))
    settled = runtime.run_job(Job.SETTLEMENT, sim.clock)
    assert settled.status == "succeeded"  # the job before the analysis is not failed by it
    slot, status, error = _runs(db, Job.ANALYSIS)[-1]
    assert (slot, status) == (SUNDAY + timedelta(minutes=20), "failed")
    assert error == "RuntimeError: disk on fire"
    with db.factory() as session:
        kept = latest_analysis(session, V2)
    assert kept == before  # the previous result stays served

    monkeypatch.undo()  # the next slot retries, and the daemon went on
    sim.clock.set(SUNDAY + timedelta(minutes=30))
    assert runtime.run_job(Job.ANALYSIS, sim.clock).status == "succeeded"
    assert runtime.run_job(Job.SNAPSHOT, sim.clock).status == "succeeded"
