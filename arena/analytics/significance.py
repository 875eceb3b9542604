"""Peer and head-to-head scores, and how sure we can be of them (seed 001, Metaculus).

* **Log score** of a forecast: natural log of the probability it gave to what happened, with
  probabilities clipped to [0.001, 0.999] (Metaculus' own bounds).
* **Peer score** of forecaster i on a question answered by N >= 2 forecasters:
  ``100 * (log_i - mean of the others' log scores)`` (Metaculus' peer score, which is
  ``100 * N/(N-1) * ln(p_i / geometric mean of all)``). Peer scores sum to 0 on a question.
* **Head-to-head** of A against B: the peer score A would get if A and B were the only two
  forecasters, on the questions both answered: ``100 * (log_A - log_B)``. Positive means A was
  more accurate. A Brier variant, ``100 * (brier_B - brier_A)``, is available for comparison.
* **Weighted t interval**: weighted mean ``m = sum(w x) / W`` with ``W = sum(w)``; weighted
  standard deviation ``s = sqrt(sum(w (x - m)^2) / (W - 1))`` (frequency-weight convention, so
  unit weights give the ordinary t-test); ``se = s / sqrt(W)``; ``df = W - 1``;
  interval ``m +/- t_{df, 0.975} * se``. Needs ``W > 1``.
* **Weighted bootstrap**: each resample draws ``round(W)`` questions with replacement, each with
  probability ``w / W``, and takes their plain mean; the interval is the 2.5 and 97.5
  percentiles of those means. Seeded, so reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

MAX_BOOTSTRAP_CELLS = 4_000_000


@dataclass(frozen=True)
class TInterval:
    """Weighted t-test of ``mean == 0`` and its confidence interval (NaN when W <= 1)."""

    mean: float
    sd: float
    se: float
    df: float
    t_stat: float
    p_value: float
    low: float
    high: float
    n: int
    weight_sum: float
    confidence: float


@dataclass(frozen=True)
class BootstrapInterval:
    """Percentile interval of resampled weighted means; ``p_positive``: share of means > 0."""

    mean: float
    low: float
    high: float
    p_positive: float
    draws: int
    resamples: int
    seed: int
    confidence: float


def weighted_mean(values: NDArray[np.float64], weights: NDArray[np.float64] | None = None) -> float:
    """``sum(w x) / sum(w)`` (NaN for no weight)."""
    w = np.ones_like(values) if weights is None else np.asarray(weights, dtype=np.float64)
    total = float(np.sum(w))
    return float(np.sum(w * values) / total) if total > 0 else float("nan")


def weighted_t_interval(
    values: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
    confidence: float = 0.95,
) -> TInterval:
    """Two-sided weighted t interval for the mean, as seed 001 describes (module docstring)."""
    x = np.asarray(values, dtype=np.float64)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=np.float64)
    total = float(np.sum(w))
    mean = weighted_mean(x, w)
    nan = float("nan")
    if total <= 1.0:
        return TInterval(mean, nan, nan, nan, nan, nan, nan, nan, len(x), total, confidence)
    sd = float(np.sqrt(np.sum(w * (x - mean) ** 2) / (total - 1.0)))
    se = sd / float(np.sqrt(total))
    df = total - 1.0
    critical = float(stats.t.ppf(0.5 + confidence / 2.0, df))
    if se > 0:
        t_stat = mean / se
        p_value = float(2.0 * stats.t.sf(abs(t_stat), df))
    else:
        t_stat = nan if mean == 0 else float(np.sign(mean) * np.inf)
        p_value = 1.0 if mean == 0 else 0.0
    return TInterval(
        mean,
        sd,
        se,
        df,
        t_stat,
        p_value,
        mean - critical * se,
        mean + critical * se,
        len(x),
        total,
        confidence,
    )


def weighted_bootstrap_interval(
    values: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> BootstrapInterval:
    """Weighted bootstrap percentile interval (module docstring); NaN without data."""
    x = np.asarray(values, dtype=np.float64)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=np.float64)
    total = float(np.sum(w))
    nan = float("nan")
    if len(x) == 0 or total <= 0:
        return BootstrapInterval(nan, nan, nan, nan, 0, resamples, seed, confidence)
    draws = max(1, round(total))
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(w)
    means = np.empty(resamples)
    chunk = max(1, MAX_BOOTSTRAP_CELLS // draws)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        picks = np.searchsorted(cumulative, rng.random((stop - start, draws)) * total, "right")
        means[start:stop] = x[np.minimum(picks, len(x) - 1)].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return BootstrapInterval(
        float(np.mean(means)),
        float(low),
        float(high),
        float(np.mean(means > 0)),
        draws,
        resamples,
        seed,
        confidence,
    )


def head_to_head_scores(
    a: NDArray[np.float64], b: NDArray[np.float64], kind: str = "log"
) -> NDArray[np.float64]:
    """Per-question head-to-head of A against B from their scores on common questions.

    ``kind="log"``: ``a``, ``b`` are log scores, result ``100 * (a - b)``; ``kind="brier"``:
    they are Brier scores, result ``100 * (b - a)``. Positive means A did better.
    """
    if kind == "log":
        return 100.0 * (np.asarray(a) - np.asarray(b))
    if kind == "brier":
        return 100.0 * (np.asarray(b) - np.asarray(a))
    raise ValueError(f"unknown head-to-head score {kind!r}")


def peer_scores(question: NDArray[np.int64], log_score: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per cell ``100 * (log score - mean log score of the others on that question)``.

    NaN for a cell alone on its question (no peers).
    """
    n_questions = int(question.max()) + 1 if len(question) else 0
    total = np.bincount(question, weights=log_score, minlength=n_questions)
    count = np.bincount(question, minlength=n_questions)
    others = count[question] - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_others = (total[question] - log_score) / others
    return np.where(others > 0, 100.0 * (log_score - mean_others), np.nan)
