"""Difficulty-adjusted Brier: exact least squares, rescaling, market mixing, ranking recovery."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr

from arena.analytics.difficulty import (
    Cells,
    FitScope,
    difficulty_adjusted,
    fit_two_way,
    provisional,
)
from arena.analytics.synthetic_tournament import simulate_tournament


def _random_panel(
    seed: int, n_f: int = 7, n_q: int = 20, density: float = 0.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = rng.random((n_f, n_q)) < density
    mask[np.arange(n_f), rng.integers(0, n_q, n_f)] = True
    mask[rng.integers(0, n_f, n_q), np.arange(n_q)] = True
    f, q = np.nonzero(mask)
    return f.astype(np.int64), q.astype(np.int64), rng.random(len(f))


def _dense_fit(f: np.ndarray, q: np.ndarray, y: np.ndarray, n_f: int, n_q: int) -> np.ndarray:
    """Independent reference: dense dummy design solved by numpy's lstsq; returns fitted values."""
    design = np.zeros((len(y), n_f + n_q))
    design[np.arange(len(y)), f] = 1.0
    design[np.arange(len(y)), n_f + q] = 1.0
    solution = np.linalg.lstsq(design, y, rcond=None)[0]
    return design @ solution


@pytest.mark.parametrize("method", ["schur", "lsmr"])
@pytest.mark.parametrize("seed", range(5))
def test_fit_matches_dense_least_squares(method: str, seed: int) -> None:
    f, q, y = _random_panel(seed)
    fit = fit_two_way(Cells(f, q, y, 7, 20), method)
    np.testing.assert_allclose(fit.alpha[f] + fit.gamma[q], _dense_fit(f, q, y, 7, 20), atol=1e-9)
    assert fit.n_components == 1
    assert abs(np.mean(fit.alpha)) < 1e-12  # forecaster effects centred


def test_fit_recovers_exact_effects() -> None:
    f, q, _ = _random_panel(11)
    alpha = np.array([0.1, -0.05, 0.0, 0.2, -0.1, 0.05, -0.2])
    gamma = np.linspace(0.05, 0.4, 20)
    fit = fit_two_way(Cells(f, q, alpha[f] + gamma[q], 7, 20))
    np.testing.assert_allclose(fit.alpha, alpha - alpha.mean(), atol=1e-12)
    np.testing.assert_allclose(fit.gamma, gamma + alpha.mean(), atol=1e-12)


def test_disconnected_groups_are_components() -> None:
    # forecasters 0,1 share questions 0-2; forecasters 2,3 share questions 3-5; forecaster 4 none
    f = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    q = np.array([0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5])
    y = np.random.default_rng(0).random(len(f))
    fit = fit_two_way(Cells(f, q, y, 5, 7))
    assert fit.n_components == 2  # the idle forecaster and the unasked question are in none
    assert fit.forecaster_component[4] == -1
    assert fit.question_component[6] == -1
    assert fit.forecaster_component[0] == fit.forecaster_component[1]
    assert fit.forecaster_component[0] != fit.forecaster_component[2]
    assert np.isnan(fit.alpha[4])
    assert np.isnan(fit.gamma[6])
    np.testing.assert_allclose(fit.alpha[f] + fit.gamma[q], _dense_fit(f, q, y, 5, 7), atol=1e-9)


def test_always_half_forecaster_scores_a_quarter() -> None:
    f, q, _ = _random_panel(3, n_f=6, n_q=30)
    rng = np.random.default_rng(3)
    outcome = rng.integers(0, 2, 30).astype(float)
    p = rng.random(len(f))
    # forecaster 6 says 0.5 on every question
    f = np.r_[f, np.full(30, 6)]
    q = np.r_[q, np.arange(30)]
    p = np.r_[p, np.full(30, 0.5)]
    brier = (p - outcome[q]) ** 2
    market = rng.random(30)
    weights = rng.uniform(0.2, 1.0, 30)
    for w in (0.0, 0.4, 1.0):
        result = difficulty_adjusted(
            Cells(f, q, brier, 7, 30),
            market_brier=(market - outcome) ** 2,
            market_weight=w,
            question_weight=weights,
        )
        assert result.adjusted[6] == pytest.approx(0.25, abs=1e-12)
        # shift = weighted mean difficulty over all questions (seed 000, eq. 2)
        assert result.shift == pytest.approx(np.sum(weights * result.gamma) / np.sum(weights))


