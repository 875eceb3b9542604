"""Engine and session setup, and migrations, for SQLite (default) and PostgreSQL.

SQLite runs in WAL mode with foreign keys on and a busy timeout; every SQLite transaction is
``BEGIN IMMEDIATE`` so two writers queue instead of failing half-way with "database is locked"
on a read-to-write upgrade. PostgreSQL uses psycopg 3 with READ COMMITTED and explicit row locks
where a job needs them.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from arena.errors import DatabaseUnavailable, StorageFailed
from arena.masking import mask_url

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 60_000
MIGRATION_LOCK_KEY = 7_310_001  # pg advisory lock id held while migrating


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def make_engine(url: str, *, read_only: bool = False, **kwargs: Any) -> Engine:
    """Create an engine; a missing SQLite directory is a one-line :class:`DatabaseUnavailable`.

    ``read_only`` engines (for commands that only read) never write: SQLite connections are
    ``query_only`` and begin deferred transactions (no write lock), PostgreSQL sessions are
    ``default_transaction_read_only``. They work on a read-only database file or role.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            directory = Path(database).expanduser().resolve().parent
            if not directory.is_dir():
                raise DatabaseUnavailable(
                    f"database_url: directory {directory} does not exist (create it first)"
                )
            if read_only and not os.access(directory, os.W_OK):
                url = _immutable_url(Path(database).expanduser().resolve(), url)
        timeout = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        engine = create_engine(url, connect_args=timeout, **kwargs)
        _configure_sqlite(engine, read_only)
        return engine
    if parsed.drivername == "postgresql":
        url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    kwargs.setdefault("pool_pre_ping", True)
    connect_args: dict[str, Any] = {"connect_timeout": 10}
    engine = create_engine(url, connect_args=connect_args, **kwargs)
    if read_only:

        @event.listens_for(engine, "connect")
        def _read_only(dbapi_connection: Any, _record: Any) -> None:
            with dbapi_connection.cursor() as cursor:
                cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            dbapi_connection.commit()

    return engine


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite database URL (``None`` for PostgreSQL, ``:memory:`` or a
    ``file:`` URI): what a first connection would create if it is missing."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):
        return None
    return Path(database).expanduser().resolve()


def _immutable_url(path: Path, url: str) -> str:
    """A WAL database in a directory nobody can write (a read-only mount, a 0555 directory)
    cannot be opened normally: SQLite must create its ``-shm`` file. With no ``-wal`` there,
    nothing is being written either, so it is read as immutable."""
    if Path(f"{path}-wal").exists() or Path(f"{path}-shm").exists():
        return url
    return f"sqlite:///file:{quote(str(path))}?mode=ro&immutable=1&uri=true"


def _configure_sqlite(engine: Engine, read_only: bool = False) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        if read_only:
            cursor.execute("PRAGMA query_only = ON")  # a database made by arena is WAL already
        else:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Deferred for readers: BEGIN IMMEDIATE takes the write lock, refused on a read-only file.
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """ORM sessions on ``engine`` (the ORM loads here: ``arena status`` reads without it)."""
    from sqlalchemy.orm import sessionmaker

    return sessionmaker(engine, expire_on_commit=False)


def check_connection(engine: Engine) -> None:
    """Fail with one line when the database cannot be reached: :class:`StorageFailed` when a
    SQLite file's directory is read-only or its disk full, :class:`DatabaseUnavailable`
    otherwise. (At connect time the driver's text cannot tell these apart: PostgreSQL's
    "permission denied for database" is no read-only database, so :func:`storage_failure`,
    which reads that text, is for failures in the middle of work.)"""
    try:
        with engine.connect() as conn:
            # On SQLite, reading the schema opens the file for real (and its -shm).
            conn.execute(
                text("SELECT count(*) FROM sqlite_master" if is_sqlite(engine) else "SELECT 1")
            )
    except DBAPIError as exc:
        reason = _first_line(exc.orig or exc)
        database = Path(engine.url.database or "")
        if is_sqlite(engine) and not isinstance(exc, OperationalError):
            # "file is not a database", "file is encrypted...": not SQLite at all
            raise DatabaseUnavailable(
                f"database_url: {database} is not an arena database (cannot be opened as "
                f"SQLite: {reason})"
            ) from None
        if is_sqlite(engine) and database.is_file():
            # SQLite says only "unable to open database file" when it cannot create its -shm
            if not os.access(database.parent, os.W_OK):
                raise StorageFailed(
                    f"read-only database: {database} is in a directory or file system this "
                    "user cannot write, and this command writes"
                ) from None
            if os.statvfs(database.parent).f_bavail == 0:
                raise StorageFailed(
                    f"disk full: no space left on the file system of {database} ({reason})"
                ) from None
        raise DatabaseUnavailable(
            f"database_url: cannot connect to {shown_url(engine)}: {reason}"
        ) from None


