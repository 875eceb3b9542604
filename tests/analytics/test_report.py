"""The assembled analysis: scorable questions, ranking rows, head-to-head, JSON output."""

from __future__ import annotations

import json
import math
from datetime import timedelta

import numpy as np
import pytest
from rich.console import Console

from arena.analytics.questions import index_questions, scorable
from arena.analytics.render import (
    calibration_table,
    head_to_head_table,
    proxy_table,
    ranking_table,
)
from arena.analytics.report import (
    MARKET_REFERENCE,
    AnalysisOptions,
    calibration_report,
    full_analysis,
    head_to_head,
    ranking,
)
from arena.errors import ForecastsError
from tests.analytics.helpers import WEEK0, forecasts, row


def test_early_closers_wait_for_their_scheduled_close() -> None:
    close = WEEK0 + timedelta(days=60)
    early = WEEK0 + timedelta(days=2)
    data = forecasts(
        {**row("A", "early", 0.9, resolved=1.0), "resolved_at": early, "scheduled_close_at": close},
        row("A", "normal", 0.2, resolved=0.0),
        row("A", "open", 0.5),
        {**row("A", "void", 0.5), "resolved_at": early},  # 50-50 or cancelled: no result
    )
    questions = index_questions(data)
    labels = [questions.label(i) for i in range(len(questions))]

    def counted(at: object) -> set[str]:
        mask = scorable(questions, at)  # type: ignore[arg-type]
        return {label.split("@")[0] for label, ok in zip(labels, mask, strict=True) if ok}

    assert counted(WEEK0 + timedelta(days=10)) == {"normal"}
    assert counted(close) == {"normal", "early"}
    assert counted(WEEK0 + timedelta(days=1)) == set()  # results not known yet
    report = ranking(data, AnalysisOptions(as_of=WEEK0 + timedelta(days=10)))
    assert report["n_scored_questions"] == 1


def _tournament_rows() -> list[dict]:
    rows = []
    rng = np.random.default_rng(5)
    for q in range(40):
        truth = float(rng.random() < 0.5)
        market = 0.7 if truth else 0.3
        week = q // 10
        group = f"ev{q // 2}" if q < 10 else None
        for family, noise in (("good", 0.1), ("fair", 0.25), ("bad", 0.45)):
            p = float(np.clip(market + rng.normal(0, noise), 0.01, 0.99))
            rows.append(
                {
                    **row(family, f"m{q}", p, week=week, resolved=truth, group=group),
                    "market_probability": market,
                }
            )
        rows.append(
            {**row("half", f"m{q}", 0.5, week=week, resolved=truth), "market_probability": market}
        )
    return rows


def test_ranking_rows() -> None:
    data = forecasts(*_tournament_rows())
    options = AnalysisOptions(bootstrap_resamples=500, min_questions=30)
    report = ranking(data, options)
    json.dumps(report)  # plain JSON, no NaN
    names = [r["forecaster"] for r in report["rows"]]
    assert names.index("good") < names.index("fair") < names.index("bad")
    rows = {r["forecaster"]: r for r in report["rows"]}
    # the always-0.5 family answered every question: exactly 0.25
    assert rows["half"]["adjusted_brier"] == pytest.approx(0.25)
    market = rows[MARKET_REFERENCE]
    assert market["reference"] is True
    assert market["n_questions"] == 40
    assert market["brier"] == pytest.approx(0.09)  # 0.7/0.3 on the side that happened
    # market weight 1: the market's adjusted score is the shift itself
    assert market["adjusted_brier"] == pytest.approx(report["shift"])
    good = rows["good"]
    assert good["ci_low"] < good["adjusted_brier"] < good["ci_high"]
    assert good["bootstrap_low"] < good["adjusted_brier"] < good["bootstrap_high"]
    # 10 grouped questions (pairs: 0.53 each) + 30 alone
    assert good["weight_sum"] == pytest.approx(10 * math.log2(3) / 3 + 30)
    assert good["n_questions"] == 40
    assert good["provisional"] is True  # 3 weeks of forecasts < 50 days
    assert [r["rank"] for r in report["rows"]] == list(range(1, 6))
    # always 0.5 against a market that is always 0.7/0.3 right: no spread, so no interval,
    # but 35 clusters of questions are enough to rank it
    assert rows["half"]["interval_status"] == "insufficient"
    assert rows["half"]["ci_low"] is None and rows["half"]["bootstrap_low"] is None
    assert report["n_components"] == 1
    late = ranking(data, AnalysisOptions(as_of=WEEK0 + timedelta(days=80)))
    assert not any(r["provisional"] for r in late["rows"])


def test_ranking_by_agent() -> None:
    rows = [
        {**row("A", "m1", 0.8, resolved=1.0), "agent_id": "a-1"},
        {**row("A", "m1", 0.6, resolved=1.0), "agent_id": "a-2"},
    ]
    report = ranking(forecasts(*rows), AnalysisOptions(by="agent", bootstrap_resamples=50))
    assert {r["forecaster"] for r in report["rows"]} == {"a-1", "a-2", MARKET_REFERENCE}


def test_agents_of_a_family_are_scored_each_then_averaged() -> None:
    rows = [
        {**row("A", "m1", 0.8, resolved=1.0), "agent_id": "a-1"},
        {**row("A", "m1", 0.6, resolved=1.0), "agent_id": "a-2"},
    ]
    report = ranking(forecasts(*rows), AnalysisOptions(bootstrap_resamples=50))
    a = next(r for r in report["rows"] if r["forecaster"] == "A")
    assert a["brier"] == pytest.approx((0.2**2 + 0.4**2) / 2)  # not (1 - 0.7)^2
    assert a["n_questions"] == 1