def test_market_weight_one_scores_against_the_market() -> None:
    f, q, _ = _random_panel(5, n_f=4, n_q=12)
    rng = np.random.default_rng(5)
    brier = rng.random(len(f))
    market_brier = rng.random(12)
    result = difficulty_adjusted(
        Cells(f, q, brier, 4, 12), market_brier=market_brier, market_weight=1.0
    )
    np.testing.assert_allclose(result.gamma, market_brier)
    for i in range(4):
        mine = f == i
        expected = np.mean(brier[mine] - market_brier[q[mine]]) + market_brier.mean()
        assert result.adjusted[i] == pytest.approx(expected)


def test_market_mixing_puts_ols_on_the_market_scale() -> None:
    f, q, _ = _random_panel(8, n_f=5, n_q=10)
    rng = np.random.default_rng(8)
    brier = rng.random(len(f))
    market_brier = rng.random(10)
    market_brier[[2, 7]] = np.nan  # two questions without a price
    fit = fit_two_way(Cells(f, q, brier, 5, 10))
    result = difficulty_adjusted(
        Cells(f, q, brier, 5, 10), market_brier=market_brier, market_weight=0.5
    )
    priced = ~np.isnan(market_brier)
    offset = np.mean(market_brier[priced] - fit.gamma[priced])
    aligned = fit.gamma + offset
    expected = np.where(priced, 0.5 * market_brier + 0.5 * aligned, aligned)
    np.testing.assert_allclose(result.gamma, expected)


def test_adjusted_score_matches_an_independent_dense_computation() -> None:
    """numpy's min-norm lstsq fixes the free constant differently; the scores must not care."""
    f, q, _ = _random_panel(9)
    y = np.random.default_rng(9).random(len(f))
    design = np.zeros((len(y), 27))
    design[np.arange(len(y)), f] = 1.0
    design[np.arange(len(y)), 7 + q] = 1.0
    gamma = np.linalg.lstsq(design, y, rcond=None)[0][7:]
    expected = [np.mean(y[f == i] - gamma[q[f == i]]) + gamma.mean() for i in range(7)]
    for method in ("schur", "lsmr"):
        result = difficulty_adjusted(Cells(f, q, y, 7, 20), market_weight=0.0, method=method)
        np.testing.assert_allclose(result.adjusted, expected, atol=1e-9)


def test_provisional_flags() -> None:
    first = np.array(["2025-01-01", "2025-02-10", "2025-01-01", "NaT"], dtype="datetime64[us]")
    n = np.array([40, 40, 10, 40])
    as_of = np.datetime64("2025-03-01", "us")
    assert provisional(first, n, as_of).tolist() == [False, True, True, True]
    assert provisional(first, n, as_of, min_days=10, min_questions=5).tolist() == [
        False,
        False,
        False,
        True,
    ]


def test_adjusted_beats_standard_brier_on_round_based_sampling_with_drift() -> None:
    """Seed 000's realistic scenario: recover the true ranking better than the plain Brier."""
    figures: dict[str, list[float]] = {"standard": [], "adjusted w=0": [], "adjusted w=1": []}
    for seed in range(6):
        sim = simulate_tournament(seed)
        brier = (sim.probability - sim.outcome[sim.question]) ** 2
        market_brier = (sim.market_probability - sim.outcome) ** 2
        present = np.unique(sim.forecaster)
        truth = sim.true_rank_score()[present]
        for label, w in (("adjusted w=0", 0.0), ("adjusted w=1", 1.0)):
            result = difficulty_adjusted(
                Cells(sim.forecaster, sim.question, brier, sim.n_forecasters, sim.n_questions),
                market_brier=market_brier,
                market_weight=w,
            )
            figures[label].append(spearmanr(result.adjusted[present], truth)[0])
        figures["standard"].append(spearmanr(result.standard[present], truth)[0])
    print("\nSpearman correlation with the true ranking (round-based sampling with drift):")
    for label, values in figures.items():
        shown = " ".join(f"{v:.3f}" for v in values)
        print(f"  {label:<13} mean {np.mean(values):.3f}  per seed {shown}")
    assert np.mean(figures["adjusted w=0"]) > np.mean(figures["standard"]) + 0.1
    assert np.mean(figures["adjusted w=1"]) > np.mean(figures["standard"]) + 0.1
    assert np.mean(figures["adjusted w=0"]) > 0.8


