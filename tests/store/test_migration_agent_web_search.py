"""Migration 0010 on a database with an agent in it, on SQLite and PostgreSQL: the agent stays
as it was (no web search frozen on it: the model track), web search settings can be frozen on
a new one, and the downgrade removes the column again."""

from __future__ import annotations

from sqlalchemy import inspect

from arena.analytics.leaderboard import compute_leaderboard
from arena.store.db import upgrade
from arena.store.models import Agent
from tests.conftest import Database
from tests.store.test_migration_pricing import _downgrade, _history

SEARCH = {"engine": "auto", "max_results": 5, "search_context_size": "medium"}


def test_agents_gain_frozen_web_search(db: Database) -> None:
    try:
        _downgrade(db, "0009")
        _history(db)
        upgrade(db.engine)
        with db.factory() as session:
            agent = session.get(Agent, 1)
            assert agent is not None and agent.web_search is None
            agent.web_search = SEARCH
            session.commit()
        with db.factory() as session:
            assert session.get(Agent, 1).web_search == SEARCH  # type: ignore[union-attr]
        (row,) = compute_leaderboard(db.factory)
        assert row.track == "web"
        _downgrade(db, "0009")
        with db.engine.connect() as connection:
            columns = {c["name"] for c in inspect(connection).get_columns("agents")}
        assert "web_search" not in columns and "kind" in columns
    finally:
        upgrade(db.engine)  # the fixture's database goes back to head whatever happened
