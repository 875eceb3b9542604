"""The record chain in the database (issue 26, item 1): every completed decision, settled
position and started cohort is chained in the transaction that writes it, built from the rows
the export publishes, in one line whatever the number of writers; what was stored before the
chain is chained after the fact by the genesis pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from arena.clock import FixedClock
from arena.export.writer import ExportTarget, export
from arena.jobs.cohorts import start_cohort
from arena.record import chain as chain_module
from arena.record.chain import chain_backlog
from arena.record.records import decision_body
from arena.store.models import Cohort, Decision, Position, Record, Trade
from tests.analytics.results_arena import build_arena
from tests.conftest import Database
from tests.jobs.decide_world import COHORT_AT, DECIDE_AT, MODELS, bet, fake_answer, make_world
from tests.record.chain_checks import assert_linear, body, chain, subjects


def _jsonl(directory: Path, table: str) -> list[dict]:
    lines = (directory / f"{table}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_a_decision_run_chains_each_completed_decision_once(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    world.fake.set_default(MODELS["gpt-5.1"], fake_answer(bet("1001", "YES", 300)))
    world.run()
    records = assert_linear(db)
    with db.factory() as session:
        completed = set(session.scalars(select(Decision.id).where(Decision.status == "completed")))
        cohort_ids = set(session.scalars(select(Cohort.id)))
    assert completed and set(subjects(db, "decision")) == completed
    assert set(subjects(db, "cohort")) == cohort_ids
    assert records[0].kind == "cohort"  # the cohort was chained when it opened
    assert not any(r.after_the_fact for r in records)
    world.run()  # a second run decides nothing new and chains nothing
    assert len(chain(db)) == len(records)


def test_each_record_rebuilds_from_the_published_rows(db: Database, tmp_path: Path) -> None:
    """The record written at decision time equals the record built from the export's rows:
    what a reader of the published tables rebuilds."""
    world = make_world(db, tmp_path)
    world.fake.set_default(MODELS["gpt-5.1"], fake_answer(bet("1001", "YES", 300)))
    world.run()
    out = tmp_path / "export"
    export(db.factory, ExportTarget(out, "jsonl"))
    tables = {
        name: _jsonl(out, name)
        for name in (
            "decisions", "agents", "universe_markets", "attempts", "trades", "forecasts",
            "citations",
        )
    }  # fmt: skip
    decisions = [r for r in chain(db) if r.kind == "decision"]
    assert decisions
    traded = 0
    for record in decisions:
        (decision,) = [d for d in tables["decisions"] if d["decision_id"] == record.subject_id]
        (agent,) = [a for a in tables["agents"] if a["agent_id"] == decision["agent_id"]]
        universe = decision["universe_id"]
        rebuilt = decision_body(
            decision,
            agent,
            {
                "universe_markets": [
                    u for u in tables["universe_markets"] if u["universe_id"] == universe
                ],
                **{
                    name: [r for r in tables[name] if r["decision_id"] == record.subject_id]
                    for name in ("attempts", "trades", "forecasts", "citations")
                },
            },
        )
        stored = body(record)
        assert stored == json.loads(json.dumps(rebuilt))
        assert stored["universe"]["sha256"] and stored["prompt_sha256"]
        assert all(a["response_sha256"] for a in stored["attempts"])
        traded += len(stored["executions"])
    assert traded == len(tables["trades"]) > 0


def test_a_failing_record_leaves_the_decision_undone(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision and record share one transaction: when the record cannot be written, neither
    the decision's completion nor its trades are kept, and the next run completes both."""
    world = make_world(db, tmp_path)
    world.fake.set_default(MODELS["gpt-5.1"], fake_answer(bet("1001", "YES", 300)))
    real = chain_module.append

    def broken(session, kind, *args, **kwargs):  # type: ignore[no-untyped-def]
        if kind == "decision":
            raise RuntimeError("the disk went away while chaining")
        return real(session, kind, *args, **kwargs)

    monkeypatch.setattr(chain_module, "append", broken)
    world.run()
    with db.factory() as session:
        statuses = set(session.scalars(select(Decision.status)))
        trades = session.scalar(select(func.count()).select_from(Trade))
    assert statuses == {"retryable"} and trades == 0
    assert subjects(db, "decision") == []
    monkeypatch.setattr(chain_module, "append", real)
    world.run()
    with db.factory() as session:
        completed = set(session.scalars(select(Decision.id).where(Decision.status == "completed")))
    assert set(subjects(db, "decision")) == completed and len(completed) == 7
    assert_linear(db)
    world.assert_ledger()


