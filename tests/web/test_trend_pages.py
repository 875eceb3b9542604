"""The trend on the dashboard: ``/api/v1/families/{family_id}/trend`` equals the Python API on
the same data, an unknown family is a 404, the family page shows the trend chart and its table
with the lineage change marked, and ``/`` the rank over weeks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.analytics import trend
from arena.analytics.options import configured_options
from arena.analytics.trend_inputs import read_stored_trend_inputs
from arena.clock import FixedClock
from arena.config import Settings, load_settings
from arena.store.db import make_engine, session_factory, upgrade
from arena.web.app import create_app
from tests.analytics.trend_world import AT, CHANGED, build_trend_arena
from tests.helpers import write_config


@dataclass(frozen=True)
class World:
    settings: Settings
    expected: dict


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    directory: Path = tmp_path_factory.mktemp("trend-web")
    url = f"sqlite:///{directory / 'arena.db'}"
    engine = make_engine(url)
    upgrade(engine)
    factory = session_factory(engine)
    build_trend_arena(factory)
    settings = load_settings(write_config(directory / "config.yaml", url, methodology="v2"))
    with factory() as session:
        expected = trend(read_stored_trend_inputs(session), configured_options(settings, as_of=AT))
    engine.dispose()
    return World(settings, expected)


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    app = create_app(world.settings)
    app.state.ctx.clock = FixedClock(AT)
    with TestClient(app) as client:
        yield client
    app.state.ctx.engine.dispose()


def test_the_api_is_the_python_api(world: World, client: TestClient) -> None:
    for family in ("alpha-model", "beta-model", "market-follower"):
        answer = client.get(f"/api/v1/families/{family}/trend")
        assert answer.status_code == 200
        body = answer.json()
        assert body["rows"] == [r for r in world.expected["rows"] if r["family_id"] == family]
        assert body["as_of"] == world.expected["as_of"] and body["rank_by"] == "adjusted"
        assert "NaN" not in answer.text and "Infinity" not in answer.text
    family, week, change = CHANGED
    changes = client.get(f"/api/v1/families/{family}/trend").json()["changes"]
    assert changes == [{"week_start": week, "lineage": [change]}]


def test_an_unknown_family_is_a_404(client: TestClient) -> None:
    answer = client.get("/api/v1/families/no-such-family/trend")
    assert answer.status_code == 404
    assert answer.json()["error"] == "not found"


def test_the_family_page_shows_the_trend_with_the_lineage_marker(client: TestClient) -> None:
    family, week, change = CHANGED
    page = client.get(f"/families/{family}").text
    assert 'data-trend-chart="family"' in page and 'id="trend-data"' in page
    table = page[page.index('id="trend-table"') :].split("</table>")[0]
    marked = [row for row in table.split("<tr") if "lineage-changed" in row]
    assert len(marked) == 1
    assert week[:10] in marked[0] and change.replace(">", "&gt;") in marked[0]
    other = client.get("/families/beta-model").text
    table = other[other.index('id="trend-table"') :].split("</table>")[0]
    assert "lineage-changed" not in table and table.count("<tr") == 1 + 9


def test_the_home_page_shows_the_rank_over_weeks(world: World, client: TestClient) -> None:
    page = client.get("/").text
    assert 'data-trend-chart="ranks"' in page
    table = page[page.index('id="ranks-table"') :].split("</table>")[0]
    assert table.count("</th>") == 1 + 9  # the family column and nine weeks
    last = {
        r["family_id"]: r["rank_cumulative"]
        for r in world.expected["rows"]
        if r["week_start"] == "2026-12-27T00:00:00Z"
    }
    for row in table.split("<tr")[2:]:
        family = row.split('href="/families/')[1].split('"')[0]
        assert row.split("</tr>")[0].endswith(f">{last[family]}</td>")
