"""The full analysis of a forecast set, as plain JSON-serialisable dicts.

``ranking``, ``head_to_head``, ``proxy_ranking`` and ``calibration_report`` each take the
forecasts (:class:`~arena.analytics.records.Forecasts` or a pandas DataFrame of the export's
columns), :class:`AnalysisOptions` and an ``at`` instant; ``full_analysis`` runs them all. Each
sees only the data known at ``as_of`` (:func:`arena.analytics.options.prepare`). Only *scorable*
questions count in the resolution-based parts (resolved with a 0/1 result and past their
scheduled close at ``as_of``, see :func:`arena.analytics.questions.scorable`); the proxy covers
questions still open at ``as_of``.

Every interval is cluster-robust: questions that share a market (weekly repeats) or an event
group are one cluster (:func:`arena.analytics.weights.cluster_labels`), and an interval needs at
least ``min_clusters`` clusters; below that it is reported as insufficient, never ranked.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from datetime import datetime
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.calibration import BIN_RULE, Calibration, calibrate
from arena.analytics.difficulty import (
    Cells,
    DifficultyAdjusted,
    FitScope,
    difficulty_adjusted,
    provisional,
)
from arena.analytics.market import market_rows
from arena.analytics.options import (
    AnalysisOptions,
    Prepared,
    clean,
    cluster_intervals,
    cluster_t,
    configured_options,
    is_nan,
    prepare,
    slices,
    sort_value,
    with_at,
)
from arena.analytics.ordering import (
    POWER_ASSUMPTIONS,
    RANK_SAMPLE,
    JointResamples,
    bootstrap_bounds,
    joint_cluster_bootstrap,
    rank_probabilities,
    weeks_to_separate,
)
from arena.analytics.proxy_report import proxy_ranking
from arena.analytics.questions import Panel, factorize
from arena.analytics.records import to_datetime
from arena.analytics.replicate_split import replicate_split
from arena.analytics.significance import (
    INSUFFICIENT,
    OK,
    head_to_head_scores,
    peer_scores,
    sign_test,
    weighted_mean,
)
from arena.errors import ForecastsError

__all__ = [
    "AnalysisOptions",
    "Prepared",
    "against_market",
    "calibration_report",
    "calibration_results",
    "configured_options",
    "difference",
    "forecaster_labels",
    "full_analysis",
    "head_to_head",
    "label_rows",
    "power",
    "prepare",
    "proxy_ranking",
    "ranking",
    "replicates",
]

MARKET_REFERENCE = "(market)"
RANKING_SAMPLE = (
    "n counts scored questions (one market outcome in one week): a question a family answered "
    "from several cohorts counts once, at the mean of its agents' forecasts"
)
DROPPED_REASON = (
    "answered only by forecasters left out of the fit (fit_exclude) and without a market "
    "price to set the difficulty at market weight 1: no difficulty, so not scored"
)
MARKET_SAMPLE = (
    "alpha and the return count scored questions with the price the forecaster was shown; the "
    "copy index counts every question with a price, resolved or not"
)
CALIBRATION_SAMPLE = (
    "n counts scored forecast rows: every agent's forecast of a question counts, so a family "
    "with agents in several cohorts has more rows than the ranking has questions"
)


def brier_bound(bound: float, score: float) -> float:
    """An interval bound of a Brier score kept in the score's range [0, 1] (widened to the
    score itself when a difficulty-adjusted score falls outside it): a symmetric t or bootstrap
    interval near 0 would otherwise reach below 0, where no Brier score lies."""
    return min(max(bound, min(0.0, score)), max(1.0, score))


def forecaster_labels(forecasts: Any, by: str, display_names: dict[str, str]) -> dict[str, str]:
    """The name people read for each forecaster: a family's display name (``display_names``,
    by family id; the id when it has none), or for an agent its family's name and cohort
    (``GPT-5 · cohort 3``). Reports keep the ids; this labels them for tables."""
    labels: dict[str, str] = {}
    columns = (forecasts.family_id, forecasts.agent_id, forecasts.cohort_id)
    for family_id, agent_id, cohort_id in zip(*columns, strict=True):
        name = display_names.get(str(family_id)) or str(family_id)
        if by == "family":
            labels[str(family_id)] = name
        else:
            labels[str(agent_id)] = f"{name} · cohort {cohort_id}"
    return labels


def label_rows(report: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """``report`` with a ``display_name`` on each row whose forecaster ``labels`` names."""
    for row in report.get("rows", []):
        if row["forecaster"] in labels:
            row["display_name"] = labels[row["forecaster"]]
    return report


def ranking(
    forecasts: Any,
    options: AnalysisOptions | None = None,
    prep: Prepared | None = None,
    *,
    at: datetime | None = None,
) -> dict:
    """Difficulty-adjusted Brier leaderboard with cluster-robust intervals, provisional flags,
    and intervals for the difference between neighbours in the ranking."""
    options = with_at(options, at)
    prep = prep or prepare(forecasts, options)
    panel, questions = prep.panel, prep.questions
    cells = np.flatnonzero(prep.scorable[panel.question])
    n_f = len(panel.forecasters)
    f, q = panel.forecaster[cells], panel.question[cells]
    market_brier = (questions.market_probability - questions.resolved_value) ** 2
    result = fit_difficulty(prep, options, cells)
    cells, f, q = cells[result.scored], f[result.scored], q[result.scored]
    cell_adjusted, component = result.cell_adjusted[result.scored], result.forecaster_component
    cell_w, cell_c = prep.weights[q], prep.clusters[q]
    peers = peer_scores(q, panel.log_score[cells])
    is_provisional = provisional(
        panel.forecaster_first_at,
        result.n_questions,
        prep.as_of,
        min_days=options.min_days,
        min_questions=options.min_questions,
    )
    joint = joint_cluster_bootstrap(
        Cells(f, q, cell_adjusted, n_f, len(questions)),
        cell_w,
        cell_c,
        resamples=options.bootstrap_resamples,
        seed=options.seed,
    )
    rows = []
    for i, (name, mine) in enumerate(zip(panel.forecasters, slices(f, n_f), strict=True)):
        t, interval, reason = cluster_t(cell_adjusted[mine], cell_w[mine], cell_c[mine], options)
        ok = interval == OK
        score = result.adjusted[i]
        boot_low, boot_high = (
            bootstrap_bounds(joint, i, score, options.confidence) if ok else (math.nan, math.nan)
        )
        enough = len(mine) > 0 and t.n_clusters >= options.min_clusters
        rows.append(
            {
                "forecaster": name,
                "status": OK if enough else INSUFFICIENT,
                "reason": None
                if enough
                else f"fewer than {options.min_clusters} independent clusters of scored questions",
                "interval_status": interval,
                "interval_reason": reason,
                "n_questions": int(result.n_questions[i]),
                "n_clusters": t.n_clusters,
                "weight_sum": result.weight_sum[i],
                "brier": result.standard[i],
                "adjusted_brier": result.adjusted[i],
                "ci_low": brier_bound(t.low, score) if ok else None,
                "ci_high": brier_bound(t.high, score) if ok else None,
                "bootstrap_low": brier_bound(boot_low, score) if ok else None,
                "bootstrap_high": brier_bound(boot_high, score) if ok else None,
                "peer_score": _masked_mean(peers[mine], cell_w[mine]),
                "provisional": bool(is_provisional[i]),
                "first_forecast_at": to_datetime(panel.forecaster_first_at[i]),
                "component": int(component[i]) if component[i] >= 0 else None,
                "reference": False,
                "index": i,
            }
        )
    rows.append(_market_row(prep, result.gamma, result.shift, market_brier))
    ranked = [r for r in rows if r["status"] == OK]
    ranked.sort(key=lambda r: (is_nan(r["adjusted_brier"]), sort_value(r["adjusted_brier"])))
    for rank, row in enumerate(ranked, start=1):
        row["rank"] = rank
    unranked = [r for r in rows if r["status"] != OK]
    for row in unranked:
        row["rank"] = None
    _add_rank_probabilities(rows, joint)
    return clean(
        {
            "kind": "difficulty_adjusted_brier",
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "resampling": options.resampling(),
            "n_scored_questions": int(np.unique(q).size),
            "n_clusters": int(np.unique(cell_c).size),
            "n_components": result.n_components,
            "shift": result.shift,
            "dropped_questions": result.n_dropped,
            "dropped_reason": DROPPED_REASON if result.n_dropped else None,
            "sample": RANKING_SAMPLE,
            "rank_sample": RANK_SAMPLE,
            "rows": ranked + unranked,
            "differences": _neighbour_differences(ranked, prep, options),
        }
    )


def against_market(
    forecasts: Any,
    options: AnalysisOptions | None = None,
    prep: Prepared | None = None,
    *,
    at: datetime | None = None,
) -> dict:
    """Skill against the market per forecaster: alpha (Brier and log), the market-copy index
    and the return against the odds before and after the fee (:mod:`arena.analytics.market`)."""
    options = with_at(options, at)
    prep = prep or prepare(forecasts, options)
    return clean(
        {
            "kind": "against_market",
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "resampling": options.resampling(),
            "sample": MARKET_SAMPLE,
            "rows": market_rows(prep, options),
        }
    )


def power(
    forecasts: Any,
    options: AnalysisOptions | None = None,
    prep: Prepared | None = None,
    *,
    at: datetime | None = None,
    ranked: dict | None = None,
) -> dict:
    """Weeks to separate each adjacent pair of the ranking (:mod:`arena.analytics.ordering`);
    ``ranked`` is the :func:`ranking` of the same data, computed when not given."""
    options = with_at(options, at)
    prep = prep or prepare(forecasts, options)
    ranked = ranked or ranking(forecasts, options, prep)
    rows = []
    for item in ranked["differences"]:
        ok = item["status"] == OK
        more = (
            weeks_to_separate(item["mean"], item["se"], item["weeks_seen"], item["separated"])
            if ok
            else {"more_weeks": None, "weeks_needed": None, "verdict": INSUFFICIENT}
        )
        rows.append(
            {
                "a": item["upper"],
                "b": item["lower"],
                "delta": item["mean"] if ok else INSUFFICIENT,
                "se": item["se"] if ok else INSUFFICIENT,
                "weeks_seen": item["weeks_seen"],
                "separated": bool(item["separated"]),
                "n_questions": item["n_questions"],
                "n_clusters": item["n_clusters"],
                **more,
            }
        )
    return clean(
        {
            "kind": "weeks_to_separate",
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "assumptions": POWER_ASSUMPTIONS,
            "rows": rows,
        }
    )


def _add_rank_probabilities(rows: list[dict[str, Any]], joint: JointResamples) -> None:
    """``p_rank_1``, ``p_top_3``, ``rank_low`` and ``rank_high`` of each ranked forecaster from
    the joint resamples (:mod:`arena.analytics.ordering`); None for the others."""
    ranked = [r for r in rows if r["status"] == OK and not r["reference"]]
    columns = [r["index"] for r in ranked]
    for row, found in zip(ranked, rank_probabilities(joint.means[:, columns]), strict=True):
        row.update(found)
    for row in rows:
        row.pop("index", None)
        for key in ("p_rank_1", "p_top_3", "rank_low", "rank_high"):
            row.setdefault(key, None)


def _neighbour_differences(
    ranked: list[dict[str, Any]], prep: Prepared, options: AnalysisOptions
) -> list[dict[str, Any]]:
    """:func:`difference` of each ranked forecaster and the next one down the ranking."""
    order = [r["forecaster"] for r in ranked if not r["reference"]]
    return [_difference(prep, upper, lower, options) for upper, lower in pairwise(order)]


def difference(
    forecasts: Any,
    a: str,
    b: str,
    options: AnalysisOptions | None = None,
    prep: Prepared | None = None,
    *,
    at: datetime | None = None,
) -> dict:
    """Mean Brier of ``a`` minus mean Brier of ``b`` on their common scorable questions
    (negative: ``a`` more accurate), with cluster-robust t and cluster bootstrap intervals.
    Question difficulty cancels on common questions, so this is also the difference of their
    difficulty-adjusted scores there."""
    options = with_at(options, at)
    prep = prep or prepare(forecasts, options)
    return clean(
        {
            "kind": "brier_difference",
            "as_of": to_datetime(prep.as_of),
            "resampling": options.resampling(),
            **_difference(prep, a, b, options),
        }
    )


def _difference(prep: Prepared, upper: str, lower: str, options: AnalysisOptions) -> dict:
    common, score_a, score_b = _common(prep, upper, lower, prep.panel.brier)
    item: dict[str, Any] = {"upper": upper, "lower": lower, "n_questions": len(common)}
    t, boot, status, reason = cluster_intervals(
        score_a - score_b, prep.weights[common], prep.clusters[common], options
    )
    ok = status == OK
    weeks = int(np.unique(prep.questions.week_start[common]).size)
    item.update(
        status=status,
        reason=reason,
        n_clusters=t.n_clusters,
        mean=t.mean,
        se=t.se if ok else None,
        weeks_seen=weeks,
        ci_low=t.low if ok else None,
        ci_high=t.high if ok else None,
        bootstrap_low=boot.low if ok else None,
        bootstrap_high=boot.high if ok else None,
        separated=ok and (t.low > 0 or t.high < 0),
    )
    return item


def _common(
    prep: Prepared, a: str, b: str, score: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """The scorable questions both ``a`` and ``b`` answered, and each one's score on them."""
    panel = prep.panel
    _check_known(panel, (a, b))
    ok = prep.scorable[panel.question]

    def by_question(name: str) -> NDArray[np.float64]:
        values = np.full(len(prep.questions), np.nan)
        mine = ok & (panel.forecaster == panel.forecasters.index(name))
        values[panel.question[mine]] = score[mine]
        return values

    score_a, score_b = by_question(a), by_question(b)
    common = np.flatnonzero(~np.isnan(score_a) & ~np.isnan(score_b))
    return common, score_a[common], score_b[common]


