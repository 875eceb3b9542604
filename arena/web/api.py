"""``/api/v1``: the JSON twin of every page, built from the same query functions."""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from arena.web import records, standings
from arena.web.curves import CurveRange, curves
from arena.web.deps import ContextDep, SessionDep
from arena.web.params import (
    CheckedRoute,
    CohortParam,
    FamilyParam,
    MarketFilterDep,
    PageDep,
    now,
)


class JSONReadyRoute(CheckedRoute):
    """An API route whose endpoint returns JSON-ready dicts and lists (the rows the pages
    render, already made plain by :func:`arena.jsonable.jsonable`): they are serialised once
    by ``json.dumps``, skipping FastAPI's validation and re-encoding of every value against the
    ``dict[str, Any]`` return annotation (a third of the agent route's time). The annotation
    still documents the route in ``/api/docs``. Its parameters pass the edge rule of
    :class:`~arena.web.params.CheckedRoute` first."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        @functools.wraps(endpoint)
        def respond(*args: Any, **kw: Any) -> Any:
            body = endpoint(*args, **kw)
            return body if isinstance(body, Response) else JSONResponse(body)

        super().__init__(path, respond, **kwargs)


router = APIRouter(prefix="/api/v1", tags=["api"], route_class=JSONReadyRoute)
# The repository's METHODOLOGY.md, shipped in the package (arena/resources links to it).
METHODOLOGY = Path(str(resources.files("arena") / "resources" / "METHODOLOGY.md"))


@router.get("/leaderboard")
def leaderboard(
    ctx: ContextDep, session: SessionDep, cohort: CohortParam = None
) -> list[dict[str, Any]]:
    """Standings per family: the same rows and fields as ``arena leaderboard --format json``."""
    return standings.leaderboard(ctx, session, cohort)


@router.get("/ranking")
def ranking(ctx: ContextDep, session: SessionDep) -> dict[str, Any]:
    """Methodology v2: the difficulty-adjusted Brier ranking with 95% intervals (``rows`` is
    empty until forecasts resolve)."""
    report = standings.v2_ranking(ctx, session)
    methodology = standings.methodology_in_use(ctx, session, None)
    return {"methodology": methodology, "ranking": report}


@router.get("/curves")
def curve(
    ctx: ContextDep,
    session: SessionDep,
    family: FamilyParam = None,
    cohort: CohortParam = None,
    range: CurveRange = CurveRange.ALL,
) -> dict[str, Any]:
    """Each family's total value over its agents (the leaderboard's total_value), its
    break-even and return over a range, at most 800 points per series (each time bucket keeps
    its first, last, minimum and maximum), starting at the last point at or before the range."""
    return ctx.cache.get(
        ("curves", family, cohort, range.value),
        ctx.version(session),
        lambda: curves(session, range, cohort_id=cohort, family_id=family),
    )


@router.get("/families/{family_id}")
def family(ctx: ContextDep, session: SessionDep, family_id: str) -> dict[str, Any]:
    """One family across cohorts: standing, cohorts with the frozen lineage, recent decisions,
    calibration, cost and reliability."""
    return standings.family(ctx, session, family_id)


@router.get("/cohorts")
def cohorts(session: SessionDep, page: PageDep) -> dict[str, Any]:
    """Cohorts, newest first (paginated)."""
    return standings.cohorts(session, page)


@router.get("/cohorts/{cohort_id}")
def cohort(ctx: ContextDep, session: SessionDep, cohort_id: int, page: PageDep) -> dict[str, Any]:
    """One cohort: standings (cash, invested, value, P/L, return, resolved bets, trades) and
    its decisions (paginated)."""
    return standings.cohort(ctx, session, cohort_id, page)


@router.get("/cohorts/{cohort_id}/families/{family_id}")
def agent(session: SessionDep, cohort_id: int, family_id: str, page: PageDep) -> dict[str, Any]:
    """One agent: open and closed positions, trades (paginated) and decisions."""
    return standings.agent(session, cohort_id, family_id, page)


@router.get("/markets")
def markets(session: SessionDep, chosen: MarketFilterDep, page: PageDep) -> dict[str, Any]:
    """Markets: search, status and category filters, sorting, only-held toggle (paginated)."""
    return records.markets(session, page, chosen)


@router.get("/markets/{market_id}")
def market(session: SessionDep, market_id: str) -> dict[str, Any]:
    """One market with every agent's positions and trades, Brier rows and forecasts."""
    return records.market(session, market_id)


@router.get("/decisions/{decision_id}")
def decision(session: SessionDep, decision_id: int) -> dict[str, Any]:
    """One decision with every attempt (prompt, raw response, error), its trades and claims."""
    return records.decision(session, decision_id)


@router.get("/status")
def status(ctx: ContextDep, session: SessionDep) -> dict[str, Any]:
    """What ``arena status`` shows: jobs, unfinished cohorts, warnings."""
    return records.cached_status(ctx, session, now())


@router.get("/methodology")
def methodology() -> dict[str, Any]:
    """METHODOLOGY.md as Markdown text."""
    return {"markdown": methodology_text()}


def methodology_text() -> str:
    """The text of METHODOLOGY.md (a stub when this copy of arena ships without it)."""
    try:
        return METHODOLOGY.read_text(encoding="utf-8")
    except OSError:
        return "# Methodology\n\nMETHODOLOGY.md is not installed with this copy of arena."
