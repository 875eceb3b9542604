"""Every page and its JSON twin answer on both databases, with the demo's real numbers; unknown
ids are 404s, bad parameters 400 pages or 422 JSON, and nothing ever shows a traceback."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from arena.analytics.leaderboard_columns import (
    EXECUTION_COLUMNS,
    LEADERBOARD_COLUMNS,
    RELIABILITY_COLUMNS,
)
from arena.store.db import make_engine, session_factory
from arena.store.models import Agent, Decision, Position
from tests.conftest import Database
from tests.helpers import cli_env, run_arena
from tests.web.conftest import Site

EXTERNAL_LOAD = re.compile(r'<(script|link|img|iframe|style)[^>]+(src|href)="(https?:)?//', re.I)
SECURITY = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def ids(site: Site) -> dict[str, str]:
    """Real ids from the site's database: a family, cohort, decision and held market."""
    engine = make_engine(site.url)
    try:
        with session_factory(engine)() as session:
            agent = session.scalars(select(Agent).order_by(Agent.id)).first()
            decision = session.scalar(select(Decision.id).order_by(Decision.id))
            market = session.scalar(select(Position.market_id).order_by(Position.id))
            assert agent is not None and decision is not None and market is not None
            return {
                "family": agent.family_id,
                "cohort": str(agent.cohort_id),
                "decision": str(decision),
                "market": market,
            }
    finally:
        engine.dispose()


def pages(site: Site) -> list[str]:
    i = ids(site)
    return [
        "/",
        f"/?cohort={i['cohort']}",
        f"/families/{i['family']}",
        "/cohorts",
        f"/cohorts/{i['cohort']}",
        f"/cohorts/{i['cohort']}/families/{i['family']}",
        "/markets",
        "/markets?q=will&status=open&sort=close&held=true",
        f"/markets/{i['market']}",
        f"/decisions/{i['decision']}",
        "/status",
        "/methodology",
        "/api/docs",
    ]


def apis(site: Site) -> list[str]:
    i = ids(site)
    return [
        "/api/v1/leaderboard",
        f"/api/v1/leaderboard?cohort={i['cohort']}",
        "/api/v1/ranking",
        f"/api/v1/families/{i['family']}",
        "/api/v1/cohorts",
        f"/api/v1/cohorts/{i['cohort']}",
        f"/api/v1/cohorts/{i['cohort']}/families/{i['family']}",
        "/api/v1/markets?per_page=5&page=2",
        f"/api/v1/markets/{i['market']}",
        f"/api/v1/decisions/{i['decision']}",
        "/api/v1/status",
        "/api/v1/methodology",
        "/api/v1/agent-schema",
        "/api/v1/curves?range=ALL",
        "/api/openapi.json",
    ]


def test_every_page_answers_with_security_headers(site: Site, client: TestClient) -> None:
    for path in pages(site):
        response = client.get(path)
        assert response.status_code == 200, (path, response.text[:500])
        assert response.headers["content-type"].startswith("text/html")
        for name, value in SECURITY.items():
            assert response.headers[name] == value
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert "<script>" not in response.text  # scripts only as src= files
        assert not EXTERNAL_LOAD.search(response.text), path  # nothing from another host
        assert "Traceback" not in response.text


def test_every_api_route_answers_json(site: Site, client: TestClient) -> None:
    for path in apis(site):
        response = client.get(path)
        assert response.status_code == 200, (path, response.text[:500])
        assert response.headers["content-type"] == "application/json"
        assert response.headers["x-content-type-options"] == "nosniff"
        response.json()


def test_pages_show_the_real_records(site: Site, client: TestClient) -> None:
    i = ids(site)
    decision = client.get(f"/api/v1/decisions/{i['decision']}").json()
    assert decision["attempts"], "the demo's decisions have attempts"
    attempt = decision["attempts"][0]
    assert attempt["request_messages"] and attempt["provider"] is not None
    page = client.get(f"/decisions/{i['decision']}").text
    assert f"Decision #{i['decision']}" in page
    assert "Raw response" in page and "Prompt (" in page
    market = client.get(f"/api/v1/markets/{i['market']}").json()
    assert market["positions"] and market["market"]["polymarket_url"].startswith(
        "https://polymarket.com"
    )
    family = client.get(f"/api/v1/families/{i['family']}").json()
    assert family["cohorts"] and family["standing"]["family_id"] == i["family"]
    assert len(family["calibration"]) == 10
    cohort = client.get(f"/api/v1/cohorts/{i['cohort']}").json()
    assert {"cash", "invested", "total_value", "pnl", "return_pct", "scored_bets", "trades"} <= set(
        cohort["standings"][0]
    )
    status = client.get("/api/v1/status").json()
    assert {job["job"] for job in status["jobs"]} >= {"decision_run", "snapshot"}
    assert "Methodology" in client.get("/methodology").text


