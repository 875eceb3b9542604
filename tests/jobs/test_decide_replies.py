"""Every field of an OpenRouter answer passes the storable rule at the edge, and a paid call is
recorded whatever follows it, and counted by the budget when its decision is retried (issue 22,
finding 4). On SQLite and PostgreSQL, with the fake OpenRouter over real HTTP; the faults after
the call are real: the database itself refuses the write (a trigger), or the answer is one the
parser cannot read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from arena.domain.storable import CUT_MARKER
from arena.fakes.openrouter import Behaviour, answer, error_in_200, odd_fields, with_fields
from arena.fakes.openrouter_script import LONG_ID
from arena.jobs.budget import Budget
from arena.store import schema
from arena.store.models import Trade
from tests.conftest import Database
from tests.jobs.decide_world import HOLD, MODELS, World, bet, fake_answer, make_world

GPT = "gpt-5.1"
HOLD_ANSWER = fake_answer(HOLD)


def cut(value: str, limit: int) -> str:
    """What the storable rule keeps of an over-long ``value`` (written out, not called)."""
    return value[: limit - len(CUT_MARKER)] + CUT_MARKER


# case -> (how the fake answers, what the attempt row must hold)
ODD_REPLIES: dict[str, tuple[Behaviour, dict[str, Any]]] = {
    "provider of 150 characters": (
        with_fields(HOLD_ANSWER, provider="p" * 150),
        {"provider": cut("p" * 150, 100)},
    ),
    "NUL in provider": (
        with_fields(HOLD_ANSWER, provider="Fake\x00Provider"),
        {"provider": "Fake\ufffdProvider"},
    ),
    "finish_reason of 45 characters": (
        with_fields(HOLD_ANSWER, finish_reason="stop_" + "s" * 40),
        {"finish_reason": cut("stop_" + "s" * 40, 32)},
    ),
    "over-long model and generation id": (
        with_fields(
            HOLD_ANSWER,
            model="m/" + "m" * 298,
            id=LONG_ID,
            headers={"X-Generation-Id": LONG_ID},
        ),
        {"model": cut("m/" + "m" * 298, 200), "generation_id": None},
    ),
    "huge and negative usage": (
        with_fields(
            HOLD_ANSWER,
            usage={"prompt_tokens": 10**30, "completion_tokens": -5, "cost": "1e999999"},
        ),
        {"prompt_tokens": None, "completion_tokens": None, "cost_usd": None},
    ),
    "non-finite cost": (
        with_fields(HOLD_ANSWER, usage={"cost": float("inf")}),  # sent as Infinity
        {"cost_usd": None},
    ),
    "every field at once": (
        odd_fields(HOLD_ANSWER),
        {
            "provider": cut("P\ufffd" + "p" * 148, 100),
            "model": cut("m/" + "m" * 298, 200),
            "generation_id": None,
            "finish_reason": cut("stop_" + "s" * 40, 32),
            "prompt_tokens": None,
            "completion_tokens": None,
            "cost_usd": None,
        },
    ),
}


@pytest.mark.parametrize("case", list(ODD_REPLIES))
def test_odd_reply_fields_are_stored_by_the_storable_rule_and_the_decision_completes(
    db: Database, tmp_path: Path, case: str
) -> None:
    behaviour, expected = ODD_REPLIES[case]
    world = make_world(db, tmp_path)
    world.fake.script(MODELS[GPT], behaviour)

    with world.serve():
        report = world.run()

    assert report.failure() is None, [(r.family_id, r.describe()) for r in report.results]
    assert world.decisions()[GPT].status == "completed"
    [attempt] = world.attempts(GPT)
    assert attempt.outcome == "valid"
    assert {name: getattr(attempt, name) for name in expected} == expected
    body = json.dumps(attempt.raw_body)
    assert "\\u0000" not in body and "Infinity" not in body
    world.assert_ledger()


def test_an_odd_provider_in_an_error_reply_is_stored_and_the_retry_goes_on(
    db: Database, tmp_path: Path
) -> None:
    world = make_world(db, tmp_path)
    failing = "Upstream\x00" + "u" * 141  # 150 characters with a NUL
    world.fake.script(
        MODELS[GPT],
        error_in_200(502, "Provider returned error", {"provider_name": failing}),
        HOLD_ANSWER,
    )

    with world.serve():
        report = world.run()

    assert report.failure() is None, [(r.family_id, r.describe()) for r in report.results]
    error, valid = world.attempts(GPT)
    assert (error.outcome, valid.outcome) == ("transient_error", "valid")
    assert error.provider == cut("Upstream\ufffd" + "u" * 141, 100)


def test_a_storage_fault_after_the_paid_call_keeps_the_attempt_and_the_retry_counts_its_cost(
    db: Database, tmp_path: Path
) -> None:
    world = make_world(db, tmp_path, budget={"per_family_usd": "10"})
    world.fake.script(MODELS[GPT], *[fake_answer(bet("1001", "YES", 100.0))] * 2)

    with world.serve():
        with refusing(db, "trades", "INSERT"):
            first = run_with_budget(world)
        [paid] = world.attempts(GPT)
        assert world.decisions()[GPT].status == "retryable"
        assert "injected fault" in (world.decisions()[GPT].error or "")
        assert paid.outcome == "valid" and paid.cost_usd is not None and paid.cost_usd > 0
        assert first.spent[GPT] == paid.cost_usd

        retry = run_with_budget(world)  # the next run takes the same decision over

    assert world.decisions()[GPT].status == "completed"
    earlier, again = world.attempts(GPT)
    assert earlier.id == paid.id and earlier.cost_usd == paid.cost_usd
    assert again.cost_usd is not None
    assert retry.spent[GPT] == paid.cost_usd + again.cost_usd
    decision_id = world.decisions()[GPT].id
    with db.factory() as session:
        sides = session.scalars(select(Trade.side).where(Trade.decision_id == decision_id))
        assert sides.all() == ["YES"]
    world.assert_ledger()


def test_a_paid_answer_is_committed_before_its_verdict_and_survives_a_fault_writing_it(
    db: Database, tmp_path: Path
) -> None:
    world = make_world(db, tmp_path, budget={"per_family_usd": "10"})

    with world.serve():
        with refusing(db, "decision_attempts", "UPDATE"):
            first = run_with_budget(world)
        [paid] = world.attempts(GPT)
        assert world.decisions()[GPT].status == "retryable"
        assert paid.outcome == "received" and paid.cost_usd is not None and paid.cost_usd > 0
        assert paid.raw_response == json.dumps(HOLD)
        assert first.spent[GPT] == paid.cost_usd

        retry = run_with_budget(world)

    assert world.decisions()[GPT].status == "completed"
    earlier, again = world.attempts(GPT)
    assert (earlier.outcome, again.outcome) == ("received", "valid")
    assert again.cost_usd is not None
    assert retry.spent[GPT] == paid.cost_usd + again.cost_usd


def test_an_answer_nested_past_the_parser_is_malformed_and_its_paid_attempt_kept(
    db: Database, tmp_path: Path
) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(MODELS[GPT], answer("[" * 100_000), HOLD_ANSWER)

    with world.serve():
        report = world.run()

    assert report.failure() is None, [(r.family_id, r.describe()) for r in report.results]
    malformed, valid = world.attempts(GPT)
    assert (malformed.outcome, valid.outcome) == ("malformed", "valid")
    assert malformed.cost_usd is not None and malformed.cost_usd > 0


def test_a_paid_answer_without_a_usable_cost_keeps_its_budget_reservation(
    db: Database, tmp_path: Path
) -> None:
    world = make_world(db, tmp_path, budget={"per_family_usd": "10"})
    world.fake.script(MODELS[GPT], with_fields(HOLD_ANSWER, usage={"cost": "-0.5"}))

    with world.serve():
        budget = run_with_budget(world)

    [attempt] = world.attempts(GPT)
    assert attempt.outcome == "valid" and attempt.cost_usd is None
    reserved = budget.worst_case(
        MODELS[GPT], attempt.request_messages, world.settings.max_tokens(GPT)
    )
    assert budget.spent[GPT] == reserved > 0
    assert budget.reserved[GPT] == 0


def test_the_reply_limits_are_the_attempt_columns() -> None:
    from arena.sources import openrouter_replies as replies

    columns = schema.decision_attempts.c
    cost = columns.cost_usd.type
    assert {
        "provider": columns.provider.type.length,
        "model": columns.model.type.length,
        "generation_id": columns.generation_id.type.length,
        "finish_reason": columns.finish_reason.type.length,
        "cost places": cost.scale,
        "cost bound": Decimal(10) ** (cost.precision - cost.scale),
    } == {
        "provider": replies.PROVIDER_CHARS,
        "model": replies.MODEL_CHARS,
        "generation_id": replies.GENERATION_ID_CHARS,
        "finish_reason": replies.FINISH_REASON_CHARS,
        "cost places": replies.COST_PLACES,
        "cost bound": replies.COST_BOUND,
    }


# --- helpers ------------------------------------------------------------------------------


def run_with_budget(world: World) -> Budget:
    """One decision run under a budget priced from the fake; the budget afterwards."""
    registry = world.registry()
    try:
        budget = Budget(world.settings.budget, registry.worst_case, rounds=3)
        world.run(budget=budget)
    finally:
        registry.close()
    return budget


@contextmanager
def refusing(db: Database, table: str, operation: str) -> Iterator[None]:
    """A real fault: the database refuses every ``operation`` on ``table`` while inside."""
    message = f"injected fault: {operation} on {table} refused"
    name = f"refuse_{operation.lower()}_{table}"
    if db.backend == "sqlite":
        create = [
            f"CREATE TRIGGER {name} BEFORE {operation} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
        ]
        drop = [f"DROP TRIGGER {name}"]
    else:
        create = [
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RAISE EXCEPTION '{message}'; END $$",
            f"CREATE TRIGGER {name} BEFORE {operation} ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {name}()",
        ]
        drop = [f"DROP TRIGGER {name} ON {table}", f"DROP FUNCTION {name}()"]
    with db.engine.begin() as connection:
        for statement in create:
            connection.execute(text(statement))
    try:
        yield
    finally:
        with db.engine.begin() as connection:
            for statement in drop:
                connection.execute(text(statement))
