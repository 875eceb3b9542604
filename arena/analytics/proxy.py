"""Proxy scores: an early ranking before markets resolve (seed 002).

This is a PROXY, not a resolution-based score: it rewards agreeing with the informed crowd of
the *other* families, and it would penalise a forecaster who is right against the crowd.

* Every forecast on an open question is scored against the leave-one-out aggregate of the other
  families' forecasts on that question, the extremized logit pool
  ``yhat = sigmoid(sqrt(3) * mean(logit(clip(x, 0.001, 0.999))))`` over the other families
  (seed 002, appendix C: leave-one-out keeps the score proper). Each other family casts one vote,
  the mean clipped logit of its forecasts on the question.
* The proxy score of a forecast is ``(x - yhat)^2`` on the raw (unclipped) probability, the
  quadratic proxy score; a family's score on a question is the mean over its forecasts.
* Per week, a family's proxy is the mean over its questions; it is z-scored across the families
  of that week (``(s - mean) / sd``, population sd; all 0 when sd is 0). The ranking is the mean
  weekly z (lower is better). A question needs at least two voting families.
* Baseline families (``family_kind == "baseline"``) are left out of the pool and of the
  ranking by default, as the seed leaves out trivial baselines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.questions import LOG_EPS, group_ids

EXTREMIZE = float(np.sqrt(3.0))


def sigmoid(x: Any) -> Any:
    """Logistic function (scalar or array)."""
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def clipped_logit(p: NDArray[np.float64], eps: float = LOG_EPS) -> NDArray[np.float64]:
    """``logit(clip(p, eps, 1 - eps))``."""
    q = np.clip(np.asarray(p, dtype=np.float64), eps, 1.0 - eps)
    return np.log(q / (1.0 - q))


def logit_pool(probabilities: NDArray[np.float64], d: float = EXTREMIZE) -> float:
    """Extremized logit-pool aggregate of forecasts: ``sigmoid(d * mean(clipped logit))``."""
    return float(sigmoid(d * np.mean(clipped_logit(probabilities))))


def leave_one_out_pool(
    question: NDArray[np.int64], logit: NDArray[np.float64], d: float = EXTREMIZE
) -> NDArray[np.float64]:
    """Per voter, ``sigmoid(d * mean of the other voters' logits on its question)``.

    ``question`` and ``logit`` hold one vote per (family, question); NaN for a lone voter.
    """
    n = int(question.max()) + 1 if len(question) else 0
    total = np.bincount(question, weights=logit, minlength=n)
    count = np.bincount(question, minlength=n)
    others = count[question] - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_others = (total[question] - logit) / others
    return np.where(others > 0, sigmoid(d * mean_others), np.nan)


@dataclass(frozen=True, eq=False)
class ProxyScores:
    """Cell proxy scores, weekly family scores with z-scores, and the overall ranking inputs."""

    cell_score: NDArray[np.float64]
    cell_aggregate: NDArray[np.float64]
    week_family: NDArray[np.int64]
    week_index: NDArray[np.int64]
    week_score: NDArray[np.float64]
    week_z: NDArray[np.float64]
    week_questions: NDArray[np.int64]
    mean_z: NDArray[np.float64]
    n_weeks: NDArray[np.int64]
    n_questions: NDArray[np.int64]


def proxy_scores(
    cell_forecaster: NDArray[np.int64],
    cell_question: NDArray[np.int64],
    cell_logit: NDArray[np.float64],
    row_cell: NDArray[np.int64],
    row_probability: NDArray[np.float64],
    question_week: NDArray[np.int64],
    n_forecasters: int,
    d: float = EXTREMIZE,
) -> ProxyScores:
    """Proxy scores of the given cells (already restricted to open questions and voters).

    ``row_cell`` maps the forecast rows of those cells to cell positions (0..n_cells-1);
    ``question_week`` gives each question's week index.
    """
    n_cells = len(cell_forecaster)
    aggregate = leave_one_out_pool(cell_question, cell_logit, d)
    row_score = (row_probability - aggregate[row_cell]) ** 2
    counts = np.bincount(row_cell, minlength=n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        cell_score = np.bincount(row_cell, weights=row_score, minlength=n_cells) / counts
    scored = ~np.isnan(cell_score)
    weeks = question_week[cell_question[scored]]
    families = cell_forecaster[scored]
    pair, first = group_ids(families, weeks)
    n_pairs = len(first)
    week_questions = np.bincount(pair, minlength=n_pairs)
    week_score = np.bincount(pair, weights=cell_score[scored], minlength=n_pairs) / np.maximum(
        week_questions, 1
    )
    week_family = families[first]
    week_index = weeks[first]
    week_z = _z_within(week_index, week_score)
    valid = ~np.isnan(week_z)
    z_total = np.bincount(week_family[valid], weights=week_z[valid], minlength=n_forecasters)
    n_weeks = np.bincount(week_family[valid], minlength=n_forecasters)
    mean_z = np.divide(z_total, n_weeks, out=np.full(n_forecasters, np.nan), where=n_weeks > 0)
    n_questions = np.bincount(families, minlength=n_forecasters)
    return ProxyScores(
        cell_score=cell_score,
        cell_aggregate=aggregate,
        week_family=week_family,
        week_index=week_index,
        week_score=week_score,
        week_z=week_z,
        week_questions=week_questions,
        mean_z=mean_z,
        n_weeks=n_weeks.astype(np.int64),
        n_questions=n_questions.astype(np.int64),
    )


def _z_within(group: NDArray[np.int64], values: NDArray[np.float64]) -> NDArray[np.float64]:
    """z-score of values within each group (population sd); NaN for a group of one."""
    n = int(group.max()) + 1 if len(group) else 0
    count = np.bincount(group, minlength=n)
    mean = np.bincount(group, weights=values, minlength=n) / np.maximum(count, 1)
    deviation = values - mean[group]
    sd = np.sqrt(np.bincount(group, weights=deviation**2, minlength=n) / np.maximum(count, 1))
    spread = sd[group]
    z = np.divide(deviation, spread, out=np.zeros_like(values), where=spread > 1e-15)
    z[count[group] < 2] = np.nan
    return z
