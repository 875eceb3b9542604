"""Replicates in the v2 analytics: a family is ranked on the mean of its replicates (one cell
per question, so the replicates of a question are one cluster, not several); the variance of
the agents' scores splits into a part between families and one within them, as statsmodels'
random-effects model estimates it; and an ordering closer than the replicates' spread is
flagged."""

from __future__ import annotations

import itertools
import json
import random
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

from arena.analytics.options import prepare, with_at
from arena.analytics.replicate_split import replicate_split, variance_split
from arena.analytics.report import ranking
from tests.analytics.helpers import WEEK0, forecasts, row

LEVELS = {"a": 0.75, "b": 0.6, "c": 0.58}  # how often each family leans the right way
QUESTIONS = 40
REPLICATES = 3


def _rows() -> list[dict[str, object]]:
    rng = random.Random(5)
    rows = []
    for question in range(QUESTIONS):
        truth = float(rng.random() < 0.5)
        for family, level in LEVELS.items():
            for replicate in range(1, REPLICATES + 1):
                right = rng.random() < level
                p = rng.uniform(0.55, 0.95) if right == bool(truth) else rng.uniform(0.05, 0.45)
                rows.append(
                    {
                        **row(family, f"m{question}", p, resolved=truth),
                        "agent_id": f"{family}-r{replicate}",
                        "market_probability": 0.5,
                    }
                )
    return rows


def _prep():  # type: ignore[no-untyped-def]
    data = forecasts(*_rows())
    return data, prepare(data, with_at(None, WEEK0 + timedelta(days=30)))


def test_a_family_ranks_on_its_replicates_mean_one_cluster_a_question() -> None:
    data, prep = _prep()
    rows = _rows()
    report = ranking(data, prep=prep)
    mine = next(r for r in report["rows"] if r["forecaster"] == "a")
    per_question = [
        np.mean(
            [
                (r["probability"] - r["resolved_value"]) ** 2
                for r in rows
                if r["family_id"] == "a" and r["market_id"] == f"m{q}"
            ]
        )
        for q in range(QUESTIONS)
    ]
    assert mine["brier"] == pytest.approx(float(np.mean(per_question)))
    assert mine["n_questions"] == QUESTIONS and mine["n_clusters"] == QUESTIONS
    # the split's family mean and its interval: every question its own cluster, weight 1
    family = next(f for f in replicate_split(prep)["rows"] if f["family_id"] == "a")
    mean = float(np.mean(per_question))
    deviations = np.asarray(per_question) - mean
    se = np.sqrt(QUESTIONS / (QUESTIONS - 1) * np.sum(deviations**2)) / QUESTIONS
    half = stats.t.ppf(0.975, QUESTIONS - 1) * se
    assert family["brier"] == pytest.approx(mean)
    assert (family["ci_low"], family["ci_high"]) == pytest.approx((mean - half, mean + half))
    assert family["n_clusters"] == QUESTIONS  # not 3 x 40: a question's replicates are one


def test_variance_split_equals_the_random_effects_model() -> None:
    _data, prep = _prep()
    split = replicate_split(prep)
    rows = pd.DataFrame(_rows())
    rows["brier"] = (rows["probability"] - rows["resolved_value"]) ** 2
    agents = rows.groupby(["family_id", "agent_id"], as_index=False)["brier"].mean()
    fit = smf.mixedlm("brier ~ 1", agents, groups=agents["family_id"]).fit(reml=True)
    assert split["between_variance"] == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=1e-3)
    assert split["within_variance"] == pytest.approx(float(fit.scale), rel=1e-3)
    between, within = split["between_variance"], split["within_variance"]
    assert split["icc"] == pytest.approx(between / (between + within))
    means = agents.groupby("family_id")["brier"].agg(["mean", "std", "count"])
    for family in split["rows"]:
        direct = means.loc[family["family_id"]]
        assert family["mean_brier"] == pytest.approx(direct["mean"])
        assert family["sd_brier"] == pytest.approx(direct["std"])
        assert family["replicates"] == direct["count"] == REPLICATES


