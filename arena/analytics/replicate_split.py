"""How much of a family's score is the family and how much its replicates' luck.

Each agent (a replicate of a family in one cohort) gets its raw Brier score: the mean of
``(p - y)^2`` over its forecasts of the scorable questions. A one-way random-effects analysis of
variance of those scores, with the families as groups, splits their variance into a part
between families and a part within them (between a family's replicates); the intraclass
correlation is the share between. The ANOVA estimator with Searle's ``n0`` for unequal group
sizes is used, the between part floored at 0:

``MSB = SSB / (k - 1)``, ``MSW = SSW / (N - k)``, ``n0 = (N - sum n_i^2 / N) / (k - 1)``,
``between = max((MSB - MSW) / n0, 0)``, ``within = MSW``, ``icc = between / (between + within)``.

An ordering of two families next to each other by mean score is *close* when the gap between
their means is smaller than the larger of their replicates' standard deviations: another draw
of replicates could well swap them.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from arena.analytics.options import AnalysisOptions, Prepared, clean
from arena.analytics.records import to_datetime
from arena.analytics.significance import OK, weighted_t_interval

CLOSE_RULE = (
    "families ordered by their replicates' mean raw Brier; an adjacent pair is close when the "
    "gap between their means is smaller than the larger of their replicates' standard "
    "deviations (another draw of replicates could well swap them); icc: the share of the "
    "agents' score variance between families (one-way random-effects ANOVA)"
)


def replicate_split(prep: Prepared, options: AnalysisOptions | None = None) -> dict[str, Any]:
    """Per family its replicates' mean raw Brier score and their standard deviation, and its
    raw Brier score over the questions (the panel's cells: the mean of its replicates' scores of
    each question) with its cluster-robust t interval; the variance between and within
    families, the intraclass correlation, and the close orderings (the module docstring)."""
    confidence = (options or AnalysisOptions()).confidence
    forecasts, questions = prep.forecasts, prep.questions
    q = questions.row_question
    keep = prep.scorable[q] & ~np.isnan(questions.resolved_value[q])
    brier = (forecasts.probability[keep] - questions.resolved_value[q[keep]]) ** 2
    agents: dict[tuple[str, str], int] = {}  # first-seen order
    pairs = zip(forecasts.family_id[keep].tolist(), forecasts.agent_id[keep].tolist(), strict=True)
    agent = np.fromiter(
        (agents.setdefault((str(f), str(a)), len(agents)) for f, a in pairs),
        dtype=np.int64,
        count=len(brier),
    )
    order = np.argsort(agent, kind="stable")  # each agent's scores together, in row order
    ends = np.cumsum(np.bincount(agent, minlength=len(agents)))
    scores = brier[order]
    groups: dict[str, list[float]] = {}
    for (family, _agent), index in agents.items():
        start = ends[index - 1] if index else 0
        groups.setdefault(family, []).append(float(np.mean(scores[start : ends[index]])))
    rows = [
        {
            "forecaster": family,
            "family_id": family,
            "replicates": len(scores),
            "mean_brier": float(np.mean(scores)),
            "sd_brier": float(np.std(scores, ddof=1)) if len(scores) > 1 else None,
            **_over_questions(prep, family, confidence),
        }
        for family, scores in sorted(groups.items())
    ]
    rows.sort(key=lambda r: (r["mean_brier"], r["family_id"]))
    between, within = variance_split(list(groups.values()))
    total = (between or 0.0) + (within or 0.0)
    return clean(
        {
            "kind": "replicate_split",
            "as_of": to_datetime(prep.as_of),
            "unit": "agent",
            "rule": CLOSE_RULE,
            "rows": rows,
            "between_variance": between,
            "within_variance": within,
            "icc": between / total if between is not None and total > 0 else None,
            "close_orderings": _close(rows),
        }
    )


def _over_questions(prep: Prepared, family: str, confidence: float) -> dict[str, Any]:
    """The family's raw Brier score over its scorable cells, with the 95% (``confidence``)
    cluster-robust t interval over the questions' clusters: the replicates of a question are
    one cell, so one observation of one cluster."""
    panel, q = prep.panel, prep.panel.question
    mine = panel.forecaster == (
        panel.forecasters.index(family) if family in panel.forecasters else -1
    )
    cells = np.flatnonzero(mine & prep.scorable[q] & ~np.isnan(panel.brier))
    if cells.size == 0:
        return {"brier": None, "ci_low": None, "ci_high": None, "n_clusters": 0}
    t = weighted_t_interval(
        panel.brier[cells], prep.weights[q[cells]], confidence, clusters=prep.clusters[q[cells]]
    )
    bounds = (t.low, t.high) if t.status == OK else (None, None)
    return {
        "brier": t.mean,
        "ci_low": bounds[0],
        "ci_high": bounds[1],
        "n_clusters": t.n_clusters,
    }


def variance_split(groups: list[list[float]]) -> tuple[float | None, float | None]:
    """The one-way random-effects ANOVA estimates (between groups, within groups) of
    ``groups`` (None where the data cannot say: fewer than two groups, or no group with two
    values)."""
    groups = [g for g in groups if g]
    k, n = len(groups), sum(len(g) for g in groups)
    if k < 2 or n <= k:
        return None, None
    grand = sum(sum(g) for g in groups) / n
    means = [sum(g) / len(g) for g in groups]
    ssb = sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means, strict=True))
    ssw = sum((x - m) ** 2 for g, m in zip(groups, means, strict=True) for x in g)
    msb, msw = ssb / (k - 1), ssw / (n - k)
    n0 = (n - sum(len(g) ** 2 for g in groups) / n) / (k - 1)
    return max((msb - msw) / n0, 0.0), msw


def _close(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    close = []
    for upper, lower in itertools.pairwise(rows):
        spreads = [s for s in (upper["sd_brier"], lower["sd_brier"]) if s is not None]
        gap = lower["mean_brier"] - upper["mean_brier"]
        if spreads and gap < max(spreads) and not math.isnan(gap):
            close.append(
                {
                    "upper": upper["family_id"],
                    "lower": lower["family_id"],
                    "gap": gap,
                    "spread": max(spreads),
                }
            )
    return close
