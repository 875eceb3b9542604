"""``arena status --format json`` and ``arena families --format json`` through the real CLI, on
both databases: the status is :func:`arena.jobs.status.read_status` as JSON, judged at ``--at``
(no job run, outage or cohort from after that instant), and the families are the configured
lineup."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from arena.clock import iso_utc
from arena.config import load_settings
from arena.domain.states import Job
from arena.jobs.status import read_status
from arena.store.db import transaction
from arena.store.models import JobRun
from tests.cli.test_results import arena_main
from tests.conftest import Database
from tests.helpers import write_config

WEEK = datetime(2026, 11, 15, tzinfo=UTC)  # a Sunday
FAMILIES = [
    {"id": "gpt-x", "display_name": "GPT X", "openrouter_id": "openai/gpt-x"},
    {"id": "always-hold", "kind": "baseline", "strategy": "always-hold"},
]


def _run(job: str, slot: datetime, status: str = "succeeded") -> JobRun:
    return JobRun(
        job=job,
        slot=slot,
        holder="host:1:1",
        status=status,
        started_at=slot,
        finished_at=slot + timedelta(minutes=1),
        lease_until=slot + timedelta(minutes=2),
        counts=None,
        error=None,
    )


@pytest.fixture
def config(db: Database, tmp_path: Path) -> Path:
    with transaction(db.factory) as session:
        for hours in range(0, 48, 1):  # a snapshot every hour of two days
            session.add(_run("snapshot", WEEK + timedelta(hours=hours)))
        session.add(_run("market_sync", WEEK + timedelta(hours=1), status="failed"))
        session.add(_run("market_sync", WEEK + timedelta(hours=30)))
    return write_config(tmp_path / "config.yaml", db.url, families=FAMILIES)


def _status(capsys: pytest.CaptureFixture[str], config: Path, at: datetime) -> dict:
    done = arena_main(
        capsys, "--config", str(config), "status", "--format", "json", "--at", at.isoformat()
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_status_json_is_the_status_read_at_the_given_instant(
    db: Database, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    at = WEEK + timedelta(hours=10, minutes=3)
    shown = _status(capsys, config, at)
    with db.factory() as session:
        expected = read_status(session, load_settings(config), at, at).to_json()
    assert shown["now"] == expected["now"] == iso_utc(at)  # the one written form
    assert shown["jobs"] == expected["jobs"]
    assert shown["cohorts"] == expected["cohorts"]
    jobs = {line["job"]: line for line in shown["jobs"]}
    # judged at --at: the latest runs at or before it, not the newest in the database
    assert jobs["snapshot"]["last_slot"] == iso_utc(WEEK + timedelta(hours=10))
    assert jobs["market_sync"]["last_slot"] == iso_utc(WEEK + timedelta(hours=1))
    assert jobs["market_sync"]["status"] == "failed"
    assert jobs["cohort_start"]["status"] == "never"
    later = {
        line["job"]: line for line in _status(capsys, config, WEEK + timedelta(days=3))["jobs"]
    }
    assert later["snapshot"]["last_slot"] == iso_utc(WEEK + timedelta(hours=47))
    assert later["market_sync"]["status"] == "succeeded"
    before = {
        line["job"]: line for line in _status(capsys, config, WEEK - timedelta(hours=1))["jobs"]
    }
    assert all(line["status"] == "never" for line in before.values())


def test_families_json_lists_the_configured_lineup(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = arena_main(capsys, "--config", str(config), "families", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert rows == [
        {
            "id": "gpt-x",
            "kind": "openrouter",
            "display_name": "GPT X",
            "target": "openai/gpt-x",
            "active": True,
            "ready": "needs OPENROUTER_API_KEY",
        },
        {
            "id": "always-hold",
            "kind": "baseline",
            "display_name": "always-hold",
            "target": "strategy always-hold",
            "active": True,
            "ready": "yes",
        },
    ]


def test_a_run_stored_under_the_old_name_resolution_is_the_settlement(
    db: Database, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``job_runs`` row written as ``resolution`` (the settlement job's old name) reads as
    the settlement's run, in the status read and in ``arena status --format json``."""
    slot = WEEK + timedelta(hours=2, minutes=10)
    with transaction(db.factory) as session:
        session.add(_run("resolution", slot, status="failed"))
    at = WEEK + timedelta(hours=3)
    with db.factory() as session:
        status = read_status(session, load_settings(config), at, at)
    assert [line.job for line in status.jobs] == list(Job)
    settlement = {line.job: line for line in status.jobs}[Job.SETTLEMENT]
    assert settlement.status == "failed"
    jobs = {line["job"]: line for line in _status(capsys, config, at)["jobs"]}
    assert "resolution" not in jobs
    assert jobs["settlement"]["last_slot"] == iso_utc(slot)
    assert jobs["settlement"]["status"] == "failed"
