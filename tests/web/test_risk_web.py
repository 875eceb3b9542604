"""Risk on the dashboard and ``/api/v1/risk``: the same numbers as ``arena.analytics.risk`` and
``arena analyze risk`` at the same instant, a table with each formula, drawdown on the curves."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from arena.analytics import risk
from arena.analytics.options import configured_options
from arena.analytics.snapshot_columns import read_stored_snapshots
from arena.clock import FixedClock
from arena.config import Settings, load_settings
from arena.store.db import head_revision
from arena.web.app import create_app
from arena.web.cache import ResultCache
from arena.web.context import WebContext
from tests.analytics.risk_arena import AT, seed_risk_arena
from tests.analytics.test_cli_analyze import _app
from tests.conftest import Database
from tests.helpers import write_config
from tests.web.conftest import Site


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def arena(sqlite_db: Database, tmp_path: Path) -> Iterator[tuple[TestClient, Settings, Database]]:
    seed_risk_arena(sqlite_db.factory)
    settings = load_settings(write_config(tmp_path / "config.yaml", sqlite_db.url))
    context = WebContext(
        settings,
        sqlite_db.engine,
        sqlite_db.factory,
        head_revision(),
        cache=ResultCache(min_interval=0),  # refresh at once, not 30 s after the first value
        clock=FixedClock(AT),
    )
    with TestClient(create_app(settings, context=context)) as client:
        yield client, settings, sqlite_db


@pytest.mark.parametrize(("by", "value"), [("family", "mark"), ("agent", "exit")])
def test_api_cli_and_python_api_agree(
    arena: tuple[TestClient, Settings, Database],
    by: str,
    value: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    client, settings, db = arena
    answer = client.get(f"/api/v1/risk?by={by}&value={value}")
    assert answer.status_code == 200
    body = _strict(answer.text)
    with db.factory() as session:
        snapshots = read_stored_snapshots(session, value)
    options = configured_options(settings, as_of=AT, by=by)
    assert body == risk(snapshots, options, value=value)
    assert any(isinstance(row["sharpe"], dict) for row in body["rows"])
    monkeypatch.setenv("ARENA_DATABASE_URL", db.url)
    monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "config.yaml"))
    command = [
        "analyze",
        "risk",
        "--at",
        AT.isoformat(),
        "--by",
        by,
        "--value",
        value,
        "-f",
        "json",
    ]
    printed = CliRunner().invoke(_app(), command)
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == body


def test_bad_parameters_are_422(arena: tuple[TestClient, Settings, Database]) -> None:
    client = arena[0]
    assert client.get("/api/v1/risk?by=cohort").status_code == 422
    assert client.get("/api/v1/risk?value=bid").status_code == 422


def test_the_page_shows_the_risk_table_with_its_formulas(
    arena: tuple[TestClient, Settings, Database],
) -> None:
    client = arena[0]
    page = client.get("/").text
    table = page[page.index('id="risk-table"') :]
    table = table[: table.index("</table>")]
    assert '<abbr title="Sharpe = mean(r) / sd(r) &times; &radic;52' in table
    assert "Calmar = annualised return / maximum drawdown" in table
    alpha = next(r for r in client.get("/api/v1/risk").json()["rows"] if r["forecaster"] == "alpha")
    row = table[table.index('data-risk-family="alpha"') :]
    row = row[: row.index("</tr>")]
    assert f"{alpha['sharpe']['estimate']:.2f}" in row and "Alpha" in row
    assert "insufficient" in table  # the flat family has no spread


def test_each_curve_carries_its_maximum_drawdown(
    arena: tuple[TestClient, Settings, Database],
) -> None:
    series = {s["family_id"]: s for s in _strict(arena[0].get("/api/v1/curves").text)["series"]}
    assert series["flat"]["drawdown"] is None
    broke = series["broke"]["drawdown"]
    assert broke["pct"] == 100.0 and broke["recovered"] is False
    alpha = series["alpha"]["drawdown"]
    assert alpha["peak"] <= alpha["trough"] <= alpha["end"] and 0 < alpha["pct"] < 100


def test_the_demo_shows_risk_and_never_nan(client: TestClient, site: Site) -> None:
    assert 'id="risk-table"' in client.get("/").text
    for query in ("", "?by=agent", "?value=exit"):
        body = _strict(client.get(f"/api/v1/risk{query}").text)
        assert body["rows"] or body["without_value"]


def test_after_a_write_a_reader_gets_the_last_risk_while_the_new_one_is_computed(
    sqlite_db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24/25, "no reader waits on a recomputation": the request after a write answers
    with the previous result at once (the new computation is held back here until the
    request has answered), and the next request after the computation gets the new one."""
    from sqlalchemy import select

    from arena.store.models import PortfolioSnapshot
    from arena.web import risk as web_risk

    seed_risk_arena(sqlite_db.factory)
    settings = load_settings(write_config(tmp_path / "config.yaml", sqlite_db.url))
    context = WebContext(
        settings, sqlite_db.engine, sqlite_db.factory, head_revision(), clock=FixedClock(AT)
    )
    with TestClient(create_app(settings, context=context)) as client:
        before = _strict(client.get("/api/v1/risk?by=agent").text)

        with sqlite_db.factory.begin() as session:  # a snapshot: a new data version
            last = session.scalars(
                select(PortfolioSnapshot)
                .where(PortfolioSnapshot.taken_at < AT)
                .order_by(PortfolioSnapshot.taken_at.desc())
                .limit(1)
            ).one()
            row = {c.key: getattr(last, c.key) for c in PortfolioSnapshot.__table__.columns}
            del row["id"]
            row["taken_at"] = last.taken_at + (AT - last.taken_at) / 2  # the newest: a loss
            for money in ("cash", "positions_value", "total_value"):
                row[money] = row[money] / 2
            session.add(PortfolioSnapshot(**row))
        context._version = None  # read the data version now, not after its 2 s

        release, started, calls = threading.Event(), threading.Event(), []
        compute = web_risk._compute

        def held_back(*args: Any) -> dict[str, Any]:
            calls.append(args)
            started.set()
            assert release.wait(60), "never released"
            return compute(*args)

        monkeypatch.setattr(web_risk, "_compute", held_back)
        during = _strict(client.get("/api/v1/risk?by=agent").text)  # answered while held back
        assert started.wait(60), "the refresh worker never started"
        assert during == before and len(calls) == 1
        release.set()
        assert context.cache.settle(60)  # the refresh worker stores the new result
        after = _strict(client.get("/api/v1/risk?by=agent").text)
        assert len(calls) == 1  # computed once, off the request path
    with sqlite_db.factory() as session:
        snapshots = read_stored_snapshots(session, "mark")
    options = configured_options(settings, as_of=AT, by="agent")
    assert after == risk(snapshots, options, value="mark") != before
