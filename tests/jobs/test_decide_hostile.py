"""What a model sends back is made storable before it is stored, and one agent's failure never
blocks the agents after it (issue 10, finding 5), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.domain.storable import REPLACEMENT
from arena.fakes.openrouter import answer
from arena.jobs import execute as execute_module
from arena.store.models import DecisionAttempt, Trade
from tests.conftest import Database
from tests.jobs.decide_world import MODELS, bet, fake_answer, make_world


def test_nul_bytes_and_surrogates_in_an_answer_are_stored_and_the_run_goes_on(
    db: Database, tmp_path: Path
) -> None:
    world = make_world(db, tmp_path)
    hostile = json.dumps({"action": "HOLD", "reasoning": "zero\x00byte \ud800 here"})
    world.fake.script(MODELS["gpt-5.1"], answer(hostile + "\x00 trailing"))
    world.fake.script(MODELS["grok-4"], fake_answer(bet("1001", "YES", 100.0)))

    report = world.run()

    assert report.failure() is None, [(r.family_id, r.error) for r in report.results]
    decisions = world.decisions()
    assert {d.status for d in decisions.values()} == {"completed"}
    gpt = decisions["gpt-5.1"]
    assert gpt.reasoning == f"zero{REPLACEMENT}byte {REPLACEMENT} here"
    with db.factory() as session:
        raw = session.scalars(
            select(DecisionAttempt.raw_response).where(DecisionAttempt.decision_id == gpt.id)
        ).one()
    assert raw is not None and "\x00" not in raw and raw.endswith(f"{REPLACEMENT} trailing")
    world.assert_ledger()


def test_an_unexpected_failure_leaves_that_decision_retryable_and_decides_the_rest(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(MODELS["gpt-5.1"], fake_answer(bet("1001", "YES", 100.0)))
    real = execute_module.execute_decision

    def explode_once(*args, **kwargs):  # type: ignore[no-untyped-def]
        monkeypatch.setattr("arena.jobs.decide.execute_decision", real)
        raise RuntimeError("the database refused the row")

    monkeypatch.setattr("arena.jobs.decide.execute_decision", explode_once)

    report = world.run()

    by_family = {r.family_id: r for r in report.results}
    first = report.results[0]
    assert first.status == "retryable"
    assert "RuntimeError: the database refused the row" in (first.error or "")
    assert len(by_family) == len(world.decisions()) > 1
    assert all(r.status == "completed" for r in report.results[1:])
    with db.factory() as session:
        assert not session.scalars(
            select(Trade).where(Trade.decision_id == first.decision_id)
        ).all()
    world.assert_ledger()