def _lstsq_gamma(f: np.ndarray, q: np.ndarray, y: np.ndarray, n_f: int, n_q: int) -> np.ndarray:
    """Question effects of numpy's min-norm dense solve (NaN for a question without a cell)."""
    design = np.zeros((len(y), n_f + n_q))
    design[np.arange(len(y)), f] = 1.0
    design[np.arange(len(y)), n_f + q] = 1.0
    gamma = np.linalg.lstsq(design, y, rcond=None)[0][n_f:]
    gamma[np.bincount(q, minlength=n_q) == 0] = np.nan
    return gamma


def _expected_scores(
    f: np.ndarray, q: np.ndarray, y: np.ndarray, gamma: np.ndarray, n_f: int
) -> np.ndarray:
    """mean_i(b - gamma) + mean over questions with a difficulty (unweighted)."""
    shift = np.nanmean(gamma)
    return np.array([np.mean(y[f == i] - gamma[q[f == i]]) + shift for i in range(n_f)])


def _with_outsiders(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Five forecasters who cover all 20 questions between them, and two more (5 and 6, to be
    left out of the fit) on random halves of them."""
    f, q, _ = _random_panel(seed, n_f=5, n_q=20)
    rng = np.random.default_rng(seed)
    extra_q = [np.flatnonzero(rng.random(20) < 0.5) for _ in range(2)]
    f = np.r_[f, np.full(len(extra_q[0]), 5), np.full(len(extra_q[1]), 6)]
    q = np.r_[q, extra_q[0], extra_q[1]]
    return f.astype(np.int64), q.astype(np.int64), rng.random(len(f))


@pytest.mark.parametrize("method", ["schur", "lsmr"])
@pytest.mark.parametrize("seed", range(3))
def test_fit_exclude_fits_on_the_included_cells_and_scores_everyone(method: str, seed: int) -> None:
    f, q, y = _with_outsiders(seed)
    in_fit = np.array([True] * 5 + [False] * 2)
    inside = in_fit[f]
    gamma = _lstsq_gamma(f[inside], q[inside], y[inside], 7, 20)
    result = difficulty_adjusted(
        Cells(f, q, y, 7, 20), market_weight=0.0, scope=FitScope(in_fit=in_fit), method=method
    )
    np.testing.assert_allclose(result.adjusted, _expected_scores(f, q, y, gamma, 7), atol=1e-9)
    assert result.n_dropped == 0
    # the two outsiders are scored but left nothing in the fit
    assert np.isnan(result.fits[0].alpha[5:]).all()
    everyone = difficulty_adjusted(Cells(f, q, y, 7, 20), market_weight=0.0, method=method)
    assert not np.allclose(everyone.adjusted, result.adjusted)


def test_fit_exclude_with_the_market_mixes_on_the_fit_sample() -> None:
    f, q, y = _with_outsiders(4)
    in_fit = np.array([True] * 5 + [False] * 2)
    inside = in_fit[f]
    market_brier = np.random.default_rng(4).random(20)
    market_brier[[3, 11]] = np.nan
    ols = _lstsq_gamma(f[inside], q[inside], y[inside], 7, 20)
    priced = ~np.isnan(market_brier)
    aligned = ols + np.mean(market_brier[priced] - ols[priced])
    gamma = np.where(priced, 0.3 * market_brier + 0.7 * aligned, aligned)
    result = difficulty_adjusted(
        Cells(f, q, y, 7, 20),
        market_brier=market_brier,
        market_weight=0.3,
        scope=FitScope(in_fit=in_fit),
    )
    np.testing.assert_allclose(result.gamma, gamma, atol=1e-9)
    np.testing.assert_allclose(result.adjusted, _expected_scores(f, q, y, gamma, 7), atol=1e-9)


def _typed_panel(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Seven forecasters on 24 questions of two types (12 each), every type's cells connected."""
    f, q, y = _random_panel(seed, n_f=7, n_q=24, density=0.6)
    question_type = np.repeat([0, 1], 12)[np.random.default_rng(seed).permutation(24)]
    return f, q, y, question_type.astype(np.int64)


@pytest.mark.parametrize("seed", range(3))
def test_fit_by_type_equals_separate_fits_per_type(seed: int) -> None:
    f, q, y, question_type = _typed_panel(seed)
    market_brier = np.random.default_rng(seed + 100).random(24)
    market_brier[:3] = np.nan
    priced = ~np.isnan(market_brier)
    gamma = np.full(24, np.nan)
    for t in (0, 1):
        mine = question_type[q] == t
        ols = _lstsq_gamma(f[mine], q[mine], y[mine], 7, 24)
        own = question_type == t
        offset = np.mean(market_brier[own & priced] - ols[own & priced])
        aligned = ols + offset
        gamma[own] = np.where(priced, 0.5 * market_brier + 0.5 * aligned, aligned)[own]
    for method in ("schur", "lsmr"):
        result = difficulty_adjusted(
            Cells(f, q, y, 7, 24),
            market_brier=market_brier,
            market_weight=0.5,
            scope=FitScope(question_type=question_type),
            method=method,
        )
        assert len(result.fits) == 2
        assert result.n_components == 2
        np.testing.assert_allclose(result.gamma, gamma, atol=1e-9)
        np.testing.assert_allclose(result.shift, gamma.mean(), atol=1e-12)
        np.testing.assert_allclose(result.adjusted, _expected_scores(f, q, y, gamma, 7), atol=1e-9)


def test_one_type_is_the_plain_fit() -> None:
    f, q, y, _ = _typed_panel(1)
    market_brier = np.random.default_rng(1).random(24)
    plain = difficulty_adjusted(Cells(f, q, y, 7, 24), market_brier=market_brier, market_weight=0.5)
    typed = difficulty_adjusted(
        Cells(f, q, y, 7, 24),
        market_brier=market_brier,
        market_weight=0.5,
        scope=FitScope(np.ones(7, dtype=bool), np.zeros(24, dtype=np.int64)),
    )
    np.testing.assert_array_equal(typed.adjusted, plain.adjusted)
    np.testing.assert_array_equal(typed.cell_adjusted, plain.cell_adjusted)


def test_questions_without_a_difficulty_are_dropped_and_counted() -> None:
    # forecasters 0, 1 (fitted) answer questions 0-5; forecaster 2 (left out) answers 4-7
    f = np.array([0] * 6 + [1] * 6 + [2] * 4)
    q = np.r_[np.arange(6), np.arange(6), np.arange(4, 8)]
    y = np.random.default_rng(2).random(len(f))
    in_fit = np.array([True, True, False])
    market_brier = np.full(8, np.nan)
    market_brier[6] = 0.3  # question 6 has a price, question 7 none
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        at_one = difficulty_adjusted(
            Cells(f, q, y, 3, 8),
            market_brier=market_brier,
            market_weight=1.0,
            scope=FitScope(in_fit),
        )
        below_one = difficulty_adjusted(
            Cells(f, q, y, 3, 8),
            market_brier=market_brier,
            market_weight=0.5,
            scope=FitScope(in_fit),
        )
    # at weight 1 the price alone sets question 6's difficulty; below 1 it needs the fit too
    assert at_one.dropped.tolist() == [7] and at_one.n_dropped == 1
    assert at_one.gamma[6] == pytest.approx(0.3)
    assert below_one.dropped.tolist() == [6, 7] and below_one.n_dropped == 2
    for result, kept in ((at_one, [4, 5, 6]), (below_one, [4, 5])):
        mine = (f == 2) & np.isin(q, kept)
        assert result.n_questions[2] == len(kept)
        assert result.standard[2] == pytest.approx(np.mean(y[mine]))
        expected = np.mean(y[mine] - result.gamma[q[mine]]) + result.shift
        assert result.adjusted[2] == pytest.approx(expected)
        assert np.isnan(result.cell_adjusted[~result.scored]).all()
        assert result.scored.tolist() == (~np.isin(q, result.dropped)).tolist()


def test_nothing_left_to_score_gives_no_warning() -> None:
    f, q, y = np.array([0, 0, 1]), np.array([0, 1, 1]), np.array([0.1, 0.2, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        none_fitted = difficulty_adjusted(
            Cells(f, q, y, 2, 2), market_weight=0.0, scope=FitScope(np.zeros(2, dtype=bool))
        )
        no_cells = difficulty_adjusted(Cells(f[:0], q[:0], y[:0], 2, 2))
    assert none_fitted.n_dropped == 2 and none_fitted.fits == ()
    assert np.isnan(none_fitted.shift) and np.isnan(none_fitted.adjusted).all()
    assert none_fitted.n_questions.tolist() == [0, 0]
    assert no_cells.n_dropped == 0 and np.isnan(no_cells.shift)
