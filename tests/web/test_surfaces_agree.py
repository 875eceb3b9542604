"""On the demo (`arena demo`, the web tests' SQLite arena), the risk table, the category and
horizon breakdowns and a family's trend say the same in the three places a reader finds them:
`arena analyze ... --format json`, the API route, and the page's table (read as HTML, without
JavaScript), each at the same instant. The page's cells are compared with the API's numbers
written by the page's own number format (:mod:`arena.numbers`).

The demo's two weeks are fewer than the 8 a risk ratio needs (every ratio is "insufficient"
there), so the risk table is also compared on the ten-week risk arena of the risk tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from arena import numbers
from arena.analytics.leaderboard_columns import LEADERBOARD_COLUMNS
from arena.cli import app as cli
from arena.clock import FixedClock
from arena.config import load_settings
from arena.store.db import make_engine, session_factory, upgrade
from arena.web.app import create_app
from tests.analytics.risk_arena import AT, seed_risk_arena
from tests.helpers import write_config
from tests.web.conftest import Site


class _Tables(HTMLParser):
    """The text of every cell of the tables of a page, by table id, and each row's attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[dict[str, str], list[str]]]] = {}
        self._table: str | None = None
        self._row: tuple[dict[str, str], list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "table" and "id" in found:
            self._table = found["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = (found, [])
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row[1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if self._row[1]:  # the header row has <th> cells only
                self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(page: str) -> dict[str, list[tuple[dict[str, str], list[str]]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.tables


@dataclass(frozen=True)
class Surfaces:
    """The demo served by the app and read by the CLI, both at the instant ``at``."""

    site: Site
    client: TestClient
    at: datetime

    def cli(self, *args: str) -> Any:
        """``arena analyze ARGS --at AT --format json``."""
        return self.command("analyze", *args, "--at", self.at.isoformat())

    def command(self, *args: str) -> Any:
        """``arena ARGS --format json`` on the site's config."""
        command = ["--config", str(self.site.config), *args, "--format", "json"]
        # the site's database even where the environment names another
        result = CliRunner().invoke(cli, command, env={"ARENA_DATABASE_URL": self.site.url})
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def api(self, path: str) -> Any:
        answer = self.client.get(path)
        assert answer.status_code == 200, answer.text[:300]
        return answer.json()

    def page(self, path: str) -> dict[str, list[tuple[dict[str, str], list[str]]]]:
        answer = self.client.get(path)
        assert answer.status_code == 200, answer.text[:300]
        return tables(answer.text)


def _served(site: Site, at: datetime) -> Iterator[Surfaces]:
    app = create_app(site.settings)
    app.state.ctx.clock = FixedClock(at)
    with TestClient(app) as client:
        yield Surfaces(site, client, at)
    app.state.ctx.engine.dispose()


@pytest.fixture(scope="module")
def surfaces(demo_site: Site) -> Iterator[Surfaces]:
    # after the demo's weeks, which end before now
    yield from _served(demo_site, datetime.now(UTC).replace(microsecond=0))


@pytest.fixture(scope="module")
def risk_arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Surfaces]:
    """Ten weeks of curves (alpha and beta have every ratio), 500 resamples."""
    directory = tmp_path_factory.mktemp("surfaces-risk")
    url = f"sqlite:///{directory / 'arena.db'}"
    engine = make_engine(url)
    upgrade(engine)
    seed_risk_arena(session_factory(engine))
    engine.dispose()
    config = write_config(directory / "config.yaml", url, analysis={"resamples": 500})
    yield from _served(Site("sqlite", url, config, load_settings(config)), AT)


def _figure(value: Any, digits: int = 2) -> str:
    """An interval as the risk table writes it."""
    if not isinstance(value, dict):
        assert value == "insufficient"
        return "insufficient"
    low, high = numbers.fixed(value["low"], digits), numbers.fixed(value["high"], digits)
    return f"{numbers.fixed(value['estimate'], digits)} ({low} to {high})"


def test_the_risk_table_agrees(surfaces: Surfaces) -> None:
    _risk_agrees(surfaces)


def test_the_risk_ratios_agree(risk_arena: Surfaces) -> None:
    served = _risk_agrees(risk_arena)
    assert sum(isinstance(r["sharpe"], dict) for r in served["rows"]) >= 2


def _risk_agrees(surfaces: Surfaces) -> Any:
    """The risk report of the CLI is the API's, and each row of the page's table shows it."""
    printed = surfaces.cli("risk")
    served = surfaces.api("/api/v1/risk")
    assert printed == served
    assert served["rows"], "the arena has curves"
    names = {r["family_id"]: r for r in surfaces.api("/api/v1/leaderboard")}
    shown = surfaces.page("/")["risk-table"]
    assert [attrs["data-risk-family"] for attrs, _ in shown] == [
        r["forecaster"] for r in served["rows"]
    ]
    for (_, cells), row in zip(shown, served["rows"], strict=True):
        usd, hours = row["max_drawdown_usd"], row["drawdown_hours"]
        assert cells == [
            names[row["family_id"]]["display_name"],
            numbers.count(row["weeks"]),
            _figure(row["sharpe"]),
            _figure(row["sortino"]),
            _figure(row["max_drawdown_pct"], 1),
            "-" if usd is None else numbers.money(usd),
            "-" if hours is None else numbers.fixed(hours, 0),
            "-" if row["recovered"] is None else ("yes" if row["recovered"] else "no"),
            _figure(row["calmar"]),
        ], row["forecaster"]
    return served


@pytest.mark.parametrize("by", ["category", "horizon"])
def test_the_breakdown_agrees(surfaces: Surfaces, by: str) -> None:
    printed = surfaces.cli("breakdown", "--by", by)
    served = surfaces.api(f"/api/v1/breakdown?by={by}")
    assert printed == served
    assert served["ledger"], "the demo has positions"
    shown = surfaces.page(f"/breakdown?by={by}")
    ledger = shown["breakdown-ledger"]
    assert len(ledger) == len(served["ledger"])
    for (attrs, cells), row in zip(ledger, served["ledger"], strict=True):
        assert (attrs["data-group"], attrs["data-family"]) == (row["group"], row["family_id"])
        family = row["family_id"] + (" provisional" if row["provisional"] else "")
        brier = "–" if row["brier"] is None else f"{row['brier']:.4f}"
        assert cells == [
            row["group"],
            family,
            str(row["positions"]),
            str(row["open_positions"]),
            row["pnl"],
            row["cost"],
            str(row["scored_bets"]),
            brier,
        ]
    forecasts = served["forecasts"]
    assert forecasts is not None and forecasts["rows"], "the demo is methodology v2"
    rows = shown["breakdown-forecasts"]
    assert len(rows) == len(forecasts["rows"])
    for (attrs, cells), row in zip(rows, forecasts["rows"], strict=True):
        assert (attrs["data-group"], attrs["data-family"]) == (row["group"], row["forecaster"])
        adjusted = row["adjusted"]
        if isinstance(adjusted, dict):
            low, high = f"{adjusted['low']:.3f}", f"{adjusted['high']:.3f}"
            adjusted = f"{adjusted['estimate']:.4f} ({low}..{high})"
        assert cells[1:] == [
            row["forecaster"] + (" provisional" if row["provisional"] else ""),
            str(row["forecasts"]),
            str(row["questions"]),
            adjusted,
        ]


def test_a_category_filters_the_same_on_every_surface(surfaces: Surfaces) -> None:
    whole = surfaces.api("/api/v1/breakdown?by=category")["ledger"]
    category = max({r["group"] for r in whole}, key=lambda g: sum(r["group"] == g for r in whole))
    printed = surfaces.cli("breakdown", "--by", "category", "--category", category)
    served = surfaces.api(f"/api/v1/breakdown?by=category&category={category}")
    assert printed == served
    assert served["ledger"] == [r for r in whole if r["group"] == category]
    shown = surfaces.page(f"/breakdown?by=category&category={category}")["breakdown-ledger"]
    assert [(a["data-group"], a["data-family"]) for a, _ in shown] == [
        (r["group"], r["family_id"]) for r in served["ledger"]
    ]


def test_the_leaderboard_of_a_category_agrees(surfaces: Surfaces) -> None:
    """`arena leaderboard --category`, `/api/v1/leaderboard?category=` and `/?category=` (the
    selector's GET form, no JavaScript): the same families in the same order, the same cells."""
    groups = [r["group"] for r in surfaces.api("/api/v1/breakdown?by=category")["ledger"]]
    category = max(set(groups), key=groups.count)
    printed = surfaces.command("leaderboard", "--category", category)
    served = surfaces.api(f"/api/v1/leaderboard?category={category}")
    assert printed == served and served
    assert served != surfaces.api("/api/v1/leaderboard"), "the category filters the money"
    shown = surfaces.page(f"/?category={category}")["leaderboard"]
    assert [attrs["data-family"] for attrs, _ in shown] == [r["family_id"] for r in served]
    for (_, cells), row in zip(shown, served, strict=True):
        assert cells[2:-1] == [c.text(row[c.field]) for c in LEADERBOARD_COLUMNS], row["family_id"]
        assert cells[-1] == str(row["cohorts"])


def test_the_trend_agrees(surfaces: Surfaces) -> None:
    printed = surfaces.cli("trend")
    family = max(
        {r["family_id"] for r in printed["rows"]},
        key=lambda f: sum(r["family_id"] == f and r["weekly_return"] != 0 for r in printed["rows"]),
    )
    served = surfaces.api(f"/api/v1/families/{family}/trend")
    mine = [r for r in printed["rows"] if r["family_id"] == family]
    assert mine and served["rows"] == mine
    assert (served["as_of"], served["rank_by"]) == (printed["as_of"], printed["rank_by"])
    shown = surfaces.page(f"/families/{family}")["trend-table"]
    assert len(shown) == len(mine)
    for (_, cells), row in zip(shown, mine, strict=True):
        weekly = row["weekly_return"]
        assert cells == [
            row["week_start"][:10] + (" *" if row["lineage_changed"] else ""),
            "-" if weekly is None else numbers.percent(weekly * 100),
            numbers.fixed(row["brier"], 3),
            numbers.fixed(row["adjusted"], 3),
            numbers.fixed(row["alpha"], 3),
            "-" if row["rank_week"] is None else str(row["rank_week"]),
            "-" if row["rank_cumulative"] is None else str(row["rank_cumulative"]),
            "; ".join(row["lineage"]) if row["lineage_changed"] else "",
        ]
    # "rank over weeks" on `/`: the family's cumulative ranks, week by week
    ranks = {cells[0]: cells[1:] for _, cells in surfaces.page("/")["ranks-table"]}
    board = {r["family_id"]: r["display_name"] for r in surfaces.api("/api/v1/leaderboard")}
    assert ranks[board[family]] == [str(r["rank_cumulative"]) for r in mine]


def test_the_replicates_agree(surfaces: Surfaces) -> None:
    """Issue 27: the demo runs two simulated families as three replicates each; the variance
    split and the close orderings say the same in the CLI, the API (the stored analysis) and
    the table on `/`."""
    printed = surfaces.cli("replicates")
    served = surfaces.api("/api/v1/replicates")["replicates"]
    assert served is not None, "the demo has resolved forecasts"
    for key in ("rows", "between_variance", "within_variance", "icc", "close_orderings"):
        assert printed[key] == served[key], key
    assert {r["family_id"]: r["replicates"] for r in served["rows"]}["sim-skill-50"] > 1
    assert served["icc"] is not None
    names = {r["family_id"]: r["display_name"] for r in surfaces.api("/api/v1/leaderboard")}
    close = {pair["upper"] for pair in served["close_orderings"]}
    shown = surfaces.page("/")["replicates-table"]
    assert [attrs["data-forecaster"] for attrs, _ in shown] == [
        r["forecaster"] for r in served["rows"]
    ]
    for (_, cells), row in zip(shown, served["rows"], strict=True):
        brier = numbers.fixed(row["brier"], 4)
        interval = f"[{numbers.fixed(row['ci_low'], 3)}, {numbers.fixed(row['ci_high'], 3)}]"
        assert cells == [
            names[row["family_id"]],
            numbers.count(row["replicates"]),
            numbers.fixed(row["mean_brier"], 4),
            numbers.fixed(row["sd_brier"], 4),
            f"{brier} {interval}",
            "close" if row["forecaster"] in close else "",
        ], row["forecaster"]
