"""Engine and session setup, and migrations, for SQLite (default) and PostgreSQL.

SQLite runs in WAL mode with foreign keys on and a busy timeout; every SQLite transaction is
``BEGIN IMMEDIATE`` so two writers queue instead of failing half-way with "database is locked"
on a read-to-write upgrade. PostgreSQL uses psycopg 3 with READ COMMITTED and explicit row locks
where a job needs them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from arena.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 60_000
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
MIGRATION_LOCK_KEY = 7_310_001  # pg advisory lock id held while migrating


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine; a missing SQLite directory is a one-line :class:`DatabaseUnavailable`."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            directory = Path(database).expanduser().resolve().parent
            if not directory.is_dir():
                raise DatabaseUnavailable(
                    f"database_url: directory {directory} does not exist (create it first)"
                )
        timeout = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        engine = create_engine(url, connect_args=timeout, **kwargs)
        _configure_sqlite(engine)
        return engine
    if parsed.drivername == "postgresql":
        url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, connect_args={"connect_timeout": 10}, **kwargs)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def check_connection(engine: Engine) -> None:
    """Fail with one line when the database cannot be reached."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise DatabaseUnavailable(
            f"database_url: cannot connect to {engine.url.render_as_string(hide_password=True)}:"
            f" {reason}"
        ) from None


def alembic_config(engine: Engine | None = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if engine is not None:
        cfg.set_main_option(
            "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
        )
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations in one transaction, serialised between processes.

    PostgreSQL takes an advisory lock; SQLite's ``BEGIN IMMEDIATE`` holds the write lock, so a
    second process waits and then finds the database already at head.
    """
    from alembic import command

    check_connection(engine)
    cfg = alembic_config(engine)
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose transaction commits on success and rolls back on error."""
    with factory() as session, session.begin():
        yield session
