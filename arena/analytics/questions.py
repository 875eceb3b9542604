"""Questions and the forecaster x question panel that every score is computed on.

A *question* is one event in one week: ``(market_id, outcome, week_start)``. The weekly forecast
panel asks about the same market again in later weeks; each weekly instance is its own question
(its market price, and so its difficulty, differs), and the repeats get lower weights
(:mod:`arena.analytics.weights`).

A *cell* is one forecaster on one question. A family forecasts the same panel once per active
cohort, so a cell may hold several forecasts; each forecast is scored on its own and the cell's
score is their mean, so that a question counts once per family however many cohorts it has.
(Scoring the mean probability instead would favour families with more cohorts, as the Brier
score is convex.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from arena.analytics.records import Forecasts, factorize, to_datetime64

LOG_EPS = 0.001


def group_ids(*codes: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Dense ids of the distinct code tuples, and the first row of each id."""
    combined = np.zeros(len(codes[0]), dtype=np.int64)
    for column in codes:
        size = int(column.max()) + 1 if len(column) else 1
        combined = combined * size + column
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), first.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Questions:
    """The distinct questions of a forecast set; per-question arrays are indexed by question id.

    ``row_question`` maps each forecast row to its question. ``market_probability`` is the mean
    over the rows (the frozen price every agent saw that week); ``resolved_value`` NaN means not
    (or not scorably) resolved. ``question_type`` is the first type its rows carry (None:
    untyped).
    """

    row_question: NDArray[np.int64]
    market_id: NDArray[np.object_]
    outcome: NDArray[np.object_]
    week_start: NDArray[np.datetime64]
    event_group: NDArray[np.object_]
    question_type: NDArray[np.object_]
    market_probability: NDArray[np.float64]
    scheduled_close_at: NDArray[np.datetime64]
    resolved_at: NDArray[np.datetime64]
    resolved_value: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.market_id.shape[0])

    def label(self, index: int) -> str:
        """A readable id: ``market[:outcome]@week``."""
        outcome = f":{self.outcome[index]}" if self.outcome[index] else ""
        week = str(self.week_start[index].astype("datetime64[D]"))
        return f"{self.market_id[index]}{outcome}@{week}"


