"""Every route's parameters pass one rule at the edge of the web app (``arena.web.params``):
an integer beyond the database's ``integer`` or text holding NUL never reaches a query. A path
parameter that names nothing is a 404, a bad query parameter a 400 page or a 422 JSON body;
never a 500, and never a 503 "database unavailable" that would look like an outage in
``/metrics``. The routes are read from the app itself, so a new route cannot escape the rule."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

import fastapi.routing
import pytest
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute, Mount

from arena.config import load_settings
from arena.web.app import create_app
from arena.web.params import CheckedRoute
from tests.conftest import Database
from tests.helpers import write_config

HOSTILE_INTS = [2**31, 2**63, 2**64, -1]
NUL = "1\x002"
HOSTILE_TEXTS = [NUL, "\x00", "9" * 40]  # the last: longer than any market id


@dataclass(frozen=True)
class Probe:
    route: str
    url: str
    expected: int


def _is_int(field: typing.Any) -> bool:
    annotation = field.field_info.annotation
    return annotation is int or int in typing.get_args(annotation)


def _benign(field: typing.Any) -> str:
    return "1" if _is_int(field) else "x"


def _url(template: str, path: dict[str, str], query: dict[str, str]) -> str:
    url = template.format(**{k: quote(v, safe="") for k, v in path.items()})
    return f"{url}?{urlencode(query)}" if query else url


def routes_of(app: FastAPI) -> list[tuple[str, BaseRoute]]:
    """Every route of ``app`` with the path it answers at, included routers flattened (FastAPI
    0.16x includes a router lazily; earlier versions copy its routes into ``app.routes``)."""
    iterate = getattr(fastapi.routing, "iter_route_contexts", None)
    if iterate is None:
        return [(getattr(route, "path", ""), route) for route in app.routes]
    return [(context.path or "", context.original_route) for context in iterate(app.routes)]


def query_fields(dependant: Dependant) -> list[typing.Any]:
    """The query parameters of a route, those of its dependencies (a page, a market filter)
    included."""
    nested = [field for sub in dependant.dependencies for field in query_fields(sub)]
    return [*dependant.query_params, *nested]


def probes(app: FastAPI) -> Iterator[Probe]:
    """Every GET route of ``app``, each parameter in turn given every hostile value (the others
    benign): path parameters expect a 404, query parameters a bad request."""
    for path, route in routes_of(app):
        if isinstance(route, Mount):
            yield Probe(path, f"{path}/{quote(NUL)}", 404)
            continue
        if not isinstance(route, APIRoute) or "GET" not in route.methods:
            continue
        path_params = route.dependant.path_params
        bad_request = 422 if path.startswith("/api/") else 400
        benign = {f.alias: _benign(f) for f in path_params}
        for field in path_params:
            for value in HOSTILE_INTS if _is_int(field) else HOSTILE_TEXTS:
                yield Probe(path, _url(path, {**benign, field.alias: str(value)}, {}), 404)
        for field in query_fields(route.dependant):
            for value in [*(HOSTILE_INTS if _is_int(field) else []), NUL]:
                yield Probe(path, _url(path, benign, {field.alias: str(value)}), bad_request)


@pytest.fixture
def app(db: Database, tmp_path: Path) -> FastAPI:
    return create_app(load_settings(write_config(tmp_path / "config.yaml", db.url)))


def test_every_route_refuses_out_of_range_ids_and_nul(app: FastAPI) -> None:
    """2^31, 2^63, 2^64 and -1 in every integer parameter, NUL in every parameter (text, enum,
    flag or number), on every page and API route: a 404 for a path parameter, a 400 page or
    422 JSON for a query parameter; no 5xx is counted in ``/metrics``."""
    found = list(probes(app))
    assert {p.route for p in found} >= {
        "/static",
        "/markets",
        "/cohorts/{cohort_id}/families/{family_id}",
        "/api/v1/decisions/{decision_id}",
        "/api/v1/markets/{market_id}",
        "/api/v1/curves",
    }
    wrong = []
    with TestClient(app, raise_server_exceptions=False) as client:
        for probe in found:
            response = client.get(probe.url)
            if response.status_code != probe.expected or "Traceback" in response.text:
                wrong.append((probe.url, response.status_code, probe.expected))
        metrics = client.get("/metrics").text
    assert wrong == []
    counted = [line for line in metrics.splitlines() if line.startswith("arena_http_requests")]
    assert counted and not [line for line in counted if 'status="5' in line], counted


def test_every_route_takes_the_edge_rule(app: FastAPI) -> None:
    """Every API route of the app (pages, JSON API, operations endpoints) is a CheckedRoute,
    including routes added to the app itself."""
    routes = [route for _, route in routes_of(app) if isinstance(route, APIRoute)]
    assert len(routes) > 20
    assert routes and all(isinstance(r, CheckedRoute) for r in routes)
