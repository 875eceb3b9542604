"""Calibration: reliability diagram data, calibration errors, Brier decomposition, log loss.

Forecasts are put in ``n_bins`` equal-width bins ``[lo, hi)`` of [0, 1], the last bin closed at
1 (:data:`BIN_RULE`). For bin
k with ``n_k`` forecasts, mean forecast ``f_k`` and observed frequency ``o_k``, over N forecasts
with base rate ``o``:

* ECE = ``sum_k n_k / N * |f_k - o_k|``;
* Murphy's decomposition: reliability ``REL = sum_k n_k (f_k - o_k)^2 / N``, resolution
  ``RES = sum_k n_k (o_k - o)^2 / N``, uncertainty ``UNC = o (1 - o)``, and
  ``REL - RES + UNC`` equals exactly the *binned* Brier score, the Brier score of the forecasts
  replaced by their bin means. It differs from the raw Brier by the within-bin spread of the
  forecasts (both are reported).

Calibration in depth (methodology, "Calibration in depth"):

* MCE = the largest ``|f_k - o_k|`` over the non-empty bins;
* ACE = ECE over ``n_bins`` *equal-mass* bins: the forecasts sorted by probability (ties in
  row order) and cut into ``k = min(n_bins, N)`` consecutive runs, the first ``N mod k`` of
  ``ceil(N / k)`` forecasts and the others of ``floor(N / k)`` (``numpy.array_split``);
* log loss = ``-mean(ln p_true)`` with ``p_true`` the probability given to what happened,
  clipped to [0.001, 0.999] like every log score here;
* spherical score = ``mean(p_true / sqrt(p^2 + (1 - p)^2))``, in (0, 1], higher is better;
* overconfidence = ``mean(max(p, 1 - p))`` minus the share of forecasts whose favoured side
  happened (a forecast of exactly 0.5 favours YES). Positive when overconfident.

Every resolved forecast counts (each agent's forecast separately): calibration is a property
of forecasts, not a ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from arena.analytics.significance import check_values

LOG_EPS = 0.001  # the clip of every log score (arena.analytics.questions.LOG_EPS)
BIN_RULE = (
    "bins are [lo, hi) of equal width, the last bin closed at 1; ACE uses equal-mass bins of "
    "the sorted forecasts"
)


@dataclass(frozen=True)
class Calibration:
    """Calibration of one forecaster; ``bins`` lists only non-empty bins."""

    forecaster: str
    n: int
    brier: float
    binned_brier: float
    reliability: float
    resolution: float
    uncertainty: float
    ece: float
    base_rate: float
    bins: list[dict[str, float]]
    mce: float = float("nan")
    ace: float = float("nan")
    log_loss: float = float("nan")
    spherical: float = float("nan")
    overconfidence: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict."""
        return asdict(self)


def bin_index(probability: NDArray[np.float64], n_bins: int) -> NDArray[np.int64]:
    """Bin of each probability among ``n_bins`` equal-width bins of [0, 1]."""
    return np.minimum((np.asarray(probability) * n_bins).astype(np.int64), n_bins - 1)


