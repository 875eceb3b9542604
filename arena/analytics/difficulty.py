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
  Market weight 1 is ForecastBench's tournament rule; market weight 0 is pure two-way fixed
  effects, as ForecastBench's dataset-question leaderboard.
* The fit sample (:class:`FitScope` ``in_fit``): forecasters left out of it (ForecastBench
  leaves out its baselines and ensembles) add no cell to the least-squares fit but are scored
  against the difficulties it gives, like everyone else.
* Per question type (:class:`FitScope` ``question_type``): each type's cells are fitted on
  their own, and the market aligned and mixed within each type; the rescaling below stays one
  mean over all questions.
* A question without a difficulty (answered only outside the fit sample, and no price to set
  it at market weight 1) is dropped from scoring and counted (``dropped``), never fitted
  silently.
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
class FitScope:
    """What the two-way fit runs on: ``in_fit`` (per forecaster; None: all) is the fit
    sample, ``question_type`` (per question, integer codes; None: one type) asks for one fit
    per type."""

    in_fit: NDArray[np.bool_] | None = None
    question_type: NDArray[np.int64] | None = None


@dataclass(frozen=True, eq=False)
class DifficultyAdjusted:
    """Per-forecaster standard and adjusted Brier; per-cell adjusted scores for intervals.

    ``scored`` marks the cells scored: those on a question with a difficulty. The questions
    answered but without one are ``dropped`` (their ids); their cells count nowhere (NaN in
    ``cell_adjusted``). ``fits`` holds one two-way fit per question type (none when no cell is
    in the fit sample); ``question_component`` numbers the components of all of them together
    (-1: not fitted), ``forecaster_component`` is the one component of the questions a
    forecaster is scored on (-1 when they lie in none or in several).
    """

    adjusted: NDArray[np.float64]
    standard: NDArray[np.float64]
    n_questions: NDArray[np.int64]
    weight_sum: NDArray[np.float64]
    gamma: NDArray[np.float64]
    shift: float
    cell_adjusted: NDArray[np.float64]
    scored: NDArray[np.bool_]
    dropped: NDArray[np.int64]
    fits: tuple[TwoWayFit, ...]
    question_component: NDArray[np.int64]
    forecaster_component: NDArray[np.int64]
    n_components: int

    @property
    def n_dropped(self) -> int:
        """How many answered questions were left unscored for want of a difficulty."""
        return len(self.dropped)