def index_questions(forecasts: Forecasts) -> Questions:
    """Group forecast rows into questions."""
    market_codes, _ = factorize(forecasts.coded["market_id"])
    outcome_codes, _ = factorize(forecasts.coded["outcome"])
    _, week_codes = np.unique(forecasts.week_start.astype(np.int64), return_inverse=True)
    week_codes = week_codes.reshape(-1).astype(np.int64)
    row_question, first = group_ids(market_codes, outcome_codes, week_codes)
    n_questions = len(first)
    price_sum = np.bincount(
        row_question,
        weights=np.nan_to_num(forecasts.market_probability),
        minlength=n_questions,
    )
    price_count = np.bincount(
        row_question, weights=~np.isnan(forecasts.market_probability), minlength=n_questions
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        market_probability = np.where(price_count > 0, price_sum / price_count, np.nan)
    return Questions(
        row_question=row_question,
        market_id=forecasts.market_id[first],
        outcome=forecasts.outcome[first],
        week_start=forecasts.week_start[first],
        event_group=_first_present(forecasts.event_group, row_question, first),
        question_type=_first_present(forecasts.question_type, row_question, first),
        market_probability=market_probability,
        scheduled_close_at=_latest(forecasts.scheduled_close_at, row_question, n_questions),
        resolved_at=_latest(forecasts.resolved_at, row_question, n_questions),
        resolved_value=_latest_value(forecasts, row_question, n_questions),
    )


def default_as_of(forecasts: Forecasts) -> np.datetime64:
    """The latest time in the data (forecast or resolution): "now" for an export."""
    times = np.concatenate([forecasts.forecast_at, forecasts.resolved_at])
    times = times[~np.isnat(times)]
    return times.max() if len(times) else np.datetime64(0, "us")


def scorable(questions: Questions, as_of: datetime | np.datetime64 | None) -> NDArray[np.bool_]:
    """Questions a leaderboard may count at ``as_of``.

    A question counts once it has a 0/1 result, that result is known at ``as_of``, and its
    scheduled close has passed (seed 001, the early-closer problem: markets that resolve before
    their scheduled close mostly resolve one way, so they wait until the scheduled close).
    """
    moment = _as_datetime64(as_of)
    resolved = ~np.isnan(questions.resolved_value)
    if moment is None:
        return resolved
    known = np.isnat(questions.resolved_at) | (questions.resolved_at <= moment)
    closed = np.isnat(questions.scheduled_close_at) | (questions.scheduled_close_at <= moment)
    return resolved & known & closed


def open_questions(
    questions: Questions, as_of: datetime | np.datetime64 | None
) -> NDArray[np.bool_]:
    """Questions without a known result at ``as_of`` (and not voided): the proxy's domain."""
    moment = _as_datetime64(as_of)
    unknown = np.isnat(questions.resolved_at)
    if moment is None:
        return unknown & np.isnan(questions.resolved_value)
    return np.where(unknown, np.isnan(questions.resolved_value), questions.resolved_at > moment)


@dataclass(frozen=True, eq=False)
class Panel:
    """One entry (cell) per forecaster and question; scores are means over the cell's forecasts.

    ``brier`` and ``log_score`` (natural log of the probability given to what happened, clipped
    to [0.001, 0.999]) are NaN for unresolved questions. ``logit`` is the mean clipped logit of
    the cell's forecasts, the cell's vote in a logit pool. ``row_cell`` maps forecast rows to
    cells.
    """

    forecasters: list[str]
    forecaster: NDArray[np.int64]
    question: NDArray[np.int64]
    probability: NDArray[np.float64]
    logit: NDArray[np.float64]
    brier: NDArray[np.float64]
    log_score: NDArray[np.float64]
    row_cell: NDArray[np.int64]
    forecaster_first_at: NDArray[np.datetime64]

    def __len__(self) -> int:
        return int(self.forecaster.shape[0])


def build_panel(forecasts: Forecasts, questions: Questions, by: str = "family") -> Panel:
    """Collapse forecast rows into forecaster x question cells (``by``: family or agent)."""
    forecaster_codes, names = factorize(
        forecasts.coded["family_id" if by == "family" else "agent_id"]
    )
    order = np.argsort(np.array(names, dtype=object), kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    forecaster_codes = rank[forecaster_codes]
    names = [names[i] for i in order]
    row_cell, first = group_ids(forecaster_codes, questions.row_question)
    n_cells = len(first)
    counts = np.bincount(row_cell, minlength=n_cells)
    outcome = questions.resolved_value[questions.row_question]
    p = forecasts.probability
    clipped = np.clip(p, LOG_EPS, 1.0 - LOG_EPS)
    brier = (p - outcome) ** 2
    log_score = np.log(np.where(outcome == 1.0, clipped, 1.0 - clipped))
    log_score[np.isnan(outcome)] = np.nan

    def cell_mean(values: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.bincount(row_cell, weights=values, minlength=n_cells) / counts

    first_at = np.full(len(names), np.datetime64("NaT"), dtype="datetime64[us]")
    stamps = forecasts.forecast_at.astype(np.int64)
    minimum = np.full(len(names), np.iinfo(np.int64).max)
    np.minimum.at(minimum, forecaster_codes, stamps)
    present = minimum != np.iinfo(np.int64).max
    first_at[present] = minimum[present].astype("datetime64[us]")
    return Panel(
        forecasters=names,
        forecaster=forecaster_codes[first],
        question=questions.row_question[first],
        probability=cell_mean(p),
        logit=cell_mean(np.log(clipped / (1.0 - clipped))),
        brier=cell_mean(brier),
        log_score=cell_mean(log_score),
        row_cell=row_cell,
        forecaster_first_at=first_at,
    )


def _as_datetime64(value: datetime | np.datetime64 | None) -> np.datetime64 | None:
    if value is None:
        return None
    if isinstance(value, np.datetime64):
        return value.astype("datetime64[us]")
    return to_datetime64(value)


def _first_present(
    values: NDArray[np.object_], row_question: NDArray[np.int64], first: NDArray[np.int64]
) -> NDArray[np.object_]:
    out = values[first].copy()
    missing = np.array([value is None for value in out], dtype=bool)
    if missing.any():
        for row in np.flatnonzero(np.array([v is not None for v in values], dtype=bool)):
            question = row_question[row]
            if out[question] is None:
                out[question] = values[row]
    return out


def _latest(
    times: NDArray[np.datetime64], row_question: NDArray[np.int64], n: int
) -> NDArray[np.datetime64]:
    """Per question, the latest non-missing time of its rows (rows exported later know more)."""
    stamps = times.astype(np.int64)
    valid = ~np.isnat(times)
    best = np.full(n, np.iinfo(np.int64).min)
    np.maximum.at(best, row_question[valid], stamps[valid])
    out = best.astype("datetime64[us]")
    out[best == np.iinfo(np.int64).min] = np.datetime64("NaT")
    return out


def _latest_value(
    forecasts: Forecasts, row_question: NDArray[np.int64], n: int
) -> NDArray[np.float64]:
    """Per question, the result (NaN if no row carries one)."""
    values = forecasts.resolved_value
    out = np.full(n, np.nan)
    valid = ~np.isnan(values)
    out[row_question[valid]] = values[valid]
    return out
