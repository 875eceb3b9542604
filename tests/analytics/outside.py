"""The research measures recomputed with outside code (issue 24, "Verified against outside
code"): statsmodels, scikit-learn and pm-rank where a library computes the measure, a direct
numpy or plain-Python implementation written here where none does. Each ``check_*`` takes any
forecasts (a synthetic tournament or the demo's v2 export) and asserts agreement to
:data:`TOLERANCE` unless a library's own rounding says otherwise (said where it does).

Arena's own code supplies only the *inputs* (which rows, question weights and clusters, and for
the ranking the difficulty-adjusted cell scores, all verified elsewhere); every number compared
is computed here independently.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm
from numpy.typing import NDArray
from pm_rank.data.base import ForecastEvent, ForecastProblem
from pm_rank.model.average_return import AverageReturn
from pm_rank.model.scoring_rule import LogScoringRule, SphericalScoringRule
from sklearn.metrics import log_loss as sklearn_log_loss

from arena.analytics.difficulty import Cells, difficulty_adjusted
from arena.analytics.options import AnalysisOptions, Prepared, prepare
from arena.analytics.report import against_market, calibration_report, ranking

TOLERANCE = 1e-12
LOG_CLIP = 0.001  # arena's clip of every log score: [0.001, 0.999]
PM_RANK_ODDS_CLIP = 5e-3  # pm_rank.data.base.SMOOTH_ODDS_EPS: pm-rank clips odds to [0.005, 0.995]
NOW = datetime(2030, 1, 1, tzinfo=UTC)


def close(a: float, b: float, tolerance: float = TOLERANCE) -> bool:
    return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)


def _frame(prep: Prepared) -> pd.DataFrame:
    """One line per forecast row of the prepared data: forecaster, question, p, m, o, weight
    and cluster of its question, and whether the question is scored."""
    data, questions, panel = prep.forecasts, prep.questions, prep.panel
    question = questions.row_question
    return pd.DataFrame(
        {
            "forecaster": np.array(panel.forecasters, dtype=object)[
                panel.forecaster[panel.row_cell]
            ],
            "question": question,
            "p": data.probability,
            "m": data.market_probability,
            "o": questions.resolved_value[question],
            "weight": prep.weights[question],
            "cluster": prep.clusters[question].astype(str),
            "scored": prep.scorable[question],
        }
    )


# --- alpha against statsmodels ------------------------------------------------------------------


def statsmodels_alpha(d: pd.Series, weight: pd.Series, cluster: pd.Series) -> dict[str, float]:
    """Alpha and its 95% interval as statsmodels gives them: WLS of ``d`` on a constant with the
    question weights, ``cov_type="cluster"``.

    statsmodels' cluster covariance with its defaults ``use_correction=True`` and
    ``df_correction=True`` is exactly the cluster-robust t of
    :mod:`arena.analytics.significance`: the correction factor is ``G/(G-1) * (N-1)/(N-K)``,
    which with the constant alone (K = 1) is ``G/(G-1)``, so
    ``se^2 = G/(G-1) * sum_g u_g^2 / W^2`` (WLS scales rows by ``sqrt(w)``, so a cluster's
    score is ``sum w (x - m)`` and the bread ``1/W``); ``df_correction=True`` with
    ``use_t=True`` takes the t quantiles and p-values on ``G - 1`` degrees of freedom."""
    codes = pd.factorize(cluster)[0]
    fit = sm.WLS(d.to_numpy(), np.ones((len(d), 1)), weights=weight.to_numpy()).fit(
        cov_type="cluster",
        cov_kwds={"groups": codes, "use_correction": True, "df_correction": True},
        use_t=True,
    )
    low, high = fit.conf_int(alpha=0.05)[0]
    return {
        "estimate": float(fit.params[0]),
        "low": float(low),
        "high": float(high),
        "p_value": float(fit.pvalues[0]),
        "n_clusters": len(set(codes)),
    }


def check_alpha(forecasts: Any, options: AnalysisOptions) -> int:
    """Alpha (Brier and log) of every forecaster equals statsmodels' (estimate, interval,
    p-value) to 1e-12. Returns how many intervals were compared."""
    prep = prepare(forecasts, options)
    report = against_market(forecasts, options, prep)
    frame = _frame(prep)
    frame = frame[frame.scored & frame.m.notna()].copy()
    o, p, m = frame.o, frame.p, frame.m
    frame["brier"] = (m - o) ** 2 - (p - o) ** 2
    p_true = np.where(o == 1, p.clip(LOG_CLIP, 1 - LOG_CLIP), 1 - p.clip(LOG_CLIP, 1 - LOG_CLIP))
    m_true = np.where(o == 1, m.clip(LOG_CLIP, 1 - LOG_CLIP), 1 - m.clip(LOG_CLIP, 1 - LOG_CLIP))
    frame["log"] = np.log(p_true) - np.log(m_true)
    # a forecaster's value on a question: the mean over its forecasts of that question
    cells = frame.groupby(["forecaster", "question"], sort=True).agg(
        brier=("brier", "mean"),
        log=("log", "mean"),
        weight=("weight", "first"),
        cluster=("cluster", "first"),
    )
    compared = 0
    for row in report["rows"]:
        if row["forecaster"] not in cells.index.get_level_values(0):
            continue
        mine = cells.loc[row["forecaster"]]
        for key, column in (("alpha_brier", "brier"), ("alpha_log", "log")):
            found = row[key]
            if found == "insufficient":
                continue
            expected = statsmodels_alpha(mine[column], mine.weight, mine.cluster)
            assert found["n_clusters"] == expected["n_clusters"], (row["forecaster"], key)
            for name in ("estimate", "low", "high", "p_value"):
                assert close(found[name], expected[name]), (row["forecaster"], key, name)
            compared += 1
    return compared


# --- return against the odds against pm-rank ----------------------------------------------------


def pm_rank_returns(frame: pd.DataFrame) -> dict[str, float]:
    """pm-rank's risk-neutral average return per forecaster (``AverageReturn`` with
    ``risk_aversion=0``, $1 a question, its default binary reduction): each question is a
    one-option problem (the event) with odds ``m`` and no-odds ``1 - m``; pm-rank buys YES
    where ``p / m > (1 - p) / (1 - m)``, i.e. ``p > m``, else NO, and earns the payout per $1.
    Its score is the gross payout, so the net return is ``score - 1``."""
    problems = []
    for question, rows in frame.groupby("question", sort=True):
        outcome = float(rows.o.iloc[0])
        problems.append(
            ForecastProblem(
                title=f"q{question}",
                problem_id=f"q{question}",
                options=["YES"],
                correct_option_idx=[0] if outcome == 1.0 else [],
                forecasts=[
                    ForecastEvent(
                        forecast_id=f"{question}-{index}",
                        problem_id=f"q{question}",
                        username=str(row.forecaster),
                        timestamp=NOW,
                        probs=[1.0],
                        unnormalized_probs=[float(row.p)],
                        odds=[float(row.m)],
                        no_odds=[1.0 - float(row.m)],
                    )
                    for index, row in enumerate(rows.itertuples())
                ],
                end_time=NOW,
                num_forecasters=len(rows),
            )
        )
    scores, _ranks = AverageReturn(num_money_per_round=1, risk_aversion=0.0).fit(problems)
    return {name: float(score) - 1.0 for name, score in scores.items()}


def check_return(forecasts: Any, options: AnalysisOptions) -> int:
    """The return per $1 against the odds equals pm-rank's risk-neutral average return.

    Compared where pm-rank computes the same thing:

    * one forecast per (forecaster, question): pm-rank keeps only the *last* of a forecaster's
      repeated forecasts of a problem (``_calculate_and_update_earnings`` averages ``[-1]``),
      arena the mean of all of them; the data used here has one (asserted);
    * no question weights (pm-rank's mean is unweighted): ``group_weights`` and
      ``repeat_weights`` off;
    * prices in [0.005, 0.995]: pm-rank clips odds to that range (``SMOOTH_ODDS_EPS``), so rows
      priced outside it are left out of both;
    * ``p != m``: at ``p == m`` arena makes no bet, pm-rank's tie goes to YES; such rows are
      left out of both.
    """
    options = replace(options, group_weights=False, repeat_weights=False)
    prep = prepare(forecasts, options)
    frame = _frame(prep)
    keep = (
        frame.scored
        & frame.m.between(PM_RANK_ODDS_CLIP, 1 - PM_RANK_ODDS_CLIP)
        & (frame.p != frame.m)
    ).to_numpy()
    assert not frame[keep].duplicated(["forecaster", "question"]).any()
    subset = prep.forecasts.select(keep)
    report = against_market(subset, options)
    expected = pm_rank_returns(frame[keep])
    compared = 0
    for row in report["rows"]:
        found = row["return_per_dollar"]
        if found == "insufficient":
            continue
        assert close(found["estimate"], expected[row["forecaster"]]), row["forecaster"]
        compared += 1
    return compared


# --- log loss, spherical score, ACE and MCE -----------------------------------------------------


def _pm_rank_score(rule: Any, p: NDArray[np.float64], o: NDArray[np.float64]) -> float:
    """pm-rank's mean score of binary forecasts (two options, YES then NO)."""
    problems = [
        ForecastProblem(
            title=f"r{i}",
            problem_id=f"r{i}",
            options=["YES", "NO"],
            correct_option_idx=[0] if o[i] == 1.0 else [1],
            forecasts=[
                ForecastEvent(
                    forecast_id=f"r{i}",
                    problem_id=f"r{i}",
                    username="f",
                    timestamp=NOW,
                    probs=[float(p[i]), 1.0 - float(p[i])],
                )
            ],
            end_time=NOW,
            num_forecasters=1,
        )
        for i in range(len(p))
    ]
    scores, _ranks = rule.fit(problems)
    return float(scores["f"])


def direct_mce(p: NDArray[np.float64], o: NDArray[np.float64], n_bins: int) -> float:
    """The largest |mean forecast - observed frequency| over non-empty bins [lo, hi) of equal
    width, the last closed at 1; a plain loop over the forecasts."""
    totals: dict[int, list[float]] = {}
    for probability, outcome in zip(p, o, strict=True):
        k = n_bins - 1
        for b in range(n_bins):
            if b / n_bins <= probability < (b + 1) / n_bins:
                k = b
                break
        slot = totals.setdefault(k, [0.0, 0.0, 0.0])
        slot[0] += probability
        slot[1] += outcome
        slot[2] += 1
    return max(abs(f / n - h / n) for f, h, n in totals.values())


def direct_ace(p: NDArray[np.float64], o: NDArray[np.float64], n_bins: int) -> float:
    """ECE over equal-mass bins: forecasts sorted by probability (ties in row order), cut into
    ``min(n_bins, N)`` consecutive runs, the first ``N mod bins`` of ``ceil(N / bins)``
    forecasts and the rest of ``floor(N / bins)``."""
    order = sorted(range(len(p)), key=lambda i: (p[i], i))
    bins = min(n_bins, len(p))
    size, extra = divmod(len(p), bins)
    total, start = 0.0, 0
    for b in range(bins):
        run = order[start : start + size + (1 if b < extra else 0)]
        start += len(run)
        mean_p = sum(p[i] for i in run) / len(run)
        mean_o = sum(o[i] for i in run) / len(run)
        total += len(run) * abs(mean_p - mean_o)
    assert start == len(p)
    return total / len(p)


def check_calibration(forecasts: Any, options: AnalysisOptions) -> int:
    """Log loss and spherical score against pm-rank and scikit-learn, ACE and MCE against the
    direct implementations above, per forecaster.

    Compared on forecasts inside [0.001, 0.999], where arena's clip of the log score changes
    nothing: pm-rank's ``LogScoringRule(clip_prob=0.001)`` clips only from below
    (``max(p_true, clip)``), and scikit-learn's ``log_loss`` clips at machine epsilon, so
    outside that range the three clip differently by design. Rows outside it are left out of
    every comparison (ACE and MCE included, so all four see the same forecasts)."""
    prep = prepare(forecasts, options)
    frame = _frame(prep)
    keep = (frame.scored & frame.p.between(LOG_CLIP, 1 - LOG_CLIP)).to_numpy()
    report = calibration_report(prep.forecasts.select(keep), options)
    frame = frame[keep]
    compared = 0
    for row in report["rows"]:
        mine = frame[frame.forecaster == row["forecaster"]]
        p, o = mine.p.to_numpy(), mine.o.to_numpy()
        assert row["n"] == len(p)
        log_pm = -_pm_rank_score(LogScoringRule(clip_prob=LOG_CLIP), p, o)
        log_sk = float(sklearn_log_loss(o, p, labels=[0.0, 1.0]))
        spherical = _pm_rank_score(SphericalScoringRule(), p, o)
        assert close(row["log_loss"], log_pm), row["forecaster"]
        assert close(row["log_loss"], log_sk), row["forecaster"]
        assert close(row["spherical"], spherical), row["forecaster"]
        assert close(row["mce"], direct_mce(p, o, options.n_bins)), row["forecaster"]
        assert close(row["ace"], direct_ace(p, o, options.n_bins)), row["forecaster"]
        compared += 1
    return compared


# --- rank probabilities and the ranking's bootstrap bounds --------------------------------------


def brute_force_ranking(prep: Prepared, options: AnalysisOptions, ranked: list[str]) -> dict:
    """The ranking's joint cluster bootstrap, one resample at a time in plain Python, as
    :mod:`arena.analytics.ordering` states it: cluster labels of every panel forecaster's scored
    cells coded in sorted order; the rows of ``default_rng(seed).integers(0, G, size=(R, G))``;
    each forecaster's ``sum(w x) / sum(w)`` over its cells in the drawn clusters (a cluster
    drawn twice counts twice; none drawn: no score, ranked last); ranks among ``ranked``, ties
    sharing the better rank; the rank interval's bounds the ``inverted_cdf`` quantiles
    (the smallest rank whose share of resamples at or below it reaches the level)."""
    panel, questions = prep.panel, prep.questions
    cells = np.flatnonzero(prep.scorable[panel.question])
    f, q = panel.forecaster[cells], panel.question[cells]
    result = difficulty_adjusted(
        Cells(f, q, panel.brier[cells], len(panel.forecasters), len(questions)),
        market_brier=(questions.market_probability - questions.resolved_value) ** 2,
        market_weight=options.market_weight,
        question_weight=prep.weights,
    )
    labels = [str(label) for label in prep.clusters[q]]
    order = sorted(set(labels))
    code = {label: index for index, label in enumerate(order)}
    n_clusters = len(order)
    # per forecaster: per cluster code, the (sum w x, sum w) of its cells there
    sums: dict[str, dict[int, list[float]]] = {name: {} for name in ranked}
    for cell, label in enumerate(labels):
        name = panel.forecasters[f[cell]]
        if name not in sums:
            continue
        slot = sums[name].setdefault(code[label], [0.0, 0.0])
        w = float(prep.weights[q[cell]])
        slot[0] += w * float(result.cell_adjusted[cell])
        slot[1] += w
    draws = np.random.default_rng(options.seed).integers(
        0, n_clusters, size=(options.bootstrap_resamples, n_clusters)
    )
    means: dict[str, list[float]] = {name: [] for name in ranked}
    ranks: dict[str, list[int]] = {name: [] for name in ranked}
    for picks in draws:
        scores: dict[str, float] = {}
        for name in ranked:
            top = bottom = 0.0
            for pick in picks:
                if int(pick) in sums[name]:
                    top += sums[name][int(pick)][0]
                    bottom += sums[name][int(pick)][1]
            means[name].append(top / bottom if bottom > 0 else math.nan)
            if bottom > 0:
                scores[name] = top / bottom
        for name in ranked:
            if name in scores:
                ranks[name].append(1 + sum(1 for s in scores.values() if s < scores[name]))
            else:
                ranks[name].append(len(ranked))
    out = {}
    for name in ranked:
        mine = ranks[name]
        r = len(mine)

        def bound(level: float, mine: list[int] = mine, r: int = r) -> int:
            return min(v for v in mine if sum(1 for x in mine if x <= v) >= level * r)

        out[name] = {
            "p_rank_1": sum(1 for v in mine if v == 1) / r,
            "p_top_3": sum(1 for v in mine if v <= 3) / r,
            "rank_low": bound(0.025),
            "rank_high": bound(0.975),
            "means": np.array(means[name]),
            "clusters": len(sums[name]),
        }
    return out


def check_rank_probabilities(forecasts: Any, options: AnalysisOptions) -> int:
    """``p_rank_1``, ``p_top_3``, the rank interval and the bootstrap bounds of the ranking
    equal the brute-force bootstrap's (same seed, same resamples)."""
    from scipy import stats

    from arena.analytics.report import brier_bound

    prep = prepare(forecasts, options)
    board = ranking(forecasts, options, prep)
    rows = [r for r in board["rows"] if r["status"] == "ok" and not r["reference"]]
    expected = brute_force_ranking(prep, options, [r["forecaster"] for r in rows])
    for row in rows:
        mine = expected[row["forecaster"]]
        for key in ("p_rank_1", "p_top_3", "rank_low", "rank_high"):
            assert row[key] == mine[key], (row["forecaster"], key, row[key], mine[key])
        if row["interval_status"] != "ok":
            continue
        # the bootstrap bounds: the 2.5/97.5 percentiles (numpy's default linear method),
        # their distances from the score stretched by sqrt(G/(G-1)) * t_{G-1} / z
        g = mine["clusters"]
        low, high = np.nanquantile(mine["means"], [0.025, 0.975])
        stretch = math.sqrt(g / (g - 1)) * stats.t.ppf(0.975, g - 1) / stats.norm.ppf(0.975)
        score = row["adjusted_brier"]
        assert close(row["bootstrap_low"], brier_bound(score + stretch * (low - score), score))
        assert close(row["bootstrap_high"], brier_bound(score + stretch * (high - score), score))
    return len(rows)
