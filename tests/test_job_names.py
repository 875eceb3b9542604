"""Each job has one name (:class:`arena.domain.states.Job`), and the old names the interface
contract keeps still work as aliases: ``Job("resolution")``, the ``schedule.resolution_minutes``
key (in a file and as ``ARENA_SCHEDULE__RESOLUTION_MINUTES``) and ``arena resolve``. A
settlement whose report has a failure fails its CLI command and its scheduled slot alike."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer.main

from arena.cli import app
from arena.clock import Clock
from arena.config import Schedule, load_settings
from arena.demo_world import Simulation
from arena.domain.states import Job
from arena.errors import ConfigError
from arena.jobs.settle import SettleReport
from arena.slots import job_slot
from tests.cli.test_results import arena_main
from tests.conftest import Database
from tests.helpers import week_simulation, write_config

SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)


def test_each_job_has_one_name_and_the_old_one_reads_as_it() -> None:
    assert [job.value for job in Job] == [
        "cohort_start",
        "market_sync",
        "decision_run",
        "settlement",
        "snapshot",
        "analysis",
        "commitment",
    ]
    assert Job("resolution") is Job.SETTLEMENT
    assert Job("settlement") is Job.SETTLEMENT
    assert [job for job in Job if job.weekly] == [Job.COHORT_START, Job.DECISION_RUN]
    with pytest.raises(ValueError, match="settle"):
        Job("settle")


def test_the_schedule_gives_each_job_its_own_setting() -> None:
    schedule = Schedule(settlement_minutes=30, snapshot_minutes=15, decision_run="mon 01:00")
    assert schedule.weekly_spec(Job.DECISION_RUN) == "mon 01:00"
    assert schedule.weekly_spec(Job.COHORT_START) == "sun 00:00"
    assert schedule.every_minutes(Job.SETTLEMENT) == 30
    assert schedule.every_minutes(Job.SNAPSHOT) == 15
    assert schedule.every_minutes(Job.MARKET_SYNC) == 5
    assert schedule.every_minutes(Job.COMMITMENT) == 60


def test_resolution_minutes_in_a_file_is_settlement_minutes(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.yaml", "sqlite:///x.db", schedule={"resolution_minutes": 30}
    )
    settings = load_settings(config)
    assert settings.schedule.settlement_minutes == 30
    at = SUNDAY + timedelta(minutes=47)
    assert job_slot(settings, Job.SETTLEMENT, at) == SUNDAY + timedelta(minutes=30)
    assert "resolution_minutes" not in settings.masked()["schedule"]


def test_resolution_minutes_in_the_environment_overrides_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contract's variable overrides the file's key under its new name, as any variable
    overrides the file."""
    config = write_config(
        tmp_path / "c.yaml", "sqlite:///x.db", schedule={"settlement_minutes": 30}
    )
    monkeypatch.setenv("ARENA_SCHEDULE__RESOLUTION_MINUTES", "15")
    assert load_settings(config).schedule.settlement_minutes == 15


def test_both_names_in_one_file_are_refused_naming_both(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.yaml",
        "sqlite:///x.db",
        schedule={"settlement_minutes": 30, "resolution_minutes": 15},
    )
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    assert "schedule.settlement_minutes" in str(refused.value)
    assert "schedule.resolution_minutes" in str(refused.value)
    with pytest.raises(ConfigError, match="resolution_minutes"):
        Schedule.model_validate({"settlement_minutes": 30, "resolution_minutes": 15})


def test_an_alias_with_a_bad_value_is_refused_like_the_key(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", "sqlite:///x.db", schedule={"resolution_minutes": 7})
    with pytest.raises(ConfigError, match=r"schedule\.settlement_minutes"):
        load_settings(config)


def test_resolve_is_settle_under_its_old_name() -> None:
    """The same command (its behaviour: the CLI tests below and tests/cli/test_jobs_cli.py),
    hidden from ``arena --help`` and saying what it is in its own."""
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    resolve, settle = commands["resolve"], commands["settle"]
    assert [p.name for p in resolve.params] == [p.name for p in settle.params]
    assert not resolve.hidden and not settle.hidden  # both listed: resolve is in the contract
    assert "arena settle" in resolve.help


def _failed_settlement(*_args: object) -> SettleReport:
    return SettleReport(checked=2, resolved=1, failures=["market 559651: disk on fire"])


@pytest.mark.parametrize("command", ["settle", "resolve"])
def test_a_failed_settlement_exits_1(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("arena.runtime.settle_markets", _failed_settlement)
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'arena.db'}")
    done = arena_main(capsys, "--config", str(config), command, "--at", "2026-11-22T03:20:00Z")
    assert done.returncode == 1, done.stderr
    assert "settlement: 2 markets checked, 1 resolved" in done.stdout
    assert "1 market(s) failed to settle: market 559651: disk on fire" in done.stderr


@pytest.fixture
def sim(db: Database, tmp_path: Path) -> Iterator[Simulation]:
    with week_simulation(db.url, db.factory, tmp_path / "config.yaml", SUNDAY) as simulation:
        yield simulation


def test_a_failed_settlement_fails_its_slot(
    sim: Simulation, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = SUNDAY + timedelta(minutes=10)
    sim.clock.set(at)
    monkeypatch.setattr("arena.runtime.settle_markets", _failed_settlement)
    failed = sim.runtime.run_job(Job.SETTLEMENT, sim.clock)
    assert (failed.job, failed.slot, failed.status) == (Job.SETTLEMENT, at, "failed")
    assert "1 market(s) failed to settle: market 559651: disk on fire" in (failed.error or "")
    monkeypatch.undo()
    retried = sim.runtime.run_job(Job.SETTLEMENT, sim.clock)  # the slot is not done: run again
    assert retried.status == "succeeded"
    assert retried.counts is not None and retried.counts["failures"] == 0


def test_every_scheduled_job_stores_its_report_counts(sim: Simulation) -> None:
    clock: Clock = sim.clock
    sim.clock.set(SUNDAY + timedelta(minutes=10))
    # each job in its own turn, as --once runs them (not also right after the decision run)
    runs = {job: sim.runtime.run_job(job, clock, analyse=False) for job in Job}
    assert {job: run.status for job, run in runs.items()} == dict.fromkeys(Job, "succeeded")
    assert runs[Job.COHORT_START].counts == {"cohort_id": 1, "created": True, "agents": 3}
    assert runs[Job.SNAPSHOT].counts is not None
    assert runs[Job.SNAPSHOT].counts["taken_at"] == "2026-11-22T00:10:00Z"
    assert runs[Job.DECISION_RUN].counts is not None
    assert runs[Job.DECISION_RUN].counts["decided"] == 3