def test_lists_are_paginated(client: TestClient) -> None:
    first = client.get("/api/v1/markets?per_page=3").json()
    second = client.get("/api/v1/markets?per_page=3&page=2").json()
    assert first["per_page"] == 3 and len(first["items"]) == 3
    assert first["total"] == second["total"] > 6
    assert {m["id"] for m in first["items"]}.isdisjoint(m["id"] for m in second["items"])
    beyond = client.get("/api/v1/markets?per_page=3&page=100000").json()
    assert beyond["items"] == [] and beyond["total"] == first["total"]
    assert client.get("/api/v1/markets?per_page=1000").status_code == 422


def test_market_filters(client: TestClient) -> None:
    held = client.get("/api/v1/markets?held=true&per_page=200").json()
    everything = client.get("/api/v1/markets?per_page=200").json()
    assert 0 < held["total"] < everything["total"]
    by_volume = [float(m["volume"] or 0) for m in everything["items"]]
    assert by_volume == sorted(by_volume, reverse=True)
    question = everything["items"][0]["question"]
    found = client.get("/api/v1/markets", params={"q": question[5:25]}).json()
    assert everything["items"][0]["id"] in {m["id"] for m in found["items"]}
    resolved = client.get("/api/v1/markets?status=resolved&per_page=200").json()
    assert all(m["status"] == "resolved" for m in resolved["items"])


def test_leaderboard_agrees_with_the_cli(site: Site, client: TestClient) -> None:
    """`/api/v1/leaderboard` and the page show exactly `arena leaderboard --format json`."""
    result = run_arena(
        "--config",
        str(site.config),
        "leaderboard",
        "--format",
        "json",
        env=cli_env(ARENA_DATABASE_URL=site.url),
    )
    assert result.returncode == 0, result.stderr
    cli = json.loads(result.stdout)
    assert cli and client.get("/api/v1/leaderboard").json() == cli
    page = client.get("/").text
    rows = re.findall(r'<tr data-family="([^"]+)">(.*?)</tr>', page, re.S)
    assert [family for family, _ in rows] == [row["family_id"] for row in cli]
    for (_, html), row in zip(rows, cli, strict=True):
        pnl = re.search(r'data-field="pnl">(.*?)</td>', html, re.S)
        assert pnl is not None
        cents = re.sub(r"<[^>]+>", "", pnl.group(1)).replace("$", "").replace(",", "")
        assert float(cents) == pytest.approx(float(row["pnl"]), abs=0.001)
        assert row["display_name"] in html
        if row["kind"] == "baseline":
            assert "baseline" in html


def test_the_cli_and_the_page_show_the_same_headers(site: Site, client: TestClient) -> None:
    """`arena leaderboard --wide` and the leaderboard page both render the one table of
    columns (``arena.analytics.leaderboard_columns``): the same header for every statistic,
    and the same text for the same value."""
    result = run_arena(
        "--config",
        str(site.config),
        "leaderboard",
        "--wide",
        env=cli_env(ARENA_DATABASE_URL=site.url, COLUMNS="400"),
    )
    assert result.returncode == 0, result.stderr
    page = client.get("/").text
    headers = re.findall(r'<th class="num" title="[^"]*">([^<]+)</th>', page)
    tables = [LEADERBOARD_COLUMNS, RELIABILITY_COLUMNS]
    if 'id="execution"' in page:
        tables.append(EXECUTION_COLUMNS)
    for columns in tables:
        for column in columns:
            assert escape(column.header) in headers, column.header
            assert column.header in result.stdout, column.header
    top = client.get("/api/v1/leaderboard").json()[0]
    for column in LEADERBOARD_COLUMNS:
        assert column.text(top[column.field]) in result.stdout, column.field


def test_an_agents_closed_positions_are_paged(site: Site, client: TestClient) -> None:
    """`?page=N` pages the agent's closed positions (newest first) as it pages its trades."""
    engine = make_engine(site.url)
    try:
        with session_factory(engine)() as session:
            closed = func.count().label("closed")
            busiest = session.execute(
                select(Agent.cohort_id, Agent.family_id, closed)
                .join(Position, Position.agent_id == Agent.id)
                .where(Position.status != "OPEN")
                .group_by(Agent.id, Agent.cohort_id, Agent.family_id)
                .order_by(closed.desc(), Agent.id)
                .limit(1)
            ).one()
            agent_id = session.scalar(
                select(Agent.id).where(
                    Agent.cohort_id == busiest.cohort_id, Agent.family_id == busiest.family_id
                )
            )
            newest = list(
                session.scalars(
                    select(Position.id)
                    .where(Position.agent_id == agent_id, Position.status != "OPEN")
                    .order_by(Position.opened_at.desc(), Position.id.desc())
                )
            )
    finally:
        engine.dispose()
    assert len(newest) >= 3, "the fixture needs an agent with 3 closed positions"
    path = f"/api/v1/cohorts/{busiest.cohort_id}/families/{busiest.family_id}?per_page=2"
    seen = []
    for number in (1, 2):
        body = client.get(f"{path}&page={number}").json()["closed_positions"]
        assert (body["page"], body["total"]) == (number, len(newest))
        seen += [row["id"] for row in body["items"]]
    assert seen == newest[:4]
    page = client.get(f"/cohorts/{busiest.cohort_id}/families/{busiest.family_id}?page=2")
    assert page.status_code == 200 and "page 2 of" in page.text


