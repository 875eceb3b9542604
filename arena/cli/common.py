"""What every command shares: the loaded settings, the database, the clock, the consoles."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated

import typer
from rich.console import Console
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, FixedClock, SystemClock, parse_timestamp
from arena.config import Settings, load_settings
from arena.errors import UserError
from arena.store.db import make_engine, session_factory, upgrade

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

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_path)
        return self._settings

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = make_engine(self.settings.database_url)
        return self._engine

    def factory(self, migrate: bool = True) -> sessionmaker[Session]:
        """A session factory on a migrated database (migrating an empty one on first use)."""
        if self._factory is None:
            if migrate:
                upgrade(self.engine)
            self._factory = session_factory(self.engine)
        return self._factory

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()


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

FormatOption = Annotated[
    str,
    typer.Option("--format", "-f", help="Output format: table, json or csv."),
]


def clock_for(at: str | None) -> Clock:
    if at is None:
        return SystemClock()
    return FixedClock(parse_at(at))


def parse_at(text: str) -> datetime:
    try:
        return parse_timestamp(text)
    except ValueError:
        raise UserError(f"--at: {text!r} is not an ISO 8601 timestamp") from None
