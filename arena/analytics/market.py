"""Skill against the market (methodology, "Skill against the market").

The *market forecaster* of a forecast is the price its forecaster was shown for the same event
in its frozen universe: the column ``market_probability`` of the forecast (the side's mid in
pricing mode ``book``, Gamma's display price in ``gamma``; never a later price). Every measure
here compares each forecast ``p`` with that price ``m`` and, where it needs one, the result
``o`` (1 if the event happened):

* **Alpha (Brier)** per forecast: ``d = (m - o)^2 - (p - o)^2``, positive when the forecaster
  beat the price it was shown. **Alpha (log)**: ``d = ln p_true - ln m_true``, both clipped to
  [0.001, 0.999].
* **Return against the odds** per $1 (pm_rank's risk-neutral average return): where ``p > m``
  buy the event at ``m`` and get ``o / m - 1``; where ``p < m`` buy the other side at ``1 - m``
  and get ``(1 - o) / (1 - m) - 1``; where ``p == m`` there is no bet. **After the fee**: one
  share of the side bought at ``s`` costs ``s + fee(s)``, ``fee(s) = rate * (s (1 - s)) **
  exponent`` (the market's taker fee, methodology "Executable prices"; exponent 1 gives the
  methodology's ``rate * m * (1 - m)``), so the return is ``won / (s + fee(s)) - 1``. Mode
  ``gamma`` charges no fee; a mode ``book`` forecast whose market has no known fee schedule is
  left out of the after-fee figure (and counted).
* **Market-copy index**: the Pearson correlation between ``p`` and ``m`` and the mean
  ``|p - m|`` over every question the forecaster answered with a price (resolved or not; no
  outcome is needed). A forecaster *follows the market* at a correlation of at least 0.98 and
  a mean distance of at most 0.02.

Like every score (:mod:`arena.analytics.questions`), each forecast is scored on its own and a
forecaster's value on a question is the mean over its forecasts of that question. The means
over questions use the question weights, and the intervals are the cluster-robust t interval
and the cluster bootstrap by market (:func:`arena.analytics.options.cluster_intervals`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.calibration import LOG_EPS, true_probability
from arena.analytics.options import (
    AnalysisOptions,
    Prepared,
    cluster_intervals,
    interval_object,
    slices,
)
from arena.analytics.significance import INSUFFICIENT
from arena.errors import ForecastsError

COPY_CORRELATION = 0.98  # at least: "follows the market" (ForecastBench found 0.994)
COPY_DISTANCE = 0.02  # at most: mean |p - m| of a forecaster that follows the market
MIN_COPY_QUESTIONS = 3  # questions a correlation needs


@dataclass(frozen=True, eq=False)
class MarketCells:
    """Per panel cell, the means over its forecasts of each per-forecast measure (NaN where
    the cell has none): the price shown, the Brier and log alphas (scorable questions with a
    price), the return per $1 before and after the fee (scorable, priced, ``p != m``), and how
    many of the cell's betting forecasts had no known fee."""

    market: NDArray[np.float64]
    alpha_brier: NDArray[np.float64]
    alpha_log: NDArray[np.float64]
    returns: NDArray[np.float64]
    returns_after_fee: NDArray[np.float64]
    fee_unknown: NDArray[np.int64]


