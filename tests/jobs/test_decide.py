"""The decision engine against the fake OpenRouter: every failure mode ends in the state the
methodology prescribes, every attempt is stored, and the ledger invariant holds."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from arena.domain.states import AttemptKind
from arena.fakes.openrouter import (
    answer,
    chatty,
    empty_content,
    error_in_200,
    fenced,
    http_error,
    length_exhausted,
    null_choices,
    null_choices_rate_limited,
    reasoning_only,
)
from arena.jobs.budget import Budget
from arena.store.models import Agent, Decision, DecisionAttempt, Position, Trade
from tests.conftest import Database
from tests.jobs.decide_world import HOLD, MODELS, bet, fake_answer, make_world

GPT, CLAUDE, GROK, _QWEN = MODELS.values()


def test_happy_path_one_decision_per_agent(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(GPT, fake_answer(bet("1001", "YES", 500)))
    world.fake.script(CLAUDE, fenced(bet("1002", "no", 250)))
    world.fake.script(GROK, chatty(bet("1003", "illwill", 100)))
    report = world.run()
    assert report.failure() is None, report
    decisions = world.decisions()
    assert len(decisions) == 7
    assert {d.status for d in decisions.values()} == {"completed"}
    assert decisions["gpt-5.1"].action == "BET"
    assert decisions["qwen-3-next"].action == "HOLD"
    assert decisions["always-hold"].action == "HOLD"
    with db.factory() as session:
        trade = session.scalars(
            select(Trade).where(Trade.market_id == "1001", Trade.amount == Decimal("500"))
        ).one()
        assert trade.price == Decimal("0.40") and trade.shares == Decimal("1250")
        assert trade.implied_confidence == Decimal("0.2")
        no_trade = session.scalars(select(Trade).where(Trade.market_id == "1002")).first()
        assert no_trade is not None and no_trade.side == "NO"
        assert no_trade.price == Decimal("0.90")
        named = session.scalars(
            select(Trade).where(Trade.market_id == "1003", Trade.agent_id == trade.agent_id + 2)
        ).one()
        assert named.side == "illwill" and named.price == Decimal("0.35")
    attempts = world.attempts("gpt-5.1")
    assert len(attempts) == 1 and attempts[0].outcome == "valid"
    assert attempts[0].provider and attempts[0].generation_id and attempts[0].cost_usd
    assert attempts[0].request_messages[0]["role"] == "system"
    assert attempts[0].prompt_tokens and attempts[0].latency_ms is not None
    sent = world.fake.chat_requests(GPT)[0]
    assert sent.json["temperature"] == 0 and sent.json["max_tokens"] == 2000
    world.assert_ledger()


def test_rerun_changes_nothing(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(GPT, fake_answer(bet()))
    world.run()
    trades, calls = world.trade_count(), len(world.fake.chat_requests())
    second = world.run()
    assert world.trade_count() == trades
    assert len(world.fake.chat_requests()) == calls
    assert {r.status for r in second.results} == {"already final"}
    assert len(world.decisions()) == 7
    world.assert_ledger()


def test_malformed_then_valid_is_repaired(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(
        GPT,
        answer("I would bet on rain."),
        fake_answer(bet("1001", "YES", 10)),  # below the minimum bet
        fake_answer(bet("1001", "YES", 60)),
    )
    world.run()
    decision = world.decisions()["gpt-5.1"]
    assert decision.status == "completed" and decision.action == "BET"
    assert not decision.system_hold
    outcomes = [(a.kind, a.outcome) for a in world.attempts("gpt-5.1")]
    assert outcomes == [("initial", "malformed"), ("repair", "malformed"), ("repair", "valid")]
    repair_request = world.fake.chat_requests(GPT)[2].json["messages"]
    assert "minimum" in repair_request[-1]["content"].lower()
    world.assert_ledger()


def test_never_valid_becomes_system_hold(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.set_default(GPT, answer("no json here, sorry"))
    world.run()
    decision = world.decisions()["gpt-5.1"]
    assert (decision.status, decision.action, decision.system_hold) == ("completed", "HOLD", True)
    assert [a.outcome for a in world.attempts("gpt-5.1")] == ["malformed"] * 3


def test_out_of_credit_stops_the_run_and_leaves_the_rest_retryable(
    db: Database, tmp_path: Path
) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(GPT, http_error(402))
    report = world.run()
    assert report.aborted and report.failure() is not None
    decisions = world.decisions()
    assert list(decisions) == ["gpt-5.1"]  # nobody after it was claimed
    assert decisions["gpt-5.1"].status == "retryable"
    assert len(world.fake.chat_requests(GPT)) == 1  # no retry on 402
    assert [a.outcome for a in world.attempts("gpt-5.1")] == ["fatal_error"]
    world.fake.script(GPT, fake_answer(bet()))
    second = world.run()
    assert second.failure() is None
    assert {d.status for d in world.decisions().values()} == {"completed"}
    assert len(world.attempts("gpt-5.1")) == 2  # appended, never overwritten
    world.assert_ledger()


def test_bad_key_is_fatal(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(GPT, http_error(401))
    report = world.run()
    assert report.aborted is not None
    assert "401" in report.aborted or "auth" in report.aborted.lower()


def test_transient_errors_are_retried_honouring_retry_after(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(
        GPT,
        http_error(429, retry_after=7),
        http_error(503, retry_after="2"),
        null_choices_rate_limited(),
        fake_answer(bet()),
    )
    world.run()
    assert world.decisions()["gpt-5.1"].status == "completed"
    assert world.sleeps[:2] == [7.0, 2.0]
    outcomes = [a.outcome for a in world.attempts("gpt-5.1")]
    assert outcomes == ["transient_error"] * 3 + ["valid"]
    assert [a.http_status for a in world.attempts("gpt-5.1")][:2] == [429, 503]
    kinds = [a.kind for a in world.attempts("gpt-5.1")][:3]
    assert (
        kinds
        == [AttemptKind.INITIAL, AttemptKind.RETRY, AttemptKind.RETRY]
        == [
            "initial",
            "retry",  # as stored since the first release and documented in the export schema
            "retry",
        ]
    )


def test_transient_exhausted_is_retryable_and_rerun_completes(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(GPT, *[http_error(502)] * 4)
    report = world.run()
    assert report.failure() is not None and not report.aborted
    decisions = world.decisions()
    assert decisions["gpt-5.1"].status == "retryable"
    assert decisions["claude-opus-4.5"].status == "completed"  # the run went on
    world.fake.script(GPT, fake_answer(bet()))
    world.run()
    again = world.decisions()
    assert again["gpt-5.1"].status == "completed"
    assert again["gpt-5.1"].id == decisions["gpt-5.1"].id
    assert again["gpt-5.1"].claim_count == 2
    world.assert_ledger()


def test_errors_inside_200_and_empty_content(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(GPT, error_in_200(502), null_choices(), empty_content(), fake_answer(HOLD))
    world.fake.script(CLAUDE, reasoning_only())
    world.fake.script(GROK, length_exhausted())
    world.run()
    decisions = world.decisions()
    assert decisions["gpt-5.1"].status == "completed"
    assert [a.outcome for a in world.attempts("gpt-5.1")] == ["transient_error"] * 3 + ["valid"]
    # reasoning-only without JSON and exhausted max_tokens will not improve with a plain retry
    for family in ("claude-opus-4.5", "grok-4"):
        assert decisions[family].status == "retryable", family
        assert world.attempts(family)[-1].outcome == "permanent_error"


def test_permanent_http_errors_are_not_retried(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.script(GPT, http_error(400))
    world.fake.script(CLAUDE, http_error(403))
    world.fake.script(GROK, http_error(404))
    world.run()
    for family, model in (("gpt-5.1", GPT), ("claude-opus-4.5", CLAUDE), ("grok-4", GROK)):
        assert world.decisions()[family].status == "retryable"
        assert len(world.fake.chat_requests(model)) == 1


def test_budget_guard_skips_instead_of_overspending(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path, budget={"per_family_usd": "0.0001"})
    registry = world.registry()
    budget = Budget(world.settings.budget, registry.worst_case, rounds=3)
    report = world.run(budget=budget)
    decisions = world.decisions()
    assert decisions["gpt-5.1"].status == "budget_skipped"
    assert "per_family_usd" in (decisions["gpt-5.1"].error or "")
    assert decisions["market-follower"].status == "completed"  # baselines cost nothing
    assert world.fake.chat_requests(GPT) == []
    assert report.failure() is not None


def test_sell_executes_at_frozen_side_price(db: Database, tmp_path: Path) -> None:
    from datetime import timedelta

    from tests.jobs.decide_world import DECIDE_AT

    world = make_world(db, tmp_path)
    world.fake.script(GPT, fake_answer(bet("1002", "NO", 1000)))
    world.run()
    with db.factory() as session:
        position = session.scalars(
            select(Position)
            .join(Agent, Agent.id == Position.agent_id)
            .where(Position.market_id == "1002", Agent.family_id == "gpt-5.1")
        ).one()
    world.fake.script(
        GPT,
        fake_answer(
            {
                "action": "SELL",
                "reasoning": "take profit",
                "sells": [{"position_id": str(position.id), "percentage": 50}],
            }
        ),
    )
    world.run(at=DECIDE_AT + timedelta(days=7))
    with db.factory() as session:
        sold = session.scalars(
            select(Trade).where(Trade.trade_type == "SELL", Trade.position_id == position.id)
        ).one()
        assert sold.price == Decimal("0.90") and sold.percentage == Decimal(50)
        assert sold.realized_pnl == Decimal("0.00")
    world.assert_ledger()


def test_v2_forecast_panel_is_required_and_stored(db: Database, tmp_path: Path) -> None:
    from arena.store.models import Forecast

    world = make_world(db, tmp_path, methodology="v2")
    forecasts = [
        {"market_id": "1001", "probability": 0.45},
        {"market_id": "1002", "probability": 0.12},
        {"market_id": "1003", "probabilities": {"FaZe": 0.6, "illwill": 0.4}},
        {"market_id": "1004", "probability": 0.5},
    ]
    for model in MODELS.values():
        world.fake.set_default(model, fake_answer({**HOLD, "forecasts": forecasts}))
    with_bet = bet("1001", "YES", 100)
    with_bet["bets"][0]["probability"] = 0.55
    world.fake.script(
        GPT,
        fake_answer(bet("1001", "YES", 100)),  # no forecasts: malformed
        fake_answer({**with_bet, "forecasts": forecasts}),
    )
    report = world.run()
    assert report.failure() is None
    assert [a.outcome for a in world.attempts("gpt-5.1")] == ["malformed", "valid"]
    assert "forecast" in (world.attempts("gpt-5.1")[0].error or "")
    with db.factory() as session:
        rows = list(
            session.scalars(
                select(Forecast)
                .join(Agent, Agent.id == Forecast.agent_id)
                .where(Agent.family_id == "gpt-5.1")
            )
        )
        trade = session.scalars(select(Trade).where(Trade.probability.is_not(None))).first()
    panel = {(f.market_id, f.outcome): f for f in rows if f.source == "panel"}
    assert set(panel) == {
        ("1001", "YES"),
        ("1002", "YES"),
        ("1003", "FaZe"),
        ("1003", "illwill"),
        ("1004", "YES"),
    }
    assert panel[("1001", "YES")].market_probability == Decimal("0.40")
    assert panel[("1003", "illwill")].market_probability == Decimal("0.35")
    assert trade is not None and trade.probability == Decimal("0.55")
    # baselines forecast too: the market-follower forecasts the market price
    with db.factory() as session:
        follower = list(
            session.scalars(
                select(Forecast)
                .join(Agent, Agent.id == Forecast.agent_id)
                .where(Agent.family_id == "market-follower", Forecast.source == "panel")
            )
        )
    assert {f.market_id for f in follower} == {"1001", "1002", "1003", "1004"}
    assert all(
        f.probability == f.market_probability
        for f in follower
        if f.market_id in ("1001", "1002", "1004")
    )
    world.assert_ledger()


def test_sell_whose_executions_all_fail_is_retryable(db: Database, tmp_path: Path) -> None:
    """A position settled while the model was thinking: the SELL cannot execute, so the
    decision is stored retryable (no trade), and the next run decides it again."""
    from datetime import timedelta

    from sqlalchemy import update

    from tests.jobs.decide_world import DECIDE_AT

    world = make_world(db, tmp_path)
    world.fake.script(GPT, fake_answer(bet("1002", "NO", 500)))
    world.run()
    with db.factory() as session:
        position = session.scalars(
            select(Position)
            .join(Agent, Agent.id == Position.agent_id)
            .where(Position.market_id == "1002", Agent.family_id == "gpt-5.1")
        ).one()

    def settle_then_sell(_messages: list[dict[str, object]]) -> str:
        with db.factory() as session, session.begin():  # a concurrent settlement
            session.execute(
                update(Position).where(Position.id == position.id).values(status="CANCELLED")
            )
        sell = {"position_id": str(position.id), "percentage": 100}
        return json.dumps({"action": "SELL", "sells": [sell], "reasoning": "exit"})

    world.fake.script(GPT, answer(settle_then_sell))
    week2 = DECIDE_AT + timedelta(days=7)
    report = world.run(at=week2)
    assert report.failure() is not None
    with db.factory() as session:
        decision = session.scalars(
            select(Decision)
            .join(Agent, Agent.id == Decision.agent_id)
            .where(Agent.family_id == "gpt-5.1", Decision.decision_week == 2)
        ).one()
        sells = session.scalars(select(Trade).where(Trade.trade_type == "SELL")).all()
    assert decision.status == "retryable" and "all executions failed" in (decision.error or "")
    assert sells == []
    world.fake.script(GPT, fake_answer(HOLD))
    world.run(at=week2)
    with db.factory() as session:
        assert session.get(Decision, decision.id).status == "completed"


def test_an_execution_runs_while_the_next_agent_is_asked(db: Database, tmp_path: Path) -> None:
    """Issue 27's overhead per agent: an agent's execution (the refresh of what it trades, the
    books, the trades, the record) runs while the next agent's model call is in flight, one
    execution at a time in the agents' order, and the run reports every agent once its
    execution has run. The first execution waits here until the second call has arrived;
    run one after the other, it would wait in vain."""
    import threading
    import time

    world = make_world(db, tmp_path)
    world.fake.set_default(MODELS["gpt-5.1"], fake_answer(bet("1001", "YES", 300)))
    order: list[str] = []
    lock = threading.Lock()

    def refresh(ids: object) -> int:
        with lock:
            first = not order
            order.append(threading.current_thread().name)
        deadline = time.monotonic() + 10
        while first and len(world.fake.chat_requests()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        if first:
            order.append(f"second call seen: {len(world.fake.chat_requests()) >= 2}")
        return 0

    reported: list[tuple[str, str]] = []
    report = world.run(
        refresh=refresh, on_progress=lambda r: reported.append((r.family_id, r.status))
    )
    assert order[1] == "second call seen: True"
    assert all(name.startswith("arena-execute") for name in order[:1] + order[2:])
    assert [f for f, _ in reported] == [r.family_id for r in report.results]
    assert {status for _, status in reported} == {"completed"}
    assert world.decisions()["gpt-5.1"].status == "completed" and world.trade_count() >= 1
    world.assert_ledger()


def test_a_valid_answers_verdict_is_written_with_its_execution_not_before_the_next_call(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27's overhead per agent: the answer is committed ``received`` on arrival and
    parsed, then the next agent is asked at once; a valid answer's verdict is written on the
    execution's thread, right before its execution, still once and never over another."""
    import threading

    from arena.jobs.decide_report import AttemptLog

    written: list[tuple[str, str]] = []
    verdict = AttemptLog.verdict

    def noting(log: AttemptLog, attempt_id: int, outcome: str, *args: Any) -> None:
        written.append((outcome, threading.current_thread().name))
        verdict(log, attempt_id, outcome, *args)

    monkeypatch.setattr(AttemptLog, "verdict", noting)
    world = make_world(db, tmp_path)
    first = world.settings.families[0]
    world.fake.script(MODELS[first.id], fake_answer({"action": "BET"}), fake_answer(HOLD))
    report = world.run()
    assert {r.status for r in report.results} == {"completed"}
    assert ("malformed", "MainThread") in written  # a repair follows at once: written first
    valid = [thread for outcome, thread in written if outcome == "valid"]
    assert valid and all(thread.startswith("arena-execute") for thread in valid)
    with db.factory() as session:
        outcomes = session.scalars(select(DecisionAttempt.outcome)).all()
    assert "received" not in outcomes  # every answer has its verdict once the run returns
    world.assert_ledger()


