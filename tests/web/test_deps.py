"""The web context and read session come from FastAPI dependencies (``arena.web.deps``): every
route that reads the database asks for :data:`~arena.web.deps.SessionDep`, and answers a 503
"database unavailable" (a page, or JSON under ``/api/``) when the database is down."""

from __future__ import annotations

import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from arena.config import load_settings
from arena.web import api, pages
from arena.web.app import create_app
from arena.web.deps import read_session
from tests.helpers import write_config
from tests.web.conftest import Site


def _reads(dependant: Dependant) -> bool:
    return any(sub.call is read_session or _reads(sub) for sub in dependant.dependencies)


def _path(route: APIRoute) -> str:
    """The route's path with every path parameter given a plausible id."""
    return route.path_format.format(**{field.name: "1" for field in route.dependant.path_params})


READING_ROUTES = sorted(
    _path(route)
    for route in [*api.router.routes, *pages.router.routes]
    if isinstance(route, APIRoute) and _reads(route.dependant)
)


def test_every_data_route_takes_the_session_dependency() -> None:
    """Every page and API route but the methodology, the outside-agent schema and the API docs
    reads through the one dependency (about twenty routes)."""
    assert len(READING_ROUTES) >= 20
    others = {
        route.path
        for route in [*api.router.routes, *pages.router.routes]
        if isinstance(route, APIRoute) and not _reads(route.dependant)
    }
    assert others == {"/api/v1/methodology", "/api/v1/agent-schema", "/methodology", "/api/docs"}


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    """The app over a SQLite file that does not exist (the read-only app cannot create it)."""
    tmp = tmp_path_factory.mktemp("down")
    settings = load_settings(write_config(tmp / "config.yaml", f"sqlite:///{tmp / 'absent.db'}"))
    return TestClient(create_app(settings), raise_server_exceptions=False)


@pytest.mark.parametrize("path", READING_ROUTES)
def test_a_route_answers_503_when_the_database_is_down(down: TestClient, path: str) -> None:
    response = down.get(path)
    assert response.status_code == 503, (path, response.text[:300])
    assert "Traceback" not in response.text
    if path.startswith("/api/"):
        body = response.json()
        assert body["error"] == "database unavailable"
        assert "absent.db" in body["detail"] and "ARENA_DATABASE_URL" in body["detail"]
    else:
        assert "database unavailable" in response.text


def test_a_stopped_app_holds_no_database_connection(site: Site) -> None:
    """The app owns its engine: when it stops (lifespan shutdown) its pool is closed, so apps
    started and stopped one after another (tests, a restarted `arena serve`) never pile up idle
    PostgreSQL connections until the server refuses clients."""
    app = create_app(site.settings)
    engine = app.state.ctx.engine
    with TestClient(app) as client:
        assert client.get("/api/v1/leaderboard").status_code == 200
        assert engine.pool.checkedin() >= 1  # the page's connection went back to the pool
    assert engine.pool.checkedin() == 0
