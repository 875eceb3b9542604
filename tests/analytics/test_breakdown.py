"""The category and horizon breakdowns (issue 25): on a small stored arena, on SQLite and
PostgreSQL, the groups add up to each family's totals; the filters restrict the leaderboard
and the analyses to the same rows; the CLI, the API and the Python API give the same numbers;
an unknown category is refused in one line listing the known ones; a category with markup is
shown as text."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update
from typer.testing import CliRunner

from arena.analytics import breakdown
from arena.analytics.groups import HORIZONS, horizon_bucket, horizon_buckets, restrict
from arena.analytics.leaderboard import compute_leaderboard
from arena.analytics.ledger_breakdown import Scope, checked_scope, ledger_cells
from arena.analytics.loading import read_export
from arena.analytics.options import AnalysisOptions
from arena.analytics.report import ranking
from arena.cli import app
from arena.config import load_settings
from arena.domain.book import TradeSide
from arena.errors import OptionError
from arena.export.writer import ExportTarget, export
from arena.store.models import Agent, Market, Position, Trade
from arena.web.app import create_app
from tests.analytics.results_arena import build_arena
from tests.conftest import Database
from tests.helpers import write_config

runner = CliRunner()
AT = "2026-11-25T00:00:00Z"
LATE = "2027-01-02T00:00:00Z"  # past the markets' scheduled close: their questions score
MARKUP = "<script>alert('x')</script>"


@pytest.fixture
def world(db: Database) -> Database:
    """The results arena, with market 103 uncategorised (so "other" is a group)."""
    build_arena(db.factory)
    with db.factory() as session, session.begin():
        session.execute(update(Market).where(Market.id == "103").values(category=None))
    return db


@pytest.mark.parametrize("by", ["category", "horizon"])
def test_groups_add_up_to_each_familys_totals(world: Database, by: str) -> None:
    with world.factory() as session:
        cells = ledger_cells(session, by)
    whole = {s.family_id: s for s in compute_leaderboard(world.factory, min_scored_bets=0)}
    with world.factory() as session:
        positions = dict(
            session.execute(
                select(Agent.family_id, func.count())
                .select_from(Position)
                .join(Agent, Agent.id == Position.agent_id)
                .group_by(Agent.family_id)
            ).all()
        )
        bought: dict[str, Decimal] = defaultdict(Decimal)
        for family_id, amount in session.execute(
            select(Agent.family_id, Trade.amount)
            .select_from(Trade)
            .join(Agent, Agent.id == Trade.agent_id)
            .where(Trade.trade_type == TradeSide.BUY)
        ):
            bought[family_id] += amount
    groups = {group for _family, group in cells}
    assert len(groups) >= 2
    if by == "category":
        assert "other" in groups
    else:
        assert groups <= set(HORIZONS)
    for family_id, standing in whole.items():
        mine = [cell for (family, _g), cell in cells.items() if family == family_id]
        assert sum(c.positions for c in mine) == positions.get(family_id, 0)
        assert sum((c.cost for c in mine), Decimal(0)) == bought[family_id]
        assert sum((c.pnl for c in mine), Decimal(0)) == standing.pnl
        assert sum(c.tally.n for c in mine) == standing.tally.n
        assert sum((c.tally.sum_brier for c in mine), Decimal(0)) == standing.tally.sum_brier


def test_leaderboard_filter_is_the_groups_money_and_scores(world: Database) -> None:
    with world.factory() as session:
        cells = ledger_cells(session, "category")
    for category in {group for _f, group in cells}:
        scoped = compute_leaderboard(
            world.factory, min_scored_bets=0, scope=Scope(category=category)
        )
        for standing in scoped:
            cell = cells.get((standing.family_id, category))
            if cell is None:
                assert standing.pnl == 0 and standing.tally.n == 0
                continue
            assert standing.pnl == cell.pnl
            assert standing.starting_balance == cell.cost
            assert standing.tally.n == cell.tally.n
            assert standing.to_json()["exit_pnl"] is None


def test_forecast_groups_add_up_and_other_is_kept(world: Database, tmp_path: Path) -> None:
    export(world.factory, ExportTarget(tmp_path / "export", "csv"))
    forecasts = read_export(tmp_path / "export")
    at = datetime(2026, 11, 25, tzinfo=UTC)
    options = AnalysisOptions(bootstrap_resamples=20)
    panel = forecasts.from_sources(options.sources).known_at(np.datetime64("2026-11-25", "us"))
    totals = defaultdict(int)
    for family in panel.family_id:
        totals[str(family)] += 1
    for by in ("category", "horizon"):
        report = breakdown(forecasts, options, by=by, at=at)
        sums: dict[str, int] = defaultdict(int)
        for row in report["rows"]:
            sums[row["forecaster"]] += row["forecasts"]
            assert row["provisional"] == (row["questions"] < 30)
        assert sums == totals
    groups = breakdown(forecasts, options, by="category", at=at)["groups"]
    assert "other" in groups


def test_horizon_buckets() -> None:
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    day = timedelta(days=1)
    assert horizon_bucket(t0, t0 + 7 * day, None) == "le7"
    assert horizon_bucket(t0, t0 + 7 * day + timedelta(seconds=1), None) == "8to30"
    assert horizon_bucket(t0, None, t0 + 30 * day) == "8to30"  # unresolved: its scheduled end
    assert horizon_bucket(t0, t0 + 31 * day, t0) == "gt30"  # the resolution wins
    assert horizon_bucket(t0, None, None) == "gt30"
    us = "datetime64[us]"
    buckets = horizon_buckets(
        np.array([t0.replace(tzinfo=None)] * 3, dtype=us),
        np.array(["2026-11-08", "NaT", "NaT"], dtype=us),
        np.array(["NaT", "2026-11-20", "NaT"], dtype=us),
    )
    assert list(buckets) == ["le7", "8to30", "gt30"]


def test_unknown_category_is_one_line_listing_the_known(world: Database) -> None:
    with world.factory() as session, pytest.raises(OptionError) as refused:
        checked_scope(session, "Nonsense", None)
    message = str(refused.value)
    assert "\n" not in message  # one line, even with a category holding a newline
    assert "'line one\\nline two'" in message
    assert "'Nonsense' is not one of" in message and "other" in message and "politics" in message
    config = _config(world)
    done = runner.invoke(app, ["--config", str(config), "leaderboard", "--category", "Nonsense"])
    assert isinstance(done.exception, OptionError)
    assert str(done.exception) == message


_CONFIGS: dict[str, Path] = {}


def _config(db: Database) -> Path:
    if db.url not in _CONFIGS:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="arena-breakdown-"))
        _CONFIGS[db.url] = write_config(folder / "config.yaml", db.url, methodology="v2")
    return _CONFIGS[db.url]


def _cli_json(db: Database, *args: str) -> Any:
    done = runner.invoke(app, ["--config", str(_config(db)), *args])
    assert done.exit_code == 0, (done.output, done.exception)
    return json.loads(done.output)


def test_cli_filters_on_leaderboard_and_ranking(world: Database, tmp_path: Path) -> None:
    board = _cli_json(world, "leaderboard", "--category", "politics", "--format", "json")
    expected = compute_leaderboard(
        world.factory,
        min_scored_bets=load_settings(_config(world)).benchmark.min_scored_bets,
        scope=Scope(category="politics"),
    )
    assert board == [s.to_json() for s in expected]
    horizon = _cli_json(world, "leaderboard", "--horizon", "8to30", "--format", "json")
    scoped = compute_leaderboard(world.factory, scope=Scope(horizon="8to30"))
    assert [r["pnl"] for r in horizon] == [s.to_json()["pnl"] for s in scoped]

    args = ["--at", LATE, "--bootstrap", "20", "--format", "json"]
    ranked = _cli_json(world, "analyze", "ranking", "--category", "politics", *args)
    export(world.factory, ExportTarget(tmp_path / "export", "csv"))
    at = datetime(2027, 1, 2, tzinfo=UTC)
    options = AnalysisOptions(bootstrap_resamples=20, as_of=at)
    mine = ranking(
        restrict(read_export(tmp_path / "export"), category="politics", as_of=at), options
    )
    assert [(r["forecaster"], r["n_questions"]) for r in ranked["rows"]] == [
        (r["forecaster"], r["n_questions"]) for r in mine["rows"]
    ]
    whole = _cli_json(world, "analyze", "ranking", *args)
    assert sum(r["n_questions"] for r in ranked["rows"]) < sum(
        r["n_questions"] for r in whole["rows"]
    )


def test_cli_api_and_python_agree(world: Database, tmp_path: Path) -> None:
    settings = load_settings(_config(world))
    with TestClient(create_app(settings)) as client:
        for by in ("category", "horizon"):
            cli = _cli_json(world, "analyze", "breakdown", "--by", by, "--format", "json")
            api = client.get(f"/api/v1/breakdown?by={by}").json()
            assert cli["ledger"] == api["ledger"]
            assert cli["forecasts"]["rows"] == api["forecasts"]["rows"]
        api_ranking = client.get("/api/v1/ranking?category=politics").json()["ranking"]
        cli_ranking = _cli_json(world, "analyze", "ranking", "--category", "politics", "-f", "json")
        if api_ranking is None:  # nothing of the category scores yet (scheduled close ahead)
            assert cli_ranking["n_scored_questions"] == 0
        else:
            assert [(r["forecaster"], r["n_questions"]) for r in api_ranking["rows"]] == [
                (r["forecaster"], r["n_questions"]) for r in cli_ranking["rows"]
            ]
        assert client.get("/api/v1/ranking?category=Nonsense").status_code == 422
    cli = _cli_json(world, "analyze", "breakdown", "--at", AT, "--format", "json")
    export(world.factory, ExportTarget(tmp_path / "export", "csv"))
    python = breakdown(
        read_export(tmp_path / "export"), by="category", at=datetime(2026, 11, 25, tzinfo=UTC)
    )
    assert cli["forecasts"] == python
    done = runner.invoke(
        app, ["--config", str(_config(world)), "analyze", "breakdown", "-f", "csv"]
    )
    assert done.exit_code == 0
    assert done.output.splitlines()[0].startswith("side,group,family_id,positions")
    table = runner.invoke(app, ["--config", str(_config(world)), "analyze", "breakdown"])
    assert table.exit_code == 0
    assert max(len(line) for line in table.output.splitlines()) <= 80


def test_markup_in_a_category_is_text(world: Database) -> None:
    with world.factory() as session, session.begin():
        session.execute(update(Market).where(Market.id == "102").values(category=MARKUP))
    settings = load_settings(_config(world))
    with TestClient(create_app(settings)) as client:
        for path in ("/breakdown?by=category", "/"):
            page = client.get(path)
            assert page.status_code == 200, path
            assert "<script>alert" not in page.text
            assert "&lt;script&gt;alert(" in page.text
        chosen = client.get("/", params={"category": MARKUP})
        assert chosen.status_code == 200
        assert "<script>alert" not in chosen.text
        refused = client.get("/api/v1/leaderboard", params={"category": "Nonsense"})
        assert refused.status_code == 422
        assert "politics" in refused.json()["detail"][0]["msg"]
        assert client.get("/", params={"category": "Nonsense"}).status_code == 400
        scoped = client.get("/api/v1/leaderboard", params={"category": "politics"}).json()
        assert scoped == [
            s.to_json()
            for s in compute_leaderboard(
                world.factory,
                min_scored_bets=settings.benchmark.min_scored_bets,
                scope=Scope(category="politics"),
            )
        ]