def test_head_to_head_on_common_questions() -> None:
    rows = [
        row("A", "m1", 0.8, resolved=1.0),
        row("B", "m1", 0.6, resolved=1.0),
        row("A", "m2", 0.3, resolved=0.0),
        row("B", "m2", 0.4, resolved=0.0),
        row("A", "m3", 0.9, resolved=1.0),  # B did not answer: not compared
        row("B", "m4", 0.5),  # open: not compared
    ]
    options = AnalysisOptions(bootstrap_resamples=1000, min_clusters=2, min_common_questions=2)
    report = head_to_head(forecasts(*rows), "A", "B", options)
    expected = [100 * math.log(0.8 / 0.6), 100 * math.log(0.7 / 0.6)]
    assert report["n_questions"] == 2
    assert report["mean"] == pytest.approx(np.mean(expected))
    t = report["t_test"]
    # 2 clusters of one question each, unit weights: the ordinary t-test, df = 1:
    # mean +/- 12.7062 * sd / sqrt(2)
    sd = np.std(expected, ddof=1)
    assert t["high"] == pytest.approx(np.mean(expected) + 12.706205 * sd / math.sqrt(2), rel=1e-6)
    assert report["verdict"].startswith("no significant difference")
    # with the default minimums, two common questions are not enough to compare
    default = head_to_head(forecasts(*rows), "A", "B", AnalysisOptions(bootstrap_resamples=10))
    assert default["status"] == "insufficient"
    assert default["verdict"].startswith("insufficient data")
    brier = head_to_head(
        forecasts(*rows), "A", "B", AnalysisOptions(h2h_score="brier", bootstrap_resamples=50)
    )
    assert brier["mean"] == pytest.approx(100 * np.mean([0.16 - 0.04, 0.16 - 0.09]))
    with pytest.raises(ForecastsError, match="unknown forecaster 'C'"):
        head_to_head(forecasts(*rows), "A", "C", AnalysisOptions())


def test_clear_head_to_head_winner() -> None:
    rng = np.random.default_rng(2)
    truth = rng.random(200)
    happened = (rng.random(200) < truth).astype(float)
    noisy = np.clip(truth + rng.normal(0, 0.35, 200), 0.01, 0.99)
    rows = []
    for q in range(200):
        rows.append(row("sharp", f"m{q}", float(truth[q]), resolved=float(happened[q])))
        rows.append(row("noisy", f"m{q}", float(noisy[q]), resolved=float(happened[q])))
    report = head_to_head(forecasts(*rows), "sharp", "noisy", AnalysisOptions())
    assert report["t_test"]["low"] > 0
    assert report["bootstrap"]["low"] > 0
    assert report["verdict"].startswith("sharp more accurate than noisy")
    reverse = head_to_head(forecasts(*rows), "noisy", "sharp", AnalysisOptions())
    assert reverse["mean"] == pytest.approx(-report["mean"])
    assert reverse["verdict"].startswith("sharp more accurate than noisy")


def test_full_analysis_is_json_and_renders() -> None:
    data = forecasts(
        *_tournament_rows(), row("good", "later", 0.4, week=5), row("bad", "later", 0.9, week=5)
    )
    report = full_analysis(data, AnalysisOptions(bootstrap_resamples=200), pair=("good", "bad"))
    text = json.dumps(report)
    assert "NaN" not in text
    assert set(report) == {
        "resampling",
        "ranking",
        "market",
        "power",
        "proxy",
        "calibration",
        "replicates",
        "head_to_head",
    }
    console = Console(record=True, width=120)
    console.print(ranking_table(report["ranking"]))
    console.print(head_to_head_table(report["head_to_head"]))
    console.print(proxy_table(report["proxy"]))
    console.print(calibration_table(report["calibration"]))
    output = console.export_text()
    assert "Difficulty-adjusted Brier" in output
    assert "PROXY" in output
    assert "good" in output


def test_calibration_report_counts_resolved_forecasts() -> None:
    data = forecasts(*_tournament_rows())
    report = calibration_report(data, AnalysisOptions())
    rows = {r["forecaster"]: r for r in report["rows"]}
    assert rows["good"]["n"] == 40
    assert rows["half"]["bins"][0]["mean_forecast"] == pytest.approx(0.5)


def test_empty_input_is_an_error() -> None:
    with pytest.raises(ForecastsError, match="no forecasts"):
        ranking(forecasts(), AnalysisOptions())


def test_bets_are_left_out_unless_asked() -> None:
    rows = [
        row("A", "m1", 0.8, resolved=1.0),
        {**row("A", "m2", 0.9, resolved=0.0), "source": "bet"},
    ]
    panel_only = ranking(forecasts(*rows), AnalysisOptions(bootstrap_resamples=50))
    with_bets = ranking(
        forecasts(*rows), AnalysisOptions(bootstrap_resamples=50, sources=("panel", "bet"))
    )
    assert panel_only["n_scored_questions"] == 1
    assert with_bets["n_scored_questions"] == 2
    with pytest.raises(ForecastsError, match="no forecasts to analyse"):
        ranking(forecasts(rows[1]), AnalysisOptions())
