"""Migration 0011 (replicates) on a database holding an agent, on SQLite and PostgreSQL: the
agent becomes replicate 1, a second replicate of the family in the cohort can be stored, a
second replicate 1 cannot, and the downgrade restores the old key."""

from __future__ import annotations

import pytest
from sqlalchemy import JSON, inspect, select
from sqlalchemy import bindparam as sa_bindparam
from sqlalchemy.exc import IntegrityError

from arena.store.db import upgrade
from arena.store.models import Agent
from tests.conftest import Database
from tests.store.test_migration_pricing import _downgrade, _history


def _copy(agent: Agent, replicate: int) -> Agent:
    keep = ("cohort_id", "family_id", "kind", "display_name", "provider", "prompt_version")
    more = ("methodology_version", "starting_balance", "cash", "realized_pnl", "created_at")
    return Agent(
        **{k: getattr(agent, k) for k in keep + more}, id=replicate * 10, replicate=replicate
    )


def test_agents_become_replicate_one(db: Database) -> None:
    _downgrade(db, "0009")
    _history(db)
    upgrade(db.engine)
    with db.factory() as session:
        (agent,) = session.scalars(select(Agent)).all()
        assert agent.replicate == 1
        session.add(_copy(agent, 2))
        session.commit()
        session.add(_copy(agent, 2))
        with pytest.raises(IntegrityError):
            session.commit()
    with db.factory() as session, session.begin():
        session.delete(session.scalars(select(Agent).where(Agent.replicate == 2)).one())
    _downgrade(db, "0009")
    with db.engine.connect() as connection:
        schema = inspect(connection)
        columns = {c["name"] for c in schema.get_columns("agents")}
        keys = [sorted(u["column_names"]) for u in schema.get_unique_constraints("agents")]
    assert "replicate" not in columns
    assert keys == [["cohort_id", "family_id"]]


def test_the_frozen_web_search_survives_the_rebuild(db: Database) -> None:
    """0011 rebuilds ``agents`` on SQLite: every column 0010 added comes through it."""
    from sqlalchemy import text

    _downgrade(db, "0010")
    _history(db)
    settings = {"engine": "exa", "max_results": 3, "search_context_size": "low"}
    with db.engine.begin() as connection:
        connection.execute(
            text("UPDATE agents SET web_search = :v").bindparams(sa_bindparam("v", type_=JSON())),
            {"v": settings},
        )
    upgrade(db.engine)
    with db.factory() as session:
        (agent,) = session.scalars(select(Agent)).all()
        assert agent.web_search == settings
        assert agent.replicate == 1
