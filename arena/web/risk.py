"""Risk and return for the dashboard and ``/api/v1/risk``: exactly what ``arena analyze risk``
computes at the same instant (:func:`arena.analytics.risk`), cached per data version since it
bootstraps ``analysis.resamples`` times per forecaster."""

from __future__ import annotations

import enum
from typing import Any

from sqlalchemy.orm import Session

from arena.web.breakdown import Track
from arena.web.context import WebContext


class RiskBy(enum.StrEnum):
    """Whose curve: each family's (its agents' weekly returns averaged) or each agent's."""

    FAMILY = "family"
    AGENT = "agent"


class RiskValue(enum.StrEnum):
    """The valuation of the curve: at the mark, or at exit (mode book cohorts only)."""

    MARK = "mark"
    EXIT = "exit"


def risk_report(
    ctx: WebContext,
    session: Session,
    by: RiskBy = RiskBy.FAMILY,
    value: RiskValue = RiskValue.MARK,
    track: Track | None = None,
) -> dict[str, Any]:
    """The risk report of every stored snapshot at ``ctx.now()`` (of the agents on ``track``
    when given, as ``arena analyze risk --track``), computed once per data version, off the
    request path (:meth:`arena.web.context.WebContext.latest`)."""
    return ctx.latest(
        ("risk", by.value, value.value, track),
        session,
        lambda own: _compute(ctx, own, by.value, value.value, track),
    )


def _compute(
    ctx: WebContext, session: Session, by: str, value: str, track: Track | None
) -> dict[str, Any]:
    from arena.analytics.groups import restrict_snapshots
    from arena.analytics.leaderboard import stored_agent_tracks
    from arena.analytics.options import configured_options
    from arena.analytics.risk_report import risk
    from arena.analytics.snapshot_columns import read_stored_snapshots

    options = configured_options(ctx.settings, as_of=ctx.now(), by=by)
    snapshots = read_stored_snapshots(session, value)
    if track is not None:
        snapshots = restrict_snapshots(snapshots, track.value, stored_agent_tracks(session))
    return risk(snapshots, options, value=value)
