"""Issue 15, findings 1-3: bad input is an error, degenerate data is never certain, the
bootstrap ignores row order, and clustered intervals match their formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from arena.analytics.calibration import calibrate
from arena.analytics.significance import (
    sign_test,
    weighted_bootstrap_interval,
    weighted_mean,
    weighted_t_interval,
)

X = np.array([1.0, -2.0, 3.0, 0.5, 4.0])


@pytest.mark.parametrize(
    ("values", "weights", "message"),
    [
        ([1.0, float("nan"), 2.0], None, "values: row 1"),
        ([1.0, float("inf"), 2.0], None, "values: row 1"),
        ([1.0, 2.0, 3.0], [1.0, float("nan"), 1.0], "weights: row 1"),
        ([1.0, 2.0, 3.0], [1.0, 1.0, float("inf")], "weights: row 2"),
        ([1.0, 2.0, 3.0], [1.0, -0.5, 1.0], "weights: row 1"),
        ([1.0, 2.0, 3.0], [1.0, 1.0], "weights: 2 weights for 3 values"),
    ],
)
def test_bad_values_or_weights_raise_instead_of_a_verdict(
    values: list[float], weights: list[float] | None, message: str
) -> None:
    for function in (weighted_t_interval, weighted_bootstrap_interval, weighted_mean, sign_test):
        with pytest.raises(ValueError, match=message):
            function(values, weights)  # type: ignore[operator]


@pytest.mark.parametrize("resamples", [0, -5, 1.5, True])
def test_resamples_must_be_a_whole_number_of_at_least_one(resamples: object) -> None:
    with pytest.raises(ValueError, match="resamples"):
        weighted_bootstrap_interval(X, resamples=resamples)  # type: ignore[arg-type]


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.1, float("nan")])
def test_confidence_must_lie_strictly_between_0_and_1(confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        weighted_t_interval(X, confidence=confidence)
    with pytest.raises(ValueError, match="confidence"):
        weighted_bootstrap_interval(X, confidence=confidence, resamples=10)


@pytest.mark.parametrize(
    ("probability", "outcome", "message"),
    [
        ([0.2, -0.1, 0.5], [1, 0, 1], "probability: row 1"),
        ([0.2, float("nan"), 0.5], [1, 0, 1], "probability: row 1"),
        ([0.2, 0.4, 1.2], [1, 0, 1], "probability: row 2"),
        ([0.2, 0.4, 0.5], [1, 0.5, 1], "outcome: row 1"),
        ([0.2, 0.4, 0.5], [1, 0], "outcome: 2 outcomes"),
    ],
)
def test_calibrate_rejects_probabilities_outside_the_unit_interval(
    probability: list[float], outcome: list[float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        calibrate(probability, outcome)


def test_zero_variance_is_insufficient_not_certain() -> None:
    # ten questions that all resolve YES, A at 0.9 and B at 0.8: the same score every time
    values = np.full(10, 100 * (math.log(0.9) - math.log(0.8)))
    for clusters in (None, np.arange(10)):
        t = weighted_t_interval(values, clusters=clusters)
        boot = weighted_bootstrap_interval(values, resamples=200, clusters=clusters)
        assert t.status == boot.status == "insufficient"
        assert math.isnan(t.p_value) and math.isnan(t.low) and math.isnan(t.high)
        assert math.isnan(boot.low) and math.isnan(boot.p_positive)
    sign = sign_test(values)
    assert (sign.n_positive, sign.n_negative) == (10, 0)
    assert sign.p_value == pytest.approx(2 / 2**10)  # exact, and never 0


def test_one_question_gives_no_interval_from_either_method() -> None:
    for clusters in (None, ["m1"]):
        t = weighted_t_interval([3.0], clusters=clusters)
        boot = weighted_bootstrap_interval([3.0], resamples=100, clusters=clusters)
        assert t.status == boot.status == "insufficient"
        assert math.isnan(boot.low) and math.isnan(boot.high) and math.isnan(boot.p_positive)


def test_one_cluster_gives_no_interval_however_many_rows() -> None:
    t = weighted_t_interval(X, clusters=["g"] * len(X))
    boot = weighted_bootstrap_interval(X, resamples=100, clusters=["g"] * len(X))
    assert t.status == boot.status == "insufficient"


def test_t_and_bootstrap_agree_on_when_an_interval_exists() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 5))
        values = rng.choice([0.0, 1.0, 2.0], n)
        weights = rng.choice([0.0, 0.5, 1.0, 2.0], n)
        clusters = rng.choice(["a", "b"], n) if rng.random() < 0.5 else None
        if weights.sum() == 0:
            continue
        t = weighted_t_interval(values, weights, clusters=clusters)
        boot = weighted_bootstrap_interval(values, weights, resamples=20, clusters=clusters)
        assert t.status == boot.status
        assert math.isnan(t.low) == math.isnan(boot.low)
        if t.status == "ok":
            assert t.high > t.low and boot.high >= boot.low


@pytest.mark.parametrize("clustered", [False, True])
def test_bootstrap_does_not_depend_on_row_order(clustered: bool) -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(15, 40, 60)
    weights = rng.choice([1.0, 0.5, 1 / 3, 0.7], 60)
    clusters = rng.integers(0, 20, 60).astype(str) if clustered else None
    first = weighted_bootstrap_interval(values, weights, resamples=500, seed=1, clusters=clusters)
    order = rng.permutation(60)
    shuffled = weighted_bootstrap_interval(
        values[order],
        weights[order],
        resamples=500,
        seed=1,
        clusters=None if clusters is None else clusters[order],
    )
    assert (first.low, first.high, first.p_positive) == pytest.approx(
        (shuffled.low, shuffled.high, shuffled.p_positive), abs=1e-12
    )


def test_cluster_robust_t_by_hand() -> None:
    x = np.array([1.0, 3.0, 2.0, 6.0, 0.0])
    w = np.array([1.0, 1.0, 0.5, 0.5, 1.0])
    g = np.array(["a", "a", "b", "b", "c"])
    # W = 4, m = (1 + 3 + 1 + 3 + 0) / 4 = 2; u_a = -1 + 1 = 0, u_b = 0 + 2 = 2, u_c = -2
    # se^2 = 3/2 * (0 + 4 + 4) / 16 = 0.75; df = 2
    t = weighted_t_interval(x, w, clusters=g)
    assert t.mean == pytest.approx(2.0)
    assert t.se == pytest.approx(math.sqrt(0.75))
    assert t.df == 2 and t.n_clusters == 3 and t.clustered
    critical = stats.t.ppf(0.975, 2)
    assert (t.low, t.high) == pytest.approx((2 - critical * t.se, 2 + critical * t.se))


def test_singleton_clusters_with_unit_weights_are_the_ordinary_t_test() -> None:
    x = np.random.default_rng(4).normal(0.3, 1.0, 25)
    t = weighted_t_interval(x, clusters=np.arange(25))
    low, high = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert (t.low, t.high) == pytest.approx((low, high))


def test_cluster_bootstrap_resamples_whole_clusters() -> None:
    # two clusters of equal weight, means 0 and 4: a resample is (0, 0), (0, 4) or (4, 4)
    x = np.array([0.0, 0.0, 4.0, 4.0])
    result = weighted_bootstrap_interval(
        x, resamples=4000, seed=2, clusters=["a", "a", "b", "b"], confidence=0.5
    )
    assert result.draws == 2
    assert result.low < 2.0 <= result.high
    assert result.p_positive == pytest.approx(0.75, abs=0.03)


def test_cluster_bootstrap_is_stretched_like_the_cluster_t() -> None:
    # many clusters: the percentile interval, stretched by sqrt(G/(G-1)) t/z, is close to t
    rng = np.random.default_rng(8)
    x = rng.normal(1.0, 2.0, 400)
    clusters = np.repeat(np.arange(40), 10)
    x = x + np.repeat(rng.normal(0, 2.0, 40), 10)  # a shared part per cluster
    t = weighted_t_interval(x, clusters=clusters)
    boot = weighted_bootstrap_interval(x, resamples=20_000, seed=4, clusters=clusters)
    assert boot.high - boot.low == pytest.approx(t.high - t.low, rel=0.08)
