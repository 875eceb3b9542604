"""The research measures of issue 24 where people see them: ``/api/v1/market`` and
``/api/v1/power`` equal :mod:`arena.analytics` called directly on the same stored forecasts at
the same instant, and ``/`` and the family page show them as plain tables (no JavaScript)."""

from __future__ import annotations

import re
from datetime import datetime
from html import escape
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arena.analytics.records import Forecasts
from arena.analytics.report import against_market, configured_options, full_analysis, power
from arena.export.writer import table_columns
from arena.jsonable import jsonable
from arena.store.db import make_engine, session_factory
from arena.web import standings
from arena.web.app import create_app
from tests.web.conftest import Site

SCRIPT = re.compile(r"<script\b.*?</script>", re.S | re.I)


def stored(site: Site) -> Forecasts:
    engine = make_engine(site.url)
    try:
        with session_factory(engine)() as session:
            return Forecasts.from_columns(table_columns(session, "forecasts"))
    finally:
        engine.dispose()


def direct(site: Site, compute: Any, as_of: str) -> Any:
    """``compute`` (an analysis of :mod:`arena.analytics.report`) over the site's forecasts at
    ``as_of``, as JSON."""
    options = configured_options(site.settings, as_of=datetime.fromisoformat(as_of))
    return jsonable(compute(stored(site), options))


def without_scripts(page: str) -> str:
    """The page as a browser without JavaScript shows it: the scripts never run."""
    return SCRIPT.sub("", page)


def row_of(html: str, table_id: str, forecaster: str) -> str:
    table = html[html.index(f'id="{table_id}"') :]
    table = table[: table.index("</table>")]
    start = table.index(f'<tr data-forecaster="{forecaster}">')
    return table[start : table.index("</tr>", start)]


def shown(interval: Any, places: int = 3) -> str:
    """An interval as the pages write it."""
    if not isinstance(interval, dict):
        return str(interval)
    low, high = interval["low"], interval["high"]
    return (
        f'{interval["estimate"]:+.{places}f} <span class="ci">[{low:+.{places}f}, '
        f"{high:+.{places}f}]</span>"
    )


def test_market_and_power_routes_are_the_analysis_of_the_stored_forecasts(
    site: Site, client: TestClient
) -> None:
    market = client.get("/api/v1/market").json()
    assert market["methodology"] == "v2"
    report = market["market"]
    assert report is not None and report["rows"]
    assert report == direct(site, against_market, report["as_of"])
    valued = [r for r in report["rows"] if isinstance(r["alpha_brier"], dict)]
    assert valued, report["rows"]
    assert all({"estimate", "low", "high"} <= set(r["alpha_brier"]) for r in valued)
    # the demo's market-follower baseline is flagged, and the simulated families' alphas are
    # in skill order, the most skilled above 0 (issue 24, "Done when")
    assert any(r["follows_market"] for r in report["rows"])
    simulated = sorted(
        (r for r in valued if r["forecaster"].startswith("sim-skill-")),
        key=lambda r: r["forecaster"],
        reverse=True,
    )
    if site.backend == "sqlite":  # the demo's families, sim-skill-90 the most skilled
        assert simulated[0]["forecaster"] == "sim-skill-90"
        estimates = [r["alpha_brier"]["estimate"] for r in simulated]
        assert estimates == sorted(estimates, reverse=True) and estimates[0] > 0

    answer = client.get("/api/v1/power").json()
    assert answer["methodology"] == "v2"
    weeks = answer["power"]
    assert weeks is not None and weeks["rows"]
    assert weeks == direct(site, power, weeks["as_of"])
    assert "80% power" in weeks["assumptions"]

    ranking = client.get("/api/v1/ranking").json()["ranking"]
    ranked = [r for r in ranking["rows"] if r["rank"] is not None and not r["reference"]]
    assert ranked and sum(r["p_rank_1"] for r in ranked) == pytest.approx(1.0)
    assert all(r["rank_low"] <= r["rank_high"] for r in ranked)