def difficulty_adjusted(
    cells: Cells,
    *,
    market_brier: NDArray[np.float64] | None = None,
    market_weight: float = 1.0,
    question_weight: NDArray[np.float64] | None = None,
    method: str = "auto",
    scope: FitScope | None = None,
) -> DifficultyAdjusted:
    """Difficulty-adjusted Brier of every forecaster from one Brier score per cell (the
    cells' ``score``).

    ``market_brier`` is per question (NaN where there is no price); ``question_weight`` per
    question (default 1). Questions without any cell are ignored. ``market_weight`` 1 is
    ForecastBench's tournament rule (difficulty = the market's Brier wherever there is a price);
    0 is pure two-way fixed effects, as its dataset-question leaderboard.

    ``scope`` (:class:`FitScope`; default: every cell, one fit): with ``in_fit``, only the fit
    sample's cells enter the least-squares fit, and every forecaster is scored against the
    difficulties that fit gives (ForecastBench fits without its baselines and ensembles); with
    ``question_type``, each type's cells are fitted on their own, the market aligned and mixed
    per type; the rescaling shift stays one mean over all questions.

    A question gets no difficulty when none of its cells is in the fit and the market cannot
    set it alone (no price, or ``market_weight`` below 1); it is dropped and counted, never
    scored against a made-up difficulty.
    """
    if not 0.0 <= market_weight <= 1.0:
        raise ValueError("market_weight must be in [0, 1]")
    forecaster, question, brier = cells.forecaster, cells.question, cells.score
    n_forecasters, n_questions = cells.n_forecasters, cells.n_questions
    fits, ols, component, n_components = _fit_by_type(cells, method, scope or FitScope())
    gamma = ols.copy()
    answered = np.bincount(question, minlength=n_questions) > 0
    if market_brier is not None:
        priced = ~np.isnan(market_brier) & answered
        fitted = priced & ~np.isnan(ols)
        gamma = _align(gamma, market_brier, fitted, component, n_components)
        gamma[fitted] = market_weight * market_brier[fitted] + (1.0 - market_weight) * gamma[fitted]
        if market_weight == 1.0:
            gamma[priced] = market_brier[priced]
    weights = np.ones(n_questions) if question_weight is None else question_weight
    has_gamma = answered & ~np.isnan(gamma)
    total_weight = float(np.sum(weights[has_gamma]))
    shift = (
        float(np.sum(weights[has_gamma] * gamma[has_gamma]) / total_weight)
        if has_gamma.any()
        else float("nan")
    )
    scored = has_gamma[question]
    cell_adjusted = np.where(scored, brier - gamma[question] + shift, np.nan)
    cell_weight = np.where(scored, weights[question], 0.0)
    weight_sum = np.bincount(forecaster, weights=cell_weight, minlength=n_forecasters).astype(
        np.float64
    )

    def per_forecaster(values: NDArray[np.float64]) -> NDArray[np.float64]:
        total = np.bincount(
            forecaster[scored],
            weights=cell_weight[scored] * values[scored],
            minlength=n_forecasters,
        )
        return np.divide(
            total, weight_sum, out=np.full(n_forecasters, np.nan), where=weight_sum > 0
        )

    return DifficultyAdjusted(
        adjusted=per_forecaster(cell_adjusted),
        standard=per_forecaster(brier),
        n_questions=np.bincount(forecaster[scored], minlength=n_forecasters).astype(np.int64),
        weight_sum=weight_sum,
        gamma=gamma,
        shift=shift,
        cell_adjusted=cell_adjusted,
        scored=scored,
        dropped=np.flatnonzero(answered & ~has_gamma).astype(np.int64),
        fits=fits,
        question_component=component,
        forecaster_component=_scored_component(
            forecaster[scored], component[question[scored]], n_forecasters
        ),
        n_components=n_components,
    )


def _fit_by_type(
    cells: Cells, method: str, scope: FitScope
) -> tuple[tuple[TwoWayFit, ...], NDArray[np.float64], NDArray[np.int64], int]:
    """The two-way fit of the fit sample's cells, one per question type: the fits, and over all
    questions the fitted difficulty (NaN: not fitted) and component (numbered across types)."""
    n_questions = cells.n_questions
    in_fit, question_type = scope.in_fit, scope.question_type
    chosen = np.ones(len(cells.score), dtype=bool) if in_fit is None else in_fit[cells.forecaster]
    types = np.zeros(n_questions, dtype=np.int64) if question_type is None else question_type
    gamma = np.full(n_questions, np.nan)
    component = np.full(n_questions, -1, dtype=np.int64)
    fits: list[TwoWayFit] = []
    n_components = 0
    for kind in np.unique(types[cells.question[chosen]]):
        mine = chosen & (types[cells.question] == kind)
        fit = fit_two_way(
            Cells(
                cells.forecaster[mine],
                cells.question[mine],
                cells.score[mine],
                cells.n_forecasters,
                n_questions,
            ),
            method,
        )
        own = fit.question_component >= 0
        gamma[own] = fit.gamma[own]
        component[own] = fit.question_component[own] + n_components
        n_components += fit.n_components
        fits.append(fit)
    return tuple(fits), gamma, component, n_components


def _scored_component(
    forecaster: NDArray[np.int64], component: NDArray[np.int64], n_forecasters: int
) -> NDArray[np.int64]:
    """Per forecaster, the one fit component of its scored cells' questions (those the market
    alone set, component -1, aside); -1 when there is none or more than one."""
    fitted = component >= 0
    low = np.full(n_forecasters, np.iinfo(np.int64).max)
    high = np.full(n_forecasters, -1, dtype=np.int64)
    np.minimum.at(low, forecaster[fitted], component[fitted])
    np.maximum.at(high, forecaster[fitted], component[fitted])
    return np.where(low == high, high, -1)


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