def market_cells(prep: Prepared) -> MarketCells:
    """The per-cell market measures of :class:`MarketCells` (module docstring)."""
    data, questions, panel = prep.forecasts, prep.questions, prep.panel
    n_cells = len(panel)
    row_question = questions.row_question
    p, m = data.probability, data.market_probability
    o = questions.resolved_value[row_question]
    priced = ~np.isnan(m)
    scored = priced & prep.scorable[row_question]

    def cell_mean(values: NDArray[np.float64], rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        cells = panel.row_cell[rows]
        total = np.bincount(cells, weights=values[rows], minlength=n_cells)
        count = np.bincount(cells, minlength=n_cells)
        return np.divide(total, count, out=np.full(n_cells, np.nan), where=count > 0)

    # each measure is taken to its cells as soon as it is made: a column of every forecast
    # (2.9 MiB at scale 1) lives only as long as it is needed, not all of them to the end
    market = cell_mean(np.nan_to_num(m), priced)
    alpha_brier = cell_mean(np.where(scored, (m - o) ** 2 - (p - o) ** 2, np.nan), scored)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha_log = cell_mean(
            np.log(true_probability(p, o, LOG_EPS)) - np.log(true_probability(m, o, LOG_EPS)),
            scored,
        )
    betting = scored & (p != m)
    side_price = np.where(p > m, m, 1.0 - m)
    _refuse_unpriceable(data, m, betting)
    won = np.where(p > m, o, 1.0 - o)
    del p, o
    with np.errstate(invalid="ignore", divide="ignore"):
        returns = cell_mean(won / side_price - 1.0, betting)
    fee, fee_known = _fee_per_share(data, side_price)
    with np.errstate(invalid="ignore", divide="ignore"):
        after_fee = cell_mean(won / (side_price + fee) - 1.0, betting & fee_known)
    unknown = np.bincount(panel.row_cell[betting & ~fee_known], minlength=n_cells)
    return MarketCells(
        market=market,
        alpha_brier=alpha_brier,
        alpha_log=alpha_log,
        returns=returns,
        returns_after_fee=after_fee,
        fee_unknown=unknown.astype(np.int64),
    )


def _refuse_unpriceable(data: Any, market: NDArray[np.float64], betting: NDArray[np.bool_]) -> None:
    """A bet at a price of 0 or 1 has no return: refuse it, naming the forecast (its ids are
    written out only then: 364,000 strings at scale 1)."""
    bad = np.flatnonzero(betting & ((market <= 0.0) | (market >= 1.0)))
    if len(bad):
        index = int(bad[0])
        ids = data.forecast_id
        where = f"forecast {ids[index]}" if ids[index] is not None else f"row {index + 1}"
        raise ForecastsError(
            f"{where}: market_probability is {market[index]:g}; a return against the odds "
            "needs a price strictly between 0 and 1"
        )


def _fee_per_share(
    data: Any, side_price: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The taker fee of one share at ``side_price`` and whether it is known: mode ``gamma``
    charges none; otherwise the row's fee schedule, unknown without one."""
    gamma = np.array([(mode or "").lower() == "gamma" for mode in data.pricing], dtype=bool)
    scheduled = ~np.isnan(data.fee_rate)
    exponent = np.where(np.isnan(data.fee_exponent), 1.0, data.fee_exponent)
    with np.errstate(invalid="ignore"):
        fee = np.where(
            scheduled & ~gamma,
            data.fee_rate * (side_price * (1.0 - side_price)) ** exponent,
            0.0,
        )
    return fee, gamma | scheduled


def market_rows(prep: Prepared, options: AnalysisOptions) -> list[dict[str, Any]]:
    """One row per forecaster: alpha (Brier, log), the market-copy index and the return against
    the odds before and after the fee, with intervals and counts (module docstring)."""
    panel = prep.panel
    cells = market_cells(prep)
    cell_question = panel.question
    weight, cluster = prep.weights[cell_question], prep.clusters[cell_question]
    rows = []
    for name, mine in zip(
        panel.forecasters, slices(panel.forecaster, len(panel.forecasters)), strict=True
    ):

        def measure(values: NDArray[np.float64], *, cells_of: NDArray[np.int64] = mine) -> Any:
            keep = cells_of[~np.isnan(values[cells_of])]
            return interval_object(
                cluster_intervals(values[keep], weight[keep], cluster[keep], options)
            )

        scored = mine[~np.isnan(cells.alpha_brier[mine])]
        copy = copy_index(panel.probability[mine], cells.market[mine])
        rows.append(
            {
                "forecaster": name,
                "alpha_brier": measure(cells.alpha_brier),
                "alpha_log": measure(cells.alpha_log),
                **copy,
                "return_per_dollar": measure(cells.returns),
                "return_per_dollar_after_fee": measure(cells.returns_after_fee),
                "fee_unknown": int(cells.fee_unknown[mine].sum()),
                "questions": len(scored),
                "markets": len({prep.questions.market_id[q] for q in cell_question[scored]}),
                "clusters": len(set(cluster[scored])),
            }
        )
    return rows


def in_skill_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`market_rows` as tables show them: the highest Brier alpha first, the rows whose
    alpha is "insufficient" last (each group otherwise in its given order)."""

    def key(row: dict[str, Any]) -> tuple[int, float]:
        alpha = row["alpha_brier"]
        return (0, -float(alpha["estimate"])) if isinstance(alpha, dict) else (1, 0.0)

    return sorted(rows, key=key)


def copy_index(p: NDArray[np.float64], m: NDArray[np.float64]) -> dict[str, Any]:
    """Pearson correlation and mean distance of forecasts ``p`` and prices ``m`` (NaN prices
    left out); "insufficient" correlation below 3 questions or without spread in either."""
    priced = ~np.isnan(m)
    p, m = p[priced], m[priced]
    distance = float(np.mean(np.abs(p - m))) if len(p) else None
    correlation: float | str = INSUFFICIENT
    if len(p) >= MIN_COPY_QUESTIONS and np.ptp(p) > 0 and np.ptp(m) > 0:
        correlation = float(np.corrcoef(p, m)[0, 1])
    follows = (
        isinstance(correlation, float)
        and distance is not None
        and correlation >= COPY_CORRELATION
        and distance <= COPY_DISTANCE
    )
    return {
        "copy_correlation": correlation,
        "copy_distance": distance,
        "follows_market": bool(follows),
        "copy_questions": len(p),
    }
