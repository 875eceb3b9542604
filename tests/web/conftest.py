"""Fixtures of the web tests: a demo arena on SQLite (made by `arena demo`, as a user would) and
a simulated arena on PostgreSQL, both methodology v2, each served by the ASGI app."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from arena.config import Settings, load_settings
from arena.demo_world import Simulation, WorldPlan
from arena.store.db import make_engine, session_factory, upgrade
from arena.web.app import create_app
from tests.conftest import PG_ENV
from tests.helpers import SEVEN_FAMILIES, cli_env, run_arena, write_config

DEMO_START = datetime(2026, 11, 1, tzinfo=UTC)
WEEKS = 2


@dataclass
class Site:
    """A populated arena database, its config file and settings."""

    backend: str
    url: str
    config: Path
    settings: Settings
    demo_stdout: str = ""

    def client(self) -> TestClient:
        return TestClient(create_app(self.settings), raise_server_exceptions=False)


def _demo_site(tmp: Path) -> Site:
    out = tmp / "demo"
    config = write_config(tmp / "config.yaml", f"sqlite:///{out / 'demo.db'}", methodology="v2")
    env = cli_env(
        OPENROUTER_API_KEY="", HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9"
    )
    result = run_arena(
        "--config",
        str(config),
        "demo",
        "--weeks",
        str(WEEKS),
        "--markets",
        "80",
        "--out",
        str(out),
        env=env,
        cwd=tmp,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return Site(
        "sqlite", f"sqlite:///{out / 'demo.db'}", config, load_settings(config), result.stdout
    )


def _postgres_site(tmp: Path, base: str) -> Iterator[Site]:
    admin_url = make_url(base).set(drivername="postgresql+psycopg")
    name = f"arena_web_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.set(database=name).render_as_string(hide_password=False)
    config = write_config(tmp / "config.yaml", url, methodology="v2")
    settings = load_settings(config)
    engine = make_engine(url)
    try:
        upgrade(engine)
        families = [f["id"] for f in SEVEN_FAMILIES if f.get("kind") != "baseline"]
        sim = Simulation(
            settings,
            session_factory(engine),
            WorldPlan(DEMO_START, 7 * WEEKS, n_markets=80, seed=7),
            skills={f: round(0.1 + 0.2 * i, 2) for i, f in enumerate(families)},
        )
        try:
            end = DEMO_START + timedelta(days=7 * WEEKS) - timedelta(hours=4)
            sim.run(end, timedelta(hours=4))
        finally:
            sim.close()
        engine.dispose()
        yield Site("postgresql", url, config, settings)
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """The database `arena demo` made (SQLite)."""
    return _demo_site(tmp_path_factory.mktemp("web-demo"))


@pytest.fixture(scope="session")
def postgres_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"PostgreSQL tests need {PG_ENV}")
    yield from _postgres_site(tmp_path_factory.mktemp("web-pg"), base)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def site(request: pytest.FixtureRequest) -> Site:
    """A populated arena, once on SQLite (the demo) and once on PostgreSQL."""
    name = "demo_site" if request.param == "sqlite" else "postgres_site"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


@pytest.fixture
def client(site: Site) -> Iterator[TestClient]:
    with site.client() as test_client:
        yield test_client


from tests.web.browsing import (  # noqa: E402, F401  (the browser fixtures)
    base_url,
    browser,
    postgres_base_url,
    served,
    shots,
)
