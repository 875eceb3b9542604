"""Issue 15, findings 2, 3 and 6 at the level of the reports: degenerate comparisons are
insufficient, small samples are not ranked, row order never matters, one resample count, and
repeats and event groups are one cluster."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from arena.analytics.questions import index_questions
from arena.analytics.report import AnalysisOptions, head_to_head, ranking
from arena.analytics.weights import cluster_labels
from tests.analytics.helpers import WEEK0, forecasts, row
from tests.analytics.test_cli_analyze import _app, _write_export


def test_identical_scores_on_every_question_are_not_a_verdict() -> None:
    # ten questions that all resolve YES, A at 0.9 and B at 0.8
    rows = [
        row(family, f"m{q}", p, resolved=1.0)
        for q in range(10)
        for family, p in (("a", 0.9), ("b", 0.8))
    ]
    report = head_to_head(forecasts(*rows), "a", "b", AnalysisOptions(bootstrap_resamples=100))
    assert report["status"] == "insufficient"
    assert report["verdict"].startswith("insufficient data")
    assert report["t_test"]["p_value"] is None and report["t_test"]["low"] is None
    assert report["bootstrap"]["low"] is None and report["bootstrap"]["p_positive"] is None
    assert report["sign_test"]["p_value"] == pytest.approx(2 / 2**10)


def test_one_common_question_gives_neither_interval() -> None:
    rows = [row("a", "m1", 0.9, resolved=1.0), row("b", "m1", 0.6, resolved=1.0)]
    report = head_to_head(forecasts(*rows), "a", "b", AnalysisOptions(bootstrap_resamples=100))
    assert report["status"] == "insufficient"
    assert report["t_test"]["low"] is None and report["bootstrap"]["low"] is None
    single = ranking(forecasts(*rows), AnalysisOptions(bootstrap_resamples=100))
    for r in single["rows"]:
        assert r["ci_low"] is None and r["bootstrap_low"] is None  # never one without the other
        assert r["rank"] is None or r["reference"]


def _rows(n: int, seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n):
        truth = float(rng.random() < 0.5)
        group = f"ev{q // 3}" if q % 2 else None
        for family, noise in (("a", 0.1), ("b", 0.3), ("c", 0.2)):
            p = float(np.clip(0.5 + (truth - 0.5) * 0.5 + rng.normal(0, noise), 0.02, 0.98))
            rows.append(row(family, f"m{q}", p, week=q // 10, resolved=truth, group=group))
    return rows


def test_ranking_below_the_minimum_sample_is_marked_insufficient_not_ranked() -> None:
    rows = _rows(40)
    rows += [row("late", "m0", 0.7, resolved=rows[0]["resolved_value"])]
    report = ranking(forecasts(*rows), AnalysisOptions(bootstrap_resamples=100))
    late = next(r for r in report["rows"] if r["forecaster"] == "late")
    assert late["status"] == "insufficient" and late["rank"] is None
    assert late["ci_low"] is None and late["bootstrap_low"] is None
    ranks = [r["rank"] for r in report["rows"]]
    assert ranks == [1, 2, 3, None, None]  # ranked first; late and the unpriced market after


def test_reports_do_not_depend_on_row_order() -> None:
    rows = _rows(50)
    shuffled = [rows[i] for i in np.random.default_rng(9).permutation(len(rows))]
    options = AnalysisOptions(bootstrap_resamples=400, seed=3)
    one = head_to_head(forecasts(*rows), "a", "b", options)
    two = head_to_head(forecasts(*shuffled), "a", "b", options)
    for key in ("low", "high", "p_positive"):
        assert one["bootstrap"][key] == pytest.approx(two["bootstrap"][key], abs=1e-9)
    assert one["t_test"]["low"] == pytest.approx(two["t_test"]["low"], abs=1e-9)
    first, second = (ranking(forecasts(*r), options) for r in (rows, shuffled))
    by_name = {r["forecaster"]: r for r in second["rows"]}
    for r in first["rows"]:
        if r["bootstrap_low"] is not None:
            other = by_name[r["forecaster"]]
            assert r["bootstrap_low"] == pytest.approx(other["bootstrap_low"], abs=1e-9)


def test_repeats_and_event_groups_form_one_cluster() -> None:
    rows = [
        row("a", "x", 0.5, week=0, group="ev1"),
        row("a", "y", 0.5, week=0, group="ev1"),
        row("a", "y", 0.5, week=1),  # y again, without its group: still the cluster of ev1
        row("a", "z", 0.5, week=1, group="ev2"),
        row("a", "w", 0.5, week=2),
    ]
    questions = index_questions(forecasts(*rows))
    labels = {questions.label(i): cluster_labels(questions)[i] for i in range(len(questions))}
    week = {k: WEEK0 + timedelta(weeks=k) for k in range(3)}
    assert labels[f"x@{week[0].date()}"] == labels[f"y@{week[0].date()}"] == "x"
    assert labels[f"y@{week[1].date()}"] == "x"
    assert labels[f"z@{week[1].date()}"] == "z" and labels[f"w@{week[2].date()}"] == "w"


def test_a_market_asked_every_week_is_one_cluster_in_the_head_to_head() -> None:
    rows = _rows(30)
    repeated = [dict(r, market_id="m0") for r in rows if r["market_id"] == "m0"]
    for k in range(1, 4):
        rows += [dict(r, forecast_at=r["forecast_at"] + timedelta(weeks=k)) for r in repeated]
    report = head_to_head(forecasts(*rows), "a", "b", AnalysisOptions(bootstrap_resamples=50))
    assert report["n_questions"] == 33
    assert report["n_clusters"] == report["t_test"]["n_clusters"] < 30
    assert report["t_test"]["clustered"] and report["bootstrap"]["clustered"]


def test_every_entry_point_uses_the_configured_resample_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = str(_write_export(tmp_path))
    monkeypatch.setenv("ARENA_ANALYSIS__RESAMPLES", "321")
    monkeypatch.setenv("ARENA_ANALYSIS__SEED", "5")
    at = ["--at", "2025-06-01T00:00:00Z", "--from-export", export]
    runner = CliRunner()
    for command in (
        ["ranking", "-f", "json"],
        ["h2h", "alpha", "gamma", "-f", "json"],
        ["report", "--pair", "alpha", "beta"],
    ):
        result = runner.invoke(_app(), ["analyze", *command, *at])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["resampling"] == {"resamples": 321, "seed": 5}, command
    table = runner.invoke(_app(), ["analyze", "h2h", "alpha", "gamma", *at])
    assert "321 resamples, seed 5" in table.output
    assert not math.isnan(report["ranking"]["shift"])