def shown_url(engine: Engine) -> str:
    """The engine's URL as it may be shown or logged (every credential masked)."""
    return mask_url(engine.url.render_as_string(hide_password=False))


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:300] if lines else type(error).__name__


def migrations_dir() -> Path:
    """The Alembic scripts shipped inside the package (``arena/resources/migrations``)."""
    return Path(str(resources.files("arena") / "resources" / "migrations"))


def alembic_config(engine: Engine | None = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if engine is not None:
        cfg.set_main_option(
            "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
        )
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations in one transaction, serialised between processes.

    PostgreSQL takes an advisory lock; SQLite's ``BEGIN IMMEDIATE`` holds the write lock, so a
    second process waits and then finds the database already at head. A database already at
    :func:`head_revision` is left alone without loading Alembic.
    """
    if revision == "head" and at_head(engine):
        return  # the common case at every start: Alembic (0.1 s of imports) is not loaded
    from alembic import command

    cfg = alembic_config(engine)
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)


SCHEMA_REVISION = "0013"
"""The schema revision this code runs on: the head of the shipped migrations. Read-only
commands compare it with the database's without loading Alembic (a test keeps the two equal)."""


def head_revision() -> str:
    """The latest migration revision this arena ships."""
    return SCHEMA_REVISION


def migrations_head() -> str | None:
    """The head revision as Alembic finds it in the migration scripts."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def at_head(engine: Engine) -> bool:
    """Whether the database's schema is at :func:`head_revision` (read without writing)."""
    check_connection(engine)
    return current_revision(engine) == head_revision()


def current_revision(engine: Engine) -> str | None:
    """The database's schema revision (Alembic's version table), None when never migrated."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose transaction commits on success and rolls back on error."""
    with factory() as session, session.begin():
        yield session


# -- failures of the storage underneath, in one line: the CLI (exit 1), /readyz, the web app --

DISK_FULL_STATES = {"53100"}  # PostgreSQL disk_full
READ_ONLY_STATES = {"25006", "42501"}  # read_only_sql_transaction, insufficient_privilege
DISK_FULL_TEXT = ("database or disk is full", "could not extend file", "no space left on device")
READ_ONLY_TEXT = (
    "attempt to write a readonly database",
    "read-only transaction",
    "read-only file system",
    "permission denied for",
)


def error_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and everything it wraps (the driver's error, causes, contexts), each once."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        yield error
        pending += [getattr(error, "orig", None), error.__cause__, error.__context__]


def storage_failure(exc: BaseException) -> str | None:
    """``"disk full: ..."`` or ``"read-only database: ..."`` when ``exc`` (or what it wraps)
    is a full disk or a database that refuses writes; None for anything else."""
    for error in error_chain(exc):
        detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        text = detail.lower()
        state = getattr(error, "sqlstate", None)
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            return f"disk full: {error.strerror}" + (
                f" ({error.filename})" if error.filename else ""
            )
        if state in DISK_FULL_STATES or any(t in text for t in DISK_FULL_TEXT):
            return f"disk full: {detail}"
        if isinstance(error, OSError) and error.errno == errno.EROFS:
            return f"read-only file system: {error.filename or error.strerror}"
        if state in READ_ONLY_STATES or any(t in text for t in READ_ONLY_TEXT):
            return f"read-only database: {detail}"
    return None


# -- the database lost or unreachable (in the middle of a command, or under the web app) -----

CONNECTION_STATE_CLASSES = ("08", "57P")  # connection_exception; operator_intervention
SQLITE_CANT_OPEN = "SQLITE_CANTOPEN"


def database_unreachable(exc: BaseException) -> str | None:
    """``"database unavailable: ..."`` when ``exc`` (or what it wraps) is the database going
    away under a running command (PostgreSQL refusing, closing or timing out the connection,
    a SQLite file that can no longer be opened); None for anything else. The reason is the
    driver's first line, which names the host and port, never a password."""
    for error in error_chain(exc):
        driver = type(error).__module__.split(".")[0]
        state = getattr(error, "sqlstate", None)
        if (
            getattr(error, "connection_invalidated", False)  # SQLAlchemy saw a disconnect
            or (state or "").startswith(CONNECTION_STATE_CLASSES)
            or (  # psycopg's own connection failures carry no SQLSTATE
                driver == "psycopg"
                and state is None
                and type(error).__name__ in ("OperationalError", "InterfaceError")
            )
            or getattr(error, "sqlite_errorname", None) == SQLITE_CANT_OPEN
        ):
            origin = getattr(error, "orig", None) or error
            lines = str(origin).strip().splitlines()
            reason = lines[0][:300] if lines else type(origin).__name__
            return f"database unavailable: {reason}"
    return None
