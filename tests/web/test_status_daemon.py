"""``/status`` and ``arena status`` tell real trouble apart from a database no daemon serves
(issue 23: right after the demo they showed 34 warnings, among them 32 "unfinished decision
... not decided yet", and "next run" times although nothing would run them).

One function decides it (:func:`arena.jobs.status.read_status`), from the database alone: a
daemon's latest job run lies minutes before now, a demo's simulated runs end hours or weeks
before it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import insert

from arena.config import load_settings
from arena.domain.states import Job, JobRunStatus
from arena.jobs.status import read_status
from arena.store.schema import job_runs
from arena.web.app import create_app
from tests.conftest import Database
from tests.helpers import cli_env, run_arena, write_config
from tests.web.conftest import Site

SCHEDULE_WORK = ("not decided yet", "missing cohort", "(never ran)", "snapshot gaps")


def test_a_database_no_daemon_serves_shows_no_schedule_warnings(client: TestClient) -> None:
    """The demo's database (SQLite) and the simulated one (PostgreSQL): nothing runs them, so
    the work their schedule owes is information, headed by a line that says so."""
    data = client.get("/api/v1/status").json()
    assert data["daemon"]["serving"] is False
    assert data["headline"].startswith("no daemon has run against this database since ")
    assert data["daemon"]["last_run"][:10] in data["headline"]
    for warning in data["warnings"]:
        assert not any(text in warning for text in SCHEDULE_WORK), warning
    page = client.get("/status")
    assert page.status_code == 200
    assert "no daemon has run against this database since" in page.text
    assert "<th>next if run</th>" in page.text and "<th>next run</th>" not in page.text


def test_the_demo_status_collapses_what_is_due(demo_site: Site) -> None:
    """Right after the demo: no warning about the week's cohort, decision run or decisions;
    they are information, the undecided decisions in one line."""
    with demo_site.client() as client:
        data = client.get("/api/v1/status").json()
    pending = data["pending"]
    assert any(p.startswith("missing cohort: ") for p in pending), pending
    assert any("decision(s) of this week not decided yet" in p for p in pending), pending
    assert not any(p.startswith("unfinished decision:") for p in pending), pending
    assert len(data["warnings"]) < 5, data["warnings"]  # (was 34)


def test_arena_status_on_the_demo_says_no_daemon_runs_it(demo_site: Site) -> None:
    env = cli_env(COLUMNS="80", ARENA_DATABASE_URL=demo_site.url)
    shown = run_arena("--config", str(demo_site.config), "status", env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("no daemon has run against this database since ")
    assert "next if run" in shown.stdout and "next run" not in shown.stdout
    assert "due, for a daemon to do (information):" in shown.stdout
    warnings = shown.stdout.split("due, for a daemon to do")[0]
    assert "not decided yet" not in warnings and "missing cohort" not in warnings


def test_a_live_daemon_still_warns_about_a_missing_decision_run(
    db: Database, tmp_path: Path
) -> None:
    """A daemon ran a market sync five minutes ago (a job run at the current clock), but this
    week's cohort and decision run are missing: those are warnings, as before, on the page,
    in its JSON and in ``arena status``."""
    config = write_config(tmp_path / "c.yaml", db.url)
    settings = load_settings(config)
    now = datetime.now(UTC).replace(microsecond=0)
    slot = now - timedelta(minutes=5)
    with db.engine.begin() as connection:
        connection.execute(
            insert(job_runs).values(
                job=Job.MARKET_SYNC,
                slot=slot,
                holder="daemon-host:4242:1",
                status=JobRunStatus.SUCCEEDED,
                started_at=slot,
                finished_at=slot + timedelta(seconds=20),
                lease_until=slot + timedelta(minutes=2),
            )
        )
    with db.factory() as session:
        status = read_status(session, settings, now, now)
    assert status.daemon.serving and status.headline is None and status.pending == []
    assert any(w.startswith("missing cohort: ") for w in status.warnings), status.warnings
    if now >= _decision_fire(now):
        assert any(w.startswith("missing decision run: ") for w in status.warnings)

    with TestClient(create_app(settings)) as client:
        data = client.get("/api/v1/status").json()
        page = client.get("/status").text
    assert data["warnings"] == status.warnings and data["daemon"]["serving"] is True
    assert "<th>next run</th>" in page and "no daemon has run" not in page
    shown = run_arena("--config", str(config), "status", env=cli_env(COLUMNS="120"))
    assert shown.returncode == 0, shown.stderr
    assert "next run" in shown.stdout and "no daemon" not in shown.stdout
    assert "missing cohort: " in shown.stdout.split("warnings")[-1]


def _decision_fire(now: datetime) -> datetime:
    """This week's decision run (Sunday 00:05 UTC, the default schedule)."""
    sunday = (now - timedelta(days=(now.weekday() + 1) % 7)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    return sunday + timedelta(minutes=5)
