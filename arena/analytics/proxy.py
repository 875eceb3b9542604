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
* **Comparable questions.** Scores are standardised *per question*: on question j,
  ``z_ij = (s_ij - mean_j) / sd_j`` over the families that voted on j (population sd; 0 when
  they all scored the same). An easy question, where everyone agrees and every score is small,
  then counts like a hard one, so a family gains nothing by answering only easy questions.
* **Minimum samples.** A question is scored only with at least ``MIN_VOTERS`` (3) voting
  families (with two, each z is +1 or -1 whatever the gap). A week counts only with at least
  ``MIN_WEEK_QUESTIONS`` (5) such questions. A family's weekly z is the mean of its question z
  in that week; the ranking is the mean over its counted weeks (lower is better). A family with
  no counted week is reported as insufficient, not ranked.
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
MIN_VOTERS = 3  # voting families a question needs: with 2, every z would be +1 or -1
MIN_WEEK_QUESTIONS = 5  # comparable questions a week needs to count in the ranking


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
    """Cell proxy scores and per-question z, weekly family means, and the ranking inputs.

    ``week_*`` arrays hold one entry per (family, week) pair; ``week_sufficient`` says whether
    that week had enough comparable questions to count.
    """

    cell_score: NDArray[np.float64]
    cell_z: NDArray[np.float64]
    week_family: NDArray[np.int64]
    week_index: NDArray[np.int64]
    week_score: NDArray[np.float64]
    week_z: NDArray[np.float64]
    week_questions: NDArray[np.int64]
    week_sufficient: NDArray[np.bool_]
    mean_z: NDArray[np.float64]
    n_weeks: NDArray[np.int64]
    n_questions: NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class Votes:
    """What proxy scoring reads: the voting cells (each a forecaster on a question, with its
    logit; already restricted to open questions and voters), the forecast rows in them
    (``row_cell`` maps each row to its cell position 0..n_cells-1), each question's week index,
    and how many forecasters there are."""

    cell_forecaster: NDArray[np.int64]
    cell_question: NDArray[np.int64]
    cell_logit: NDArray[np.float64]
    row_cell: NDArray[np.int64]
    row_probability: NDArray[np.float64]
    question_week: NDArray[np.int64]
    n_forecasters: int


def proxy_scores(
    votes: Votes,
    d: float = EXTREMIZE,
    *,
    min_voters: int = MIN_VOTERS,
    min_week_questions: int = MIN_WEEK_QUESTIONS,
) -> ProxyScores:
    """Proxy scores of the voting cells. Only questions with at least ``min_voters`` voting
    families are scored; a week counts when it has at least ``min_week_questions`` such
    questions.
    """
    cell_forecaster, cell_question, cell_logit = (
        votes.cell_forecaster,
        votes.cell_question,
        votes.cell_logit,
    )
    row_cell, row_probability = votes.row_cell, votes.row_probability
    question_week, n_forecasters = votes.question_week, votes.n_forecasters
    n_cells = len(cell_forecaster)
    n_q = len(question_week)
    voters = np.bincount(cell_question, minlength=n_q)
    comparable = voters[cell_question] >= min_voters
    aggregate = leave_one_out_pool(cell_question, cell_logit, d)
    row_score = (row_probability - aggregate[row_cell]) ** 2
    counts = np.bincount(row_cell, minlength=n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        cell_score = np.bincount(row_cell, weights=row_score, minlength=n_cells) / counts
    cell_score[~comparable] = np.nan
    scored = ~np.isnan(cell_score)
    cell_z = np.full(n_cells, np.nan)
    cell_z[scored] = _z_within(cell_question[scored], cell_score[scored], n_q)
    weeks = question_week[cell_question[scored]]
    families = cell_forecaster[scored]
    pair, first = group_ids(families, weeks)
    n_pairs = len(first)
    week_questions = np.bincount(pair, minlength=n_pairs)
    week_score = np.bincount(pair, weights=cell_score[scored], minlength=n_pairs) / np.maximum(
        week_questions, 1
    )
    week_z = np.bincount(pair, weights=cell_z[scored], minlength=n_pairs) / np.maximum(
        week_questions, 1
    )
    week_family = families[first]
    week_index = weeks[first]
    scored_questions = np.unique(cell_question[scored])
    per_week = np.bincount(
        question_week[scored_questions], minlength=int(question_week.max(initial=-1)) + 1
    )
    sufficient = per_week[week_index] >= min_week_questions
    z_total = np.bincount(
        week_family[sufficient], weights=week_z[sufficient], minlength=n_forecasters
    )
    n_weeks = np.bincount(week_family[sufficient], minlength=n_forecasters)
    mean_z = np.divide(z_total, n_weeks, out=np.full(n_forecasters, np.nan), where=n_weeks > 0)
    return ProxyScores(
        cell_score=cell_score,
        cell_z=cell_z,
        week_family=week_family,
        week_index=week_index,
        week_score=week_score,
        week_z=week_z,
        week_questions=week_questions,
        week_sufficient=sufficient,
        mean_z=mean_z,
        n_weeks=n_weeks.astype(np.int64),
        n_questions=np.bincount(families, minlength=n_forecasters).astype(np.int64),
    )


def _z_within(group: NDArray[np.int64], values: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """z-score of values within each group (population sd); 0 where the group has no spread."""
    count = np.bincount(group, minlength=n)
    mean = np.bincount(group, weights=values, minlength=n) / np.maximum(count, 1)
    deviation = values - mean[group]
    sd = np.sqrt(np.bincount(group, weights=deviation**2, minlength=n) / np.maximum(count, 1))
    spread = sd[group]
    return np.divide(deviation, spread, out=np.zeros_like(values), where=spread > 1e-12)
