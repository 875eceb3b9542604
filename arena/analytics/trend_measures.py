"""Trend: each family week by week (methodology, "Where and when").

Per family and cohort week (the Sunday the week starts):

* ``weekly_return``: the family's return over that week, the mean of its agents' returns
  (:func:`arena.analytics.risk_measures.family_weekly_returns`);
* ``brier`` (v1): the mean Brier score of the family's scored bets made that week;
* ``adjusted`` and ``alpha`` (v2): the family's difficulty-adjusted Brier over that week's
  scored panel questions (the question difficulties of the full fit at ``as_of``) and its alpha
  (Brier) against the market on them (:mod:`arena.analytics.market`);
* ``rank_week``: its rank among the families that week, and ``rank_cumulative`` over every week
  up to and including it. With v2 scores both rank by the adjusted score (lower is better);
  otherwise by return (the week's, and the compounded return to date; higher is better), as
  the v1 leaderboard ranks by P/L. Ties share the better rank. ``rank_by`` says which;
* ``lineage_changed``: the family's frozen lineage that week (OpenRouter id, prompt version,
  methodology version, track and web search settings of its agent in that week's cohort)
  differs from its previous week's; ``lineage`` lists what changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.market import market_cells
from arena.analytics.options import AnalysisOptions, Prepared
from arena.analytics.report import fit_difficulty

LINEAGE_FIELDS = ("openrouter_id", "prompt_version", "methodology_version")
# Compared with the stored fields: the agent's track and its web search settings (one line).
LINEAGE_MARKS = (*LINEAGE_FIELDS, "track", "web_search")
WEEK = np.timedelta64(7 * 86_400 * 1_000_000, "us")


@dataclass(frozen=True)
class WeekScores:
    """A family's v2 sums of one week: weighted adjusted score and alpha, and their weights."""

    adjusted_sum: float = 0.0
    alpha_sum: float = 0.0
    weight: float = 0.0
    alpha_weight: float = 0.0


def trend_rows(
    weekly_returns: Mapping[str, Mapping[np.datetime64, float]],
    brier: Mapping[tuple[str, np.datetime64], list[float]],
    scores: Mapping[tuple[str, np.datetime64], WeekScores],
    lineage: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """One row per family and week (module docstring).

    ``weekly_returns`` is keyed by family and week *end*; ``brier`` and ``scores`` by family and
    week start; ``lineage`` holds one mapping per family and week start with
    :data:`LINEAGE_FIELDS`, ``family_id`` and ``week_start``.
    """
    rows: dict[tuple[str, np.datetime64], dict[str, Any]] = {}

    def row(family: str, week: np.datetime64) -> dict[str, Any]:
        return rows.setdefault(
            (family, week),
            {"family_id": family, "week_start": week, "weekly_return": None, "brier": None}
            | {"adjusted": None, "alpha": None, "lineage_changed": False, "lineage": []},
        )

    for family, weeks in weekly_returns.items():
        for end, value in weeks.items():
            row(family, end - WEEK)["weekly_return"] = value
    for (family, week), values in brier.items():
        row(family, week)["brier"] = float(np.mean(values)) if values else None
    for (family, week), found in scores.items():
        target = row(family, week)
        if found.weight > 0:
            target["adjusted"] = found.adjusted_sum / found.weight
        if found.alpha_weight > 0:
            target["alpha"] = found.alpha_sum / found.alpha_weight
    _mark_lineage(rows, lineage)
    ordered = [rows[key] for key in sorted(rows, key=lambda key: (key[1], key[0]))]
    _rank(ordered, scores_present=any(r["adjusted"] is not None for r in ordered))
    return ordered


def _mark_lineage(
    rows: dict[tuple[str, np.datetime64], dict[str, Any]], lineage: Sequence[Mapping[str, Any]]
) -> None:
    previous: dict[str, Mapping[str, Any]] = {}
    for entry in sorted(lineage, key=lambda e: (str(e["family_id"]), e["week_start"])):
        family = str(entry["family_id"])
        week = np.datetime64(entry["week_start"], "us")
        before = previous.get(family)
        if before is not None:
            changes = [
                f"{name}: {before.get(name)} -> {entry.get(name)}"
                for name in LINEAGE_MARKS
                if before.get(name) != entry.get(name)
            ]
            if changes and (family, week) in rows:
                rows[(family, week)]["lineage_changed"] = True
                rows[(family, week)]["lineage"] = changes
        previous[family] = entry


def _rank(ordered: list[dict[str, Any]], *, scores_present: bool) -> None:
    """``rank_week`` and ``rank_cumulative`` of every row (module docstring)."""
    by_week: dict[np.datetime64, list[dict[str, Any]]] = {}
    for item in ordered:
        by_week.setdefault(item["week_start"], []).append(item)
    totals: dict[str, list[float]] = {}
    for week in sorted(by_week):
        group = by_week[week]
        for item in group:
            item["rank_by"] = "adjusted" if scores_present else "return"
            value = item["adjusted"] if scores_present else item["weekly_return"]
            if value is not None:
                totals.setdefault(item["family_id"], []).append(value)
        week_values = {
            item["family_id"]: item["adjusted"] if scores_present else item["weekly_return"]
            for item in group
        }
        cumulative = {
            family: (
                float(np.mean(values)) if scores_present else float(np.prod(1 + np.array(values)))
            )
            for family, values in totals.items()
        }
        for item in group:
            item["rank_week"] = _rank_of(week_values, item["family_id"], scores_present)
            item["rank_cumulative"] = _rank_of(cumulative, item["family_id"], scores_present)


def _rank_of(values: Mapping[str, float | None], family: str, lower_is_better: bool) -> int | None:
    mine = values.get(family)
    if mine is None:
        return None
    present = [v for v in values.values() if v is not None]
    better = sum(1 for v in present if (v < mine if lower_is_better else v > mine))
    return 1 + better


def week_scores(
    family: NDArray[np.object_],
    week: NDArray[np.datetime64],
    adjusted: NDArray[np.float64],
    alpha: NDArray[np.float64],
    weight: NDArray[np.float64],
) -> dict[tuple[str, np.datetime64], WeekScores]:
    """Per family and week, the weighted sums of its cells' adjusted scores and alphas (NaN
    alphas, cells without a price, left out of the alpha)."""
    found: dict[tuple[str, np.datetime64], WeekScores] = {}
    for name, when, score, edge, w in zip(family, week, adjusted, alpha, weight, strict=True):
        key = (str(name), when)
        old = found.get(key, WeekScores())
        priced = not np.isnan(edge)
        found[key] = WeekScores(
            old.adjusted_sum + w * score,
            old.alpha_sum + (w * edge if priced else 0.0),
            old.weight + w,
            old.alpha_weight + (w if priced else 0.0),
        )
    return found


def v2_week_scores(
    prep: Prepared, options: AnalysisOptions
) -> dict[tuple[str, np.datetime64], WeekScores]:
    """Each family's weekly v2 sums from the prepared forecasts: the cells of
    scorable questions, scored with the full fit's difficulties, grouped by question week."""
    panel, questions = prep.panel, prep.questions
    cells = np.flatnonzero(prep.scorable[panel.question])
    if len(cells) == 0:
        return {}
    result = fit_difficulty(prep, options, cells)
    kept = cells[result.scored]
    f, q = panel.forecaster[kept], panel.question[kept]
    alpha = market_cells(prep).alpha_brier[kept]
    names = np.array(panel.forecasters, dtype=object)[f]
    return week_scores(
        names, questions.week_start[q], result.cell_adjusted[result.scored], alpha, prep.weights[q]
    )
