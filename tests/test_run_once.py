"""`arena run --once --at T`: two processes started together do each job exactly once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select

from arena.domain.states import Job
from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.fakes.openrouter import FakeOpenRouter
from arena.store.models import Agent, Cohort, Decision, JobRun, PortfolioSnapshot
from tests.conftest import Database
from tests.helpers import SEVEN_FAMILIES, cli_env, start_arena, write_config

AT = "2026-11-22T00:05:00Z"
JOBS = set(Job)


def test_two_once_processes_do_each_job_once(db: Database, tmp_path: Path) -> None:
    world = FakeGammaWorld(n_markets=150, seed=3, start=datetime(2026, 11, 22, tzinfo=UTC))
    fake = FakeOpenRouter(sleep=lambda _s: None)
    for family in SEVEN_FAMILIES:
        if "openrouter_id" in family:
            fake.add_model(family["openrouter_id"])
    with serve_fake_gamma(world) as gamma_url, fake.serve() as openrouter_url:
        config = write_config(
            tmp_path / "config.yaml",
            db.url,
            polymarket={"gamma_url": gamma_url},
            openrouter={"base_url": openrouter_url, "max_tokens": 1000},
            benchmark={"universe_size": 100},
        )
        env = cli_env(OPENROUTER_API_KEY=fake.api_key)
        procs = [
            start_arena("--config", str(config), "run", "--once", "--at", AT, env=env, cwd=tmp_path)
            for _ in range(2)
        ]
        outcomes = [(p.wait(timeout=300), p.communicate()) for p in procs]
    assert all(code == 0 for code, _ in outcomes), outcomes
    with db.factory() as session:
        runs = list(session.scalars(select(JobRun)))
        assert sorted(r.job for r in runs) == sorted(JOBS)  # one row per job and slot
        assert {r.status for r in runs} == {"succeeded"}
        assert session.scalar(select(func.count()).select_from(Cohort)) == 1
        agents = session.scalar(select(func.count()).select_from(Agent))
        assert agents == len(SEVEN_FAMILIES)
        assert session.scalar(select(func.count()).select_from(Decision)) == agents
        assert session.scalar(select(func.count()).select_from(PortfolioSnapshot)) == agents
    output = outcomes[0][1][0] + outcomes[1][1][0]
    for job in JOBS:  # each job succeeded in one process and was skipped by the other
        assert output.count(f"{job}") >= 2
    assert output.count("succeeded") == len(JOBS)
    assert len(fake.chat_requests()) == 4  # one call per OpenRouter family, not two
