"""Outside agents (families of ``kind: agent``) in a decision run, over real HTTP on 127.0.0.1:
a correct agent (the example app), a slow one, an oversize reply, a redirect, garbage then a
repaired answer, a reply for another decision, a wrong secret, a killed agent process. In each
case the other agents' decisions complete, nothing is duplicated, the ledger invariant holds,
and no secret reaches the logs or the records."""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from arena.errors import ConfigError
from arena.export.writer import ExportTarget, export
from arena.store.models import Agent, Decision, DecisionAttempt, Trade
from arena.web.app import create_app
from tests.conftest import Database
from tests.helpers import SEVEN_FAMILIES, free_port
from tests.jobs.decide_world import World, make_world
from tests.sources.agent_fakes import (
    FakeAgent,
    Seen,
    example_agent,
    reply,
    signed_by,
    slow,
    start_example_agent,
    stop,
)

SECRET = "agent-secret-3f9c1a7e"
OTHER_SECRET = "another-secret-8d2b44"
SECRET_ENV = "TEST_AGENT_SECRET"
OTHERS = [f["id"] for f in SEVEN_FAMILIES]


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    caplog.set_level(logging.DEBUG)


def agent_family(family_id: str, endpoint: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": family_id,
        "kind": "agent",
        "endpoint": endpoint,
        "secret_env": SECRET_ENV,
        **extra,
    }


def world_with(db: Database, tmp_path: Path, *agents: dict[str, Any]) -> World:
    return make_world(db, tmp_path, families=[*SEVEN_FAMILIES, *agents])


