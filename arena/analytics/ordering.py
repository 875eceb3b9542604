"""How sure the ordering is (methodology, "How sure the ordering is").

**One bootstrap for the ranking's intervals and its rank probabilities.** The clusters of the
scored cells of every forecaster in the panel (those left unranked for too few clusters
included; markets and event groups, :func:`arena.analytics.weights.cluster_labels`) get dense
codes in sorted label order. Resample
``r`` draws ``G`` cluster codes with replacement: the rows of
``numpy.random.default_rng(seed).integers(0, G, size=(R, G))``, drawn in consecutive chunks of
rows (the same stream). In each resample every forecaster's difficulty-adjusted score is
recomputed as ``sum(w x) / sum(w)`` over its cells in the drawn clusters (a cluster drawn twice
counts twice; the question difficulties are held at their full-sample fit). From these same
resampled scores come:

* each forecaster's cluster-bootstrap interval (the percentiles stretched by the cluster-robust
  t's small-sample factors, :func:`arena.analytics.significance.cluster_percentile_interval`);
* its rank in every resample, 1 the lowest (best) score, ties sharing the better rank, and a
  forecaster with none of its clusters drawn ranked last; then ``P(rank 1)``, ``P(top 3)`` and
  the 2.5% and 97.5% percentiles of its rank (``numpy.quantile(..., method="inverted_cdf")``,
  so each bound is a rank that occurred). The market's reference row is not ranked here.

So an interval and a rank probability never disagree: both come from the same resamples.

**Weeks to separate** two forecasters adjacent in the ranking: ``delta`` is the mean Brier
difference on their common scored questions (difficulty cancels there), ``se`` its
cluster-robust standard error over the ``W`` weeks seen. Separated when the interval excludes
0; otherwise ``W_80 = W * ((z_0.975 + z_0.8) * se / |delta|)^2`` weeks give 80% power at
two-sided 5%, and ``ceil(W_80 - W)`` more weeks are needed, or "not separable at this gap"
above :data:`MAX_WEEKS`; below :data:`MIN_WEEKS` weeks seen an unseparated pair is
"insufficient" (one week says nothing about how the variance falls with more). This assumes
the weeks to come have the same panel size and the same variance per week as the weeks seen
(:data:`POWER_ASSUMPTIONS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from arena.analytics.difficulty import Cells
from arena.analytics.significance import (
    INSUFFICIENT,
    cluster_codes,
    cluster_percentile_interval,
)

JOINT_CHUNK_CELLS = 4_000_000
"""Resamples x clusters the joint bootstrap draws and multiplies at once. BLAS sums a matrix
product's rows in blocks that depend on how many rows it holds, so this size is part of the
figures: kept as it was (unlike :data:`~arena.analytics.significance.MAX_BOOTSTRAP_CELLS`)."""
DRAW_CELLS = 250_000
"""Resampled clusters :func:`_drawn_counts` draws at a time (the numbers drawn do not depend on
it)."""
MAX_WEEKS = 520  # ten years: beyond it a gap is "not separable at this gap"
MIN_WEEKS = 2  # weeks seen that a prediction of more weeks needs
POWER = 0.8
ALPHA = 0.05
POWER_ASSUMPTIONS = (
    "80% power at two-sided 5%; assumes the weeks to come have the same panel size and the same "
    "variance per week as the weeks seen, and that the gap stays the same"
)
RANK_SAMPLE = (
    "P(rank 1), P(top 3) and the 95% rank interval come from the same cluster-bootstrap "
    "resamples as the bootstrap intervals; ties share the better rank; the market reference "
    "is not ranked"
)


@dataclass(frozen=True, eq=False)
class JointResamples:
    """Every forecaster's resampled score, one row per resample (NaN where none of its clusters
    was drawn)."""

    means: NDArray[np.float64]  # (resamples, forecasters)
    n_clusters: NDArray[np.int64]  # per forecaster, its clusters in the full sample


def joint_cluster_bootstrap(
    cells: Cells,
    weights: NDArray[np.float64],
    clusters: NDArray[np.object_],
    *,
    resamples: int,
    seed: int,
) -> JointResamples:
    """The resampled weighted means of every forecaster's cell scores, with the cells'
    ``weights`` and ``clusters`` (module docstring)."""
    values, forecaster, n_forecasters = cells.score, cells.forecaster, cells.n_forecasters
    codes, n_clusters = cluster_codes(clusters, len(values))
    flat = forecaster * n_clusters + codes
    size = n_forecasters * n_clusters
    numerator = np.bincount(flat, weights=weights * values, minlength=size)
    weight = np.bincount(flat, weights=weights, minlength=size)
    numerator = numerator.reshape(n_forecasters, n_clusters).T  # (G, F)
    weight = weight.reshape(n_forecasters, n_clusters).T
    own = np.bincount(flat, minlength=size).reshape(n_forecasters, n_clusters) > 0
    means = np.full((resamples, n_forecasters), np.nan)
    if n_clusters == 0:
        return JointResamples(means, own.sum(axis=1).astype(np.int64))
    rng = np.random.default_rng(seed)
    chunk = max(1, JOINT_CHUNK_CELLS // n_clusters)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        drawn = _drawn_counts(rng, stop - start, n_clusters)
        top, bottom = drawn @ numerator, drawn @ weight
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start:stop] = np.where(bottom > 0, top / bottom, np.nan)
    return JointResamples(means, own.sum(axis=1).astype(np.int64))


def _drawn_counts(rng: np.random.Generator, rows: int, n_clusters: int) -> NDArray[np.float64]:
    """How many times each of ``n_clusters`` clusters is drawn (with replacement,
    ``n_clusters`` draws) in each of ``rows`` resamples. The draws are made and counted
    :data:`DRAW_CELLS` at a time, straight into the result: the same stream of numbers as one
    call for all, without a draws array and a counts array as large as the result beside it
    (64 MiB of the analysis's peak at scale 1)."""
    drawn = np.empty((rows, n_clusters))
    block = max(1, DRAW_CELLS // n_clusters)
    for first in range(0, rows, block):
        last = min(rows, first + block)
        picks = rng.integers(0, n_clusters, size=(last - first, n_clusters))
        picks += (np.arange(last - first) * n_clusters)[:, None]  # each row its own counts
        counts = np.bincount(picks.ravel(), minlength=(last - first) * n_clusters)
        drawn[first:last] = counts.reshape(last - first, n_clusters)
    return drawn


def bootstrap_bounds(
    resampled: JointResamples, index: int, centre: float, confidence: float
) -> tuple[float, float]:
    """Forecaster ``index``'s cluster-bootstrap interval from the joint resamples."""
    return cluster_percentile_interval(
        resampled.means[:, index], centre, int(resampled.n_clusters[index]), confidence
    )


def rank_probabilities(means: NDArray[np.float64]) -> list[dict[str, Any]]:
    """Per column of ``means`` (resamples x forecasters, lower is better): ``p_rank_1``,
    ``p_top_3``, ``rank_low`` and ``rank_high`` (module docstring)."""
    if means.shape[1] == 0:
        return []
    missing = np.isnan(means)
    ranks = stats.rankdata(np.where(missing, np.inf, means), axis=1, method="min")
    ranks[missing] = means.shape[1]
    out = []
    for column in ranks.T:
        low, high = np.quantile(column, [0.025, 0.975], method="inverted_cdf")
        out.append(
            {
                "p_rank_1": float(np.mean(column == 1)),
                "p_top_3": float(np.mean(column <= 3)),
                "rank_low": int(low),
                "rank_high": int(high),
            }
        )
    return out


def weeks_to_separate(delta: float, se: float, weeks_seen: int, separated: bool) -> dict[str, Any]:
    """More weeks needed for 80% power (module docstring): ``more_weeks`` 0 when separated,
    None (verdict "insufficient") below :data:`MIN_WEEKS` weeks seen, None when the gap is 0 or
    needs more than :data:`MAX_WEEKS` weeks in all."""
    if separated:
        return {"more_weeks": 0, "weeks_needed": weeks_seen, "verdict": "separated"}
    if weeks_seen < MIN_WEEKS:
        return {"more_weeks": None, "weeks_needed": None, "verdict": INSUFFICIENT}
    if delta == 0.0 or not math.isfinite(se):
        return {"more_weeks": None, "weeks_needed": None, "verdict": "not separable at this gap"}
    factor = stats.norm.ppf(1.0 - ALPHA / 2.0) + stats.norm.ppf(POWER)
    needed = weeks_seen * (factor * se / abs(delta)) ** 2
    if needed > MAX_WEEKS:
        return {"more_weeks": None, "weeks_needed": None, "verdict": "not separable at this gap"}
    more = max(0, math.ceil(needed - weeks_seen))
    return {
        "more_weeks": more,
        "weeks_needed": weeks_seen + more,
        "verdict": f"about {more} more week{'s' if more != 1 else ''}",
    }