def fit_difficulty(
    prep: Prepared, options: AnalysisOptions, cells: NDArray[np.int64]
) -> DifficultyAdjusted:
    """The difficulty-adjusted scores of the panel ``cells`` (scorable ones), with the
    market's weight, the question weights, the fit sample and the per-type fits of
    ``options``: one fit for the ranking and everything scored with its difficulties."""
    panel, questions = prep.panel, prep.questions
    _check_known(panel, options.fit_exclude)
    in_fit = np.array([name not in options.fit_exclude for name in panel.forecasters], dtype=bool)
    return difficulty_adjusted(
        Cells(
            panel.forecaster[cells],
            panel.question[cells],
            panel.brier[cells],
            len(panel.forecasters),
            len(questions),
        ),
        market_brier=(questions.market_probability - questions.resolved_value) ** 2,
        market_weight=options.market_weight,
        question_weight=prep.weights,
        scope=FitScope(
            in_fit=in_fit,
            question_type=factorize(questions.question_type)[0] if options.fit_by_type else None,
        ),
    )


def _check_known(panel: Panel, names: tuple[str, ...]) -> None:
    """Raise :class:`ForecastsError` for the first of ``names`` the panel does not hold."""
    for name in names:
        if name not in panel.forecasters:
            raise ForecastsError(
                f"unknown forecaster {name!r}; known: {', '.join(panel.forecasters)}"
            )


