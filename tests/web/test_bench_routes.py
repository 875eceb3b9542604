"""``benchmarks/bench_dashboard.py`` times every route a reader can GET: each GET route of the
app (the pages, the API, the OpenAPI document, health and metrics) is one of the paths its
``routes`` returns, here asked of the demo."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.routing import Route, compile_path

from arena.web.app import create_app
from tests.web.conftest import Site
from tests.web.test_params import routes_of

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
BASE = "http://bench"


def test_the_dashboard_benchmark_requests_every_route(
    demo_site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    bench = importlib.import_module("bench_dashboard")
    app = create_app(demo_site.settings)
    with TestClient(app) as client:
        monkeypatch.setattr(
            bench.httpx, "get", lambda url, timeout=None: client.get(url.removeprefix(BASE))
        )
        paths = bench.routes(BASE)
    app.state.ctx.engine.dispose()
    readable = [
        path
        for path, route in routes_of(app)
        if isinstance(route, Route) and "GET" in (route.methods or ())
    ]
    assert len(readable) > 20
    missing = [
        template
        for template in readable
        if not any(compile_path(template)[0].match(path.split("?", 1)[0]) for path in paths)
    ]
    assert not missing, f"bench_dashboard.py does not request {missing}"
