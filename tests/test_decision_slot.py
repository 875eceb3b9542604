"""A decision slot is done only when its week's cohort is decided (issue 22, finding 1), on
SQLite and PostgreSQL:

* the decision run that fires before the week's cohort exists (the database was down until the
  fire time, and the scheduled job ran before the catch-up tick that creates the cohort) is
  not recorded as succeeded, and the catch-up then decides every agent of that week;
* the catch-up decides the week's undecided agents even when the slot's row says succeeded;
* a schedule whose decision run comes before the cohort start in the week (or at the same
  minute) is refused at load, with one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.config import load_settings
from arena.demo_world import Simulation
from arena.domain.states import Job
from arena.errors import ConfigError
from arena.store.db import transaction
from arena.store.models import Agent, Cohort, Decision, JobRun
from tests.conftest import Database
from tests.helpers import WEEK_FAMILIES, run_arena, week_simulation, write_config

SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)
FIRE = SUNDAY + timedelta(minutes=5)  # the default decision_run, "sun 00:05"
FAMILIES = WEEK_FAMILIES


@pytest.fixture
def sim(db: Database, tmp_path: Path) -> Iterator[Simulation]:
    with week_simulation(db.url, db.factory, tmp_path / "config.yaml", SUNDAY) as simulation:
        yield simulation


def _at(sim: Simulation, at: datetime) -> None:
    sim.clock.set(at)
    sim.world.evolve(at)


def _undecided(db: Database, at: datetime) -> list[tuple[int, int]]:
    """(cohort id, agent id) of every agent of a cohort started by ``at`` with no completed
    decision for its week at ``at``."""
    with db.factory() as session:
        agents = session.execute(
            select(Cohort.id, Cohort.week_start, Agent.id)
            .join(Agent, Agent.cohort_id == Cohort.id)
            .where(Cohort.week_start <= at)
        ).all()
        done = set(
            session.execute(
                select(Decision.agent_id, Decision.decision_week).where(
                    Decision.status == "completed"
                )
            ).all()
        )
    return [
        (cohort_id, agent_id)
        for cohort_id, start, agent_id in agents
        if (agent_id, (at - start) // timedelta(days=7) + 1) not in done
    ]


def _decision_run(db: Database, slot: datetime) -> str | None:
    with db.factory() as session:
        return session.scalar(
            select(JobRun.status).where(JobRun.job == "decision_run", JobRun.slot == slot)
        )


def test_a_decision_run_before_its_cohort_is_not_done_and_the_catch_up_decides_the_week(
    db: Database, sim: Simulation
) -> None:
    """The race of a database down from 00:00 to 00:04: at 00:05 the scheduled decision run
    starts before the catch-up tick creates the cohort. First week: no cohort at all; second
    week: last week's cohort is there (and is decided), this week's is not yet."""
    for week in range(2):
        fire = FIRE + timedelta(days=7 * week)
        _at(sim, fire)
        early = sim.runtime.run_job(Job.DECISION_RUN, sim.clock)  # the scheduled job, first
        assert early.status == "failed" and "no cohort for the week" in (early.error or "")
        assert _decision_run(db, fire) == "failed"  # not done: never "succeeded"
        results = sim.runtime.catch_up(sim.clock)  # the tick of the same second
        weekly = [(r.job, r.status) for r in results if r.job in ("cohort_start", "decision_run")]
        assert weekly == [("cohort_start", "succeeded"), ("decision_run", "succeeded")]
        assert _decision_run(db, fire) == "succeeded"
        assert _undecided(db, fire) == []
        assert sim.runtime.week_due(fire).warnings() == []
    with db.factory() as session:
        decided = session.execute(select(Decision.cohort_id, Decision.decision_week)).all()
    first, second = sorted({cohort for cohort, _ in decided})
    assert sorted(decided).count((first, 1)) == len(FAMILIES)
    assert sorted(decided).count((first, 2)) == len(FAMILIES)
    assert sorted(decided).count((second, 1)) == len(FAMILIES)


def test_by_hand_a_week_without_its_cohort_is_nothing_to_decide(sim: Simulation) -> None:
    """The rule is the slot's: ``arena decide`` (no slot) with no cohort decides nothing and
    succeeds (exit 0), while the run for the slot fails, so the slot is not done."""
    _at(sim, FIRE)
    by_hand = sim.runtime.decision_run(sim.clock)
    assert by_hand.results == [] and by_hand.missing_cohort is None
    assert by_hand.failure() is None
    for_slot = sim.runtime.decision_run(sim.clock, slot=FIRE)
    assert for_slot.missing_cohort == SUNDAY
    assert "no cohort for the week of 2026-11-22" in (for_slot.failure() or "")


def test_the_catch_up_decides_agents_whatever_the_slot_row_says(
    db: Database, sim: Simulation
) -> None:
    """What the old rule left behind: the week's decision slot recorded as succeeded while the
    cohort's agents have no decision. The catch-up reopens the slot and decides them."""
    _at(sim, SUNDAY)
    assert sim.runtime.run_job(Job.COHORT_START, sim.clock).status == "succeeded"
    with transaction(db.factory) as session:
        session.add(
            JobRun(
                job="decision_run",
                slot=FIRE,
                holder="old-host:1:1",
                status="succeeded",
                started_at=FIRE,
                finished_at=FIRE,
                lease_until=FIRE,
                counts={"decided": 0},
            )
        )
    later = FIRE + timedelta(minutes=1)
    _at(sim, later)
    assert len(_undecided(db, later)) == len(FAMILIES)
    results = sim.runtime.catch_up(sim.clock)
    assert ("decision_run", "succeeded") in [(r.job, r.status) for r in results]
    assert _undecided(db, later) == []
    assert sim.runtime.catch_up(sim.clock) == []  # nothing owed any more


@pytest.mark.parametrize(
    ("cohort_start", "decision_run"),
    [("mon 00:00", "sun 00:05"), ("sun 00:05", "sun 00:05"), ("sat 23:00", "sun 00:05")],
)
def test_a_decision_run_before_the_cohort_start_is_refused_with_one_line(
    db: Database, tmp_path: Path, cohort_start: str, decision_run: str
) -> None:
    config = write_config(
        tmp_path / "config.yaml",
        db.url,
        families=FAMILIES,
        schedule={"cohort_start": cohort_start, "decision_run": decision_run},
    )
    with pytest.raises(ConfigError, match=r"decision_run .* must come after cohort_start") as info:
        load_settings(config)
    assert "\n" not in str(info.value)
    result = run_arena("--config", str(config), "status", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "must come after cohort_start" in lines[0], result.stderr
