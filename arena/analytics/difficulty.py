"""Difficulty-adjusted Brier score (seed 000, ForecastBench).

Forecasters answer different questions, and some weeks are easier than others, so a plain mean
Brier ranks partly on luck of the draw. The fix models the Brier score of forecaster i on
question j as ``b_ij = alpha_i + gamma_j + e_ij`` (two-way fixed effects) and scores each
forecaster on ``b_ij - gamma_j``.

* ``gamma_ols`` is the exact least-squares fit of that model. It is solved on the sparse
  forecaster x question design: the question effects are eliminated (their normal equations are
  diagonal), which leaves a dense forecaster x forecaster system (the Schur complement, a graph
  Laplacian) solved by least squares; with very many forecasters, LSMR on the sparse design.
  The model fixes the effects only up to one constant per connected component of the
  forecaster-question graph; within each component the forecaster effects are centred on 0.
* With market prices, ``gamma_j = w * b_mkt,j + (1 - w) * gamma_ols,j`` where ``b_mkt,j`` is the
  market's own Brier on j (``w`` = ``market_weight``, default 1 as ForecastBench publishes:
  nobody ranks above the market without beating it). Before mixing, ``gamma_ols`` is shifted
  within each component so that its mean over the questions with a price equals the mean market
  Brier there, putting both on one scale. Questions without a price use ``gamma_ols``.
* Rescaling (seed 000, eq. 2): the always-0.5 forecaster has ``b_0j = 0.25`` on every question,
  so its mean unscaled score over the question set Q is ``0.25 - mean_Q(gamma)``; adding back
  ``shift = mean_Q(gamma)`` makes it score exactly 0.25. The adjusted score of forecaster i is
  ``mean_{j in Q_i}(b_ij - gamma_j) + mean_{j in Q}(gamma_j)``. With question weights both means
  are weighted.
* Provisional (seed 000, 5.2, the 50-day waiting period): a forecaster is provisional until
  ``min_days`` (50) have passed since its first forecast *and* it has ``min_questions`` (30)
  scored questions. The arena asks K = 20 panel questions a week, so either can bind.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import lsmr

SCHUR_MAX_FORECASTERS = 4000
DAY_US = 86_400 * 1_000_000


@dataclass(frozen=True, eq=False)
class Cells:
    """Scores on the forecaster x question grid, one per observed cell: cell k is forecaster
    ``forecaster[k]`` on question ``question[k]``, scoring ``score[k]``; the grid has
    ``n_forecasters`` rows and ``n_questions`` columns (some may have no cell)."""

    forecaster: NDArray[np.int64]
    question: NDArray[np.int64]
    score: NDArray[np.float64]
    n_forecasters: int
    n_questions: int


@dataclass(frozen=True, eq=False)
class TwoWayFit:
    """Least-squares effects; NaN for a forecaster or question without observations."""

    alpha: NDArray[np.float64]
    gamma: NDArray[np.float64]
    forecaster_component: NDArray[np.int64]
    question_component: NDArray[np.int64]
    n_components: int
    method: str


def fit_two_way(cells: Cells, method: str = "auto") -> TwoWayFit:
    """Least squares for ``score = alpha[forecaster] + gamma[question] + e``.

    ``method``: ``schur`` (eliminate questions, dense solve over forecasters), ``lsmr`` (iterative
    on the sparse design) or ``auto`` (schur up to 4,000 forecasters).
    """
    forecaster, question, score = cells.forecaster, cells.question, cells.score
    n_forecasters, n_questions = cells.n_forecasters, cells.n_questions
    if method == "auto":
        method = "schur" if n_forecasters <= SCHUR_MAX_FORECASTERS else "lsmr"
    ones = np.ones(len(score))
    counts = sp.csr_matrix((ones, (forecaster, question)), shape=(n_forecasters, n_questions))
    n_f = np.asarray(counts.sum(axis=1)).ravel()
    n_q = np.asarray(counts.sum(axis=0)).ravel()
    if method == "schur":
        inv_q = np.divide(1.0, n_q, out=np.zeros_like(n_q), where=n_q > 0)
        scaled = (counts @ sp.diags(inv_q)).tocsr()
        gram = (scaled @ counts.T).tocsr()
        f_comp, q_comp, n_comp = _components_from_gram(gram, counts, n_f)
        alpha, gamma = _solve_schur(counts, scaled, gram, cells, f_comp)
    elif method == "lsmr":
        f_comp, q_comp, n_comp = _components(counts)
        alpha, gamma = _solve_lsmr(cells, n_f, n_q)
    else:
        raise ValueError(f"unknown method {method!r}")
    alpha, gamma = _centre(alpha, gamma, f_comp, q_comp, n_comp, n_f > 0)
    alpha[n_f == 0] = np.nan
    gamma[n_q == 0] = np.nan
    return TwoWayFit(alpha, gamma, f_comp, q_comp, n_comp, method)


def _solve_schur(
    counts: sp.csr_matrix,
    scaled: sp.csr_matrix,
    gram: sp.csr_matrix,
    cells: Cells,
    f_comp: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Normal equations with gamma eliminated: ``(D_F - N D_Q^-1 N') a = r_F - N D_Q^-1 r_Q``.

    ``scaled`` is ``N D_Q^-1`` and ``gram`` is ``N D_Q^-1 N'``. The reduced matrix is a weighted
    graph Laplacian of the forecasters, singular once per connected component; fixing
    ``alpha = 0`` for the first forecaster of each component (the identifying constraint)
    leaves a positive definite system, solved by Cholesky.
    """
    forecaster, question, score = cells.forecaster, cells.question, cells.score
    n_forecasters, n_questions = counts.shape
    n_f = np.asarray(counts.sum(axis=1)).ravel()
    r_f = np.bincount(forecaster, weights=score, minlength=n_forecasters)
    r_q = np.bincount(question, weights=score, minlength=n_questions)
    reduced = (sp.diags(n_f) - gram).toarray()
    rhs = r_f - scaled @ r_q
    _, reference = np.unique(f_comp, return_index=True)
    free = n_f > 0
    free[reference] = False
    alpha = np.zeros(n_forecasters)
    if free.any():
        alpha[free] = scipy.linalg.solve(
            reduced[np.ix_(free, free)], rhs[free], assume_a="pos", check_finite=False
        )
    n_q = np.asarray(counts.sum(axis=0)).ravel()
    inv_q = np.divide(1.0, n_q, out=np.zeros_like(n_q), where=n_q > 0)
    gamma = inv_q * (r_q - counts.T @ alpha)
    return alpha, gamma


