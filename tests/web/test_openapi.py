"""The OpenAPI document is true: Schemathesis generates requests from ``/api/openapi.json`` and
checks each answer against it (no 5xx, the status code and content type documented, the body
valid against the documented schema, ``Allow`` on every 405), on the demo database and on
PostgreSQL."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from schemathesis.engine import Status, events

from arena.domain.states import MarketStatus
from arena.web import records, standings
from arena.web import trend as web_trend
from arena.web.api import AGENT_SCHEMA
from arena.web.app import create_app
from arena.web.breakdown import By, breakdown
from arena.web.context import Page
from arena.web.curves import MAX_POINTS, CurveRange, curves
from arena.web.params import MarketSort
from arena.web.schemas import allowed_values
from tests.web.conftest import Site

# The checks the issue asks for. Not negative_data_rejection: a blank query parameter
# (``?cohort=``) is a parameter not given (tests/web/test_forms.py), so the app answers 200 to
# the empty string Schemathesis sends as "not an integer". Nor the stateful checks: the API is
# read-only and declares no links.
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "unsupported_method",
    "allow_header_conformance",
)
CONFIG = {
    "seed": 23,
    "workers": 1,
    "generation": {"max-examples": 15, "deterministic": True, "database": "none"},
    "phases": {"stateful": {"enabled": False}},
    "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
}


@dataclass
class Run:
    """What one Schemathesis run saw: requests made, failed checks, engine errors."""

    requests: int = 0
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)


def fuzz(site: Site) -> Run:
    """Run Schemathesis's engine (what its CLI runs) against the app over ``site``."""
    config = schemathesis.Config.from_dict(CONFIG)
    app = create_app(site.settings)
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app, config=config)
    run = Run()
    try:
        events_seen = list(schemathesis.engine.from_schema(schema).execute())
    finally:
        app.state.ctx.engine.dispose()
    for event in events_seen:
        if isinstance(event, events.ScenarioFinished):
            recorder = event.recorder
            run.requests += len(recorder.interactions)
            for checks in recorder.checks.values():
                for check in checks:
                    if check.status == Status.FAILURE:
                        run.failures[(recorder.label, check.name)] += 1
        elif isinstance(event, events.NonFatalError | events.FatalError):
            run.errors.append(str(getattr(event, "value", None) or event))
    return run


def test_every_answer_is_documented(site: Site) -> None:
    run = fuzz(site)
    assert run.errors == []
    assert dict(run.failures) == {}
    assert run.requests > 200  # every operation was exercised, not skipped


# -- the document itself ------------------------------------------------------------------------

RST = ("``", ":func:", ":class:", ":meth:", ":data:", ":mod:")
ID_ROUTES = {  # a request naming nothing, and its route
    "/api/v1/families/no-such-family": "/api/v1/families/{family_id}",
    "/api/v1/families/no-such-family/trend": "/api/v1/families/{family_id}/trend",
    "/api/v1/cohorts/999999": "/api/v1/cohorts/{cohort_id}",
    "/api/v1/cohorts/999999/families/no-such-family": (
        "/api/v1/cohorts/{cohort_id}/families/{family_id}"
    ),
    "/api/v1/markets/999999999": "/api/v1/markets/{market_id}",
    "/api/v1/decisions/999999": "/api/v1/decisions/{decision_id}",
    "/api/v1/leaderboard?cohort=999999": "/api/v1/leaderboard",
}


def document(client: TestClient) -> dict[str, Any]:
    answer = client.get("/api/openapi.json")
    assert answer.status_code == 200
    return answer.json()  # type: ignore[no-any-return]


def test_descriptions_are_text_without_rst_markup(client: TestClient) -> None:
    text = client.get("/api/openapi.json").text
    assert [mark for mark in RST if mark in text] == []
    page = client.get("/api/docs").text
    assert "``" not in page
    assert "<code>arena leaderboard --format json</code>" in page  # Markdown, rendered


def test_the_curves_cap_is_the_one_documented(client: TestClient) -> None:
    """The document, the README and the answer's ``max_points`` say the same cap, the one
    each series keeps to."""
    description = document(client)["paths"]["/api/v1/curves"]["get"]["description"]
    assert f"at most {MAX_POINTS} points" in description and "1,000" not in description
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert f"at most {MAX_POINTS} points per series" in readme
    body = client.get("/api/v1/curves").json()
    assert body["max_points"] == MAX_POINTS
    assert body["series"] and all(s["points"] <= MAX_POINTS for s in body["series"])


