"""Soak (issues 10 and 22): eight simulated weeks of the daemon's jobs on the fake clock, in
pricing mode book (the real order-book path: frozen books, fills against the fake CLOB,
marks and exit values), with every week:

* a killed holder at a random moment (a decision run or a snapshot);
* a batch of hostile Gamma rows;
* one hostile order book of each kind the fake CLOB serves (an unstorable size, timestamp or
  hash, phantom levels of size 0, a crossed and a locked touch, a wrong served hash);

and once: a database outage at a decision run; a week whose cohort start fails (the database
down from Sunday 00:00) until after the decision fire time, where the decision run then fires
before the catch-up has created the cohort; OpenRouter replies whose every field is over-long
or unstorable. Every week's cohort and decisions end complete, no snapshot slot is left a gap,
no job run is left running, no trade ever executes on a market whose outcome was known, and the
ledger is exact. On SQLite and PostgreSQL (the outages are a closed port swapped in for the
database, never a stopped server)."""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest
from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from arena.clock import week_start
from arena.config import Settings, load_settings
from arena.demo_world import Simulation, WorldPlan
from arena.domain.states import BOOK_HASH_MISMATCH, JobRunStatus
from arena.domain.storable import CUT_MARKER
from arena.fakes.clob import HOSTILE_BOOKS
from arena.fakes.clob_api import ZERO_HASH
from arena.fakes.gamma_api import token_ids
from arena.fakes.openrouter import odd_fields
from arena.jobs.audit import check_ledger
from arena.jobs.gaps import snapshot_gaps
from arena.jobs.holders import Holder, this_process
from arena.publish.dataset import publish_dataset
from arena.publish.parts import dataset_parts
from arena.publish.verify import verify_dataset
from arena.store.db import make_engine, session_factory, transaction
from arena.store.models import (
    Agent,
    Cohort,
    Decision,
    DecisionAttempt,
    JobRun,
    Market,
    SystemLog,
    Trade,
)
from tests.conftest import PRICING_ENV, Database
from tests.helpers import write_config

START = datetime(2026, 9, 6, tzinfo=UTC)  # a Sunday
WEEKS = 8
FAMILIES = [
    {"id": "sim-a", "display_name": "A", "openrouter_id": "sim/a"},
    {"id": "sim-b", "display_name": "B", "openrouter_id": "sim/b"},
    {"id": "market-follower", "kind": "baseline", "strategy": "market-follower"},
    {"id": "random-bettor", "kind": "baseline", "strategy": "random", "seed": 3},
]
HOSTILE = (
    {"question": "nul\x00byte"},
    {"id": "12²"},
    {"volumeNum": 1e300},
    {"outcomes": '["' + "Y" * 400 + '", "No"]'},
    {"slug": "s" * 4000},
)


def _dead_holder() -> str:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    started = int(psutil.Process(proc.pid).create_time())
    proc.wait()
    return str(Holder(this_process().host, proc.pid, started))