def _solve_lsmr(
    cells: Cells, n_f: NDArray[np.float64], n_q: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """LSMR on the sparse design, columns scaled to unit norm (Jacobi preconditioning)."""
    forecaster, question, score = cells.forecaster, cells.question, cells.score
    n_forecasters = len(n_f)
    rows = np.arange(len(score))
    column_norm = np.sqrt(np.maximum(np.r_[n_f, n_q], 1.0))
    columns = np.r_[forecaster, n_forecasters + question]
    design = sp.csr_matrix(
        (1.0 / column_norm[columns], (np.r_[rows, rows], columns)),
        shape=(len(score), len(column_norm)),
    )
    scaled = lsmr(design, score, atol=1e-14, btol=1e-14, maxiter=20 * design.shape[1])[0]
    solution = scaled / column_norm
    return solution[:n_forecasters].copy(), solution[n_forecasters:].copy()


def _components_from_gram(
    gram: sp.csr_matrix, counts: sp.csr_matrix, n_f: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Components from the forecaster graph (forecasters sharing a question are linked).

    Cheaper than the full forecaster-question graph; a question joins the component of any
    forecaster who answered it. Unobserved forecasters and questions get -1.
    """
    _, labels = connected_components(gram, directed=False)
    observed = n_f > 0
    kept, dense = np.unique(labels[observed], return_inverse=True)
    f_comp = np.full(len(n_f), -1, dtype=np.int64)
    f_comp[observed] = dense.reshape(-1)
    by_question = counts.tocsc()
    asked = np.diff(by_question.indptr) > 0
    q_comp = np.full(counts.shape[1], -1, dtype=np.int64)
    q_comp[asked] = f_comp[by_question.indices[by_question.indptr[:-1][asked]]]
    return f_comp, q_comp, len(kept)


def _components(counts: sp.csr_matrix) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Connected components of the forecaster-question graph, numbered over observed nodes.

    A forecaster or question without observations gets component -1 and is not counted.
    """
    n_f = counts.shape[0]
    graph = sp.bmat([[None, counts], [counts.T, None]], format="csr")
    _, labels = connected_components(graph, directed=False)
    observed = np.diff(graph.indptr) > 0
    kept, dense = np.unique(labels[observed], return_inverse=True)
    out = np.full(len(labels), -1, dtype=np.int64)
    out[observed] = dense.reshape(-1)
    return out[:n_f], out[n_f:], len(kept)


def _centre(
    alpha: NDArray[np.float64],
    gamma: NDArray[np.float64],
    f_comp: NDArray[np.int64],
    q_comp: NDArray[np.int64],
    n_comp: int,
    observed: NDArray[np.bool_],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Shift effects so forecaster effects average 0 within each component."""
    total = np.bincount(f_comp[observed], weights=alpha[observed], minlength=n_comp)
    size = np.bincount(f_comp[observed], minlength=n_comp)
    mean = np.r_[np.divide(total, size, out=np.zeros(n_comp), where=size > 0), 0.0]
    return alpha - mean[f_comp], gamma + mean[q_comp]  # component -1 picks the final 0.0


@dataclass(frozen=True, eq=False)
class DifficultyAdjusted:
    """Per-forecaster standard and adjusted Brier; per-cell adjusted scores for intervals."""

    adjusted: NDArray[np.float64]
    standard: NDArray[np.float64]
    n_questions: NDArray[np.int64]
    weight_sum: NDArray[np.float64]
    gamma: NDArray[np.float64]
    shift: float
    cell_adjusted: NDArray[np.float64]
    fit: TwoWayFit


def difficulty_adjusted(
    cells: Cells,
    *,
    market_brier: NDArray[np.float64] | None = None,
    market_weight: float = 1.0,
    question_weight: NDArray[np.float64] | None = None,
    method: str = "auto",
) -> DifficultyAdjusted:
    """Difficulty-adjusted Brier of every forecaster from one Brier score per cell (the
    cells' ``score``).

    ``market_brier`` is per question (NaN where there is no price); ``question_weight`` per
    question (default 1). Questions without any cell are ignored.
    """
    if not 0.0 <= market_weight <= 1.0:
        raise ValueError("market_weight must be in [0, 1]")
    forecaster, question, brier = cells.forecaster, cells.question, cells.score
    n_forecasters, n_questions = cells.n_forecasters, cells.n_questions
    fit = fit_two_way(cells, method)
    gamma = fit.gamma.copy()
    if market_brier is not None:
        priced = ~np.isnan(market_brier) & ~np.isnan(gamma)
        gamma = _align(gamma, market_brier, priced, fit.question_component, fit.n_components)
        gamma[priced] = market_weight * market_brier[priced] + (1.0 - market_weight) * gamma[priced]
    weights = np.ones(n_questions) if question_weight is None else question_weight
    asked = ~np.isnan(gamma)
    shift = float(np.sum(weights[asked] * gamma[asked]) / np.sum(weights[asked]))
    cell_adjusted = brier - gamma[question] + shift
    cell_weight = weights[question]
    weight_sum = np.bincount(forecaster, weights=cell_weight, minlength=n_forecasters).astype(
        np.float64
    )

    def per_forecaster(values: NDArray[np.float64]) -> NDArray[np.float64]:
        total = np.bincount(forecaster, weights=cell_weight * values, minlength=n_forecasters)
        return np.divide(
            total, weight_sum, out=np.full(n_forecasters, np.nan), where=weight_sum > 0
        )

    return DifficultyAdjusted(
        adjusted=per_forecaster(cell_adjusted),
        standard=per_forecaster(brier),
        n_questions=np.bincount(forecaster, minlength=n_forecasters).astype(np.int64),
        weight_sum=weight_sum,
        gamma=gamma,
        shift=shift,
        cell_adjusted=cell_adjusted,
        fit=fit,
    )


def _align(
    gamma: NDArray[np.float64],
    market_brier: NDArray[np.float64],
    priced: NDArray[np.bool_],
    component: NDArray[np.int64],
    n_components: int,
) -> NDArray[np.float64]:
    """Shift gamma_ols per component so its mean over priced questions equals the market's."""
    gap = np.bincount(
        component[priced], weights=market_brier[priced] - gamma[priced], minlength=n_components
    )
    size = np.bincount(component[priced], minlength=n_components)
    offset = np.divide(gap, size, out=np.zeros(n_components), where=size > 0)
    out = gamma.copy()
    valid = ~np.isnan(gamma)
    out[valid] = gamma[valid] + offset[component[valid]]
    return out


def provisional(
    first_forecast_at: NDArray[np.datetime64],
    n_questions: NDArray[np.int64],
    as_of: np.datetime64,
    *,
    min_days: float = 50.0,
    min_questions: int = 30,
) -> NDArray[np.bool_]:
    """True for forecasters younger than ``min_days`` or with fewer than ``min_questions``."""
    age_days = (as_of.astype("datetime64[us]") - first_forecast_at).astype(np.int64) / DAY_US
    young = np.isnat(first_forecast_at) | (age_days < min_days)
    return young | (n_questions < min_questions)