def test_one_analysis_serves_every_route(site: Site) -> None:
    """``v2_analysis`` is the whole ``full_analysis``, computed once per data version: the
    ranking route answers its ``ranking`` part."""
    app = create_app(site.settings)
    ctx = app.state.ctx
    try:
        with ctx.session() as session:
            analysis = standings.v2_analysis(ctx, session)
            assert analysis is not None
            assert set(analysis) == {
                "resampling",
                "ranking",
                "market",
                "power",
                "proxy",
                "calibration",
                "replicates",
            }
            assert standings.v2_ranking(ctx, session) is analysis["ranking"]
            assert standings.v2_analysis(ctx, session) is analysis  # cached
            as_of = analysis["ranking"]["as_of"]
            options = configured_options(site.settings, as_of=datetime.fromisoformat(as_of))
            assert analysis == jsonable(full_analysis(stored(site), options))
    finally:
        ctx.engine.dispose()


def test_the_leaderboard_shows_the_market_table_and_weeks_to_separate(client: TestClient) -> None:
    analysis = {
        name: client.get(f"/api/v1/{name}").json()[name] for name in ("market", "power", "ranking")
    }
    names = {r["family_id"]: r["display_name"] for r in client.get("/api/v1/leaderboard").json()}
    page = without_scripts(client.get("/").text)
    assert "Against the market" in page
    # highest alpha first, "insufficient" last
    table = page[page.index('id="against-market"') :]
    order = re.findall(r'<tr data-forecaster="([^"]+)">', table[: table.index("</table>")])
    alphas = {r["forecaster"]: r["alpha_brier"] for r in analysis["market"]["rows"]}
    keys = [(0, -alphas[f]["estimate"]) if isinstance(alphas[f], dict) else (1, 0.0) for f in order]
    assert sorted(order) == sorted(alphas) and keys == sorted(keys)
    for item in analysis["market"]["rows"]:
        row = row_of(page, "against-market", item["forecaster"])
        assert f">{escape(names.get(item['forecaster'], item['forecaster']))}</a>" in row
        assert shown(item["alpha_brier"]) in row
        assert shown(item["alpha_log"]) in row
        assert shown(item["return_per_dollar"], 2) in row
        assert shown(item["return_per_dollar_after_fee"], 2) in row
        assert ("follows</span>" in row) == item["follows_market"]
        if isinstance(item["copy_correlation"], float):
            assert f"{item['copy_correlation']:.3f}" in row
    # formulas in the headers
    assert '<abbr title="alpha (Brier) = mean over questions of (m - o)^2 - (p - o)^2' in page

    table = page[page.index('<table class="ranking">') :]
    table = table[: table.index("</table>")]
    assert "P(rank 1)" in table and "Rank 95%" in table
    for item in analysis["ranking"]["rows"]:
        if item["p_rank_1"] is not None:
            assert f"{item['p_rank_1'] * 100:.1f}%" in table
            low, high = item["rank_low"], item["rank_high"]
            assert (str(low) if low == high else f"{low}&ndash;{high}") in table

    weeks = page[page.index('id="weeks-to-separate"') :]
    weeks = weeks[: weeks.index("</table>")]
    for pair in analysis["power"]["rows"]:
        assert f'<td data-field="verdict">{escape(pair["verdict"])}</td>' in weeks
    assert f"Assumptions: {escape(analysis['power']['assumptions'])}." in page


def test_the_family_page_shows_its_alpha_copy_index_and_calibration_depth(
    client: TestClient,
) -> None:
    market = client.get("/api/v1/market").json()["market"]
    item = next(r for r in market["rows"] if isinstance(r["alpha_brier"], dict))
    family = client.get(f"/api/v1/families/{item['forecaster']}").json()
    research = family["research"]
    assert research["market"] == item
    depth = research["calibration"]
    assert depth is not None and depth["forecaster"] == item["forecaster"]
    page = without_scripts(client.get(f"/families/{item['forecaster']}").text)
    block = page[
        page.index('id="family-market"') : page.index("</table>", page.index('id="family-market"'))
    ]
    assert f'data-field="alpha_brier">{shown(item["alpha_brier"])}</td>' in block
    assert f'data-field="follows_market">{"yes" if item["follows_market"] else "no"}</td>' in block
    assert f'data-field="copy_distance">{item["copy_distance"]:.3f}</td>' in block
    depth_table = page[page.index('id="family-calibration"') :]
    for name in ("ece", "mce", "ace", "log_loss", "spherical"):
        assert f'data-field="{name}">{depth[name]:.4f}</td>' in depth_table
    assert f'data-field="overconfidence">{depth["overconfidence"]:+.4f}</td>' in depth_table
    assert escape(research["bin_rule"]) in page