@pytest.mark.slow
@pytest.mark.timeout(900)  # the longest test (4 minutes alone): a busy machine must not fail it
def test_eight_weeks_with_kills_outages_and_hostile_rows(
    sqlite_db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite; tests/test_soak_postgres.py runs the same weeks on PostgreSQL, as its own
    module so that the suite's workers (``--dist loadscope``) run the two at once."""
    eight_weeks(sqlite_db, tmp_path, monkeypatch)


def eight_weeks(db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRICING_ENV)  # mode book, as configured below
    rng = random.Random(2026)
    config = write_config(
        tmp_path / "config.yaml",
        db.url,
        families=FAMILIES,
        schedule={"market_sync_minutes": 60, "resolution_minutes": 60, "snapshot_minutes": 60},
        benchmark={"decision_cohort_limit": 2, "pricing": "book"},
    )
    settings = load_settings(config)
    sim = Simulation(settings, db.factory, WorldPlan(START, 7 * WEEKS, n_markets=80, seed=4))
    broken: sessionmaker = session_factory(make_engine("postgresql+psycopg://x@127.0.0.1:9/none"))
    outage_week, late_cohort_week, odd_reply_weeks = 3, 5, (1, 6)
    planted: list[str] = []
    try:
        for week in range(WEEKS):
            monday = START + timedelta(days=7 * week)
            kill_at = monday + timedelta(minutes=rng.choice([5, 5, 60, 60 * 24]))
            kill_job = "decision_run" if kill_at == monday + timedelta(minutes=5) else "snapshot"
            for market_id in rng.sample(sorted(sim.world.gamma.markets), len(HOSTILE)):
                sim.world.gamma.corrupt(market_id, **rng.choice(HOSTILE))
            planted = _plant_hostile_books(sim, rng, planted)
            if week in odd_reply_weeks:  # this week's first answer of each model is odd
                for model in ("sim/a", "sim/b"):
                    sim.openrouter.script(model, odd_fields(sim.openrouter.default_for(model)))
            at = monday
            while at < monday + timedelta(days=7):
                sim.clock.set(at)
                sim.world.evolve(at)
                if at == kill_at:  # a daemon was killed in this job; it restarts now
                    _leave_dead_holder(db, at, kill_job)
                late = week == late_cohort_week and at < monday + timedelta(minutes=5)
                if late or (week == outage_week and at == monday + timedelta(minutes=5)):
                    # the database is down: the cohort start (00:00) or the decision run fails
                    good, sim.runtime.factory = sim.runtime.factory, broken
                    with pytest.raises(Exception):  # noqa: B017 - the outage itself
                        sim.runtime.run_due(at)
                    if late:
                        with pytest.raises(Exception):  # noqa: B017 - the outage itself
                            sim.runtime.catch_up(sim.clock)
                    sim.runtime.factory = good
                    if late:  # nothing could run or catch up while the database was down
                        at += timedelta(minutes=5)
                        continue
                else:
                    # in the late week at 00:05 the decision run fires before the catch-up
                    # below has created the week's cohort: that slot is not done
                    sim.runtime.run_due(at)
                sim.runtime.catch_up(sim.clock)
                if at == kill_at and kill_job == "snapshot":
                    _assert_no_gap(db, settings, at)
                at += (
                    timedelta(minutes=5) if at < monday + timedelta(hours=1) else timedelta(hours=1)
                )
    finally:
        sim.close()

    with db.factory() as session:
        cohorts = list(session.scalars(select(Cohort).order_by(Cohort.week_start)))
        assert [c.week_start for c in cohorts] == [
            START + timedelta(days=7 * i) for i in range(WEEKS)
        ]
        agents = {
            c.id: list(session.scalars(select(Agent.id).where(Agent.cohort_id == c.id)))
            for c in cohorts
        }
        for index, cohort in enumerate(cohorts):
            weeks = 2 if index < WEEKS - 1 else 1
            for week_no in range(1, weeks + 1):
                statuses = session.scalars(
                    select(Decision.status).where(
                        Decision.cohort_id == cohort.id, Decision.decision_week == week_no
                    )
                ).all()
                assert sorted(statuses) == ["completed"] * len(agents[cohort.id]), (index, week_no)
        # No BUY ever executed on a market at or after its resolution or close.
        for trade, market in session.execute(
            select(Trade, Market)
            .join(Market, Market.id == Trade.market_id)
            .where(Trade.trade_type == "BUY")
        ).all():
            if market.resolved_at is not None:
                assert trade.executed_at < market.resolved_at, (trade.id, market.id)
            if market.closed_time is not None:
                assert trade.executed_at < market.closed_time, (trade.id, market.id)
        assert check_ledger(session) == []
        runs = session.scalars(select(JobRun).where(JobRun.job == "decision_run")).all()
        assert len(runs) == WEEKS and {r.status for r in runs} == {"succeeded"}
        # Each week decided under its own slot: none ran the slot of the week before START.
        assert sorted(r.slot for r in runs) == [
            START + timedelta(days=7 * i, minutes=5) for i in range(WEEKS)
        ]
        # No run is left running by a dead holder, nor failed: every slot was taken over.
        left = session.scalars(select(JobRun).where(JobRun.status != JobRunStatus.SUCCEEDED)).all()
        assert [(r.job, r.slot, r.status) for r in left] == []
        # The odd replies were paid for and stored, cut to their columns.
        odd = session.scalars(
            select(DecisionAttempt).where(DecisionAttempt.provider.like(f"%{CUT_MARKER}"))
        ).all()
        assert len(odd) >= 2 * len(odd_reply_weeks)
        assert all(a.generation_id is None for a in odd)
        # The wrong served hashes were counted; the proofs stored are the computed hashes.
        mismatches = session.scalars(
            select(SystemLog).where(SystemLog.event == BOOK_HASH_MISMATCH)
        ).all()
        assert mismatches
        assert not session.scalars(select(Trade).where(Trade.book_hash == ZERO_HASH)).all()
    assert week_start(START) == START
    # The eight weeks publish, and the published dataset verifies from its files alone: every
    # record rebuilds, the chain is whole, nothing was committed late, the leaderboard holds.
    published = tmp_path / "published"
    publish_dataset(db.factory, published, sim.clock.now(), parts=dataset_parts(settings))
    verification = verify_dataset(published)
    assert verification.ok, [f.to_json() for f in verification.failures[:5]]
    assert verification.counts["records_decision"] == (2 * WEEKS - 1) * len(FAMILIES)


def _plant_hostile_books(sim: Simulation, rng: random.Random, before: list[str]) -> list[str]:
    """One hostile book of each kind, each on another market's first token, in place of last
    week's (which turn honest again)."""
    clob = sim.world.books.clob
    for token in before:
        clob.plant(token, None)
    booked = sorted(
        token_ids(market)[0]
        for market in sim.world.gamma.markets.values()
        if token_ids(market) and token_ids(market)[0] in clob.books
    )
    chosen = rng.sample(booked, len(HOSTILE_BOOKS))
    for token, kind in zip(chosen, HOSTILE_BOOKS, strict=True):
        clob.plant(token, kind)
    return chosen


def _assert_no_gap(db: Database, settings: Settings, at: datetime) -> None:
    """The killed snapshot slot was taken over: no slot of the last day lacks a snapshot."""
    with db.factory() as session:
        gaps = snapshot_gaps(session.connection(), settings, at, at)
    assert gaps.slots == [], gaps


def _leave_dead_holder(db: Database, at: datetime, job: str) -> None:
    """What a SIGKILL during ``job`` at ``at`` leaves: its run row running by a dead holder and,
    for the decision run, the first agent's decision claimed by it with no trade yet."""
    dead = _dead_holder()
    with transaction(db.factory) as session:
        if session.scalars(select(JobRun).where(JobRun.job == job, JobRun.slot == at)).first():
            return  # this slot already ran: nothing in flight to kill
        session.add(
            JobRun(
                job=job,
                slot=at,
                holder=dead,
                status="running",
                started_at=at,
                lease_until=datetime.now(UTC) + timedelta(hours=1),
            )
        )
        cohort = session.scalars(select(Cohort).where(Cohort.week_start == week_start(at))).first()
        if job == "decision_run" and cohort is not None:
            agent = session.scalars(
                select(Agent).where(Agent.cohort_id == cohort.id).order_by(Agent.id)
            ).first()
            assert agent is not None
            if session.scalars(select(Decision).where(Decision.agent_id == agent.id)).first():
                return
            session.add(
                Decision(
                    agent_id=agent.id,
                    cohort_id=cohort.id,
                    decision_week=1,
                    status="claimed",
                    claim_token="killed",
                    holder=dead,
                    lease_until=datetime.now(UTC) + timedelta(hours=1),
                    claim_count=1,
                    prompt_version=agent.prompt_version,
                    methodology_version=agent.methodology_version,
                    created_at=at,
                    updated_at=at,
                )
            )