def head_to_head(
    forecasts: Any,
    a: str,
    b: str,
    options: AnalysisOptions | None = None,
    prep: Prepared | None = None,
    *,
    at: datetime | None = None,
) -> dict:
    """Head-to-head of ``a`` against ``b`` on their common scorable questions."""
    options = with_at(options, at)
    prep = prep or prepare(forecasts, options)
    panel = prep.panel
    score = panel.log_score if options.h2h_score == "log" else panel.brier
    common, score_a, score_b = _common(prep, a, b, score)
    values = head_to_head_scores(score_a, score_b, options.h2h_score)
    w, clusters = prep.weights[common], prep.clusters[common]
    t, boot, status, reason = cluster_intervals(values, w, clusters, options)
    if len(common) < options.min_common_questions:
        status = INSUFFICIENT
        reason = f"{len(common)} common scored questions, fewer than {options.min_common_questions}"
    sign = sign_test(values, w, clusters=clusters)
    return clean(
        {
            "kind": "head_to_head",
            "a": a,
            "b": b,
            "score": options.h2h_score,
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "resampling": options.resampling(),
            "status": status,
            "reason": reason,
            "n_questions": len(common),
            "n_clusters": t.n_clusters,
            "weight_sum": float(np.sum(w)),
            "mean": t.mean,
            "t_test": asdict(t),
            "bootstrap": asdict(boot),
            "sign_test": asdict(sign),
            "verdict": _verdict(a, b, (t.low, t.high), options.confidence, status, reason),
        }
    )


