"""What every command shares: the loaded settings, the database, the clock, the consoles."""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from arena.clock import Clock, FixedClock, SystemClock, parse_timestamp
from arena.errors import UserError

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from arena.config import Settings
    from arena.runtime import Runtime

# Nothing here imports SQLAlchemy, pydantic or the jobs at module level: `arena --help` stays
# fast, and each command loads only what it uses.

console = Console()
err_console = Console(stderr=True)


@dataclass
class AppState:
    """Lazily loaded per-invocation state (``--help`` never touches config or database)."""

    config_path: str | None = None
    json_logs: bool | None = None
    _settings: Settings | None = None
    _engine: Engine | None = None
    _factory: sessionmaker[Session] | None = field(default=None, repr=False)
    _read_engine: Engine | None = None
    _reader: sessionmaker[Session] | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from arena.config import load_settings

            self._settings = load_settings(self.config_path)
        return self._settings

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from arena.store.db import make_engine

            self._engine = make_engine(self.settings.database_url)
        return self._engine

    def factory(self, migrate: bool = True) -> sessionmaker[Session]:
        """A session factory on a migrated database (migrating an empty one on first use)."""
        if self._factory is None:
            from arena.store.db import session_factory, upgrade

            if migrate:
                upgrade(self.engine)
            self._factory = session_factory(self.engine)
        return self._factory

    def read_engine(self) -> Engine:
        """An engine for commands that only read (status, leaderboard, export, analyze): it
        never writes, so it works on a read-only database. A database already at the latest
        schema is not migrated; one behind is migrated first if it can be."""
        if self._read_engine is None:
            from sqlalchemy.exc import DBAPIError

            from arena.store.db import (
                at_head,
                current_revision,
                head_revision,
                make_engine,
                upgrade,
            )

            engine = make_engine(self.settings.database_url, read_only=True)
            self._read_engine = engine
            if not at_head(engine):
                try:
                    upgrade(self.engine)
                except DBAPIError as exc:
                    if storage_failure(exc) is None:
                        raise
                    raise UserError(
                        f"database_url: the schema is at revision {current_revision(engine)}, "
                        f"not {head_revision()}, and the database cannot be migrated "
                        f"({storage_failure(exc)}); run `arena db upgrade` with write access"
                    ) from None
        return self._read_engine

    def reader(self) -> sessionmaker[Session]:
        """ORM sessions on :meth:`read_engine`."""
        if self._reader is None:
            from arena.store.db import session_factory

            self._reader = session_factory(self.read_engine())
        return self._reader

    def close(self) -> None:
        for engine in (self._engine, self._read_engine):
            if engine is not None:
                engine.dispose()


def runtime(ctx: typer.Context) -> Runtime:
    """The daemon's jobs on the configured database (migrated first), for one command; use it
    as a context manager so its clients are closed."""
    from arena.runtime import production_runtime

    app_state = state(ctx)
    return production_runtime(app_state.settings, app_state.factory())


def state(ctx: typer.Context) -> AppState:
    root = ctx.find_root()
    if not isinstance(root.obj, AppState):
        root.obj = AppState()
    return root.obj


AtOption = Annotated[
    str | None,
    typer.Option(
        "--at",
        help="Act as if the current time were this instant (ISO 8601, UTC; e.g. "
        "2026-11-22T00:05:00Z). Default: the real clock.",
        show_default=False,
    ),
]

WideOption = Annotated[
    bool,
    typer.Option(
        "--wide", help="Show every column (default: the essential ones, fitting 80 columns)."
    ),
]

FormatOption = Annotated[
    str,
    typer.Option("--format", "-f", help="Output format: table, json or csv."),
]


ID_MAX = 2**31 - 1
"""The largest id a row can have: ids are INTEGER columns (32 bits on PostgreSQL)."""


def ids_in_range(option: str) -> Callable[[Any], Any]:
    """A typer callback refusing, in one line, an id no row can have (below 1, above
    :data:`ID_MAX`): such a number would overflow the database's integer, not find nothing."""

    def check(value: Any) -> Any:
        for number in value if isinstance(value, list | tuple) else [value]:
            if number is not None and not 1 <= number <= ID_MAX:
                raise UserError(f"{option}: {number} is not an id (ids run from 1 to {ID_MAX})")
        return value

    return check


def clock_for(at: str | None) -> Clock:
    if at is None:
        return SystemClock()
    return FixedClock(parse_at(at))


EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


def parse_at(text: str, option: str = "--at") -> datetime:
    """An ISO 8601 instant from the command line, within 2000-01-01..2100-01-01 (UTC)."""
    try:
        at = parse_timestamp(text)
    except (ValueError, OverflowError):
        raise UserError(f"{option}: {text!r} is not an ISO 8601 timestamp") from None
    if not EARLIEST <= at <= LATEST:
        raise UserError(f"{option}: {text!r} is outside 2000-01-01..2100-01-01 (UTC)")
    return at


# -- failures of the storage underneath: one line, exit 1 (arena/cli/__init__.py) -------------

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


# -- the database lost or unreachable in the middle of a command: one line, exit 1 ------------

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
            return (
                f"database unavailable: {reason} (each job commits whole: run the command "
                "again when the database is back)"
            )
    return None
