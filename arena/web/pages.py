"""The HTML pages: server-rendered tables (they work without JavaScript); charts fetch the
JSON API from the page's own origin."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from arena.domain.states import Methodology
from arena.web import api, records, standings
from arena.web.app import html
from arena.web.columns import (
    EXECUTION_COLUMNS,
    LEADERBOARD_COLUMNS,
    RANKING_COLUMNS,
    RELIABILITY_COLUMNS,
)
from arena.web.markdown import render_markdown
from arena.web.params import (
    CategoryParam,
    CheckedRoute,
    CohortParam,
    HeldParam,
    PageParam,
    PerPageParam,
    SearchParam,
    now,
    page_of,
)

router = APIRouter(include_in_schema=False, route_class=CheckedRoute)


@router.get("/", response_class=HTMLResponse)
def leaderboard(request: Request, cohort: CohortParam = None) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        rows = standings.leaderboard(ctx, session, cohort)
        methodology = standings.methodology_in_use(ctx, session, cohort)
        ranking = standings.v2_ranking(ctx, session) if methodology == Methodology.V2 else None
        cohort_list = standings.cohort_rows(session)
    return html(
        request,
        "leaderboard.html",
        {
            "rows": rows,
            "cohort": cohort,
            "cohorts": cohort_list,
            "methodology": methodology,
            "ranking": ranking,
            "columns": LEADERBOARD_COLUMNS,
            "ranking_columns": RANKING_COLUMNS,
            "reliability_columns": RELIABILITY_COLUMNS,
            "execution_columns": EXECUTION_COLUMNS,
            "min_scored_bets": ctx.settings.benchmark.min_scored_bets,
        },
    )


@router.get("/families/{family_id}", response_class=HTMLResponse)
def family(request: Request, family_id: str) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        data = standings.family(ctx, session, family_id)
    return html(request, "family.html", {"data": data, "columns": LEADERBOARD_COLUMNS})


@router.get("/cohorts", response_class=HTMLResponse)
def cohorts(request: Request, page: PageParam = 1, per_page: PerPageParam = 50) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        data = standings.cohorts(session, page_of(page, per_page))
    return html(request, "cohorts.html", {"data": data})


@router.get("/cohorts/{cohort_id}", response_class=HTMLResponse)
def cohort(
    request: Request, cohort_id: int, page: PageParam = 1, per_page: PerPageParam = 50
) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        data = standings.cohort(ctx, session, cohort_id, page_of(page, per_page))
    return html(request, "cohort.html", {"data": data, "columns": LEADERBOARD_COLUMNS})


@router.get("/cohorts/{cohort_id}/families/{family_id}", response_class=HTMLResponse)
def agent(
    request: Request,
    cohort_id: int,
    family_id: str,
    page: PageParam = 1,
    per_page: PerPageParam = 50,
) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        data = standings.agent(session, cohort_id, family_id, page_of(page, per_page))
    return html(request, "agent.html", {"data": data})


@router.get("/markets", response_class=HTMLResponse)
def markets(
    request: Request,
    q: SearchParam = None,
    status: records.MarketStatus | None = None,
    category: CategoryParam = None,
    sort: records.MarketSort = records.MarketSort.VOLUME,
    held: HeldParam = False,
    page: PageParam = 1,
    per_page: PerPageParam = 50,
) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        data = records.markets(
            session,
            page_of(page, per_page),
            q=q,
            status=status,
            category=category,
            sort=sort,
            held=held,
        )
    query = {
        "q": q or "",
        "status": status.value if status else "",
        "category": category or "",
        "sort": sort.value,
        "held": held,
    }
    return html(request, "markets.html", {"data": data, "query": query})


@router.get("/markets/{market_id}", response_class=HTMLResponse)
def market(request: Request, market_id: str) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        data = records.market(session, market_id)
    return html(request, "market.html", {"data": data})


@router.get("/decisions/{decision_id}", response_class=HTMLResponse)
def decision(request: Request, decision_id: int) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        data = records.decision(session, decision_id)
    return html(request, "decision.html", {"data": data})


@router.get("/status", response_class=HTMLResponse)
def status(request: Request) -> HTMLResponse:
    ctx = api._ctx(request)
    with ctx.session() as session:
        data = records.cached_status(ctx, session, now())
    return html(request, "status.html", {"data": data})


@router.get("/methodology", response_class=HTMLResponse)
def methodology(request: Request) -> HTMLResponse:
    return html(request, "methodology.html", {"body": render_markdown(api.methodology_text())})


@router.get("/api/docs", response_class=HTMLResponse)
def api_docs(request: Request) -> HTMLResponse:
    return api.docs_page(request)
