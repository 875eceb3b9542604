"""Proxy scores against a hand-computed example, leave-one-out included (seed 002)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from arena.analytics.proxy import leave_one_out_pool, logit_pool
from arena.analytics.report import AnalysisOptions, proxy_ranking
from tests.analytics.helpers import forecasts, row

D = math.sqrt(3)


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_logit_pool_by_hand() -> None:
    # logit(.6) = .405465, logit(.3) = -.847298; mean -.220916; x sqrt(3) = -.382638
    # sigmoid(-.382638) = .405491
    assert logit_pool(np.array([0.6, 0.3])) == pytest.approx(0.405491, abs=1e-6)
    # 1.0 is clipped to .999 before the logit: sigmoid(sqrt(3) * 6.906755) = .999994
    assert logit_pool(np.array([1.0])) == pytest.approx(_sigmoid(D * _logit(0.999)))
    assert logit_pool(np.array([1.0])) == pytest.approx(0.999994, abs=1e-6)


def test_leave_one_out_pool() -> None:
    question = np.array([0, 0, 0, 1])
    logits = np.array([_logit(0.8), _logit(0.6), _logit(0.3), 0.0])
    pooled = leave_one_out_pool(question, logits)
    assert pooled[0] == pytest.approx(_sigmoid(D * (_logit(0.6) + _logit(0.3)) / 2))
    assert pooled[1] == pytest.approx(_sigmoid(D * (_logit(0.8) + _logit(0.3)) / 2))
    assert pooled[2] == pytest.approx(_sigmoid(D * (_logit(0.8) + _logit(0.6)) / 2))
    assert math.isnan(pooled[3])  # nobody else forecast question 1


EXAMPLE = [
    # open question m1: A .8, B .6, C .3
    row("A", "m1", 0.8),
    row("B", "m1", 0.6),
    row("C", "m1", 0.3),
    # open question m2: A .5, B 1.0 (C did not forecast it)
    row("A", "m2", 0.5),
    row("B", "m2", 1.0),
    # a baseline family stays out of the pool unless asked
    {**row("mkt", "m1", 0.99), "family_kind": "baseline"},
    {**row("mkt", "m2", 0.01), "family_kind": "baseline"},
    # a resolved question is not part of the proxy
    row("A", "done", 0.9, resolved=1.0),
    row("B", "done", 0.1, resolved=1.0),
]


LENIENT = AnalysisOptions(proxy_min_voters=2, proxy_min_week_questions=1)


def _z(scores: dict[str, float]) -> dict[str, float]:
    mean = sum(scores.values()) / len(scores)
    sd = math.sqrt(sum((v - mean) ** 2 for v in scores.values()) / len(scores))
    return {k: (v - mean) / sd for k, v in scores.items()}


def test_proxy_ranking_by_hand() -> None:
    report = proxy_ranking(forecasts(*EXAMPLE), LENIENT)
    # m1, A: others B, C -> yhat = sigmoid(sqrt3 * (.405465 - .847298) / 2) = .405491
    #        score (.8 - .405491)^2 = .155638
    # m1, B: others A, C -> mean logit (1.386294 - .847298)/2 = .269498 -> yhat .614622
    #        score (.6 - .614622)^2 = .000214
    # m1, C: others A, B -> mean logit (1.386294 + .405465)/2 = .895880 -> yhat .825160
    #        score (.3 - .825160)^2 = .275794
    # m2, A: other B, 1.0 clipped to .999 -> logit 6.906755 -> yhat .999994
    #        score (.5 - .999994)^2 = .249994
    # m2, B: other A, logit(.5) = 0 -> yhat .5; score (1.0 - .5)^2 = .25 (raw forecast, no clip)
    a = (0.155638 + 0.249994) / 2  # .202816
    b = (0.000214 + 0.25) / 2  # .125107
    c = 0.275794
    # z per question: m1 over A, B, C; m2 over A, B (+-1); a family's week is its mean z
    m1 = _z({"A": 0.155638, "B": 0.000214, "C": 0.275794})
    m2 = _z({"A": 0.249994, "B": 0.25})
    expected = {"A": (m1["A"] + m2["A"]) / 2, "B": (m1["B"] + m2["B"]) / 2, "C": m1["C"]}
    # A (.213 - 1) / 2, B (-1.263 + 1) / 2, C 1.050: lower is better -> A, B, C
    assert [r["forecaster"] for r in report["rows"]] == ["A", "B", "C"]
    for r in report["rows"]:
        assert r["mean_z"] == pytest.approx(expected[r["forecaster"]], abs=1e-4)
        assert r["n_weeks"] == 1
    assert {r["forecaster"]: r["n_questions"] for r in report["rows"]} == {"A": 2, "B": 2, "C": 1}
    weekly = {w["forecaster"]: w["proxy_score"] for w in report["weeks"]}
    assert weekly == pytest.approx({"A": a, "B": b, "C": c}, abs=1e-6)
    assert "PROXY" in report["label"]


def test_baselines_vote_when_asked() -> None:
    report = proxy_ranking(forecasts(*EXAMPLE), replace(LENIENT, proxy_include_baselines=True))
    assert {r["forecaster"] for r in report["rows"]} == {"A", "B", "C", "mkt"}
    weekly = {w["forecaster"]: w["proxy_score"] for w in report["weeks"]}
    # C on m1 now pooled against A, B and mkt: logit(.99) = 4.59512
    yhat = _sigmoid(D * (_logit(0.8) + _logit(0.6) + _logit(0.99)) / 3)
    assert weekly["C"] == pytest.approx((0.3 - yhat) ** 2)


def test_agents_of_one_family_vote_once_and_are_scored_each() -> None:
    rows = [
        {**row("A", "m1", 0.8), "agent_id": "a1"},
        {**row("A", "m1", 0.6), "agent_id": "a2"},
        row("B", "m1", 0.3),
    ]
    report = proxy_ranking(forecasts(*rows), LENIENT)
    weekly = {w["forecaster"]: w["proxy_score"] for w in report["weeks"]}
    # A's vote is its mean logit (logit .8 + logit .6) / 2 = .895880
    yhat_b = _sigmoid(D * (_logit(0.8) + _logit(0.6)) / 2)
    assert weekly["B"] == pytest.approx((0.3 - yhat_b) ** 2)
    # each of A's forecasts is scored against B's pool and averaged
    yhat_a = _sigmoid(D * _logit(0.3))
    assert weekly["A"] == pytest.approx(((0.8 - yhat_a) ** 2 + (0.6 - yhat_a) ** 2) / 2)


def test_z_scores_are_per_question_and_weeks_are_kept_apart() -> None:
    rows = [
        row("A", "m1", 0.8),
        row("B", "m1", 0.6),
        row("C", "m1", 0.3),
        row("A", "m1", 0.2, week=1),
        row("B", "m1", 0.7, week=1),
        row("C", "m1", 0.75, week=1),
    ]
    report = proxy_ranking(forecasts(*rows), replace(LENIENT, proxy_min_voters=3))
    for week in {w["week_start"] for w in report["weeks"]}:
        zs = [w["z"] for w in report["weeks"] if w["week_start"] == week]
        assert sum(zs) == pytest.approx(0.0, abs=1e-9)
        assert sum(z * z for z in zs) / len(zs) == pytest.approx(1.0)
    assert all(r["n_weeks"] == 2 for r in report["rows"])
