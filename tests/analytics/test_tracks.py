"""Tracks (issue 27, part 4): on the results arena where ``beta-model`` gains web search from
its second cohort on, on SQLite and PostgreSQL: the leaderboard marks each family's track in
the CLI, the API and the page; ``--track``/``?track=`` keep one track's rows (and the analyses
one track's agents' forecasts); an unknown track is refused in one line listing the known
ones; the trend marks the week the family gained web search, from the database and from an
export, and an older export without the column still loads."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from typer.testing import CliRunner

from arena.analytics import trend
from arena.analytics.groups import restrict_track
from arena.analytics.leaderboard import compute_leaderboard
from arena.analytics.loading import agent_tracks, read_export
from arena.analytics.trend_inputs import read_export_trend_inputs, read_stored_trend_inputs
from arena.cli import app
from arena.config import OpenRouterFamily, WebSearch, load_settings
from arena.domain.tracks import TRACKS, track_of
from arena.errors import OptionError
from arena.export.writer import ExportTarget, export
from arena.jobs.cohorts import new_agent
from arena.store.models import Agent, Cohort
from arena.web.app import create_app
from arena.web.breakdown import Track
from tests.analytics.results_arena import FIRST_WEEK, WEEK, build_arena
from tests.conftest import Database
from tests.helpers import write_config

runner = CliRunner()
SEARCH = {"engine": "exa", "max_results": 3, "search_context_size": "low"}
LATE = "2027-01-02T00:00:00Z"
GAINED = "2026-11-08"  # beta-model's second cohort: the week it gained web search


@pytest.fixture
def world(db: Database, tmp_path: Path) -> tuple[Database, Path]:
    """The results arena with ``beta-model`` searching the web from its second cohort on."""
    build_arena(db.factory)
    with db.factory() as session, session.begin():
        later = select(Cohort.id).where(Cohort.week_start >= FIRST_WEEK + WEEK)
        session.execute(
            update(Agent)
            .where(Agent.family_id == "beta-model", Agent.cohort_id.in_(later))
            .values(web_search=SEARCH)
        )
    return db, write_config(tmp_path / "config.yaml", db.url, methodology="v2")


def _cli(config: Path, *args: str) -> Any:
    done = runner.invoke(app, ["--config", str(config), *args])
    assert done.exit_code == 0, (done.output, done.exception)
    return done.output


def test_the_track_follows_the_kind_and_the_frozen_web_search() -> None:
    assert track_of("openrouter", None) == "model"
    assert track_of("openrouter", SEARCH) == "web"
    assert track_of("openrouter", json.dumps(SEARCH)) == "web"  # as exported
    assert track_of("openrouter", "null") == "model"
    assert track_of("agent", None) == "agent"
    assert track_of("baseline", None) == "baseline"
    assert tuple(t.value for t in Track) == TRACKS  # the web's choices are the domain's


def test_a_new_agent_freezes_its_familys_web_search() -> None:
    family = OpenRouterFamily(
        id="searcher", display_name="S", openrouter_id="v/m", web_search=WebSearch(engine="exa")
    )
    cohort = Cohort(id=1, prompt_version="v2", methodology_version="v2", starting_balance=100)
    agent = new_agent(cohort, family, datetime(2026, 11, 1, tzinfo=UTC))
    assert agent.web_search == {"engine": "exa", "max_results": 5, "search_context_size": "medium"}
    plain = OpenRouterFamily(id="plain", display_name="P", openrouter_id="v/m")
    assert new_agent(cohort, plain, datetime(2026, 11, 1, tzinfo=UTC)).web_search is None


def test_the_leaderboard_marks_and_filters_the_track(world: tuple[Database, Path]) -> None:
    db, config = world
    tracks = {s.family_id: s.track for s in compute_leaderboard(db.factory)}
    assert tracks == {"alpha-model": "model", "beta-model": "web", "market-follower": "baseline"}
    first = {s.family_id: s.track for s in compute_leaderboard(db.factory, cohort_id=1)}
    assert first["beta-model"] == "model"  # before it searched
    board = json.loads(_cli(config, "leaderboard", "--format", "json"))
    assert {r["family_id"]: r["track"] for r in board} == tracks
    web = json.loads(_cli(config, "leaderboard", "--track", "web", "--format", "json"))
    assert [r["family_id"] for r in web] == ["beta-model"]
    models = json.loads(_cli(config, "leaderboard", "--track", "model", "--format", "json"))
    assert [r["family_id"] for r in models] == ["alpha-model"]  # baselines are not models
    table = _cli(config, "leaderboard", "--wide")
    assert "track" in table and "web" in table and "baseline" in table
    heading = next(csv.reader(_cli(config, "leaderboard", "--format", "csv").splitlines()))
    assert heading[:4] == ["family_id", "display_name", "kind", "track"]
    done = runner.invoke(app, ["--config", str(config), "leaderboard", "--track", "tools"])
    assert isinstance(done.exception, OptionError)
    assert str(done.exception) == "--track: 'tools' is not one of model, web, agent, baseline"
    settings = load_settings(config)
    with TestClient(create_app(settings)) as client:
        api = client.get("/api/v1/leaderboard").json()
        assert {r["family_id"]: r["track"] for r in api} == tracks
        assert client.get("/api/v1/leaderboard?track=web").json() == web
        refused = client.get("/api/v1/leaderboard?track=tools")
        assert refused.status_code == 422
        assert "model" in json.dumps(refused.json()) and "agent" in json.dumps(refused.json())
        page = client.get("/")
        assert 'data-track="web"' in page.text and 'data-track="baseline"' in page.text
        assert '<select name="track">' in page.text
        chosen = client.get("/", params={"track": "web"})
        assert 'data-family="beta-model"' in chosen.text
        assert 'data-family="alpha-model"' not in chosen.text
        assert '<option value="web" selected>' in chosen.text
        assert client.get("/", params={"track": "tools"}).status_code == 400


def _forecasters(report: dict[str, Any]) -> list[str]:
    """The ranked forecasters, without the market (the reference every ranking shows)."""
    return [r["forecaster"] for r in report["rows"] if r["forecaster"] != "(market)"]


def test_analyses_compare_one_tracks_forecasts(
    world: tuple[Database, Path], tmp_path: Path
) -> None:
    db, config = world
    args = ["--at", LATE, "--bootstrap", "20", "--format", "json"]
    whole = json.loads(_cli(config, "analyze", "ranking", *args))
    web = json.loads(_cli(config, "analyze", "ranking", "--track", "web", *args))
    assert _forecasters(web) == ["beta-model"]
    beta = next(r for r in whole["rows"] if r["forecaster"] == "beta-model")
    mine = next(r for r in web["rows"] if r["forecaster"] == "beta-model")
    assert 0 < mine["n_questions"] <= beta["n_questions"]
    baseline = json.loads(_cli(config, "analyze", "ranking", "--track", "baseline", *args))
    assert _forecasters(baseline) == ["market-follower"]
    export(db.factory, ExportTarget(tmp_path / "export", "csv"))
    forecasts = read_export(tmp_path / "export")
    on_web = restrict_track(forecasts, "web", agent_tracks(tmp_path / "export"))
    assert set(on_web.family_id) == {"beta-model"}
    assert 0 < len(on_web) < int((forecasts.family_id == "beta-model").sum())  # searching agents
    from_export = _cli(
        config, "analyze", "ranking", "--from-export", str(tmp_path / "export"), "--track", "web",
        *args,
    )  # fmt: skip
    assert json.loads(from_export)["rows"] == web["rows"]
    done = runner.invoke(
        app, ["--config", str(config), "analyze", "calibration", "--track", "tools"]
    )
    assert isinstance(done.exception, OptionError)
    assert "model, web, agent, baseline" in str(done.exception)
    breakdown = json.loads(
        _cli(config, "analyze", "breakdown", "--track", "web", "--at", LATE, "-f", "json")
    )
    assert {r["family_id"] for r in breakdown["ledger"]} == {"beta-model"}
    assert {r["forecaster"] for r in breakdown["forecasts"]["rows"]} <= {"beta-model", "(market)"}
    with TestClient(create_app(load_settings(config))) as client:
        api = client.get("/api/v1/breakdown?track=web").json()
        assert {r["family_id"] for r in api["ledger"]} == {"beta-model"}
        assert client.get("/api/v1/ranking?track=tools").status_code == 422
        page = client.get("/breakdown", params={"track": "web"})
        assert '<option value="web" selected>' in page.text
        assert "beta-model" in page.text and "alpha-model" not in page.text
        assert "alpha-model" in client.get("/breakdown").text


def test_the_trend_marks_the_week_a_family_gained_web_search(
    world: tuple[Database, Path], tmp_path: Path
) -> None:
    db, config = world
    with db.factory() as session:
        stored = trend(read_stored_trend_inputs(session), at=datetime(2027, 1, 3, tzinfo=UTC))
    marked = [r for r in stored["rows"] if r["lineage_changed"]]
    assert {(r["family_id"], r["week_start"][:10]) for r in marked} == {("beta-model", GAINED)}
    (row,) = marked
    assert "track: model -> web" in row["lineage"]
    assert "web_search: off -> engine=exa, max_results=3, search_context_size=low" in row["lineage"]
    cli = json.loads(_cli(config, "analyze", "trend", "--at", LATE, "--format", "json"))
    assert next(r for r in cli["rows"] if r["lineage_changed"])["lineage"] == row["lineage"]
    export(db.factory, ExportTarget(tmp_path / "export", "csv"))
    exported = trend(
        read_export_trend_inputs(tmp_path / "export"), at=datetime(2027, 1, 3, tzinfo=UTC)
    )
    assert exported["rows"] == stored["rows"]
    agents = tmp_path / "export" / "agents.csv"  # an export from before the column
    with agents.open(newline="") as f:
        rows = list(csv.DictReader(f))
    with agents.open("w", newline="") as f:
        writer = csv.DictWriter(f, [k for k in rows[0] if k != "web_search"])
        writer.writeheader()
        writer.writerows([{k: v for k, v in r.items() if k != "web_search"} for r in rows])
    older = trend(
        read_export_trend_inputs(tmp_path / "export"), at=datetime(2027, 1, 3, tzinfo=UTC)
    )
    assert not any(r["lineage_changed"] for r in older["rows"])
    assert set(agent_tracks(tmp_path / "export").values()) == {"model", "baseline"}


def test_risk_and_trend_keep_one_tracks_agents(
    world: tuple[Database, Path], tmp_path: Path
) -> None:
    """``analyze risk``/``trend --track`` and ``?track=`` on their routes: the curves of that
    track's agents only, the trend's weeks of that track ranked among its families."""
    db, config = world
    with db.factory() as session:
        searching = {
            str(a.id)
            for a in session.scalars(select(Agent).where(Agent.family_id == "beta-model"))
            if a.web_search
        }
    args = ["--at", LATE, "--bootstrap", "20", "--format", "json"]
    whole = json.loads(_cli(config, "analyze", "risk", "--by", "agent", *args))
    web = json.loads(_cli(config, "analyze", "risk", "--by", "agent", "--track", "web", *args))
    assert searching and {r["forecaster"] for r in web["rows"]} == searching
    mine = [r for r in whole["rows"] if r["forecaster"] in searching]
    assert sorted(web["rows"], key=str) == sorted(mine, key=str)  # each curve as it was
    models = json.loads(_cli(config, "analyze", "risk", "--track", "model", *args))
    assert {r["forecaster"] for r in models["rows"]} == {"alpha-model", "beta-model"}
    export(db.factory, ExportTarget(tmp_path / "export", "csv"))
    exported = json.loads(
        _cli(config, "analyze", "risk", "--by", "agent", "--track", "web", "--from-export",
             str(tmp_path / "export"), *args)
    )  # fmt: skip
    assert exported["rows"] == web["rows"]

    trend_args = ["analyze", "trend", "--at", LATE, "--format", "json"]
    on_web = json.loads(_cli(config, *trend_args, "--track", "web"))
    assert on_web["rows"] and {r["family_id"] for r in on_web["rows"]} == {"beta-model"}
    assert all(r["week_start"][:10] >= GAINED for r in on_web["rows"])
    assert {r["rank_week"] for r in on_web["rows"]} == {1, None}  # alone on its track
    on_model = json.loads(_cli(config, *trend_args, "--track", "model"))
    beta_weeks = {r["week_start"][:10] for r in on_model["rows"] if r["family_id"] == "beta-model"}
    assert FIRST_WEEK.date().isoformat() in beta_weeks  # its first cohort's agent, no search
    assert {r["family_id"] for r in on_model["rows"]} == {"alpha-model", "beta-model"}
    from_export = _cli(
        config, *trend_args, "--track", "web", "--from-export", str(tmp_path / "export")
    )
    assert json.loads(from_export)["rows"] == on_web["rows"]
    done = runner.invoke(app, ["--config", str(config), "analyze", "risk", "--track", "tools"])
    assert isinstance(done.exception, OptionError)

    with TestClient(create_app(load_settings(config))) as client:
        api_risk = client.get("/api/v1/risk", params={"by": "agent", "track": "web"}).json()
        assert {r["forecaster"] for r in api_risk["rows"]} == searching
        everyone = client.get("/api/v1/risk", params={"by": "agent"}).json()
        assert {r["forecaster"] for r in everyone["rows"]} > searching
        api_trend = client.get("/api/v1/families/beta-model/trend?track=web").json()
        assert api_trend["rows"] and all(r["week_start"][:10] >= GAINED for r in api_trend["rows"])
        assert 1 in {r["rank_week"] for r in api_trend["rows"]} <= {1, None}
        full = client.get("/api/v1/families/beta-model/trend").json()
        assert len(full["rows"]) > len(api_trend["rows"])
        assert client.get("/api/v1/risk?track=tools").status_code == 422
        assert client.get("/api/v1/families/beta-model/trend?track=tools").status_code == 422
