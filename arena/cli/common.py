"""What every command shares: the loaded settings, the database, the clock, the consoles."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from arena.clock import Clock, FixedClock, SystemClock, parse_timestamp
from arena.errors import OptionError, UserError
from arena.startup import loading_for_good

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
        """The database, read and written (a missing SQLite file is created, and said so)."""
        if self._engine is None:
            from arena.store.db import make_engine, sqlite_file

            url = self.settings.database_url
            self._engine = make_engine(url)
            path = sqlite_file(url)
            if path is not None and not path.exists():  # said on stdout: stderr is for errors
                console.print(
                    f"new database {path} (database_url {self.url_source()})",
                    markup=False,
                    soft_wrap=True,
                )
        return self._engine

    def url_source(self) -> str:
        """Where the database URL came from, in words."""
        from arena.config import database_url_source

        return database_url_source(self.config_path)

    def _refuse_missing_database(self) -> None:
        """A command that only reads never creates the database: a missing SQLite file is a
        usage error naming the file, where its URL came from and how to choose another."""
        from arena.config import DATABASE_URL_HOW
        from arena.errors import DatabaseUnavailable
        from arena.store.db import sqlite_file

        path = sqlite_file(self.settings.database_url)
        if path is not None and not path.exists():
            raise DatabaseUnavailable(
                f"no database at {path} (database_url {self.url_source()})",
                hint=f"{DATABASE_URL_HOW}; `arena db upgrade` or `arena run` creates one",
            )

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
            self._refuse_missing_database()
            from sqlalchemy.exc import DBAPIError

            from arena.store.db import (
                at_head,
                current_revision,
                head_revision,
                make_engine,
                storage_failure,
                upgrade,
            )

            engine = make_engine(self.settings.database_url, read_only=True)
            self._read_engine = engine
            if not at_head(engine):
                try:
                    upgrade(self.engine)
                except DBAPIError as exc:
                    failure = storage_failure(exc)
                    if failure is None:
                        raise
                    raise UserError(
                        f"database_url: the schema is at revision {current_revision(engine)}, "
                        f"not {head_revision()}, and the database cannot be migrated "
                        f"({failure}); run `arena db upgrade` with write access"
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
    with loading_for_good():  # as arena.__main__ loads the CLI: what the jobs load lives as long
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
        metavar="TIMESTAMP",
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
    typer.Option("--format", "-f", metavar="FORMAT", help="Output format: table, json or csv."),
]
ViewFormatOption = Annotated[
    str,
    typer.Option("--format", "-f", metavar="FORMAT", help="Output format: table or json."),
]
VIEW_FORMATS = ("table", "json")
"""The formats of a command that shows a view (``status``, ``families``, ``verify``, ...);
``arena analyze`` takes csv too (:data:`arena.cli.analyze.ANALYZE_FORMATS`)."""


def one_of(flag: str, value: str, choices: Sequence[str]) -> str:
    """``value`` when it is one of ``choices``; else the one-line usage error (exit 2) that
    every option with a fixed set of values gives: ``--format: 'csv' is not one of table,
    json``."""
    if value not in choices:
        raise OptionError(f"{flag}: {value!r} is not one of {', '.join(choices)}")
    return value


ID_MAX = 2**31 - 1
"""The largest id a row can have: ids are INTEGER columns (32 bits on PostgreSQL)."""


def ids_in_range(option: str) -> Callable[[Any], Any]:
    """A typer callback refusing, in one line, an id no row can have (below 1, above
    :data:`ID_MAX`): such a number would overflow the database's integer, not find nothing."""

    def check(value: Any) -> Any:
        for number in value if isinstance(value, list | tuple) else [value]:
            if number is not None and not 1 <= number <= ID_MAX:
                raise OptionError(f"{option}: {number} is not an id (ids run from 1 to {ID_MAX})")
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
        raise OptionError(f"{option}: {text!r} is not an ISO 8601 timestamp") from None
    if not EARLIEST <= at <= LATEST:
        raise OptionError(f"{option}: {text!r} is outside 2000-01-01..2100-01-01 (UTC)")
    return at
