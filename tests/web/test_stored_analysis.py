"""The dashboard serves the stored v2 analysis and never computes it inside a request (issue
24): with a stored result, no request runs the ranking; with none stored yet, the web process
computes it once in a background thread while the page says it is being computed. On SQLite
and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

import arena.analytics.report as report_module
from arena.analytics.report import configured_options, full_analysis
from arena.analytics.stored import V2, latest_analysis, refresh_analysis, stored_forecasts
from arena.clock import FixedClock
from arena.config import Settings
from arena.jsonable import jsonable
from arena.web.app import create_app
from arena.web.context import WebContext
from tests.analytics.results_arena import build_arena
from tests.conftest import Database

AT = datetime(2027, 1, 15, tzinfo=UTC)  # after the markets close


class RankingSpy:
    """Wraps :func:`arena.analytics.report.ranking` (which every v2 analysis runs): records the
    thread of each call, and holds each call until ``release`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.threads: list[str] = []
        self.release = threading.Event()
        self.release.set()
        original = report_module.ranking

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.threads.append(threading.current_thread().name)
            assert self.release.wait(30)
            return original(*args, **kwargs)

        monkeypatch.setattr(report_module, "ranking", spy)


@pytest.fixture
def web(db: Database) -> Iterator[tuple[Settings, WebContext, TestClient]]:
    build_arena(db.factory)
    settings = Settings.model_validate(
        {"database_url": db.url, "analysis": {"resamples": 40, "seed": 3}}
    )
    app = create_app(settings)
    ctx: WebContext = app.state.ctx
    ctx.clock = FixedClock(AT)
    with TestClient(app) as client:
        yield settings, ctx, client


def test_a_stored_result_is_served_without_computing(
    db: Database, web: tuple[Settings, WebContext, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, _ctx, client = web
    refresh_analysis(db.factory, settings, AT)
    with db.factory() as session:
        stored = latest_analysis(session, V2)
    assert stored is not None and stored.body is not None
    spy = RankingSpy(monkeypatch)
    body = client.get("/api/v1/ranking").json()
    page = client.get("/")
    assert spy.threads == []  # no request computed anything
    assert body["ranking"] == stored.body["ranking"]
    assert body["pending"] is False
    assert body["as_of"] == "2027-01-15T00:00:00Z" and body["computed_at"]
    assert page.status_code == 200
    assert "computed at" in page.text and "2027-01-15T00:00:00Z" in page.text


def test_a_stale_result_is_served_as_is(
    db: Database, web: tuple[Settings, WebContext, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, ctx, client = web
    ctx.clock = FixedClock(datetime(2027, 3, 1, tzinfo=UTC))  # months later
    refresh_analysis(db.factory, settings, AT)
    spy = RankingSpy(monkeypatch)
    body = client.get("/api/v1/ranking").json()
    assert spy.threads == []
    assert body["as_of"] == "2027-01-15T00:00:00Z" and body["ranking"] is not None


def test_with_nothing_stored_it_is_computed_off_the_request_path(
    db: Database, web: tuple[Settings, WebContext, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, ctx, client = web
    spy = RankingSpy(monkeypatch)
    spy.release.clear()  # the computation waits: the request must not
    first = client.get("/api/v1/ranking").json()
    page = client.get("/")
    assert first["pending"] is True and first["ranking"] is None
    assert "being computed" in page.text
    spy.release.set()
    assert ctx.analysis.thread is not None
    ctx.analysis.thread.join(60)
    later = client.get("/api/v1/ranking").json()
    assert spy.threads == ["v2-analysis"]  # once, in its own thread
    assert later["pending"] is False and later["as_of"] == "2027-01-15T00:00:00Z"
    with db.factory() as session:
        forecasts = stored_forecasts(session)
    direct = jsonable(full_analysis(forecasts, configured_options(settings, as_of=AT)))
    assert later["ranking"] == direct["ranking"]
