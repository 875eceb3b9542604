"""The full analysis of a forecast set, as plain JSON-serialisable dicts.

``ranking``, ``head_to_head``, ``proxy_ranking`` and ``calibration_report`` each take a
:class:`~arena.analytics.records.Forecasts` and :class:`AnalysisOptions`; ``full_analysis``
runs them all. Only *scorable* questions count in the resolution-based parts (resolved with a
0/1 result and past their scheduled close at ``as_of``, see
:func:`arena.analytics.questions.scorable`); the proxy covers questions still open at ``as_of``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.calibration import Calibration, calibrate
from arena.analytics.difficulty import difficulty_adjusted, provisional
from arena.analytics.proxy import proxy_scores
from arena.analytics.questions import (
    Panel,
    Questions,
    build_panel,
    default_as_of,
    index_questions,
    open_questions,
    scorable,
)
from arena.analytics.records import Forecasts, ForecastsError, to_datetime, to_datetime64
from arena.analytics.significance import (
    head_to_head_scores,
    peer_scores,
    weighted_bootstrap_interval,
    weighted_mean,
    weighted_t_interval,
)
from arena.analytics.weights import question_weights

MARKET_REFERENCE = "(market)"


@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analysis; defaults follow the methodology (see each module)."""

    as_of: datetime | None = None
    by: str = "family"
    sources: tuple[str, ...] = ("panel",)
    market_weight: float = 1.0
    group_weights: bool = True
    repeat_weights: bool = True
    min_days: float = 50.0
    min_questions: int = 30
    confidence: float = 0.95
    bootstrap_resamples: int = 10_000
    seed: int = 0
    n_bins: int = 10
    h2h_score: str = "log"
    proxy_include_baselines: bool = False
    proxy_include_resolved: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The options as recorded in every report."""
        return _clean(asdict(self))


@dataclass(frozen=True, eq=False)
class Prepared:
    """Questions, panel, weights and the scorable mask shared by every part of the analysis."""

    forecasts: Forecasts
    questions: Questions
    panel: Panel
    weights: NDArray[np.float64]
    scorable: NDArray[np.bool_]
    as_of: np.datetime64


def prepare(forecasts: Forecasts, options: AnalysisOptions) -> Prepared:
    """Index questions, build the panel, weigh questions and find the scorable ones."""
    forecasts = forecasts.from_sources(options.sources)
    if len(forecasts) == 0:
        raise ForecastsError(f"no forecasts to analyse (sources: {', '.join(options.sources)})")
    as_of = to_datetime64(options.as_of) if options.as_of else default_as_of(forecasts)
    questions = index_questions(forecasts)
    panel = build_panel(forecasts, questions, by=options.by)
    weights = question_weights(
        questions, groups=options.group_weights, repeats=options.repeat_weights
    )
    return Prepared(forecasts, questions, panel, weights, scorable(questions, as_of), as_of)


def ranking(forecasts: Forecasts, options: AnalysisOptions, prep: Prepared | None = None) -> dict:
    """Difficulty-adjusted Brier leaderboard with intervals and provisional flags."""
    prep = prep or prepare(forecasts, options)
    panel, questions = prep.panel, prep.questions
    cells = np.flatnonzero(prep.scorable[panel.question])
    n_f = len(panel.forecasters)
    f, q, brier = panel.forecaster[cells], panel.question[cells], panel.brier[cells]
    market_brier = (questions.market_probability - questions.resolved_value) ** 2
    result = difficulty_adjusted(
        f,
        q,
        brier,
        n_f,
        len(questions),
        market_brier=market_brier,
        market_weight=options.market_weight,
        question_weight=prep.weights,
    )
    cell_w = prep.weights[q]
    peers = peer_scores(q, panel.log_score[cells])
    is_provisional = provisional(
        panel.forecaster_first_at,
        result.n_questions,
        prep.as_of,
        min_days=options.min_days,
        min_questions=options.min_questions,
    )
    rows = []
    for i, (name, mine) in enumerate(zip(panel.forecasters, _slices(f, n_f), strict=True)):
        t = weighted_t_interval(result.cell_adjusted[mine], cell_w[mine], options.confidence)
        row: dict[str, Any] = {
            "forecaster": name,
            "n_questions": int(result.n_questions[i]),
            "weight_sum": result.weight_sum[i],
            "brier": result.standard[i],
            "adjusted_brier": result.adjusted[i],
            "ci_low": t.low,
            "ci_high": t.high,
            "peer_score": _masked_mean(peers[mine], cell_w[mine]),
            "provisional": bool(is_provisional[i]),
            "first_forecast_at": to_datetime(panel.forecaster_first_at[i]),
            "component": int(result.fit.forecaster_component[i]) if len(mine) else None,
            "reference": False,
        }
        if options.bootstrap_resamples > 0:
            boot = weighted_bootstrap_interval(
                result.cell_adjusted[mine],
                cell_w[mine],
                confidence=options.confidence,
                resamples=options.bootstrap_resamples,
                seed=options.seed,
            )
            row["bootstrap_low"], row["bootstrap_high"] = boot.low, boot.high
        rows.append(row)
    rows.append(_market_row(prep, result.gamma, result.shift, market_brier))
    rows.sort(key=lambda r: (_is_nan(r["adjusted_brier"]), _sort_value(r["adjusted_brier"])))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return _clean(
        {
            "kind": "difficulty_adjusted_brier",
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "n_scored_questions": int(np.unique(q).size),
            "n_components": result.fit.n_components,
            "shift": result.shift,
            "rows": rows,
        }
    )


def head_to_head(
    forecasts: Forecasts,
    a: str,
    b: str,
    options: AnalysisOptions,
    prep: Prepared | None = None,
) -> dict:
    """Head-to-head of ``a`` against ``b`` on their common scorable questions."""
    prep = prep or prepare(forecasts, options)
    panel = prep.panel
    for name in (a, b):
        if name not in panel.forecasters:
            raise ForecastsError(
                f"unknown forecaster {name!r}; known: {', '.join(panel.forecasters)}"
            )
    ia, ib = panel.forecasters.index(a), panel.forecasters.index(b)
    score = panel.log_score if options.h2h_score == "log" else panel.brier
    ok = prep.scorable[panel.question]

    def by_question(forecaster: int) -> NDArray[np.float64]:
        values = np.full(len(prep.questions), np.nan)
        mine = ok & (panel.forecaster == forecaster)
        values[panel.question[mine]] = score[mine]
        return values

    score_a, score_b = by_question(ia), by_question(ib)
    common = np.flatnonzero(~np.isnan(score_a) & ~np.isnan(score_b))
    values = head_to_head_scores(score_a[common], score_b[common], options.h2h_score)
    w = prep.weights[common]
    t = weighted_t_interval(values, w, options.confidence)
    report: dict[str, Any] = {
        "kind": "head_to_head",
        "a": a,
        "b": b,
        "score": options.h2h_score,
        "as_of": to_datetime(prep.as_of),
        "options": options.to_dict(),
        "n_questions": len(common),
        "weight_sum": float(np.sum(w)),
        "mean": t.mean,
        "t_test": asdict(t),
        "verdict": _verdict(a, b, t.low, t.high, options.confidence),
    }
    if options.bootstrap_resamples > 0:
        boot = weighted_bootstrap_interval(
            values,
            w,
            confidence=options.confidence,
            resamples=options.bootstrap_resamples,
            seed=options.seed,
        )
        report["bootstrap"] = asdict(boot)
    return _clean(report)


def proxy_ranking(
    forecasts: Forecasts, options: AnalysisOptions, prep: Prepared | None = None
) -> dict:
    """Early ranking on open questions by proxy score (seed 002); clearly a proxy."""
    prep = prep or prepare(forecasts, options)
    panel, questions = prep.panel, prep.questions
    domain = np.ones(len(questions), dtype=bool)
    if not options.proxy_include_resolved:
        domain = open_questions(questions, prep.as_of)
    voters = np.ones(len(panel.forecasters), dtype=bool)
    if not options.proxy_include_baselines:
        voters = ~_baseline_forecasters(prep)
    cells = np.flatnonzero(domain[panel.question] & voters[panel.forecaster])
    position = np.full(len(panel), -1, dtype=np.int64)
    position[cells] = np.arange(len(cells))
    rows_in = position[panel.row_cell]
    keep = rows_in >= 0
    week_values, week_of_question = np.unique(questions.week_start, return_inverse=True)
    scores = proxy_scores(
        panel.forecaster[cells],
        panel.question[cells],
        panel.logit[cells],
        rows_in[keep],
        prep.forecasts.probability[keep],
        week_of_question.reshape(-1).astype(np.int64),
        len(panel.forecasters),
    )
    rows = [
        {
            "forecaster": name,
            "mean_z": scores.mean_z[i],
            "n_weeks": int(scores.n_weeks[i]),
            "n_questions": int(scores.n_questions[i]),
        }
        for i, name in enumerate(panel.forecasters)
        if voters[i] and scores.n_questions[i] > 0
    ]
    rows.sort(key=lambda r: (_is_nan(r["mean_z"]), _sort_value(r["mean_z"])))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    weeks = [
        {
            "week_start": to_datetime(week_values[scores.week_index[k]]),
            "forecaster": panel.forecasters[scores.week_family[k]],
            "n_questions": int(scores.week_questions[k]),
            "proxy_score": scores.week_score[k],
            "z": scores.week_z[k],
        }
        for k in np.lexsort((scores.week_family, scores.week_index))
    ]
    return _clean(
        {
            "kind": "proxy",
            "label": "PROXY ranking: agreement with the other families' extremized consensus "
            "on unresolved questions, not accuracy against outcomes",
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "rows": rows,
            "weeks": weeks,
        }
    )


def calibration_results(
    forecasts: Forecasts, options: AnalysisOptions, prep: Prepared | None = None
) -> list[Calibration]:
    """Calibration per forecaster over every resolved, scorable forecast row."""
    prep = prep or prepare(forecasts, options)
    panel = prep.panel
    row_forecaster = panel.forecaster[panel.row_cell]
    row_ok = prep.scorable[prep.questions.row_question]
    outcome = prep.questions.resolved_value[prep.questions.row_question]
    results = []
    selected = np.flatnonzero(row_ok)
    groups = _slices(row_forecaster[selected], len(panel.forecasters))
    for name, positions in zip(panel.forecasters, groups, strict=True):
        mine = selected[positions]
        results.append(
            calibrate(prep.forecasts.probability[mine], outcome[mine], options.n_bins, name)
        )
    return results


def calibration_report(
    forecasts: Forecasts, options: AnalysisOptions, prep: Prepared | None = None
) -> dict:
    """Calibration per forecaster as a dict."""
    prep = prep or prepare(forecasts, options)
    results = calibration_results(forecasts, options, prep)
    return _clean(
        {
            "kind": "calibration",
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "rows": [r.to_dict() for r in results if r.n > 0],
        }
    )


def full_analysis(
    forecasts: Forecasts, options: AnalysisOptions, pair: tuple[str, str] | None = None
) -> dict:
    """Ranking, proxy ranking, calibration and (for ``pair``) head-to-head in one dict."""
    prep = prepare(forecasts, options)
    report = {
        "ranking": ranking(forecasts, options, prep),
        "proxy": proxy_ranking(forecasts, options, prep),
        "calibration": calibration_report(forecasts, options, prep),
    }
    if pair is not None:
        report["head_to_head"] = head_to_head(forecasts, pair[0], pair[1], options, prep)
    return report


def _market_row(
    prep: Prepared, gamma: NDArray[np.float64], shift: float, market_brier: NDArray[np.float64]
) -> dict[str, Any]:
    """The market's own forecasts as a reference row (scored like a forecaster)."""
    priced = prep.scorable & ~np.isnan(market_brier) & ~np.isnan(gamma)
    w = prep.weights[priced]
    adjusted = market_brier[priced] - gamma[priced] + shift
    return {
        "forecaster": MARKET_REFERENCE,
        "n_questions": int(priced.sum()),
        "weight_sum": float(np.sum(w)),
        "brier": weighted_mean(market_brier[priced], w),
        "adjusted_brier": weighted_mean(adjusted, w),
        "ci_low": None,
        "ci_high": None,
        "peer_score": None,
        "provisional": False,
        "first_forecast_at": None,
        "component": None,
        "reference": True,
    }


