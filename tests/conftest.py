"""Shared fixtures: a migrated database on SQLite and (when configured) PostgreSQL.

PostgreSQL tests use ``ARENA_TEST_POSTGRES_URL`` (e.g.
``postgresql+psycopg://postgres@127.0.0.1:5432/test``). Without it they skip with a reason;
with it, an unreachable server is an error, never a skip. Each test session creates its own
scratch database on that server (so parallel runs never collide) and drops it at the end.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from arena.store.db import current_revision, head_revision, make_engine, session_factory, upgrade
from arena.store.models import Base

PG_ENV = "ARENA_TEST_POSTGRES_URL"
NO_PG_REASON = f"PostgreSQL tests need {PG_ENV} (e.g. postgresql+psycopg://postgres@127.0.0.1/test)"


@dataclass
class Database:
    """A migrated, empty database for one test."""

    url: str
    engine: Engine
    factory: sessionmaker[Session]

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    def wait_until_blocked_or_done(self, thread: threading.Thread) -> None:
        """Until ``thread`` waits for a row lock, or has finished (PostgreSQL). SQLite has no
        row locks (its writers queue for the whole database): nothing to wait for there."""
        if self.backend != "postgresql":
            return
        waiting = text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        deadline = time.monotonic() + 120  # generous: a busy machine only makes it later
        with self.engine.connect() as connection:
            while thread.is_alive() and not connection.execute(waiting).scalar():
                assert time.monotonic() < deadline, "the thread neither finished nor waited"
                time.sleep(0.02)
                connection.rollback()  # a fresh snapshot of pg_stat_activity


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a scratch database created for this test session, dropped afterwards."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(NO_PG_REASON)
    admin_url = make_url(base).set(drivername="postgresql+psycopg")
    name = f"arena_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # a configured but unreachable server must fail, not skip
        pytest.fail(f"{PG_ENV} is set but PostgreSQL is unreachable: {exc}")
    url = admin_url.set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _truncate_all(engine: Engine) -> None:
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))


def _sqlite_database(tmp_path: Path) -> Iterator[Database]:
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    engine = make_engine(url)
    upgrade(engine)
    yield Database(url, engine, session_factory(engine))
    engine.dispose()


def _postgres_database(request: pytest.FixtureRequest) -> Iterator[Database]:
    url = request.getfixturevalue("postgres_url")
    engine = make_engine(url)
    if current_revision(engine) != head_revision():  # a migration test left it downgraded
        upgrade(engine)
    _truncate_all(engine)
    yield Database(url, engine, session_factory(engine))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A migrated empty database, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        yield from _sqlite_database(tmp_path)
    else:
        yield from _postgres_database(request)


@pytest.fixture
def postgres_db(request: pytest.FixtureRequest) -> Iterator[Database]:
    """A migrated empty PostgreSQL database (for what only a server can do, such as going away
    in the middle of a command); mark the test ``postgres``."""
    yield from _postgres_database(request)


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    """A migrated empty SQLite database (for tests that are not about the backend)."""
    yield from _sqlite_database(tmp_path)


PRICING_ENV = "ARENA_BENCHMARK__PRICING"


@pytest.fixture(autouse=True)
def _gamma_pricing_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """New cohorts default to mode book (config ``benchmark.pricing``); the suite's worlds
    were built on mode gamma's display prices and keep it, so every test (and every
    ``arena`` process it starts) runs mode gamma unless it asks for book: by passing
    ``pricing="book"`` in its settings, or by removing this variable (``monkeypatch``)."""
    monkeypatch.setenv(PRICING_ENV, "gamma")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow end-to-end modules first (marked ``slow``): pytest-xdist hands out whole
    modules in the order their tests come, so a long module left to the end would keep one
    worker busy while the other has nothing left to do."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