def assert_sound(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """The other agents completed, one decision per agent and no trade twice, the ledger
    holds, and no secret is in the logs or the stored decisions and attempts."""
    decisions = world.decisions()
    assert all(decisions[f].status == "completed" for f in OTHERS), decisions
    with world.db.factory() as session:
        agents = session.scalar(select(func.count()).select_from(Agent))
        count = session.scalar(select(func.count()).select_from(Decision))
        assert count == len(decisions) == agents
        trades = session.execute(
            select(Trade.decision_id, Trade.market_id, Trade.side, func.count())
            .group_by(Trade.decision_id, Trade.market_id, Trade.side)
            .having(func.count() > 1)
        ).all()
        assert trades == []
        stored = [
            repr(row.__dict__)
            for model in (Decision, DecisionAttempt)
            for row in session.scalars(select(model))
        ]
    world.assert_ledger()
    for secret in (SECRET, OTHER_SECRET, world.fake.api_key):
        assert secret not in caplog.text
        assert not any(secret in text for text in stored)


def assert_nothing_of_arena_sent(world: World, seen: list[Seen]) -> None:
    """Every request is signed with the agent's secret and carries no other secret."""
    for request in seen:
        assert signed_by(SECRET, request)
        raw = request.body.decode() + json.dumps(request.headers)
        assert SECRET not in raw and world.fake.api_key not in raw
        assert "authorization" not in request.headers


def test_a_correct_agent_decides_through_the_example_app(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with example_agent(SECRET, strategy="favourite") as (endpoint, _process):
        world = world_with(db, tmp_path, agent_family("example", endpoint))
        report = world.run()
    assert report.failure() is None, report
    decision = world.decisions()["example"]
    assert (decision.status, decision.action) == ("completed", "BET")
    [attempt] = world.attempts("example")
    assert attempt.outcome == "valid" and attempt.provider == "outside agent"
    assert attempt.model == "agent/example" and attempt.cost_usd == 0
    usage = attempt.raw_body["agent_reported_usage"]
    assert usage["prompt_tokens"] == usage["completion_tokens"] == 0
    assert Decimal(usage["cost_usd"]) == 0
    with db.factory() as session:
        [trade] = session.scalars(select(Trade).where(Trade.decision_id == decision.id))
    assert trade.market_id == "1001" and trade.side == "NO" and trade.amount == 50
    assert_sound(world, caplog)


def test_the_request_holds_the_decision_and_is_signed(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent = FakeAgent()
    with agent.serve() as endpoint:
        world = world_with(db, tmp_path, agent_family("fake", endpoint, deadline_seconds=30))
        world.run()
    decision = world.decisions()["fake"]
    assert decision.status == "completed"
    [seen] = agent.seen
    body = seen.json
    assert body["schema_version"] == 1 and body["decision_id"] == str(decision.id)
    assert body["call"] == "decision" and body["repair"] is None
    assert body["cohort"]["decision_week"] == 1 and body["cohort"]["pricing"] == "gamma"
    assert body["portfolio"]["cash"] == "10000.00" and body["portfolio"]["positions"] == []
    assert {m["market_id"] for m in body["universe"]} == {"1001", "1002", "1003", "1004"}
    named = next(m for m in body["universe"] if m["market_id"] == "1003")
    assert named["sides"] == ["FaZe", "illwill"] and named["prices"] == ["0.65", "0.35"]
    assert body["rules"]["min_bet"] == "50" and body["rules"]["max_bet_fraction"] == "0.25"
    assert body["messages"][0]["role"] == "system"
    assert body["deadline"] > body["now"]
    assert_nothing_of_arena_sent(world, agent.seen)
    assert_sound(world, caplog)
    export(db.factory, ExportTarget(tmp_path / "export", "jsonl"))
    exported = "".join(p.read_text() for p in (tmp_path / "export").iterdir())
    app = create_app(world.settings)
    try:
        with TestClient(app) as client:
            pages = "".join(
                client.get(path).text
                for path in (f"/decisions/{decision.id}", f"/api/v1/decisions/{decision.id}")
            )
    finally:
        app.state.ctx.engine.dispose()
    assert "fake agent holds" in exported and "fake agent holds" in pages
    for secret in (SECRET, world.fake.api_key):
        assert secret not in exported and secret not in pages


def test_a_slow_agent_fails_at_its_deadline(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent = FakeAgent([slow(3)])
    with agent.serve() as endpoint:
        world = world_with(db, tmp_path, agent_family("slow", endpoint, deadline_seconds=0.3))
        report = world.run()
    decision = world.decisions()["slow"]
    assert decision.status == "retryable"
    assert "deadline" in (decision.error or "")
    assert len(agent.seen) == 1  # a deadline is not retried
    assert [a.outcome for a in world.attempts("slow")] == ["permanent_error"]
    assert report.failure() is not None
    assert_sound(world, caplog)


def test_an_oversize_reply_fails(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent = FakeAgent([lambda request: reply(request, "x" * 2_000_000)])
    with agent.serve() as endpoint:
        world = world_with(db, tmp_path, agent_family("big", endpoint))
        world.run()
    decision = world.decisions()["big"]
    assert decision.status == "retryable" and "larger than 1000000 bytes" in decision.error
    [attempt] = world.attempts("big")
    assert attempt.raw_response is None and attempt.outcome == "permanent_error"
    assert_sound(world, caplog)


def test_a_redirect_is_not_followed(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    elsewhere = FakeAgent()
    with elsewhere.serve() as target:
        agent = FakeAgent([lambda _request: (307, {"Location": target}, b"")])
        with agent.serve() as endpoint:
            world = world_with(db, tmp_path, agent_family("redirects", endpoint))
            world.run()
    decision = world.decisions()["redirects"]
    assert decision.status == "retryable" and "redirect" in decision.error
    assert elsewhere.seen == [] and len(agent.seen) == 1
    assert_sound(world, caplog)


def test_garbage_then_a_valid_answer_after_the_repair_request(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def bet(request: dict[str, Any]) -> Any:
        answer = {"action": "BET", "bets": [{"market_id": "1002", "side": "YES", "amount": 60}]}
        return reply(request, answer, usage={"prompt_tokens": 12, "cost_usd": "0.25"})

    agent = FakeAgent([lambda request: reply(request, "I would bet on rain."), bet])
    with agent.serve() as endpoint:
        world = world_with(db, tmp_path, agent_family("repaired", endpoint))
        world.run()
    decision = world.decisions()["repaired"]
    assert (decision.status, decision.action, decision.system_hold) == ("completed", "BET", False)
    first, second = (seen.json for seen in agent.seen)
    assert first["call"] == "decision" and second["call"] == "repair"
    assert second["decision_id"] == first["decision_id"]
    assert "JSON" in second["repair"]["error"] or "json" in second["repair"]["error"]
    assert len(second["messages"]) > len(first["messages"])
    assert "I would bet on rain." in json.dumps(second["messages"])
    attempts = world.attempts("repaired")
    assert [(a.kind, a.outcome) for a in attempts] == [
        ("initial", "malformed"),
        ("repair", "valid"),
    ]
    assert attempts[1].cost_usd == 0  # arena paid nothing; the agent's figure is labelled
    assert Decimal(attempts[1].raw_body["agent_reported_usage"]["cost_usd"]) == Decimal("0.25")
    assert_nothing_of_arena_sent(world, agent.seen)
    assert_sound(world, caplog)


def test_a_reply_for_another_decision_fails(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def other(request: dict[str, Any]) -> Any:
        return reply({"decision_id": "999999"}, {"action": "HOLD"})

    agent = FakeAgent([other])
    with agent.serve() as endpoint:
        world = world_with(db, tmp_path, agent_family("confused", endpoint))
        world.run()
    decision = world.decisions()["confused"]
    assert decision.status == "retryable" and "999999" in decision.error
    assert "is for decision '999999'" in decision.error
    assert len(agent.seen) == 1
    assert_sound(world, caplog)


@pytest.mark.parametrize(
    ("body", "reason"),
    [(b"<html>oops</html>", "not JSON"), (b'{"answer": {"action": "HOLD"}}', "schema")],
)
def test_a_non_json_or_bad_schema_reply_fails(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture, body: bytes, reason: str
) -> None:
    agent = FakeAgent([lambda _request: (200, {}, body)])
    with agent.serve() as endpoint:
        world = world_with(db, tmp_path, agent_family("broken", endpoint))
        world.run()
    decision = world.decisions()["broken"]
    assert decision.status == "retryable" and reason in decision.error
    assert len(agent.seen) == 1
    assert_sound(world, caplog)


def test_a_wrong_secret_is_refused_by_the_agent(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with example_agent(OTHER_SECRET) as (endpoint, _process):
        world = world_with(db, tmp_path, agent_family("mistrusted", endpoint))
        world.run()
    decision = world.decisions()["mistrusted"]
    assert decision.status == "retryable"
    assert "401" in decision.error and "bad signature" in decision.error
    assert len(world.attempts("mistrusted")) == 1  # a 4xx is final
    assert_sound(world, caplog)


def test_a_killed_agent_process_fails_its_decision_and_a_rerun_finishes(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/decide"
    process = start_example_agent(SECRET, port)
    world = world_with(
        db, tmp_path, agent_family("first", endpoint), agent_family("second", endpoint)
    )

    def kill_before_second() -> bool:  # asked before each agent starts
        if world.attempts("first"):  # "first" was answered: the agent dies before "second"
            stop(process)
        return False

    try:
        world.run(should_stop=kill_before_second)
    finally:
        stop(process)
    decisions = world.decisions()
    assert decisions["first"].status == "completed"
    assert decisions["second"].status == "retryable"
    assert "connection" in decisions["second"].error
    assert len(world.sleeps) == world.settings.openrouter.max_attempts - 1  # retried
    assert_sound(world, caplog)
    process = start_example_agent(SECRET, port)
    try:
        world.run()
    finally:
        stop(process)
    decisions = world.decisions()
    assert decisions["second"].status == "completed"
    assert len(world.attempts("first")) == 1  # not asked again
    assert_sound(world, caplog)


def test_a_missing_secret_stops_the_run_before_any_claim(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_ENV)
    world = world_with(db, tmp_path, agent_family("secretless", "http://127.0.0.1:9/decide"))
    with pytest.raises(ConfigError, match=f"^{SECRET_ENV}: not set; the outside agent"):
        world.run()
    assert world.decisions() == {}