def test_genesis_chains_what_was_stored_before_in_id_order(db: Database) -> None:
    build_arena(db.factory)  # written through the ORM: nothing chained
    assert chain(db) == []
    chained = chain_backlog(db.factory, COHORT_AT, batch=7)
    records = assert_linear(db)
    with db.factory() as session:
        cohorts = list(session.scalars(select(Cohort.id).order_by(Cohort.id)))
        decisions = list(
            session.scalars(
                select(Decision.id).where(Decision.status == "completed").order_by(Decision.id)
            )
        )
        settled = list(
            session.scalars(
                select(Position.id)
                .where(Position.status.in_(["SETTLED", "CANCELLED"]))
                .order_by(Position.id)
            )
        )
    assert settled and decisions
    assert chained == len(records) == len(cohorts) + len(decisions) + len(settled)
    assert [r.subject_id for r in records] == cohorts + decisions + settled
    assert all(r.after_the_fact for r in records)
    settlement = body(next(r for r in records if r.kind == "settlement"))
    assert settlement["position"]["status"] in ("SETTLED", "CANCELLED")
    assert chain_backlog(db.factory, COHORT_AT) == 0  # idempotent


def test_a_new_cohort_is_chained_with_its_agents(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path)
    start_cohort(db.factory, world.settings, FixedClock(DECIDE_AT))  # same week: no new cohort
    (record,) = [r for r in chain(db) if r.kind == "cohort"]
    agents = body(record)["agents"]
    families = sorted(f.id for f in world.settings.active_families)
    assert sorted(a["family_id"] for a in agents) == families
    assert isinstance(record, Record) and not record.after_the_fact


def test_a_schema_1_record_is_checked_without_its_citations() -> None:
    """Records written before schema 2 did not cover citations: a body rebuilt today is
    compared with such a record without its attempts' ``citations_sha256``, and with it from
    schema 2 on (settlement and cohort bodies never change)."""
    from arena.record.records import RECORD_SCHEMA_VERSION, RecordKind, as_of_schema

    body = {
        "decision": {"decision_id": 1},
        "attempts": [
            {"attempt_id": 1, "response_sha256": "a", "citations_sha256": "c"},
            {"attempt_id": 2, "response_sha256": "b"},
        ],
    }
    old = as_of_schema(RecordKind.DECISION, body, 1)
    assert old["attempts"] == [
        {"attempt_id": 1, "response_sha256": "a"},
        {"attempt_id": 2, "response_sha256": "b"},
    ]
    assert old["decision"] == body["decision"]
    assert RECORD_SCHEMA_VERSION == 2
    assert as_of_schema(RecordKind.DECISION, body, 2) is body
    assert as_of_schema(RecordKind.SETTLEMENT, {"position": {}}, 1) == {"position": {}}


def test_the_rows_of_a_record_are_read_through_statements_built_once(
    db: Database, tmp_path: Path
) -> None:
    """Issue 27's overhead per agent: each table a decision's record reads is queried through
    one statement per (table, key), built once, with the same rows as the export's query."""
    from arena.export import values
    from arena.export.tables import ATTEMPTS, DECISIONS, TRADES
    from arena.store import queries
    from arena.store.models import DecisionAttempt

    world = make_world(db, tmp_path)
    world.fake.set_default(MODELS["gpt-5.1"], fake_answer(bet("1001", "YES", 300)))
    world.run()
    with db.factory() as session:
        decision_id = session.scalar(select(Trade.decision_id).limit(1))
        for spec, key in (
            (DECISIONS, Decision.id),
            (ATTEMPTS, DecisionAttempt.decision_id),
            (TRADES, Trade.decision_id),
        ):
            rows = values.text_rows_of(session, spec, key, decision_id)
            assert rows and rows == values.text_rows(session, spec, key == decision_id)
            built = queries._BUILT[("export rows", spec.name, str(key))]
            assert values.text_rows_of(session, spec, key, decision_id) == rows
            assert queries._BUILT[("export rows", spec.name, str(key))] is built
