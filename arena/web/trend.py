"""The trend on the dashboard: ``/api/v1/families/{family_id}/trend``, the trend chart and table
of the family page, and the "rank over weeks" chart and table of ``/``.

One computation of :func:`arena.analytics.trend` over the whole database as of now (the same
as ``arena analyze trend`` at the same instant), cached per data version; each family's answer
is its rows of it.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.orm import Session

from arena.errors import NotFound
from arena.store.models import Family
from arena.web.breakdown import Track
from arena.web.context import WebContext

log = logging.getLogger(__name__)


def trend_report(
    ctx: WebContext, session: Session, track: Track | None = None
) -> dict[str, Any] | None:
    """The whole trend as of now (of the agents on ``track`` when given, ranks among its
    families, as ``arena analyze trend --track``), computed once per data version, off the
    request path (:meth:`arena.web.context.WebContext.latest`); None before the first
    snapshot."""
    return ctx.latest(("trend", None, track), session, lambda own: _compute(ctx, own, track))


def _compute(ctx: WebContext, session: Session, track: Track | None) -> dict[str, Any] | None:
    from arena.analytics.leaderboard import stored_agent_tracks
    from arena.analytics.options import configured_options
    from arena.analytics.trend_inputs import read_stored_trend_inputs, restrict_trend_inputs
    from arena.analytics.trend_report import trend
    from arena.errors import ForecastsError

    options = configured_options(ctx.settings, as_of=ctx.now())
    inputs = read_stored_trend_inputs(session)
    if track is not None:
        inputs = restrict_trend_inputs(inputs, track.value, stored_agent_tracks(session))
    try:
        return trend(inputs, options)
    except ForecastsError as exc:  # nothing stored yet
        log.info("trend: %s", exc)
        return None


def family_trend(
    ctx: WebContext, session: Session, family_id: str, track: Track | None = None
) -> dict[str, Any]:
    """One family's trend rows (ranks among every family, or among those on ``track``: then
    its weeks on that track only); 404 for an unknown family."""
    if session.get(Family, family_id) is None:
        raise NotFound(f"family {family_id} does not exist")
    report = trend_report(ctx, session, track)
    rows = [r for r in (report or {}).get("rows", []) if r["family_id"] == family_id]
    return {
        "family_id": family_id,
        "as_of": report["as_of"] if report else None,
        "rank_by": report["rank_by"] if report else None,
        "rows": rows,
        "changes": [
            {"week_start": r["week_start"], "lineage": r["lineage"]}
            for r in rows
            if r["lineage_changed"]
        ],
    }


def rank_over_weeks(report: dict[str, Any] | None, names: dict[str, str]) -> dict[str, Any]:
    """Each family's cumulative rank by week: the weeks, and per family its display name and
    ranks (None where it has none), for the chart and the table of ``/``."""
    if not report:
        return {"weeks": [], "families": [], "rank_by": None}
    weeks = sorted({r["week_start"] for r in report["rows"]})
    ranks: dict[str, dict[str, Any]] = {}
    for item in report["rows"]:
        ranks.setdefault(item["family_id"], {})[item["week_start"]] = item["rank_cumulative"]
    return {
        "weeks": weeks,
        "rank_by": report["rank_by"],
        "families": [
            {
                "family_id": family,
                "label": names.get(family, family),
                "ranks": [found.get(week) for week in weeks],
            }
            for family, found in sorted(ranks.items())
        ],
    }
