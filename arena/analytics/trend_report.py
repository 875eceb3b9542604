"""``trend``: each family week by week, as a JSON-serialisable dict.

The definitions are :mod:`arena.analytics.trend_measures`; this module takes the data a
researcher or an entry point has (an export directory, or :class:`TrendInputs` read from the
store), cuts it at ``as_of`` and states what the report states. The public function lives
here, not in ``trend_measures``, so ``from arena.analytics import trend`` is always the
function.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.options import AnalysisOptions, clean, prepare, with_at
from arena.analytics.records import to_datetime, to_datetime64, week_start_of
from arena.analytics.risk_measures import agent_curves, family_weekly_returns
from arena.analytics.trend_inputs import TrendInputs, read_export_trend_inputs
from arena.analytics.trend_measures import trend_rows, v2_week_scores
from arena.csv_safe import safe_cell
from arena.errors import ForecastsError

TREND_COLUMNS = (
    "family_id",
    "week_start",
    "weekly_return",
    "brier",
    "adjusted",
    "alpha",
    "rank_week",
    "rank_cumulative",
    "lineage_changed",
    "lineage",
)
TREND_SAMPLE = (
    "per family and calendar week (Sunday 00:00 UTC): the mean weekly return of its agents' "
    "complete weeks, the mean Brier of its bets made that week and scored by as_of, and (v2) "
    "its difficulty-adjusted Brier and alpha on that week's resolved panel questions"
)


def as_trend_inputs(data: Any) -> TrendInputs:
    """:class:`TrendInputs` as is; an export directory read."""
    if isinstance(data, TrendInputs):
        return data
    if isinstance(data, str | Path):
        return read_export_trend_inputs(Path(data))
    raise TypeError(f"trend: expected an export directory or TrendInputs, got {type(data)}")


def trend(
    data: Any,
    options: AnalysisOptions | None = None,
    *,
    at: datetime | None = None,
    family: str | None = None,
) -> dict[str, Any]:
    """Per family and week: weekly return, Brier (v1), adjusted score and alpha (v2), rank that
    week and cumulatively, and where the lineage changed (:mod:`arena.analytics.trend_measures`).

    ``data`` is an export directory (``snapshots``, ``agents``, ``cohorts``, ``brier_scores``,
    ``trades`` and, when v2, ``forecasts``) or :class:`TrendInputs`. Only what was known at
    ``at`` counts (complete weeks, bets scored, forecasts resolved, cohorts started); without
    ``at`` or ``options.as_of``, the newest snapshot's time. Ranks are among every family;
    ``family`` keeps only its rows (a :class:`ValueError` when it has none and is unknown).
    """
    options = replace(with_at(options, at), by="family")
    inputs = as_trend_inputs(data)
    as_of = _as_of(inputs, options)
    returns = family_weekly_returns(agent_curves(inputs.snapshots, as_of))
    bets = inputs.bets
    known = (bets.scored_at <= as_of) & (bets.made_at <= as_of) & np.isfinite(bets.brier)
    brier = _bets_by_week(
        bets.family_id[known], week_start_of(bets.made_at[known]), bets.brier[known]
    )
    scores = {}
    if inputs.forecasts is not None:
        try:
            prep = prepare(inputs.forecasts, replace(options, as_of=to_datetime(as_of)))
        except ForecastsError:  # no panel forecast known at as_of
            prep = None
        if prep is not None:
            scores = v2_week_scores(prep, options)
    lineage = [e for e in inputs.lineage if np.datetime64(e["week_start"], "us") <= as_of]
    rows = trend_rows(returns, brier, scores, _first_per_week(lineage))
    families = sorted(
        {str(e["family_id"]) for e in inputs.lineage} | {r["family_id"] for r in rows}
    )
    if family is not None:
        if family not in families:
            raise ValueError(f"family: {family!r} is not one of {', '.join(families)}")
        rows = [r for r in rows if r["family_id"] == family]
    for item in rows:
        item["week_start"] = to_datetime(item["week_start"])
    return clean(
        {
            "kind": "trend",
            "as_of": to_datetime(as_of),
            "rank_by": rows[0]["rank_by"] if rows else ("adjusted" if scores else "return"),
            "sample": TREND_SAMPLE,
            "families": families,
            "rows": rows,
        }
    )


def _bets_by_week(
    family: NDArray[np.object_], week: NDArray[np.datetime64], brier: NDArray[np.float64]
) -> dict[tuple[str, np.datetime64], list[float]]:
    """The Brier scores of each family's bets by the week they were made (grouped in numpy:
    scale 1 has ~40k bets)."""
    if len(family) == 0:
        return {}
    names, name_index = np.unique(family.astype(str), return_inverse=True)
    weeks, week_index = np.unique(week, return_inverse=True)
    group = name_index * len(weeks) + week_index
    order = np.argsort(group, kind="stable")
    keys, starts = np.unique(group[order], return_index=True)
    parts = np.split(brier[order], starts[1:])
    return {
        (str(names[key // len(weeks)]), weeks[key % len(weeks)]): part.tolist()
        for key, part in zip(keys, parts, strict=True)
    }


def _as_of(inputs: TrendInputs, options: AnalysisOptions) -> np.datetime64:
    if options.as_of is not None:
        return to_datetime64(options.as_of)
    if len(inputs.snapshots.taken_at):
        return np.datetime64(inputs.snapshots.taken_at.max(), "us")
    raise ForecastsError("no snapshots to take the trend of (and no --at given)")


def _first_per_week(lineage: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One lineage entry per family and cohort week: its first agent's (replicates share it)."""
    seen: dict[tuple[str, np.datetime64], dict[str, Any]] = {}
    for entry in lineage:
        seen.setdefault((str(entry["family_id"]), np.datetime64(entry["week_start"], "us")), entry)
    return list(seen.values())


def write_csv(report: dict[str, Any], out: IO[str]) -> None:
    """The report's rows as CSV (:data:`TREND_COLUMNS`; what changed joined by ``; ``)."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(TREND_COLUMNS)
    for item in report["rows"]:
        values = {**item, "lineage": "; ".join(item["lineage"])}
        writer.writerow([_cell(values[name]) for name in TREND_COLUMNS])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return safe_cell(str(value))