def _slices(labels: NDArray[np.int64], n: int) -> list[NDArray[np.int64]]:
    """For each label 0..n-1, the positions holding it (one sort instead of n scans)."""
    order = np.argsort(labels, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(labels, minlength=n))]
    return [order[bounds[i] : bounds[i + 1]] for i in range(n)]


def _baseline_forecasters(prep: Prepared) -> NDArray[np.bool_]:
    panel = prep.panel
    kinds = prep.forecasts.family_kind
    is_baseline = np.zeros(len(panel.forecasters), dtype=bool)
    row_forecaster = panel.forecaster[panel.row_cell]
    marked = np.array([kind == "baseline" for kind in kinds], dtype=bool)
    is_baseline[np.unique(row_forecaster[marked])] = True
    return is_baseline


def _masked_mean(values: NDArray[np.float64], weights: NDArray[np.float64]) -> float:
    ok = ~np.isnan(values)
    return weighted_mean(values[ok], weights[ok]) if ok.any() else float("nan")


def _verdict(a: str, b: str, low: float, high: float, confidence: float) -> str:
    level = f"{confidence:.0%}"
    if _is_nan(low) or _is_nan(high):
        return "not enough common questions for an interval"
    if low > 0:
        return f"{a} more accurate than {b} ({level} interval above 0)"
    if high < 0:
        return f"{b} more accurate than {a} ({level} interval below 0)"
    return f"no significant difference at {level}"


def _is_nan(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _sort_value(value: Any) -> float:
    return 0.0 if _is_nan(value) else float(value)


def _clean(value: Any) -> Any:
    """Numpy scalars to Python, NaN/inf to None, datetimes to ISO strings, recursively."""
    if isinstance(value, dict):
        return {key: _clean(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return value