def test_v2_leaderboard_shows_the_adjusted_ranking(site: Site, client: TestClient) -> None:
    """The v2 world has resolved panel forecasts: `/` shows the difficulty-adjusted ranking with
    its 95% intervals, and `/api/v1/ranking` is exactly `arena analyze ranking --format json`
    at the same instant (the configured resample count and seed included)."""
    body = client.get("/api/v1/ranking").json()
    assert body["methodology"] == "v2"
    ranking = body["ranking"]
    assert ranking is not None and ranking["n_scored_questions"] > 0
    assert ranking["resampling"] == {
        "resamples": site.settings.analysis.resamples,
        "seed": site.settings.analysis.seed,
    }
    ranked = [row for row in ranking["rows"] if row["ci_low"] is not None]
    assert ranked
    result = run_arena(
        "--config",
        str(site.config),
        "analyze",
        "ranking",
        "--format",
        "json",
        "--at",
        ranking["as_of"],
        env=cli_env(ARENA_DATABASE_URL=site.url),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ranking
    page = client.get("/").text
    assert "Difficulty-adjusted ranking" in page
    assert "No resolved panel forecasts yet" not in page
    table = page[page.index('<table class="ranking">') :]
    assert "95% low" in table and "95% high" in table
    for row in ranked:
        assert f"{row['ci_low']:.4f}" in table and f"{row['ci_high']:.4f}" in table


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/families/no-such-family", 404),
        ("/cohorts/999999", 404),
        ("/cohorts/1/families/no-such-family", 404),
        ("/markets/no-such-market", 404),
        ("/decisions/999999", 404),
        ("/no/such/page", 404),
        ("/markets?page=0", 400),
        ("/markets?status=bogus", 400),
        ("/?cohort=abc", 400),
        ("/decisions/abc", 400),
    ],
)
def test_errors_are_pages(client: TestClient, path: str, status: int) -> None:
    response = client.get(path)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "Traceback" not in response.text and 'File "' not in response.text


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/v1/families/no-such-family", 404),
        ("/api/v1/cohorts/999999", 404),
        ("/api/v1/markets/no-such-market", 404),
        ("/api/v1/decisions/999999", 404),
        ("/api/v1/leaderboard?cohort=999999", 404),
        ("/api/v1/nothing", 404),
        ("/api/v1/curves?range=2Y", 422),
        ("/api/v1/markets?sort=price", 422),
        ("/api/v1/leaderboard?cohort=-1", 422),
        ("/api/v1/decisions/abc", 422),
    ],
)
def test_api_errors_are_json(client: TestClient, path: str, status: int) -> None:
    response = client.get(path)
    assert response.status_code == status
    body = response.json()
    assert body["error"] and "detail" in body


def test_market_text_is_escaped(db: Database, tmp_path: Path) -> None:
    """A question holding a script tag or an onerror attribute renders as text."""
    from arena.config import load_settings
    from arena.web.app import create_app
    from tests.helpers import write_config
    from tests.web.hostile import HOSTILE, insert_hostile_market

    insert_hostile_market(db.factory)
    settings = load_settings(write_config(tmp_path / "config.yaml", db.url))
    with TestClient(create_app(settings)) as test_client:
        for path in ("/markets/666", "/markets?q=script"):
            page = test_client.get(path).text
            assert "<script>alert" not in page and "<img src=x onerror" not in page
            assert "&lt;script&gt;alert" in page
        assert test_client.get("/api/v1/markets/666").json()["market"]["question"] == HOSTILE
        for path in ("/markets/666", "/api/v1/markets/666"):
            assert test_client.get(path).headers["x-content-type-options"] == "nosniff"


def test_an_agent_and_a_market_are_read_once_per_data_version(
    site: Site, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent and market pages and routes read their rows once per data version: the
    readers of one page between two writes share it (bench_dashboard: the agent page, the
    heaviest, was over 250 ms at p95 with 8 clients); another page of the list is its own."""
    from arena.web import records, standings

    calls: list[str] = []

    def counted(module: Any, name: str) -> None:
        read = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **k: calls.append(name) or read(*a, **k))

    counted(standings, "agent")
    counted(records, "market")
    found = ids(site)
    path = f"/cohorts/{found['cohort']}/families/{found['family']}"
    market_id = found["market"]
    for url in (f"/api/v1{path}", path, f"/api/v1{path}", f"/api/v1/markets/{market_id}"):
        assert client.get(url).status_code == 200
    assert client.get(f"/markets/{market_id}").status_code == 200
    assert calls == ["agent", "market"]
    assert client.get(f"/api/v1{path}?page=2").status_code == 200
    assert calls == ["agent", "market", "agent"]