def calibrate(
    probability: ArrayLike,
    outcome: ArrayLike,
    n_bins: int = 10,
    forecaster: str = "",
) -> Calibration:
    """Calibration statistics of forecasts ``probability`` against 0/1 ``outcome``.

    A probability outside [0, 1] or NaN, or an outcome other than 0 or 1, raises
    :class:`ValueError` naming the argument and the row.
    """
    p = check_values("probability", probability)
    o = check_values("outcome", outcome)
    if len(o) != len(p):
        raise ValueError(f"outcome: {len(o)} outcomes for {len(p)} probabilities")
    outside = np.flatnonzero((p < 0.0) | (p > 1.0))
    if len(outside):
        raise ValueError(f"probability: row {int(outside[0])} is {p[outside[0]]!r} (not in [0, 1])")
    not_binary = np.flatnonzero((o != 0.0) & (o != 1.0))
    if len(not_binary):
        row = int(not_binary[0])
        raise ValueError(f"outcome: row {row} is {o[row]!r} (must be 0 or 1)")
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins: {n_bins!r} must be a whole number of at least 1")
    n = len(p)
    if n == 0:
        nan = float("nan")
        return Calibration(forecaster, 0, nan, nan, nan, nan, nan, nan, nan, [])
    k = bin_index(p, n_bins)
    count = np.bincount(k, minlength=n_bins)
    mean_f = np.bincount(k, weights=p, minlength=n_bins) / np.maximum(count, 1)
    freq = np.bincount(k, weights=o, minlength=n_bins) / np.maximum(count, 1)
    base = float(np.mean(o))
    reliability = float(np.sum(count * (mean_f - freq) ** 2) / n)
    resolution = float(np.sum(count * (freq - base) ** 2) / n)
    uncertainty = base * (1.0 - base)
    bins = [
        {
            "low": b / n_bins,
            "high": (b + 1) / n_bins,
            "count": int(count[b]),
            "mean_forecast": float(mean_f[b]),
            "observed_frequency": float(freq[b]),
        }
        for b in range(n_bins)
        if count[b] > 0
    ]
    gap = np.abs(mean_f - freq)
    return Calibration(
        forecaster=forecaster,
        n=n,
        brier=float(np.mean((p - o) ** 2)),
        binned_brier=float(np.mean((mean_f[k] - o) ** 2)),
        reliability=reliability,
        resolution=resolution,
        uncertainty=uncertainty,
        ece=float(np.sum(count * gap) / n),
        base_rate=base,
        bins=bins,
        mce=float(np.max(gap[count > 0])),
        ace=adaptive_calibration_error(p, o, n_bins),
        log_loss=float(-np.mean(np.log(true_probability(p, o, LOG_EPS)))),
        spherical=float(np.mean(true_probability(p, o) / np.sqrt(p**2 + (1.0 - p) ** 2))),
        overconfidence=float(np.mean(np.maximum(p, 1.0 - p)) - np.mean((p >= 0.5) == (o == 1.0))),
    )


def true_probability(
    p: NDArray[np.float64], o: NDArray[np.float64], clip: float = 0.0
) -> NDArray[np.float64]:
    """The probability each forecast gave to what happened, clipped to [clip, 1 - clip]."""
    clipped = np.clip(p, clip, 1.0 - clip) if clip else p
    return np.where(o == 1.0, clipped, 1.0 - clipped)


def adaptive_calibration_error(
    p: NDArray[np.float64], o: NDArray[np.float64], n_bins: int
) -> float:
    """ECE over ``n_bins`` equal-mass bins of the forecasts sorted by probability (module
    docstring); fewer bins when there are fewer forecasts than bins."""
    order = np.argsort(p, kind="stable")
    total = 0.0
    for run in np.array_split(order, min(n_bins, len(p))):
        total += len(run) * abs(float(np.mean(p[run])) - float(np.mean(o[run])))
    return total / len(p)


# Matplotlib's tab20 without its two greys, the strong shade of each hue first: grey and black
# belong to the "perfect" diagonal, so no forecaster's line can be taken for it.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
    "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2",
    "#dbdb8d", "#9edae5",
)  # fmt: skip
PERFECT_COLOR = "black"


def calibration_figure(results: Sequence[Calibration], title: str = "") -> Any:
    """A reliability diagram (one line per forecaster, dot area ~ bin count; the diagonal
    "perfect" black and dashed) with its legend below the axes, never over the data."""
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

    shown = [result for result in results if result.bins]
    rows = -(-(len(shown) + 1) // 2)  # the legend's rows, two entries to a row
    figure = Figure(figsize=(7.0, 6.0 + 0.25 * rows), dpi=120, layout="constrained")
    axes = figure.add_subplot(1, 1, 1)
    axes.plot([0, 1], [0, 1], linestyle="--", color=PERFECT_COLOR, linewidth=1.2, label="perfect")
    for index, result in enumerate(shown):
        color = PALETTE[index % len(PALETTE)]
        x = [b["mean_forecast"] for b in result.bins]
        y = [b["observed_frequency"] for b in result.bins]
        sizes = [12.0 + 200.0 * b["count"] / result.n for b in result.bins]
        axes.plot(
            x, y, color=color, linewidth=1.2, label=f"{result.forecaster} (ECE {result.ece:.3f})"
        )
        axes.scatter(x, y, s=sizes, color=color, alpha=0.7)
    axes.set_xlim(-0.02, 1.02)
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("forecast probability (bin mean)")
    axes.set_ylabel("observed frequency")
    axes.set_title(title or "Reliability diagram")
    figure.legend(loc="outside lower center", ncols=2, fontsize="small", frameon=False)
    return figure


def plot_calibration(results: Sequence[Calibration], path: Path, title: str = "") -> Path:
    """Write the reliability diagram of :func:`calibration_figure` as PNG."""
    figure = calibration_figure(results, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path