def calibration_results(
    forecasts: Any, options: AnalysisOptions | None = None, prep: Prepared | None = None
) -> list[Calibration]:
    """Calibration per forecaster over every resolved, scorable forecast row."""
    options = with_at(options, None)
    prep = prep or prepare(forecasts, options)
    panel = prep.panel
    row_forecaster = panel.forecaster[panel.row_cell]
    row_ok = prep.scorable[prep.questions.row_question]
    outcome = prep.questions.resolved_value[prep.questions.row_question]
    results = []
    selected = np.flatnonzero(row_ok)
    groups = slices(row_forecaster[selected], len(panel.forecasters))
    probability = prep.forecasts.probability  # decoded once, not per forecaster
    for name, positions in zip(panel.forecasters, groups, strict=True):
        mine = selected[positions]
        results.append(calibrate(probability[mine], outcome[mine], options.n_bins, name))
    return results


def replicates(
    forecasts: Any,
    options: AnalysisOptions | None = None,
    prep: Prepared | None = None,
    *,
    at: datetime | None = None,
) -> dict:
    """Skill or the luck of a run (:func:`arena.analytics.replicate_split.replicate_split`): each
    family's replicates' mean raw Brier and spread, the variance between and within families,
    the intraclass correlation and the adjacent families too close to order."""
    options = with_at(options, at)
    return replicate_split(prep or prepare(forecasts, options), options)


