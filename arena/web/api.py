"""``/api/v1``: the JSON twin of every page, built from the same query functions."""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from arena.web import records, standings
from arena.web.context import WebContext
from arena.web.curves import CurveRange, curves
from arena.web.params import (
    CategoryParam,
    CheckedRoute,
    CohortParam,
    FamilyParam,
    HeldParam,
    PageParam,
    PerPageParam,
    SearchParam,
    now,
    page_of,
)


class JSONReadyRoute(CheckedRoute):
    """An API route whose endpoint returns JSON-ready dicts and lists (the rows the pages
    render, already made plain by :func:`arena.web.context.jsonable`): they are serialised once
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


def _ctx(request: Request) -> WebContext:
    return request.app.state.ctx


@router.get("/leaderboard")
def leaderboard(request: Request, cohort: CohortParam = None) -> list[dict[str, Any]]:
    """Standings per family: the same rows and fields as ``arena leaderboard --format json``."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return standings.leaderboard(ctx, session, cohort)


@router.get("/ranking")
def ranking(request: Request) -> dict[str, Any]:
    """Methodology v2: the difficulty-adjusted Brier ranking with 95% intervals (``rows`` is
    empty until forecasts resolve)."""
    ctx = _ctx(request)
    with ctx.session() as session:
        report = standings.v2_ranking(ctx, session)
        methodology = standings.methodology_in_use(ctx, session, None)
    return {"methodology": methodology, "ranking": report}


@router.get("/curves")
def curve(
    request: Request,
    family: FamilyParam = None,
    cohort: CohortParam = None,
    range: CurveRange = CurveRange.ALL,
) -> dict[str, Any]:
    """Portfolio value and return per family over a range, at most 1,000 points per series
    (each time bucket keeps its first, last, minimum and maximum)."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return ctx.cache.get(
            ("curves", family, cohort, range.value),
            ctx.version(session),
            lambda: curves(session, range, cohort_id=cohort, family_id=family),
        )


@router.get("/families/{family_id}")
def family(request: Request, family_id: str) -> dict[str, Any]:
    """One family across cohorts: standing, cohorts with the frozen lineage, recent decisions,
    calibration, cost and reliability."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return standings.family(ctx, session, family_id)


@router.get("/cohorts")
def cohorts(request: Request, page: PageParam = 1, per_page: PerPageParam = 50) -> dict[str, Any]:
    """Cohorts, newest first (paginated)."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return standings.cohorts(session, page_of(page, per_page))


@router.get("/cohorts/{cohort_id}")
def cohort(
    request: Request, cohort_id: int, page: PageParam = 1, per_page: PerPageParam = 50
) -> dict[str, Any]:
    """One cohort: standings (cash, invested, value, P/L, return, resolved bets, trades) and
    its decisions (paginated)."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return standings.cohort(ctx, session, cohort_id, page_of(page, per_page))


@router.get("/cohorts/{cohort_id}/families/{family_id}")
def agent(
    request: Request,
    cohort_id: int,
    family_id: str,
    page: PageParam = 1,
    per_page: PerPageParam = 50,
) -> dict[str, Any]:
    """One agent: open and closed positions, trades (paginated) and decisions."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return standings.agent(session, cohort_id, family_id, page_of(page, per_page))


@router.get("/markets")
def markets(
    request: Request,
    q: SearchParam = None,
    status: records.MarketStatus | None = None,
    category: CategoryParam = None,
    sort: records.MarketSort = records.MarketSort.VOLUME,
    held: HeldParam = False,
    page: PageParam = 1,
    per_page: PerPageParam = 50,
) -> dict[str, Any]:
    """Markets: search, status and category filters, sorting, only-held toggle (paginated)."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return records.markets(
            session,
            page_of(page, per_page),
            q=q,
            status=status,
            category=category,
            sort=sort,
            held=held,
        )


@router.get("/markets/{market_id}")
def market(request: Request, market_id: str) -> dict[str, Any]:
    """One market with every agent's positions and trades, Brier rows and forecasts."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return records.market(session, market_id)


@router.get("/decisions/{decision_id}")
def decision(request: Request, decision_id: int) -> dict[str, Any]:
    """One decision with every attempt (prompt, raw response, error), its trades and claims."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return records.decision(session, decision_id)


@router.get("/status")
def status(request: Request) -> dict[str, Any]:
    """What ``arena status`` shows: jobs, unfinished cohorts, warnings."""
    ctx = _ctx(request)
    with ctx.session() as session:
        return records.cached_status(ctx, session, now())


@router.get("/methodology")
def methodology(request: Request) -> dict[str, Any]:
    """METHODOLOGY.md as Markdown text."""
    return {"markdown": methodology_text()}


def methodology_text() -> str:
    try:
        return METHODOLOGY.read_text(encoding="utf-8")
    except OSError:
        return "# Methodology\n\nMETHODOLOGY.md is not installed with this copy of arena."


def docs_page(request: Request) -> HTMLResponse:
    """``/api/docs``: the OpenAPI description rendered on the server (no script, no CDN)."""
    from arena.web.app import html

    schema = request.app.openapi()
    return html(request, "api_docs.html", {"schema": schema})
