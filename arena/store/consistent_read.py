"""A read-only session that sees one consistent state of the database, without blocking writers.

The leaderboard and the exports read many tables; they must all see the same moment (a trade
must not appear without its position or its cash), and a long read must not stall the daemon:

* PostgreSQL: a ``REPEATABLE READ`` transaction, one snapshot for every statement in it;
* SQLite (WAL): a plain deferred ``BEGIN`` on a separate connection. The application engine
  starts every transaction with ``BEGIN IMMEDIATE`` (which takes the write lock), right for
  jobs but wrong for a multi-minute export that would make every writer time out. A deferred
  read transaction in WAL mode sees one snapshot and never blocks writers;
* an in-memory SQLite database cannot be opened twice, so it is read through the application
  engine as it is;
* a factory bound to a connection is a read already under way (``arena publish`` renders its
  static site on its own snapshot): it is read through that connection as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

SQLITE_BUSY_TIMEOUT_MS = 60_000


@contextmanager
def consistent_read(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session for reading only, on one snapshot of the database; rolled back at the end."""
    with factory() as probe:
        bind = probe.get_bind()
    if isinstance(bind, Connection):
        with factory() as session:
            try:
                yield session
            finally:
                session.rollback()
        return
    engine = bind
    if engine.dialect.name == "sqlite" and _separately_openable(engine):
        yield from _sqlite_snapshot(engine)
        return
    with factory() as session:
        if engine.dialect.name == "postgresql":
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        try:
            yield session
        finally:
            session.rollback()


def _separately_openable(engine: Engine) -> bool:
    database = engine.url.database or ""
    return bool(database) and database != ":memory:" and not database.startswith("file:")


def _sqlite_snapshot(engine: Engine) -> Iterator[Session]:
    reader = create_engine(
        engine.url, poolclass=NullPool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    )

    @event.listens_for(reader, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA query_only = ON")
        cursor.close()

    @event.listens_for(reader, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN")  # deferred: a read snapshot, no write lock

    try:
        with Session(reader) as session:
            try:
                yield session
            finally:
                session.rollback()
    finally:
        reader.dispose()