def calibration_report(
    forecasts: Any,
    options: AnalysisOptions | None = None,
    prep: Prepared | None = None,
    *,
    at: datetime | None = None,
) -> dict:
    """Calibration per forecaster as a dict."""
    options = with_at(options, at)
    prep = prep or prepare(forecasts, options)
    results = calibration_results(forecasts, options, prep)
    return clean(
        {
            "kind": "calibration",
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "sample": CALIBRATION_SAMPLE,
            "bin_rule": BIN_RULE,
            "rows": [r.to_dict() for r in results if r.n > 0],
        }
    )


def full_analysis(
    forecasts: Any,
    options: AnalysisOptions | None = None,
    pair: tuple[str, str] | None = None,
    *,
    at: datetime | None = None,
) -> dict:
    """Ranking, skill against the market, weeks to separate, proxy ranking, calibration, the
    split of the agents' variance between and within families
    (:mod:`arena.analytics.replicate_split`) and (for ``pair``) head-to-head in one dict."""
    options = with_at(options, at)
    prep = prepare(forecasts, options)
    ranked = ranking(forecasts, options, prep)
    report = {
        "resampling": options.resampling(),
        "ranking": ranked,
        "market": against_market(forecasts, options, prep),
        "power": power(forecasts, options, prep, ranked=ranked),
        "proxy": proxy_ranking(forecasts, options, prep),
        "calibration": calibration_report(forecasts, options, prep),
        "replicates": replicates(forecasts, options, prep),
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
        "status": OK if priced.any() else INSUFFICIENT,
        "reason": None if priced.any() else "no scored question with a price",
        "interval_status": None,
        "interval_reason": "reference row: no interval",
        "n_questions": int(priced.sum()),
        "n_clusters": int(np.unique(prep.clusters[priced]).size),
        "weight_sum": float(np.sum(w)),
        "brier": weighted_mean(market_brier[priced], w) if priced.any() else None,
        "adjusted_brier": weighted_mean(adjusted, w) if priced.any() else None,
        "ci_low": None,
        "ci_high": None,
        "bootstrap_low": None,
        "bootstrap_high": None,
        "peer_score": None,
        "provisional": False,
        "first_forecast_at": None,
        "component": None,
        "reference": True,
    }


def _masked_mean(values: NDArray[np.float64], weights: NDArray[np.float64]) -> float:
    ok = ~np.isnan(values)
    return weighted_mean(values[ok], weights[ok]) if ok.any() else float("nan")


def _verdict(
    a: str,
    b: str,
    interval: tuple[float, float],
    confidence: float,
    status: str,
    reason: str | None,
) -> str:
    """The head-to-head's conclusion from the interval (low, high) of A's advantage."""
    low, high = interval
    level = f"{confidence:.0%}"
    if status != OK:
        return f"insufficient data for a comparison: {reason}"
    if low > 0:
        return f"{a} more accurate than {b} ({level} interval above 0)"
    if high < 0:
        return f"{b} more accurate than {a} ({level} interval below 0)"
    return f"no significant difference at {level}"
