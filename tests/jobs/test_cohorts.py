from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from sqlalchemy import func, select

from arena.clock import FixedClock
from arena.config import load_settings
from arena.jobs.cohorts import complete_cohorts, start_cohort
from arena.store.models import Agent, Cohort, Family, Position
from arena.store.queries import decision_window
from tests.conftest import Database
from tests.helpers import SEVEN_FAMILIES, cli_env, start_arena, write_config

AT = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
WEEK = datetime(2026, 11, 22, tzinfo=UTC)


def _counts(db: Database) -> tuple[list[Cohort], list[Agent]]:
    with db.factory() as session:
        cohorts = list(session.scalars(select(Cohort)))
        agents = list(session.scalars(select(Agent).order_by(Agent.family_id)))
    return cohorts, agents


def test_start_cohort_twice_creates_one(db: Database, tmp_path: Path) -> None:
    settings = load_settings(write_config(tmp_path / "c.yaml", db.url))
    first = start_cohort(db.factory, settings, FixedClock(AT))
    second = start_cohort(db.factory, settings, FixedClock(AT))
    assert first.created and not second.created
    assert first.cohort_id == second.cohort_id
    cohorts, agents = _counts(db)
    assert [c.week_start for c in cohorts] == [WEEK]
    assert len(agents) == len(SEVEN_FAMILIES)
    assert {a.cash for a in agents} == {Decimal("10000.00")}
    frozen = next(a for a in agents if a.family_id == "gpt-5.1")
    assert (frozen.display_name, frozen.openrouter_id) == ("GPT-5.2", "openai/gpt-5.2")
    assert frozen.prompt_version and frozen.methodology_version == "v1"


def test_agents_keep_frozen_identity_after_config_edit(db: Database, tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    start_cohort(db.factory, load_settings(write_config(config, db.url)), FixedClock(AT))
    edited = [dict(f) for f in SEVEN_FAMILIES]
    edited[0]["display_name"] = "GPT-6"
    edited.append({"id": "new-family", "kind": "baseline", "strategy": "always-hold"})
    settings = load_settings(write_config(config, db.url, families=edited))
    start_cohort(db.factory, settings, FixedClock(AT))  # same week: no-op for agents
    start_cohort(db.factory, settings, FixedClock(datetime(2026, 11, 29, 1, tzinfo=UTC)))
    with db.factory() as session:
        names = session.execute(
            select(Cohort.week_start, Agent.display_name)
            .join(Cohort, Cohort.id == Agent.cohort_id)
            .where(Agent.family_id == "gpt-5.1")
        ).all()
        family = session.get(Family, "gpt-5.1")
        new_agents = session.scalar(
            select(func.count()).select_from(Agent).where(Agent.family_id == "new-family")
        )
    assert sorted(names) == [
        (WEEK, "GPT-5.2"),
        (datetime(2026, 11, 29, tzinfo=UTC), "GPT-6"),
    ]
    assert family is not None and family.display_name == "GPT-6"
    assert new_agents == 1


def test_inactive_family_gets_no_agent(db: Database, tmp_path: Path) -> None:
    families = [dict(f) for f in SEVEN_FAMILIES]
    families[1]["active"] = False
    settings = load_settings(write_config(tmp_path / "c.yaml", db.url, families=families))
    report = start_cohort(db.factory, settings, FixedClock(AT))
    assert report.agents == len(SEVEN_FAMILIES) - 1


def test_parallel_processes_create_exactly_one_cohort(db: Database, tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", db.url)
    procs = [
        start_arena(
            "--config",
            str(config),
            "cohort",
            "start",
            "--at",
            "2026-11-22T03:00:00Z",
            env=cli_env(),
            cwd=tmp_path,
        )
        for _ in range(4)
    ]
    results = [(p.wait(timeout=120), p.communicate()) for p in procs]
    assert all(code == 0 for code, _ in results), results
    outputs = " ".join(out for _, (out, _err) in results)
    assert outputs.count("created week") == 1
    assert outputs.count("already exists") == 3
    cohorts, agents = _counts(db)
    assert len(cohorts) == 1 and cohorts[0].week_start == WEEK
    assert len(agents) == len(SEVEN_FAMILIES)
    assert all(a.cash == Decimal("10000") for a in agents)


def test_lifecycle_window_and_completion(db: Database, tmp_path: Path) -> None:
    settings = load_settings(
        write_config(tmp_path / "c.yaml", db.url, benchmark={"decision_cohort_limit": 2})
    )
    weeks = [datetime(2026, 11, day, 1, tzinfo=UTC) for day in (1, 8, 15, 22)]
    for at in weeks:
        start_cohort(db.factory, settings, FixedClock(at))
    now = datetime(2026, 11, 22, 0, 5, tzinfo=UTC)
    with db.factory() as session:
        ids = [c.id for c in session.scalars(select(Cohort).order_by(Cohort.week_start))]
        window = [c.id for c in session.execute(decision_window(2, now))]
        agent = session.scalars(select(Agent).where(Agent.cohort_id == ids[0])).first()
        assert agent is not None
        session.add(
            Position(
                agent_id=agent.id,
                cohort_id=ids[0],
                market_id="m1",
                side="YES",
                shares=Decimal(1),
                cost_basis=Decimal(1),
                status="OPEN",
                opened_at=now,
                updated_at=now,
            )
        )
        from arena.store.models import Market

        session.add(
            Market(id="m1", question="q", outcomes=["Yes", "No"], first_seen_at=now, updated_at=now)
        )
        session.commit()
    assert window == [ids[3], ids[2]]
    done = complete_cohorts(db.factory, 2, FixedClock(now))
    assert done == [ids[1]]  # cohort 1 still holds an open position; 3 and 4 are in the window
    assert complete_cohorts(db.factory, 2, FixedClock(now)) == []