def test_an_ordering_closer_than_the_spread_is_flagged() -> None:
    _data, prep = _prep()
    split = replicate_split(prep)
    order = [f["family_id"] for f in split["rows"]]
    assert order == ["a", "b", "c"]
    families = {f["family_id"]: f for f in split["rows"]}
    for close in split["close_orderings"]:
        upper, lower = families[close["upper"]], families[close["lower"]]
        assert close["gap"] == pytest.approx(lower["mean_brier"] - upper["mean_brier"])
        assert close["gap"] < max(upper["sd_brier"], lower["sd_brier"])
    flagged = {(c["upper"], c["lower"]) for c in split["close_orderings"]}
    assert flagged == {("b", "c")}  # 0.041 apart, the replicates of b 0.046 apart
    gaps = {
        (u, lo): families[lo]["mean_brier"] - families[u]["mean_brier"]
        for u, lo in itertools.pairwise(order)
    }
    spreads = {pair: max(families[p]["sd_brier"] for p in pair) for pair in gaps}
    assert flagged == {pair for pair, gap in gaps.items() if gap < spreads[pair]}


def test_variance_split_of_a_balanced_one_way_layout() -> None:
    groups = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    # MSB = 3 * ((2 - 3.5)^2 + (5 - 3.5)^2) / 1 = 13.5; MSW = 4 / 4 = 1; n0 = 3
    assert variance_split(groups) == pytest.approx((12.5 / 3, 1.0))
    assert variance_split([[1.0, 2.0]]) == (None, None)


def test_the_cli_reports_replicates_in_json_csv_and_a_table_of_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: the variance split and the close orderings reach the CLI, alone
    (``arena analyze replicates``) and in ``arena analyze report``; the JSON equals the Python
    API's on the same export."""
    from arena.analytics import read_export, replicates
    from tests.analytics.test_cli_analyze import _csv, _direct, _fits, _json, _run, write_export

    export = write_export(tmp_path, _rows())
    at = ["--at", "2025-06-01T00:00:00Z"]
    base = ["analyze", "replicates", "--from-export", str(export), *at]
    report = _json([*base, "-f", "json"])
    assert report == json.loads(json.dumps(replicates(read_export(export), _direct(export))))
    assert [r["forecaster"] for r in report["rows"]] == ["a", "b", "c"]
    assert report["close_orderings"] == [
        {"upper": "b", "lower": "c", "gap": pytest.approx(report["close_orderings"][0]["gap"]),
         "spread": pytest.approx(report["close_orderings"][0]["spread"])}
    ]  # fmt: skip
    rows = _csv([*base, "-f", "csv"])
    assert [(r["forecaster"], r["replicates"]) for r in rows] == [
        ("a", "3"),
        ("b", "3"),
        ("c", "3"),
    ]
    table = _run(base, monkeypatch)
    _fits(table)
    assert "Replicates" in table and f"icc {report['icc']:.3f}" in " ".join(table.split())
    assert [line.split()[-1] for line in table.splitlines() if line.startswith(" b ")] == ["close"]
    full = ["analyze", "report", "--from-export", str(export), *at, "--bootstrap", "40"]
    sections = {r["section"] for r in _csv([*full, "-f", "csv"])}
    assert "replicates" in sections
    assert "Replicates: skill or the luck of a run" in _run([*full, "-f", "table"], monkeypatch)
    assert _json([*full, "-f", "json"])["replicates"]["icc"] == pytest.approx(report["icc"])


def test_replicate_means_equal_the_per_agent_lists_they_replaced() -> None:
    """Each family's replicate means, in their order, are bit for bit those of the per-agent
    lists of Python floats the split used to build (rows interleaved, an agent missing)."""
    rows = _rows()
    for index, item in enumerate(rows):
        if index % 17 == 0:
            item["agent_id"] = None
    data = forecasts(*rows)
    prep = prepare(data, with_at(None, WEEK0 + timedelta(days=30)))
    q = prep.questions.row_question
    keep = prep.scorable[q] & ~np.isnan(prep.questions.resolved_value[q])
    brier = (prep.forecasts.probability[keep] - prep.questions.resolved_value[q[keep]]) ** 2
    agents: dict[tuple[str, str], list[float]] = {}
    families, ids = prep.forecasts.family_id[keep], prep.forecasts.agent_id[keep]
    for family, agent, score in zip(families, ids, brier, strict=True):
        agents.setdefault((str(family), str(agent)), []).append(float(score))
    groups: dict[str, list[float]] = {}
    for (family, _agent), scores in agents.items():
        groups.setdefault(family, []).append(float(np.mean(scores)))
    split = {r["family_id"]: r for r in replicate_split(prep)["rows"]}
    for family, means in groups.items():
        assert split[family]["replicates"] == len(means)
        assert split[family]["mean_brier"] == float(np.mean(means))
        assert split[family]["sd_brier"] == float(np.std(means, ddof=1))
