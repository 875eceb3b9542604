"""Dialect-aware INSERT ... ON CONFLICT for SQLite and PostgreSQL.

Uniqueness is enforced by the database, never by check-then-insert: these helpers are how jobs
create a row "unless it already exists" safely under concurrency.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import Insert


def dialect_insert(session: Session, table: Any) -> Any:
    """``INSERT`` with ``ON CONFLICT`` support for the session's database."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql  # loads with the first insert, not before

        return postgresql.insert(table)
    if dialect == "sqlite":
        from sqlalchemy.dialects import sqlite

        return sqlite.insert(table)
    raise NotImplementedError(f"unsupported database dialect {dialect!r}")


def insert_ignore(
    session: Session,
    table: Table,
    rows: dict[str, Any] | Sequence[dict[str, Any]],
    conflict: Sequence[str] | None = None,
) -> int:
    """Insert rows, silently skipping those that violate the unique key ``conflict``.

    Returns the number of rows actually inserted.
    """
    if isinstance(rows, dict):
        rows = [rows]
    if not rows:
        return 0
    statement: Insert = dialect_insert(session, table)
    statement = statement.on_conflict_do_nothing(  # type: ignore[attr-defined]
        index_elements=conflict
    ).returning(*table.primary_key.columns)
    # the rows as parameters, not in the statement: it compiles once per process (cached), and
    # SQLAlchemy batches them ("insertmanyvalues") within each database's parameter limit
    return len(session.execute(statement, list(rows)).all())


def upsert(
    session: Session,
    table: Table,
    rows: Sequence[dict[str, Any]],
    conflict: Sequence[str],
    update: Sequence[str],
) -> None:
    """Insert rows or, on a conflict of ``conflict``, update the ``update`` columns."""
    if not rows:
        return
    statement = dialect_insert(session, table)
    excluded = statement.excluded
    statement = statement.on_conflict_do_update(
        index_elements=list(conflict), set_={name: excluded[name] for name in update}
    )
    session.execute(statement, list(rows))