def test_work_a_freeze_defers_is_done_on_the_look_ahead_thread_and_a_failure_logged(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What no decision needs (the panel's fee schedules) waits for a model call in flight:
    it runs on the look-ahead thread, after the next agent's preparation; a failing job is
    logged and changes nothing else."""
    import threading

    from arena.clock import FixedClock
    from arena.jobs.decide import DecisionRun, RunHooks, RunSources
    from arena.jobs.universe import freeze_universe
    from tests.jobs.decide_world import DECIDE_AT

    world = make_world(db, tmp_path)
    registry = world.registry()
    clock = FixedClock(DECIDE_AT)
    done: list[str] = []

    def freeze(cohort_ids: list[int]) -> int:
        universe_id = freeze_universe(db.factory, world.settings, clock.now(), cohort_ids)
        run.defer(lambda: done.append(threading.current_thread().name))
        run.defer(lambda: 1 / 0)
        return universe_id

    sources = RunSources(registry.for_agent, freeze)
    run = DecisionRun(
        db.factory, world.settings, clock, sources, hooks=RunHooks(sleep=lambda _s: None)
    )
    try:
        report = run.run()
    finally:
        registry.close()
    assert {r.status for r in report.results} == {"completed"}
    assert len(done) == 1 and done[0].startswith("arena-prepare")
    assert "work deferred by the decision run failed" in caplog.text
    world.assert_ledger()


def test_the_next_agent_is_claimed_and_prompted_while_one_is_asked(
    db: Database, tmp_path: Path
) -> None:
    """Issue 27's overhead per agent: while an agent's model call is in flight, the next agent
    is claimed and its prompt rendered, so the time between two calls is the answer's own
    work. The first answer waits here until the second agent's claim exists; prepared one
    after the other, it would wait in vain."""
    import time

    from sqlalchemy import func

    from arena.fakes.openrouter import answer

    world = make_world(db, tmp_path)
    seen: list[int] = []

    def first_answer(_messages: object) -> str:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with db.factory() as session:
                claimed = session.scalar(select(func.count()).select_from(Decision)) or 0
            if claimed >= 2:
                break
            time.sleep(0.01)
        seen.append(claimed)
        return json.dumps(HOLD)

    first = world.settings.families[0]
    world.fake.script(MODELS[first.id], answer(first_answer))
    report = world.run()
    assert seen == [2]
    assert {r.status for r in report.results} == {"completed"}
    world.assert_ledger()


def test_an_agent_prepared_but_not_asked_when_the_run_stops_is_given_back(
    db: Database, tmp_path: Path
) -> None:
    """A shutdown between two agents: the next agent, already claimed and prompted, is never
    asked, and its claim is given back (a row it created is removed), so the run leaves what
    it left before: the agents it did not reach unclaimed."""
    world = make_world(db, tmp_path)
    asked = iter(range(100))

    def stop_before_the_second() -> bool:
        return next(asked) == 1

    report = world.run(should_stop=stop_before_the_second)
    assert report.aborted and "stopped by shutdown" in report.aborted
    decisions = world.decisions()
    assert list(decisions) == [world.settings.families[0].id]
    assert decisions[world.settings.families[0].id].status == "completed"
    assert len(world.fake.chat_requests()) == 1
    world.assert_ledger()
