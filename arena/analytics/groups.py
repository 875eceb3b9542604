"""Where and when a forecaster is good: results by market category and by horizon.

*Category* (:func:`category_name`): the market's category as stored from Gamma (the legacy
field, else the event's tags, else title keywords; ``arena.sources.gamma_parse``); a market
with none is ``"other"``, never dropped.

*Horizon* (:func:`horizon_bucket`, :func:`horizon_buckets`): the time from the decision (the
forecast, or the position's opening buy, or the scored trade) to the market's resolution, in
the buckets ``le7`` (at most 7 days), ``8to30`` (more than 7, at most 30) and ``gt30``. A
decision whose market has not resolved (as known at the ``--at`` instant) is bucketed by the
market's *scheduled* end date instead, and one with neither date is ``gt30`` (open-ended): so
every decision is in exactly one bucket, and the buckets add up to the total.

:func:`restrict` applies ``--category``/``--horizon`` to forecasts; :func:`breakdown` is the
v2 side of ``arena analyze breakdown`` (the ledger side, positions and scored bets, is
:mod:`arena.analytics.ledger_breakdown`, which needs the database).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields, replace
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.options import AnalysisOptions, as_forecasts, clean, with_at
from arena.analytics.questions import default_as_of
from arena.analytics.records import Forecasts, to_datetime, to_datetime64
from arena.analytics.risk_measures import Snapshots
from arena.domain.tracks import check_track, track_of
from arena.errors import ForecastsError, OptionError

OTHER = "other"
HORIZONS = ("le7", "8to30", "gt30")
BY = ("category", "horizon")
PROVISIONAL_QUESTIONS = 30  # fewer scored questions in a group: provisional for the forecaster
_DAY_US = 86_400 * 1_000_000


def category_name(category: str | None) -> str:
    """The category a market is counted under everywhere: its stored one, else ``other``."""
    text = (category or "").strip()
    return text or OTHER


def horizon_bucket(
    decided_at: datetime, resolved_at: datetime | None, scheduled_at: datetime | None
) -> str:
    """The horizon bucket of one decision (see the module docstring)."""
    end = resolved_at if resolved_at is not None else scheduled_at
    if end is None:
        return "gt30"
    days = (end - decided_at).total_seconds() / 86_400
    return "le7" if days <= 7 else "8to30" if days <= 30 else "gt30"


def horizon_buckets(
    decided_at: NDArray[np.datetime64],
    resolved_at: NDArray[np.datetime64],
    scheduled_at: NDArray[np.datetime64],
) -> NDArray[np.object_]:
    """:func:`horizon_bucket` over arrays (``datetime64[us]``; NaT is a missing date)."""
    end = np.where(np.isnat(resolved_at), scheduled_at, resolved_at).astype("datetime64[us]")
    span = end.astype(np.int64) - decided_at.astype("datetime64[us]").astype(np.int64)
    out = np.full(len(span), "gt30", dtype=object)
    known = ~np.isnat(end)
    out[known & (span <= 30 * _DAY_US)] = "8to30"
    out[known & (span <= 7 * _DAY_US)] = "le7"
    return out


def check_horizon(horizon: str | None) -> str | None:
    """``horizon`` when it is a bucket name (or None); else the one-line usage error."""
    if horizon is not None and horizon not in HORIZONS:
        raise OptionError(f"--horizon: {horizon!r} is not one of {', '.join(HORIZONS)}")
    return horizon


def check_category(category: str | None, known: Iterable[str]) -> str | None:
    """``category`` when some market is in it (or None); else the one-line usage error that
    lists the known categories."""
    names = sorted(set(known) | {OTHER})
    if category is not None and category not in names:
        listed = ", ".join(name if name.isprintable() else repr(name) for name in names)
        raise OptionError(f"--category: {category!r} is not one of {listed}")
    return category


def categories_of(forecasts: Forecasts) -> NDArray[np.object_]:
    """Each forecast's category name."""
    return np.array([category_name(value) for value in forecasts.category], dtype=object)


def horizons_of(forecasts: Forecasts, as_of: datetime | None = None) -> NDArray[np.object_]:
    """Each forecast's horizon bucket, with resolutions after ``as_of`` not yet known."""
    resolved = forecasts.resolved_at
    if as_of is not None:
        resolved = np.where(resolved > to_datetime64(as_of), np.datetime64("NaT"), resolved)
    return horizon_buckets(forecasts.forecast_at, resolved, forecasts.scheduled_close_at)


def groups_of(forecasts: Forecasts, by: str, as_of: datetime | None) -> NDArray[np.object_]:
    """Each forecast's group: its category name, or its horizon bucket."""
    return categories_of(forecasts) if by == "category" else horizons_of(forecasts, as_of)


def restrict(
    forecasts: Any,
    *,
    category: str | None = None,
    horizon: str | None = None,
    as_of: datetime | None = None,
    checked: bool = False,
) -> Forecasts:
    """The forecasts in markets of ``category`` and of horizon bucket ``horizon`` (each None:
    no restriction). An unknown category (one no forecast has, unless ``checked`` says the
    caller checked it against the markets) or bucket is a :class:`OptionError` naming the
    known ones."""
    data = as_forecasts(forecasts)
    check_horizon(horizon)
    keep = np.ones(len(data), dtype=bool)
    if category is not None:
        names = categories_of(data)
        if not checked:
            check_category(category, names)
        keep &= names == category
    if horizon is not None:
        keep &= horizons_of(data, as_of) == horizon
    return data if keep.all() else data.select(keep)


