"""Migration 0009 on a database with attempts in it, on SQLite and PostgreSQL: the attempts
stay as they were (no search cost, no note), citations can be stored against them, and the
downgrade removes the table and the two columns again."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import inspect, select, text

from arena.store.db import upgrade
from arena.store.models import Citation, DecisionAttempt
from tests.conftest import Database
from tests.store.test_migration_pricing import AT, _downgrade, _history


def test_attempts_gain_citations_and_a_search_cost(db: Database) -> None:
    _downgrade(db, "0008")
    _history(db)
    stamp = AT.replace(tzinfo=None) if db.backend == "sqlite" else AT
    with db.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO decision_attempts (id, decision_id, attempt_no, claim_token, kind, "
                "outcome, request_messages, cost_usd, prompt_version, started_at, finished_at) "
                "VALUES (1, 1, 1, 'tok', 'initial', 'valid', '[]', 0.0012345678, 'v1', :at, :at)"
            ),
            {"at": stamp},
        )
    upgrade(db.engine)
    with db.factory() as session:
        attempt = session.get(DecisionAttempt, 1)
        assert attempt is not None and attempt.cost_usd == Decimal("0.0012345678")
        assert (attempt.search_cost_usd, attempt.search_note) == (None, None)
        attempt.search_cost_usd = Decimal("0.0040000001")
        session.add(
            Citation(attempt_id=1, position=0, url="https://example.org/", title="T", cited_at=AT)
        )
        session.commit()
    with db.factory() as session:
        (citation,) = session.scalars(select(Citation)).all()
        assert (citation.url, citation.cited_at) == ("https://example.org/", AT)
        assert session.get(DecisionAttempt, 1).search_cost_usd == Decimal("0.0040000001")  # type: ignore[union-attr]
    _downgrade(db, "0008")
    with db.engine.connect() as connection:
        schema = inspect(connection)
        assert "citations" not in schema.get_table_names()
        columns = {c["name"] for c in schema.get_columns("decision_attempts")}
    assert not {"search_cost_usd", "search_note"} & columns
