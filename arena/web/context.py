"""What every route shares: settings, the read-only database, the result cache, pages of a list,
and stored rows made JSON-ready by :func:`arena.jsonable.jsonable` (Decimals as exact decimal
strings, trailing zeros past the cents trimmed: ``0.155``, ``550.00``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Engine, Select, func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.analytics.stored import StoredAnalysis
from arena.clock import Clock, SystemClock
from arena.config import Settings
from arena.jsonable import jsonable
from arena.web.background import Background
from arena.web.cache import ResultCache, data_version

T = TypeVar("T")
PER_PAGE = 50
VERSION_TTL_S = 2.0
MAX_PER_PAGE = 200


@dataclass
class WebContext:
    settings: Settings
    engine: Engine
    factory: sessionmaker[Session]
    head: str | None
    cache: ResultCache = field(default_factory=ResultCache)
    analysis: Background[StoredAnalysis] = field(default_factory=lambda: Background("v2-analysis"))

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.factory() as session:
            try:
                yield session
            finally:
                session.rollback()

    clock: Clock = field(default_factory=SystemClock)
    fresh: bool = False  # the static copy: every result of its one instant, never an older one
    _version: tuple[float, tuple[Any, ...]] | None = field(default=None, repr=False)

    def latest(self, key: Hashable, session: Session, compute: Callable[[Session], T]) -> T:
        """A research measure (risk, a breakdown, the trend, a scoped ranking) of the current
        data version, or while that is being computed off the request path, the last one
        (:meth:`arena.web.cache.ResultCache.latest`); ``compute`` reads through the session it
        is given."""
        version = self.version(session)
        if self.fresh:
            return self.cache.get(key, version, lambda: compute(session))

        def refresh() -> T:
            with self.session() as own:
                return compute(own)

        return self.cache.latest(key, version, lambda: compute(session), refresh)

    def per_version(self, key: Hashable, session: Session, compute: Callable[[], T]) -> T:
        """``compute()`` (a page's rows, read through ``session``) once per data version: the
        readers of one page between two writes share one computation."""
        return self.cache.get(key, self.version(session), compute)

    def now(self) -> datetime:
        """The instant analyses are computed "as of" (the one source of now)."""
        return self.clock.now()

    def version(self, session: Session) -> tuple[Any, ...]:
        """The data version, read at most once per :data:`VERSION_TTL_S` (the daemon writes
        every few minutes; a page may lag a write by that long, never more)."""
        now = time.monotonic()
        cached = self._version
        if cached is not None and now - cached[0] < VERSION_TTL_S:
            return cached[1]
        version = data_version(session)
        self._version = (now, version)
        return version


@dataclass(frozen=True)
class Page:
    """A page of a list: 1-based ``page``, ``per_page`` rows."""

    page: int = 1
    per_page: int = PER_PAGE

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    def apply(self, statement: Select) -> Select:
        return statement.limit(self.per_page).offset(self.offset)

    def wrap(self, items: list[Any], total: int) -> dict[str, Any]:
        pages = max(1, -(-total // self.per_page))
        return {
            "items": items,
            "page": self.page,
            "per_page": self.per_page,
            "total": total,
            "pages": pages,
        }


def count(session: Session, statement: Select) -> int:
    return int(session.scalar(select(func.count()).select_from(statement.subquery())) or 0)


def row_dict(obj: Any, *names: str) -> dict[str, Any]:
    """Selected attributes of an ORM row, JSON-ready."""
    return {name: jsonable(getattr(obj, name), trim=True) for name in names}


def columns(model: Any, *exclude: str) -> tuple[str, ...]:
    """Every mapped column name of ``model`` except ``exclude``."""
    return tuple(c.key for c in model.__table__.columns if c.key not in exclude)


def fields(model: Any, *exclude: str) -> list[Any]:
    """The table columns of ``model`` (list queries read plain rows, not ORM objects)."""
    return [c for c in model.__table__.c if c.key not in exclude]


def rows_of(session: Session, statement: Select) -> list[dict[str, Any]]:
    """Every row of ``statement`` as a JSON-ready dict keyed by column name."""
    return [
        {key: jsonable(value, trim=True) for key, value in row.items()}
        for row in session.execute(statement).mappings()
    ]