def restrict_track(forecasts: Any, track: str | None, tracks: Mapping[str, str]) -> Forecasts:
    """The forecasts of the agents on ``track`` (None: all); ``tracks`` maps agent ids to
    tracks, and an agent it lacks is on the track of its family's kind, without web search.
    An unknown track is a :class:`OptionError` naming the known ones."""
    data = as_forecasts(forecasts)
    track = check_track(track)
    if track is None:
        return data
    keep = on_track(data.agent_id, track, tracks, data.family_kind)
    return data if keep.all() else data.select(keep)


def restrict_snapshots(
    snapshots: Snapshots, track: str | None, tracks: Mapping[str, str]
) -> Snapshots:
    """The portfolio snapshots of the agents on ``track`` (None: all), as
    :func:`restrict_track` keeps forecasts (``analyze risk --track``)."""
    track = check_track(track)
    if track is None:
        return snapshots
    keep = on_track(snapshots.agent_id, track, tracks)
    return Snapshots(*(getattr(snapshots, f.name)[keep] for f in fields(Snapshots)))


def on_track(
    agents: Iterable[Any], track: str, tracks: Mapping[str, str], kinds: Iterable[Any] | None = None
) -> NDArray[np.bool_]:
    """Which of ``agents`` (ids) are on ``track``: by ``tracks`` (agent id to track), else by
    their family's ``kinds`` without web search."""
    agents = list(agents)
    kinds = [None] * len(agents) if kinds is None else list(kinds)
    return np.array(
        [
            (tracks.get(str(agent)) or track_of(str(kind or ""), None)) == track
            for agent, kind in zip(agents, kinds, strict=True)
        ],
        dtype=bool,
    )


def breakdown(
    forecasts: Any,
    options: AnalysisOptions | None = None,
    *,
    by: str = "category",
    at: datetime | None = None,
) -> dict[str, Any]:
    """Every forecaster per category (``by="category"``) or horizon bucket (``"horizon"``):
    its forecasts (of the sources analysed, made by ``as_of``), scored questions, and the
    difficulty-adjusted Brier of :func:`arena.analytics.report.ranking` on that group alone,
    with its cluster-robust interval (``"insufficient"`` below the minimum sample). A group
    with fewer than 30 scored questions for a forecaster is provisional for it."""
    from arena.analytics.report import ranking

    if by not in BY:
        raise OptionError(f"--by: {by!r} is not one of {', '.join(BY)}")
    options = with_at(options, at)
    data = as_forecasts(forecasts).from_sources(options.sources)
    if options.as_of is None and len(data):  # every group at the same instant
        options = replace(options, as_of=to_datetime(default_as_of(data)))
    if options.as_of is not None:
        data = data.known_at(to_datetime64(options.as_of))
    key = data.family_id if options.by == "family" else data.agent_id
    groups = groups_of(data, by, options.as_of)
    names = HORIZONS if by == "horizon" else sorted({str(g) for g in groups})
    rows: list[dict[str, Any]] = []
    for group in names:
        mask = groups == group
        if not mask.any():
            continue
        subset = data.select(mask)
        counts = _counts(key[mask])
        scores = _group_ranking(subset, options, ranking)
        for forecaster in sorted(counts):
            row = scores.get(forecaster, {})
            questions = int(row.get("n_questions", 0))
            rows.append(
                {
                    "group": group,
                    "forecaster": forecaster,
                    "forecasts": counts[forecaster],
                    "questions": questions,
                    "brier": row.get("brier"),
                    "adjusted": _interval(row),
                    "provisional": questions < PROVISIONAL_QUESTIONS,
                }
            )
    return clean({"by": by, "as_of": options.as_of, "groups": list(names), "rows": rows})


def _counts(keys: NDArray[np.object_]) -> dict[str, int]:
    values, counts = np.unique(np.array([str(k) for k in keys], dtype=object), return_counts=True)
    return {str(v): int(c) for v, c in zip(values, counts, strict=True)}


def _group_ranking(
    subset: Forecasts, options: AnalysisOptions, ranking: Any
) -> dict[str, dict[str, Any]]:
    """The ranking rows of one group by forecaster (none when nothing there is scorable)."""
    try:
        # the interval shown is the cluster-robust t; the rank bootstrap is not needed here
        report = ranking(subset, replace(options, bootstrap_resamples=1))
    except (ForecastsError, ValueError):
        return {}
    return {str(r["forecaster"]): r for r in report["rows"] if not r.get("reference")}


def _interval(row: dict[str, Any]) -> dict[str, float] | str:
    if row.get("interval_status") != "ok" or row.get("ci_low") is None:
        return "insufficient"
    return {"estimate": row["adjusted_brier"], "low": row["ci_low"], "high": row["ci_high"]}
