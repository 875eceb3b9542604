"""`arena decide` as real processes against the fake Gamma and OpenRouter over HTTP: concurrent
runs and a run killed mid-call never duplicate a decision or a trade, and a killed run's work is
taken over at once (issue 10, finding 6)."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

from sqlalchemy import func, select

from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.fakes.openrouter import FakeOpenRouter, answer, slow
from arena.store.models import Agent, Decision, Trade
from tests.conftest import Database
from tests.helpers import cli_env, run_arena, start_arena
from tests.jobs.decide_world import (
    COHORT_AT,
    HOLD,
    MODELS,
    World,
    bet,
    fake_answer,
    make_world,
)
from tests.record.chain_checks import assert_linear

AT = "2026-11-22T00:05:00Z"


GAMMA = FakeGammaWorld(n_markets=40, seed=3, start=COHORT_AT)
BINARY = [
    market_id
    for market_id in GAMMA.expected_top(40)
    if [o.lower() for o in GAMMA.markets[market_id].outcomes] == ["yes", "no"]
]


def _env(fake: FakeOpenRouter, url: str, gamma_url: str) -> dict[str, str]:
    return cli_env(
        OPENROUTER_API_KEY=fake.api_key,
        ARENA_OPENROUTER__BASE_URL=url,
        ARENA_OPENROUTER__MAX_ATTEMPTS="2",
        ARENA_POLYMARKET__GAMMA_URL=gamma_url,
    )


def _trades_per_decision(db: Database) -> Counter[int]:
    with db.factory() as session:
        rows = session.execute(
            select(Trade.decision_id, func.count()).group_by(Trade.decision_id)
        ).all()
        return Counter({decision: count for decision, count in rows})  # noqa: C416


def concurrent_decides(world: World, tmp_path: Path, runs: int) -> None:
    """``runs`` ``arena decide`` processes at once, every model betting after 0.2 s; all exit 0."""
    for model in MODELS.values():
        world.fake.set_default(model, answer(json.dumps(bet(BINARY[0], "YES", 100)), delay=0.2))
    with world.fake.serve() as url, serve_fake_gamma(GAMMA) as gamma_url:
        procs = [
            start_arena(
                "--config",
                str(world.config_path),
                "decide",
                "--at",
                AT,
                env=_env(world.fake, url, gamma_url),
                cwd=tmp_path,
            )
            for _ in range(runs)
        ]
        outcomes = [(p.wait(timeout=180), p.communicate()) for p in procs]
    assert all(code == 0 for code, _ in outcomes), outcomes


def test_three_concurrent_runs_decide_each_agent_once(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    concurrent_decides(world, tmp_path, 3)
    decisions = world.decisions()
    assert len(decisions) == 7 and {d.status for d in decisions.values()} == {"completed"}
    for model in MODELS.values():  # each model called exactly once over all three processes
        assert len(world.fake.chat_requests(model)) == 1, model
    per_decision = _trades_per_decision(db)
    assert all(
        count == 1
        for family, d in decisions.items()
        if family in MODELS
        for count in [per_decision[d.id]]
    )
    with db.factory() as session:
        buys = session.scalar(
            select(func.count())
            .select_from(Trade)
            .join(Agent, Agent.id == Trade.agent_id)
            .where(Agent.family_id.in_(list(MODELS)))
        )
    assert buys == len(MODELS)
    world.assert_ledger()
    # the three writers appended to one chain: one line, one record per completed decision
    records = assert_linear(db)
    assert sorted(r.subject_id for r in records if r.kind == "decision") == sorted(
        d.id for d in decisions.values()
    )


def test_killed_run_is_taken_over_at_once_without_duplicates(db: Database, tmp_path: Path) -> None:
    """The default lease is left in place: the rerun sees the killed holder is dead (same host)
    and takes its claim over at once, instead of waiting for the lease or printing skipped."""
    world = make_world(db, tmp_path)
    config = world.config_path
    gpt, claude = MODELS["gpt-5.1"], MODELS["claude-opus-4.5"]
    world.fake.script(gpt, fake_answer(bet(BINARY[0], "YES", 200)))
    world.fake.script(claude, slow(60, then=fake_answer(HOLD)), fake_answer(bet(BINARY[1])))
    with world.fake.serve() as url, serve_fake_gamma(GAMMA) as gamma_url:
        env = _env(world.fake, url, gamma_url)
        proc = start_arena("--config", str(config), "decide", "--at", AT, env=env, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while not world.fake.chat_requests(claude) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert world.fake.chat_requests(claude), "the run never reached the slow model"
        # the agent before executes while the slow call is in flight: killed once it has
        while world.decisions()["gpt-5.1"].status != "completed" and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        mid = world.decisions()
        assert mid["gpt-5.1"].status == "completed"
        assert mid["claude-opus-4.5"].status == "claimed"
        # the agent after the slow one was claimed and prompted while it was asked, never asked
        assert "grok-4" not in mid or not world.attempts("grok-4")
        assert mid["claude-opus-4.5"].holder.split(":")[1] == str(proc.pid)
        rerun = run_arena("--config", str(config), "decide", "--at", AT, env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr + rerun.stdout
    assert "7 completed" not in rerun.stdout and "unfinished: " not in rerun.stdout
    final = world.decisions()
    assert len(final) == 7 and {d.status for d in final.values()} == {"completed"}
    assert final["claude-opus-4.5"].claim_count == 2
    assert final["claude-opus-4.5"].action == "BET"
    assert len(world.fake.chat_requests(gpt)) == 1  # the finished agent was not asked again
    assert _trades_per_decision(db)[final["gpt-5.1"].id] == 1
    with db.factory() as session:
        assert session.scalar(select(func.count()).select_from(Decision)) == 7
    assert COHORT_AT.tzinfo is not None
    world.assert_ledger()
