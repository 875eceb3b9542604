"""The category and horizon surfaces of the web app: ``?category=``/``?horizon=`` on the
leaderboard, and the breakdown (``/breakdown``, ``/api/v1/breakdown``), computed by the same
functions as ``arena leaderboard --category`` and ``arena analyze breakdown`` (cached per data
version)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Query
from fastapi.exceptions import RequestValidationError
from sqlalchemy.orm import Session

from arena.analytics.leaderboard import compute_leaderboard, to_json
from arena.analytics.ledger_breakdown import Scope, checked_scope, known_categories
from arena.errors import OptionError
from arena.jsonable import jsonable
from arena.web.context import WebContext
from arena.web.params import CategoryParam
from arena.web.standings import leaderboard as whole_leaderboard
from arena.web.standings import v2_ranking as whole_v2_ranking


class Horizon(enum.StrEnum):
    """The horizon buckets (days from the decision to resolution)."""

    LE7 = "le7"
    D8TO30 = "8to30"
    GT30 = "gt30"


class By(enum.StrEnum):
    """What the breakdown groups by."""

    CATEGORY = "category"
    HORIZON = "horizon"


class Track(enum.StrEnum):
    """The tracks, as arena.domain.tracks names them (a test keeps the two in step)."""

    MODEL = "model"
    WEB = "web"
    AGENT = "agent"
    BASELINE = "baseline"


TrackParam = Annotated[
    Track | None,
    Query(
        description="Only forecasters of this track: model (no tools), web (web search), agent "
        "(outside agents) or baseline; tracks are compared separately."
    ),
]
HorizonParam = Annotated[
    Horizon | None,
    Query(description="Only decisions this far from resolution: le7, 8to30 or gt30 days."),
]
ByParam = Annotated[By, Query(description="Group by market category or horizon bucket.")]


@dataclass(frozen=True)
class Where:
    """What a page is restricted to: the category, horizon bucket and track (each None: all).
    A route takes it as ``WhereDep``, one query parameter per field."""

    category: CategoryParam = None
    horizon: HorizonParam = None
    track: TrackParam = None


WhereDep = Annotated[Where, Depends()]


def scope_of(session: Session, category: str | None, horizon: Horizon | None) -> Scope:
    """The checked scope; an unknown category is a bad parameter listing the known ones."""
    try:
        return checked_scope(session, category, None if horizon is None else horizon.value)
    except OptionError as exc:
        problem = {"loc": ("query", "category"), "msg": str(exc), "type": "value_error"}
        raise RequestValidationError([problem]) from None


def categories(session: Session) -> list[str]:
    """The category names for the selector."""
    return known_categories(session)


def leaderboard(
    ctx: WebContext,
    session: Session,
    cohort_id: int | None,
    category: str | None,
    horizon: Horizon | None,
    track: Track | None = None,
) -> list[dict[str, Any]]:
    """The leaderboard JSON rows, restricted when a category or horizon is given, and to the
    families on ``track`` when given."""
    rows = _leaderboard(ctx, session, cohort_id, category, horizon)
    return rows if track is None else [row for row in rows if row["track"] == track.value]


def _leaderboard(
    ctx: WebContext,
    session: Session,
    cohort_id: int | None,
    category: str | None,
    horizon: Horizon | None,
) -> list[dict[str, Any]]:
    scope = scope_of(session, category, horizon)
    if not scope:
        return whole_leaderboard(ctx, session, cohort_id)
    whole_leaderboard(ctx, session, cohort_id)  # an unknown cohort: the 404 it always was
    minimum = ctx.settings.benchmark.min_scored_bets
    return ctx.latest(
        ("leaderboard", cohort_id, scope.category, scope.horizon),
        session,
        lambda _own: to_json(
            compute_leaderboard(
                ctx.factory, cohort_id=cohort_id, min_scored_bets=minimum, scope=scope
            )
        ),
    )


def v2_ranking(
    ctx: WebContext,
    session: Session,
    category: str | None,
    horizon: Horizon | None,
    track: Track | None = None,
) -> dict[str, Any] | None:
    """The v2 ranking (as ``standings.v2_ranking``) on the forecasts of the category,
    horizon bucket and track, as ``arena analyze ranking --category/--horizon/--track`` at the
    app's instant."""
    scope = scope_of(session, category, horizon)
    whole = whole_v2_ranking(ctx, session)
    if (not scope and track is None) or whole is None:
        return whole
    return ctx.latest(
        ("v2", scope.category, scope.horizon, track),
        session,
        lambda own: _scoped_ranking(ctx, own, scope, track),
    )


def _forecasts_on(session: Session, track: Track | None) -> Any:
    """The stored forecasts of the agents on ``track`` (every one without it)."""
    from arena.analytics.groups import restrict_track
    from arena.analytics.leaderboard import stored_agent_tracks
    from arena.analytics.stored import stored_forecasts

    forecasts = stored_forecasts(session)
    if track is None:
        return forecasts
    return restrict_track(forecasts, track.value, stored_agent_tracks(session))


def _scoped_ranking(
    ctx: WebContext, session: Session, scope: Scope, track: Track | None
) -> dict[str, Any] | None:
    from arena.analytics.groups import restrict
    from arena.analytics.records import ForecastsError
    from arena.analytics.report import configured_options, ranking

    options = configured_options(ctx.settings, as_of=ctx.now())
    forecasts = restrict(
        _forecasts_on(session, track),
        category=scope.category,
        horizon=scope.horizon,
        as_of=options.as_of,
        checked=True,
    )
    try:
        report = ranking(forecasts, options)
    except ForecastsError:  # nothing of this category or horizon to rank
        return None
    # null, as the whole ranking is, until a question of the category or horizon scores
    return jsonable(report) if report["n_scored_questions"] else None


def breakdown(
    ctx: WebContext,
    session: Session,
    by: By,
    category: str | None = None,
    horizon: Horizon | None = None,
    track: Track | None = None,
) -> dict[str, Any]:
    """What ``arena analyze breakdown --by BY --format json`` prints at the app's instant."""
    scope = scope_of(session, category, horizon)
    return ctx.latest(
        ("breakdown", by.value, scope.category, scope.horizon, track),
        session,
        lambda own: _compute(ctx, own, by.value, scope, track),
    )


def _compute(
    ctx: WebContext, session: Session, by: str, scope: Scope, track: Track | None
) -> dict[str, Any]:
    from arena.analytics.breakdown_view import breakdown_report
    from arena.analytics.groups import restrict
    from arena.analytics.records import Forecasts
    from arena.analytics.report import configured_options

    options = configured_options(ctx.settings, as_of=ctx.now())
    forecasts: Forecasts | None = _forecasts_on(session, track)
    if forecasts is not None and len(forecasts) == 0:
        forecasts = None
    elif forecasts is not None and scope:
        forecasts = restrict(
            forecasts,
            category=scope.category,
            horizon=scope.horizon,
            as_of=options.as_of,
            checked=True,
        )
    report = breakdown_report(
        session, forecasts, by, options, scope=scope, track=None if track is None else track.value
    )
    return jsonable(report)
