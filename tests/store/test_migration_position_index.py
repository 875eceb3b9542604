"""Migration 0005 on a database with positions in it, on SQLite and PostgreSQL: an agent's
positions are found through the (agent_id, status) index, which replaces the one on agent_id;
the rows stay as they were, and the downgrade restores the old index."""

from __future__ import annotations

from sqlalchemy import inspect, select, text

from arena.store.db import upgrade
from arena.store.models import Position
from tests.conftest import Database
from tests.store.test_migration_pricing import AT, _downgrade, _history


def _position_indexes(db: Database) -> dict[str, list[str]]:
    with db.engine.connect() as connection:
        return {
            index["name"]: list(index["column_names"])
            for index in inspect(connection).get_indexes("positions")
        }


def test_positions_by_agent_and_status_use_one_index(db: Database) -> None:
    _downgrade(db, "0004")
    _history(db)  # written against the old schema, one open position
    assert "ix_positions_agent_id" in _position_indexes(db)
    upgrade(db.engine)
    indexes = _position_indexes(db)
    assert indexes["ix_positions_agent_id_status"] == ["agent_id", "status"]
    assert "ix_positions_agent_id" not in indexes
    with db.factory() as session:
        (position,) = session.scalars(
            select(Position).where(Position.agent_id == 1, Position.status == "OPEN")
        ).all()
    assert position.cost_basis == 500 and position.opened_at == AT
    if db.backend == "sqlite":  # the planner takes the new index for an agent's open positions
        with db.engine.connect() as connection:
            plan = connection.execute(
                text(
                    "EXPLAIN QUERY PLAN SELECT id FROM positions "
                    "WHERE agent_id = 1 AND status = 'OPEN'"
                )
            ).all()
        assert any("ix_positions_agent_id_status" in str(row) for row in plan), plan
    _downgrade(db, "0004")
    indexes = _position_indexes(db)
    assert indexes["ix_positions_agent_id"] == ["agent_id"]
    assert "ix_positions_agent_id_status" not in indexes