@pytest.mark.parametrize(
    ("path", "name", "values"),
    [
        ("/api/v1/curves", "range", [r.value for r in CurveRange]),
        ("/api/v1/markets", "status", [s.value for s in MarketStatus]),
        ("/api/v1/markets", "sort", [s.value for s in MarketSort]),
    ],
)
def test_enumerated_parameters_list_their_values(
    client: TestClient, path: str, name: str, values: list[str]
) -> None:
    doc = document(client)
    (parameter,) = [p for p in doc["paths"][path]["get"]["parameters"] if p["name"] == name]
    assert allowed_values(parameter, doc) == values
    page = client.get("/api/docs").text
    section = page[page.index(f"<code>GET {path}</code>") :]
    row = section[section.index(f"<code>{name}</code>") :].split("</tr>")[0]
    assert all(f"<code>{value}</code>" in row for value in values), row
    # the values are enforced: a bad one is a 422 in JSON, a 400 page; a blank one is no value
    bad = client.get(f"{path}?{name}=nonsense")
    assert bad.status_code == 422 and bad.json()["error"] == "invalid request"
    page_path = path.removeprefix("/api/v1")
    if page_path == "/markets":
        assert client.get(f"{page_path}?{name}=nonsense").status_code == 400
    assert client.get(f"{path}?{name}=").status_code == 200


