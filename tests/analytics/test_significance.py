"""Weighted t-test and weighted bootstrap against hand-computed examples (seed 001)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from arena.analytics import significance
from arena.analytics.significance import (
    head_to_head_scores,
    peer_scores,
    weighted_bootstrap_interval,
    weighted_mean,
    weighted_t_interval,
)


def test_weighted_t_interval_by_hand() -> None:
    x = np.array([1.0, 2.0, 3.0, 6.0])
    w = np.array([1.0, 1.0, 0.5, 0.5])
    # W = 3; sum(w x) = 1 + 2 + 1.5 + 3 = 7.5; mean = 2.5
    # deviations -1.5, -0.5, 0.5, 3.5; w * dev^2 = 2.25 + 0.25 + 0.125 + 6.125 = 8.75
    # sd = sqrt(8.75 / (W - 1)) = sqrt(4.375); se = sd / sqrt(W) = sqrt(4.375 / 3)
    # df = W - 1 = 2; for 2 degrees of freedom the t quantile has a closed form:
    # t_p = (2p - 1) / sqrt(2 p (1 - p)) -> t_0.975 = 0.95 / sqrt(0.04875) = 4.302653
    se = math.sqrt(4.375 / 3)
    t_crit = 0.95 / math.sqrt(0.04875)
    # t = 2.5 / se; with 2 df, P(T > t) = 1/2 - t / (2 sqrt(2 + t^2))
    t_stat = 2.5 / se
    p_value = 2 * (0.5 - t_stat / (2 * math.sqrt(2 + t_stat**2)))
    result = weighted_t_interval(x, w)
    assert result.mean == pytest.approx(2.5)
    assert result.sd == pytest.approx(math.sqrt(4.375))
    assert result.se == pytest.approx(se)
    assert result.df == pytest.approx(2.0)
    assert t_crit == pytest.approx(4.302653, abs=1e-6)
    assert result.low == pytest.approx(2.5 - t_crit * se)  # -2.695947
    assert result.high == pytest.approx(2.5 + t_crit * se)  # 7.695947
    assert result.low == pytest.approx(-2.695947, abs=1e-6)
    assert result.t_stat == pytest.approx(t_stat)
    assert result.p_value == pytest.approx(p_value)  # 0.174278
    assert result.p_value == pytest.approx(0.174278, abs=1e-6)


def test_unit_weights_give_the_ordinary_t_test() -> None:
    x = np.random.default_rng(4).normal(0.3, 1.0, 25)
    result = weighted_t_interval(x)
    reference = stats.ttest_1samp(x, 0.0)
    low, high = reference.confidence_interval(0.95)
    assert result.low == pytest.approx(low)
    assert result.high == pytest.approx(high)
    assert result.p_value == pytest.approx(reference.pvalue)


def test_t_interval_needs_more_than_one_weighted_question() -> None:
    result = weighted_t_interval(np.array([1.0, 2.0]), np.array([0.5, 0.5]))
    assert result.mean == pytest.approx(1.5)
    assert math.isnan(result.low)
    assert math.isnan(result.high)


def test_weighted_bootstrap_by_hand() -> None:
    x = np.array([0.0, 4.0])
    w = np.array([3.0, 1.0])
    # W = 4: each resample draws 4 questions, the second with probability 1/4. With K draws of
    # the second, the resample mean is 4K/4 = K, K ~ Binomial(4, 1/4):
    # P(K=0) = 81/256 = .3164, P(1) = 108/256 = .4219, P(2) = 54/256 = .2109,
    # P(3) = 12/256 = .0469, P(4) = 1/256 = .0039; CDF .3164 .7383 .9492 .9961 1.
    # 2.5th percentile: K = 0; 97.5th: the CDF passes .975 at K = 3.
    # Mean of the resampled means: E[K] = 1 = the weighted mean (0*3 + 4*1) / 4.
    # Share of resamples with a mean > 0: 1 - 81/256 = 175/256 = .6836.
    result = weighted_bootstrap_interval(x, w, resamples=40_000, seed=7)
    assert result.draws == 4
    assert result.low == 0.0
    assert result.high == 3.0
    assert result.mean == pytest.approx(1.0, abs=0.02)
    assert result.p_positive == pytest.approx(175 / 256, abs=0.01)
    # the weighted t interval on the same data: mean 1, sd = sqrt((3*1 + 1*9) / 3) = 2,
    # se = 2 / sqrt(4) = 1, df = 3, t_0.975,3 = 3.182446: [-2.182, 4.182], wider than the
    # bootstrap, as seed 001 found for small samples
    t = weighted_t_interval(x, w)
    assert t.low == pytest.approx(1 - 3.182446, abs=1e-5)
    assert t.high == pytest.approx(1 + 3.182446, abs=1e-5)
    assert t.high - t.low > result.high - result.low


def test_bootstrap_is_seeded() -> None:
    x = np.random.default_rng(1).normal(size=50)
    one = weighted_bootstrap_interval(x, resamples=2000, seed=3)
    two = weighted_bootstrap_interval(x, resamples=2000, seed=3)
    assert one == two


def test_t_test_and_bootstrap_agree_on_a_large_sample() -> None:
    rng = np.random.default_rng(12)
    x = rng.normal(2.0, 10.0, 600)
    w = rng.choice([1.0, 0.5, 1 / 3], 600)
    t = weighted_t_interval(x, w)
    boot = weighted_bootstrap_interval(x, w, resamples=10_000, seed=1)
    width = t.high - t.low
    assert boot.mean == pytest.approx(t.mean, abs=0.05 * width)
    assert boot.low == pytest.approx(t.low, abs=0.1 * width)
    assert boot.high == pytest.approx(t.high, abs=0.1 * width)


def test_bootstrap_in_chunks_equals_bootstrap_in_one_go(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.random.default_rng(2).normal(size=500)
    w = np.random.default_rng(3).uniform(0.1, 1.0, size=500)
    whole = weighted_bootstrap_interval(x, w, resamples=30, seed=0)
    monkeypatch.setattr(significance, "MAX_BOOTSTRAP_CELLS", 1000)  # 4 resamples per chunk
    chunked = weighted_bootstrap_interval(x, w, resamples=30, seed=0)
    assert chunked == whole


def test_cluster_bootstrap_in_chunks_equals_bootstrap_in_one_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each resample's clusters are summed on its own row, so the chunk size (set for memory,
    :data:`~arena.analytics.significance.MAX_BOOTSTRAP_CELLS`) changes no figure."""
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=500), rng.uniform(0.1, 1.0, size=500)
    clusters = rng.integers(0, 37, size=500).astype(str)
    whole = weighted_bootstrap_interval(x, w, resamples=300, seed=5, clusters=clusters)
    monkeypatch.setattr(significance, "MAX_BOOTSTRAP_CELLS", 37 * 7)  # 7 resamples per chunk
    chunked = weighted_bootstrap_interval(x, w, resamples=300, seed=5, clusters=clusters)
    assert chunked == whole


