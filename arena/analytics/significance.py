"""Peer and head-to-head scores, and how sure we can be of them (seed 001, Metaculus).

* **Log score** of a forecast: natural log of the probability it gave to what happened, with
  probabilities clipped to [0.001, 0.999] (Metaculus' own bounds).
* **Peer score** of forecaster i on a question answered by N >= 2 forecasters:
  ``100 * (log_i - mean of the others' log scores)`` (Metaculus' peer score, which is
  ``100 * N/(N-1) * ln(p_i / geometric mean of all)``). Peer scores sum to 0 on a question.
* **Head-to-head** of A against B: the peer score A would get if A and B were the only two
  forecasters, on the questions both answered: ``100 * (log_A - log_B)``. Positive means A was
  more accurate. A Brier variant, ``100 * (brier_B - brier_A)``, is available for comparison.
* **Weighted t interval**, without clusters: weighted mean ``m = sum(w x) / W`` with
  ``W = sum(w)``; weighted standard deviation ``s = sqrt(sum(w (x - m)^2) / (W - 1))``
  (frequency-weight convention, so unit weights give the ordinary t-test); ``se = s / sqrt(W)``;
  ``df = W - 1``; interval ``m +/- t_{df, 0.975} * se``.
* **Cluster-robust t interval**, with ``clusters`` (what every report uses): the same ``m``;
  per cluster g the score ``u_g = sum_{i in g} w_i (x_i - m)``;
  ``se^2 = G / (G - 1) * sum_g u_g^2 / W^2`` over the G clusters; ``df = G - 1``. Rows of one
  cluster may be dependent in any way; clusters are taken as independent. With one row per
  cluster and unit weights this is the ordinary t-test again.
* **Weighted bootstrap**, without clusters: each resample draws ``round(W)`` rows with
  replacement, each with probability ``w / W``, and takes their plain mean. With ``clusters``
  (the **cluster bootstrap**): each resample draws G clusters with replacement and takes
  ``sum(w x) / sum(w)`` over the rows of the drawn clusters. The interval is the 2.5 and 97.5
  percentiles; for the cluster bootstrap their distances from the sample mean are stretched by
  ``sqrt(G / (G - 1)) * t_{G-1, 0.975} / z_{0.975}``, the small-sample factors of the
  cluster-robust t (without them a percentile interval over few clusters is too narrow;
  ``bench_coverage.py`` measures the result). Rows are put in a canonical order first (by
  cluster, then value, then weight), so the result depends on the data and the seed only,
  never on the order of the rows.
* **No interval from degenerate data.** Both intervals need at least 2 independent units (rows,
  or clusters), a total weight above 1 (without clusters), and a spread above zero. Otherwise
  both report ``status = "insufficient"`` with NaN bounds and p-values, never ``p = 0`` or a
  zero-width interval. :func:`sign_test` (exact binomial test on the signs of the clusters'
  weighted sums) holds whatever the spread.
* Every public function checks its input: NaN or infinite values or weights, negative weights,
  ``resamples < 1`` or a confidence outside (0, 1) raise :class:`ValueError` naming the
  argument (and the row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

MAX_BOOTSTRAP_CELLS = 250_000
"""Resamples x draws the bootstraps here draw at once (2 MiB per array of that shape; 8 MiB
arrays left 13 MiB more of the analysis's memory in use at scale 1). Each resample is summed
along its own row and the generator gives the same numbers however many are drawn at a time,
so the chunk size never changes a figure."""
OK = "ok"
INSUFFICIENT = "insufficient"
_RELATIVE_SPREAD = 1e-12  # below this (relative to the mean's size) a spread counts as zero


@dataclass(frozen=True)
class TInterval:
    """Weighted t-test of ``mean == 0`` and its interval (NaN unless ``status == "ok"``).

    ``n_clusters`` is the number of independent units (clusters, or rows without clusters).
    """

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
    n_clusters: int = 0
    clustered: bool = False
    status: str = OK
    reason: str | None = None


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
    n_clusters: int = 0
    clustered: bool = False
    status: str = OK
    reason: str | None = None


@dataclass(frozen=True)
class SignTest:
    """Exact two-sided binomial test that positive and negative clusters are equally likely."""

    n_positive: int
    n_negative: int
    n_zero: int
    p_value: float


def check_values(name: str, values: ArrayLike) -> NDArray[np.float64]:
    """``values`` as a 1-d float array; :class:`ValueError` naming ``name`` and the row when a
    value is NaN or infinite."""
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not numbers ({exc})") from None
    if x.ndim != 1:
        raise ValueError(f"{name}: expected a 1-d array, got shape {x.shape}")
    bad = np.flatnonzero(~np.isfinite(x))
    if len(bad):
        raise ValueError(f"{name}: row {int(bad[0])} is {x[bad[0]]!r} (must be finite)")
    return x


def check_weights(weights: ArrayLike | None, n: int, name: str = "weights") -> NDArray[np.float64]:
    """Finite, non-negative weights of length ``n`` (ones when ``None``)."""
    if weights is None:
        return np.ones(n)
    w = check_values(name, weights)
    if len(w) != n:
        raise ValueError(f"{name}: {len(w)} weights for {n} values")
    negative = np.flatnonzero(w < 0)
    if len(negative):
        raise ValueError(f"{name}: row {int(negative[0])} is {w[negative[0]]!r} (must be >= 0)")
    return w


def check_confidence(confidence: float) -> float:
    """A confidence level strictly between 0 and 1."""
    if not (isinstance(confidence, int | float) and 0.0 < float(confidence) < 1.0):
        raise ValueError(f"confidence: {confidence!r} is not strictly between 0 and 1")
    return float(confidence)


def check_resamples(resamples: int) -> int:
    """A whole number of resamples, at least 1."""
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer):
        raise ValueError(f"resamples: {resamples!r} is not a whole number")
    if resamples < 1:
        raise ValueError(f"resamples: {resamples} must be at least 1")
    return int(resamples)


def cluster_codes(clusters: ArrayLike, n: int) -> tuple[NDArray[np.int64], int]:
    """Dense codes of cluster labels in sorted label order (so row order never matters)."""
    labels = np.asarray(clusters)
    if labels.shape != (n,):
        raise ValueError(f"clusters: {labels.shape[0] if labels.ndim else 0} labels for {n} values")
    if labels.dtype == object:  # each label's text once, not a fixed-width text per row
        index: dict[str, int] = {}
        seen = np.fromiter(
            (index.setdefault("" if v is None else str(v), len(index)) for v in labels.tolist()),
            dtype=np.int64,
            count=n,
        )
        texts = np.empty(len(index), dtype=object)
        texts[:] = list(index)
        rank = np.empty(len(index), dtype=np.int64)
        rank[np.argsort(texts, kind="stable")] = np.arange(len(index))
        return rank[seen], len(index)
    _, codes = np.unique(labels, return_inverse=True)
    codes = codes.reshape(-1).astype(np.int64)
    return codes, int(codes.max()) + 1 if n else 0


def weighted_mean(values: ArrayLike, weights: ArrayLike | None = None) -> float:
    """``sum(w x) / sum(w)`` (NaN for no weight)."""
    x = check_values("values", values)
    w = check_weights(weights, len(x))
    total = float(np.sum(w))
    return float(np.sum(w * x) / total) if total > 0 else float("nan")


def _prepare(
    values: ArrayLike, weights: ArrayLike | None, clusters: ArrayLike | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], int]:
    """Checked values and weights in canonical order, with cluster codes (one per row if none)."""
    x = check_values("values", values)
    w = check_weights(weights, len(x))
    if clusters is None:
        order = np.lexsort((w, x))
        return x[order], w[order], np.arange(len(x), dtype=np.int64), len(x)
    codes, n_clusters = cluster_codes(clusters, len(x))
    order = np.lexsort((w, x, codes))
    return x[order], w[order], codes[order], n_clusters


def insufficient_reason(
    x: NDArray[np.float64], w: NDArray[np.float64], codes: NDArray[np.int64], clustered: bool
) -> str | None:
    """Why no interval can be given for this sample (None: one can)."""
    total = float(np.sum(w))
    units = len(np.unique(codes[w > 0]))
    if units < 2:
        what = "clusters" if clustered else "questions"
        return f"fewer than 2 independent {what} with weight"
    if not clustered and total <= 1.0:
        return "total weight 1 or less"
    mean = float(np.sum(w * x) / total)
    spread = float(np.sqrt(np.sum(w * (x - mean) ** 2) / total))
    if spread <= _RELATIVE_SPREAD * max(1.0, abs(mean)):
        return "no spread: every value is the same (see the sign test)"
    if clustered:
        scores = np.bincount(codes, weights=w * (x - mean))
        if float(np.sqrt(np.sum(scores**2))) <= _RELATIVE_SPREAD * max(1.0, abs(mean)) * total:
            return "no spread between clusters"
    return None


def weighted_t_interval(
    values: ArrayLike,
    weights: ArrayLike | None = None,
    confidence: float = 0.95,
    *,
    clusters: ArrayLike | None = None,
) -> TInterval:
    """Two-sided weighted t interval for the mean, cluster-robust with ``clusters`` (module
    docstring); ``status == "insufficient"`` with NaN bounds for degenerate data."""
    confidence = check_confidence(confidence)
    x, w, codes, n_clusters = _prepare(values, weights, clusters)
    clustered = clusters is not None
    total = float(np.sum(w))
    mean = float(np.sum(w * x) / total) if total > 0 else float("nan")
    nan = float("nan")
    reason = insufficient_reason(x, w, codes, clustered)
    if reason is not None:
        return TInterval(
            mean, nan, nan, nan, nan, nan, nan, nan, len(x), total, confidence,
            n_clusters, clustered, INSUFFICIENT, reason,
        )  # fmt: skip
    if clustered:
        scores = np.bincount(codes, weights=w * (x - mean), minlength=n_clusters)
        se = float(np.sqrt(n_clusters / (n_clusters - 1.0) * np.sum(scores**2)) / total)
        df = n_clusters - 1.0
        sd = se * float(np.sqrt(total))
    else:
        sd = float(np.sqrt(np.sum(w * (x - mean) ** 2) / (total - 1.0)))
        se = sd / float(np.sqrt(total))
        df = total - 1.0
    critical = float(stats.t.ppf(0.5 + confidence / 2.0, df))
    t_stat = mean / se
    p_value = float(2.0 * stats.t.sf(abs(t_stat), df))
    return TInterval(
        mean, sd, se, df, t_stat, p_value, mean - critical * se, mean + critical * se,
        len(x), total, confidence, n_clusters, clustered,
    )  # fmt: skip


def weighted_bootstrap_interval(
    values: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    clusters: ArrayLike | None = None,
) -> BootstrapInterval:
    """Weighted (or, with ``clusters``, cluster) bootstrap percentile interval (module
    docstring); ``status == "insufficient"`` with NaN bounds exactly when the t interval is."""
    confidence = check_confidence(confidence)
    resamples = check_resamples(resamples)
    x, w, codes, n_clusters = _prepare(values, weights, clusters)
    clustered = clusters is not None
    nan = float("nan")
    reason = insufficient_reason(x, w, codes, clustered)
    if reason is not None:
        return BootstrapInterval(
            nan, nan, nan, nan, 0, resamples, seed, confidence,
            n_clusters, clustered, INSUFFICIENT, reason,
        )  # fmt: skip
    rng = np.random.default_rng(seed)
    if clustered:
        draws = n_clusters
        means = _cluster_means(x, w, codes, n_clusters, resamples, rng)
    else:
        total = float(np.sum(w))
        draws = max(1, round(total))
        cumulative = np.cumsum(w)
        means = np.empty(resamples)
        chunk = max(1, MAX_BOOTSTRAP_CELLS // draws)
        for start in range(0, resamples, chunk):
            stop = min(resamples, start + chunk)
            picks = np.searchsorted(cumulative, rng.random((stop - start, draws)) * total, "right")
            means[start:stop] = x[np.minimum(picks, len(x) - 1)].mean(axis=1)
    if clustered:
        centre = float(np.sum(w * x) / np.sum(w))
        low, high = cluster_percentile_interval(means, centre, n_clusters, confidence)
    else:
        tail = (1.0 - confidence) / 2.0
        low, high = np.nanquantile(means, [tail, 1.0 - tail])
    return BootstrapInterval(
        float(np.nanmean(means)), float(low), float(high), float(np.mean(means > 0)),
        draws, resamples, seed, confidence, n_clusters, clustered,
    )  # fmt: skip


def cluster_percentile_interval(
    means: NDArray[np.float64], centre: float, n_clusters: int, confidence: float
) -> tuple[float, float]:
    """The cluster bootstrap's interval from its resampled ``means``: the percentiles, their
    distances from the sample mean ``centre`` stretched by the cluster-robust t's small-sample
    factors ``sqrt(G / (G - 1))`` and ``t_{G-1} / z`` (module docstring)."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.nanquantile(means, [tail, 1.0 - tail])
    level = 1.0 - tail
    ratio = float(stats.t.ppf(level, n_clusters - 1) / stats.norm.ppf(level))
    inflate = float(np.sqrt(n_clusters / (n_clusters - 1.0))) * ratio
    return float(centre + inflate * (low - centre)), float(centre + inflate * (high - centre))


def _cluster_means(
    x: NDArray[np.float64],
    w: NDArray[np.float64],
    codes: NDArray[np.int64],
    n_clusters: int,
    resamples: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Resampled ``sum(w x) / sum(w)`` over G clusters drawn with replacement."""
    weighted = np.bincount(codes, weights=w * x, minlength=n_clusters)
    weight = np.bincount(codes, weights=w, minlength=n_clusters)
    means = np.empty(resamples)
    chunk = max(1, MAX_BOOTSTRAP_CELLS // n_clusters)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        picks = rng.integers(0, n_clusters, size=(stop - start, n_clusters))
        numerator = weighted[picks].sum(axis=1)
        denominator = weight[picks].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start:stop] = np.where(denominator > 0, numerator / denominator, np.nan)
    return means


def sign_test(
    values: ArrayLike, weights: ArrayLike | None = None, *, clusters: ArrayLike | None = None
) -> SignTest:
    """Exact sign test on the clusters' (or rows') weighted sums; ties are left out.

    Holds for any spread, so it still speaks when every value is the same (where a t-test would
    claim certainty): ten questions all won by A give ``p = 2 / 2^10``.
    """
    x, w, codes, n_clusters = _prepare(values, weights, clusters)
    sums = np.bincount(codes, weights=w * x, minlength=n_clusters)[np.bincount(codes, w) > 0]
    positive, negative = int(np.sum(sums > 0)), int(np.sum(sums < 0))
    trials = positive + negative
    p_value = float(stats.binomtest(positive, trials, 0.5).pvalue) if trials else float("nan")
    return SignTest(positive, negative, len(sums) - trials, p_value)


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
