"""The APScheduler wiring and the daemon process: triggers from the config, no overlap,
graceful stop on SIGTERM, configuration logged with secrets masked."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from arena.config import load_settings
from arena.domain.states import Job
from arena.errors import ConfigError
from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.scheduler import build_scheduler, interval_trigger, triggers
from arena.slots import job_slot, next_slot, weekly_slot
from tests.helpers import cli_env, write_config


def test_triggers_follow_the_schedule(tmp_path: Path) -> None:
    settings = load_settings(write_config(tmp_path / "c.yaml", "sqlite:///x.db"))
    fired = triggers(settings)
    after = datetime(2026, 11, 21, 23, 58, tzinfo=UTC)  # a Saturday
    assert fired[Job.COHORT_START].get_next_fire_time(None, after) == datetime(
        2026, 11, 22, 0, 0, tzinfo=UTC
    )
    assert fired[Job.DECISION_RUN].get_next_fire_time(None, after) == datetime(
        2026, 11, 22, 0, 5, tzinfo=UTC
    )
    assert fired[Job.SNAPSHOT].get_next_fire_time(None, after) == datetime(
        2026, 11, 22, 0, 0, tzinfo=UTC
    )
    assert fired[Job.MARKET_SYNC].get_next_fire_time(None, after) == datetime(
        2026, 11, 22, 0, 0, tzinfo=UTC
    )
    assert interval_trigger(90).get_next_fire_time(None, after) == datetime(
        2026, 11, 22, 0, 0, tzinfo=UTC
    )
    assert weekly_slot("sun 00:05", datetime(2026, 11, 22, 0, 4, tzinfo=UTC)) == datetime(
        2026, 11, 15, 0, 5, tzinfo=UTC
    )


def test_jobs_never_overlap_and_coalesce(tmp_path: Path) -> None:
    from arena.runtime import Runtime

    settings = load_settings(write_config(tmp_path / "c.yaml", "sqlite:///x.db"))
    runtime = Runtime.__new__(Runtime)  # only the wiring is under test
    runtime.settings = settings
    scheduler = build_scheduler(runtime)
    scheduler.start(paused=True)  # job defaults are applied when the scheduler starts
    jobs = {job.id: job for job in scheduler.get_jobs()}
    scheduler.shutdown(wait=False)
    assert set(jobs) == {
        "cohort_start",
        "decision_run",
        "market_sync",
        "settlement",
        "snapshot",
        "analysis",
        "commitment",
        "catch_up",
    }
    for job in jobs.values():
        assert job.max_instances == 1
        assert job.coalesce is True
        assert job.misfire_grace_time == settings.schedule.misfire_grace_seconds


def test_daemon_starts_logs_and_stops_gracefully_on_sigterm(tmp_path: Path) -> None:
    world = FakeGammaWorld(n_markets=50, seed=2)
    with serve_fake_gamma(world) as gamma_url:
        config = write_config(
            tmp_path / "config.yaml",
            "postgresql+psycopg://arena:s3cret-pw@127.0.0.1:1/none",
            polymarket={"gamma_url": gamma_url},
        )
        db_path = tmp_path / "arena.db"
        env = cli_env(
            ARENA_DATABASE_URL=f"sqlite:///{db_path}",
            OPENROUTER_API_KEY="sk-or-v1-very-secret-key-for-the-test",
            ARENA_LOGGING__JSON_LOGS="true",
        )
        log_path = tmp_path / "daemon.log"
        with log_path.open("w") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "arena", "--config", str(config), "run"],
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                text=True,
                env=env,
                cwd=tmp_path,
            )
            # Wait for what the test is about (migrated, scheduler started, next run times
            # logged), not for a fixed time: a busy machine only makes it later.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and "next runs at" not in log_path.read_text():
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
        err = log_path.read_text()
    assert code == 0, err[-3000:]
    assert "next runs at" in err
    assert "configuration" in err
    assert "scheduler stopped" in err
    assert "sk-or-v1-very-secret" not in err
    assert '"level"' in err  # JSON lines


DIVISORS_OF_THE_DAY = [m for m in range(1, 1441) if 1440 % m == 0]


@pytest.mark.parametrize("minutes", DIVISORS_OF_THE_DAY)
def test_the_scheduler_fires_at_the_runtimes_slots(tmp_path: Path, minutes: int) -> None:
    """One slot function: every trigger fires exactly at the slots the runtime keys runs by,
    for every interval the configuration accepts (45 and 90 included)."""
    settings = load_settings(
        write_config(tmp_path / "c.yaml", "sqlite:///x.db"),
        schedule={"snapshot_minutes": minutes, "decision_run": "wed 13:37"},
    )
    fired = triggers(settings)
    rng = random.Random(minutes)
    start = datetime(2026, 11, 21, tzinfo=UTC)
    instants = [start + timedelta(seconds=rng.randrange(14 * 86400)) for _ in range(40)]
    instants += [start + timedelta(minutes=minutes * k) for k in range(3)]  # on a slot
    for now in instants:
        for job in Job:
            following = next_slot(settings, job, now)
            assert following > now
            assert job_slot(settings, job, following) == following
            assert job_slot(settings, job, following - timedelta(seconds=1)) <= now
            assert fired[job].get_next_fire_time(None, now + timedelta(seconds=1)) == following


@pytest.mark.parametrize("minutes", [7, 45 * 7, 1441, 0])
def test_an_interval_that_does_not_divide_the_day_is_refused(tmp_path: Path, minutes: int) -> None:
    config = write_config(
        tmp_path / "c.yaml", "sqlite:///x.db", schedule={"snapshot_minutes": minutes}
    )
    with pytest.raises(ConfigError, match=r"schedule\.snapshot_minutes"):
        load_settings(config)