@given(
    st.lists(st.floats(-50, 50), min_size=2, max_size=30),
    st.floats(0.1, 5.0),
)
def test_scaling_all_weights_keeps_the_mean(values: list[float], scale: float) -> None:
    x = np.array(values)
    w = np.linspace(0.2, 1.0, len(values))
    assert weighted_mean(x, w) == pytest.approx(weighted_mean(x, scale * w), abs=1e-9)


def test_head_to_head_scores() -> None:
    # A says 0.8, B says 0.6 and it happens: 100 * ln(0.8 / 0.6) = 28.77
    # on a NO: 100 * ln(0.2 / 0.4) = -69.31
    log_a = np.log(np.array([0.8, 0.2]))
    log_b = np.log(np.array([0.6, 0.4]))
    np.testing.assert_allclose(head_to_head_scores(log_a, log_b), [28.7682, -69.3147], atol=1e-4)
    # Brier variant: 100 * (brier_B - brier_A) = 100 * (0.16 - 0.04)
    assert head_to_head_scores(np.array([0.04]), np.array([0.16]), "brier")[0] == pytest.approx(12)
    with pytest.raises(ValueError, match="unknown"):
        head_to_head_scores(log_a, log_b, "hinge")


def test_peer_scores_sum_to_zero_and_match_the_two_forecaster_case() -> None:
    question = np.array([0, 0, 0, 1, 1, 2])
    logs = np.log(np.array([0.9, 0.6, 0.3, 0.8, 0.6, 0.5]))
    peer = peer_scores(question, logs)
    assert peer[:3].sum() == pytest.approx(0.0, abs=1e-9)
    # first forecaster on question 0: 100 * (ln .9 - (ln .6 + ln .3) / 2)
    assert peer[0] == pytest.approx(100 * (math.log(0.9) - (math.log(0.6) + math.log(0.3)) / 2))
    # with two forecasters, the peer score is the head-to-head score
    assert peer[3] == pytest.approx(head_to_head_scores(logs[3:4], logs[4:5])[0])
    assert math.isnan(peer[5])  # alone on its question


def test_cluster_codes_of_object_labels_equal_the_sorted_text_codes_they_replaced() -> None:
    """Object labels (texts, None, numbers, non-ASCII) get the dense codes, in sorted text
    order, that ``np.unique`` of their fixed-width texts gave."""
    labels = np.array(
        ["m10", None, "m2", 7, "é", "m10", "Z", "", 7.0, "m2", None, "z", "7"], dtype=object
    )
    texts = np.array(["" if label is None else str(label) for label in labels])
    _, expected = np.unique(texts, return_inverse=True)
    codes, n = significance.cluster_codes(labels, len(labels))
    assert codes.tolist() == expected.reshape(-1).tolist()
    assert n == int(expected.max()) + 1
    assert significance.cluster_codes(np.array([], dtype=object), 0)[1] == 0