@pytest.mark.parametrize(("path", "route"), ID_ROUTES.items())
def test_an_unknown_id_is_a_declared_404(client: TestClient, path: str, route: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 404
    assert answer.json()["error"] == "not found"
    assert "404" in document(client)["paths"][route]["get"]["responses"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
@pytest.mark.parametrize(
    "path",
    ["/api/v1/leaderboard", "/api/v1/markets/1", "/", "/markets", "/healthz", "/static/app.css"],
)
def test_a_wrong_method_is_a_405_naming_the_allowed_ones(
    client: TestClient, method: str, path: str
) -> None:
    answer = client.request(method, path)
    if method == "HEAD" and path.startswith("/static/"):
        assert answer.status_code == 200  # static files answer HEAD
        return
    assert answer.status_code == 405
    assert "GET" in answer.headers.get("allow", "").split(", ")


def test_every_field_of_the_json_is_declared(client: TestClient) -> None:
    """The documented schemas describe the whole answer: no field the JSON has is missing from
    its route's response schema (the models keep undeclared fields, so this is where a new
    field without documentation shows)."""
    doc = document(client)
    missing: list[str] = []
    for path, route in answers(client).items():
        body = client.get(path).json()
        schema = doc["paths"][route]["get"]["responses"]["200"]["content"]["application/json"]
        missing.extend(undeclared(body, schema["schema"], doc, path))
    assert missing == []


def test_the_models_keep_every_field(site: Site) -> None:
    """The response models validate the JSON without dropping, renaming or reshaping a field:
    each answer is what the route's query function returns."""
    app = create_app(site.settings)
    ctx = app.state.ctx
    with TestClient(app) as client, ctx.session() as session:
        paths = answers(client)
        fid = next(p for p in paths if p.startswith("/api/v1/families/")).rsplit("/", 1)[1]
        cid = int(next(p for p in paths if p.startswith("/api/v1/cohorts/")).split("/")[4])
        mid = next(p for p in paths if p.startswith("/api/v1/markets/")).rsplit("/", 1)[1]
        did = int(next(p for p in paths if p.startswith("/api/v1/decisions/")).rsplit("/", 1)[1])
        expected = {
            "/api/v1/leaderboard": standings.leaderboard(ctx, session, None),
            f"/api/v1/families/{fid}": standings.family(ctx, session, fid),
            f"/api/v1/families/{fid}/trend": web_trend.family_trend(ctx, session, fid),
            "/api/v1/cohorts": standings.cohorts(session, Page()),
            f"/api/v1/cohorts/{cid}": standings.cohort(ctx, session, cid, Page()),
            f"/api/v1/cohorts/{cid}/families/{fid}": standings.agent(session, cid, fid, Page()),
            "/api/v1/markets": records.markets(session, Page()),
            f"/api/v1/markets/{mid}": records.market(session, mid),
            f"/api/v1/decisions/{did}": records.decision(session, did),
            "/api/v1/curves": curves(session, CurveRange.ALL),
            "/api/v1/record": records.record(ctx, session),
            "/api/v1/agent-schema": json.loads(AGENT_SCHEMA.read_text(encoding="utf-8")),
        }
        for path, value in expected.items():
            assert client.get(path).json() == value, path
        # answers that move with the clock: the same fields at every depth
        for path in ("/api/v1/breakdown?by=category", "/api/v1/breakdown?by=horizon"):
            by = By(path.rsplit("=", 1)[1])
            assert client.get(path).json() == breakdown(ctx, session, by), path
        analysis = standings.v2_analysis(ctx, session)
        assert analysis is not None
        for path in ("/api/v1/status", "/api/v1/ranking", "/api/v1/market", "/api/v1/power"):
            assert paths[path]
            body = client.get(path).json()
            name = path.rsplit("/", 1)[1]
            direct = (
                records.status(ctx, session, ctx.now(), ctx.now())
                if name == "status"
                else {
                    "methodology": "v2",
                    name: analysis[name],
                    **standings.v2_status(ctx, session),
                }
            )
            assert keys(body) == keys(direct), path


def answers(client: TestClient) -> dict[str, str]:
    """A request path for every GET route of the API on this database, and the route's path."""
    family = client.get("/api/v1/leaderboard").json()[0]["family_id"]
    cohort = client.get("/api/v1/cohorts").json()["items"][0]["id"]
    agent = client.get(f"/api/v1/cohorts/{cohort}/families/{family}").json()
    market = next(p["market_id"] for p in agent["trades"]["items"])
    decision = agent["trades"]["items"][0]["decision_id"]
    return {
        "/api/v1/leaderboard": "/api/v1/leaderboard",
        "/api/v1/ranking": "/api/v1/ranking",
        "/api/v1/market": "/api/v1/market",
        "/api/v1/power": "/api/v1/power",
        "/api/v1/curves": "/api/v1/curves",
        f"/api/v1/families/{family}": "/api/v1/families/{family_id}",
        f"/api/v1/families/{family}/trend": "/api/v1/families/{family_id}/trend",
        "/api/v1/cohorts": "/api/v1/cohorts",
        f"/api/v1/cohorts/{cohort}": "/api/v1/cohorts/{cohort_id}",
        f"/api/v1/cohorts/{cohort}/families/{family}": (
            "/api/v1/cohorts/{cohort_id}/families/{family_id}"
        ),
        "/api/v1/markets": "/api/v1/markets",
        f"/api/v1/markets/{market}": "/api/v1/markets/{market_id}",
        f"/api/v1/decisions/{decision}": "/api/v1/decisions/{decision_id}",
        "/api/v1/status": "/api/v1/status",
        "/api/v1/record": "/api/v1/record",
        "/api/v1/methodology": "/api/v1/methodology",
        "/api/v1/agent-schema": "/api/v1/agent-schema",
        "/api/v1/breakdown?by=category": "/api/v1/breakdown",
        "/api/v1/breakdown?by=horizon": "/api/v1/breakdown",
    }


def undeclared(value: Any, schema: dict[str, Any], doc: dict[str, Any], at: str) -> list[str]:
    """The places in ``value`` holding an object field its ``schema`` does not declare."""
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in schema:
        if value is None:
            return []
        branches = [b for b in schema["anyOf"] if b.get("type") != "null"]
        return min((undeclared(value, b, doc, at) for b in branches), key=len)
    if isinstance(value, dict) and "properties" in schema:
        out = [f"{at}.{k}" for k in value if k not in schema["properties"]]
        for k, v in value.items():
            if k in schema["properties"]:
                out.extend(undeclared(v, schema["properties"][k], doc, f"{at}.{k}"))
        return out
    if isinstance(value, dict) and "type" in schema and not schema.get("additionalProperties"):
        return [f"{at} (an object the schema does not describe)"]
    if isinstance(value, list) and "items" in schema:
        return [
            m
            for i, v in enumerate(value)
            for m in undeclared(v, schema["items"], doc, f"{at}[{i}]")
        ]
    return []


def keys(value: Any) -> Any:
    """The field names of ``value`` at every depth (lists by their first item)."""
    if isinstance(value, dict):
        return {k: keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keys(value[0])] if value else []
    return None
