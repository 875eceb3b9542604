"""The HTML pages: server-rendered tables (they work without JavaScript); charts fetch the
JSON API from the page's own origin."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from arena.analytics.leaderboard_columns import (
    EXECUTION_COLUMNS,
    LEADERBOARD_COLUMNS,
    RELIABILITY_COLUMNS,
)
from arena.domain.states import Job, Methodology
from arena.slots import next_slot
from arena.web import breakdown as where
from arena.web import records, standings, trend
from arena.web.api import methodology_text
from arena.web.breakdown import By, ByParam, Horizon, Track, Where, WhereDep
from arena.web.columns import RANKING_COLUMNS
from arena.web.deps import ContextDep, SessionDep, web_context
from arena.web.markdown import render_markdown
from arena.web.params import (
    CheckedRoute,
    CohortParam,
    MarketFilterDep,
    PageDep,
    ReplicateParam,
    now,
)
from arena.web.render import html
from arena.web.risk import risk_report
from arena.web.schemas import allowed_values

router = APIRouter(include_in_schema=False, route_class=CheckedRoute)


@router.get("/", response_class=HTMLResponse)
def leaderboard(
    request: Request,
    ctx: ContextDep,
    session: SessionDep,
    chosen: WhereDep,
    cohort: CohortParam = None,
) -> HTMLResponse:
    category, horizon, track = chosen.category, chosen.horizon, chosen.track
    rows = where.leaderboard(ctx, session, cohort, category, horizon, track)
    methodology = standings.methodology_in_use(ctx, session, cohort)
    v2 = methodology == Methodology.V2
    ranking = where.v2_ranking(ctx, session, category, horizon, track) if v2 else None
    # the stored analysis's other parts cover every market: shown unfiltered only
    whole = v2 and category is None and horizon is None and track is None
    analysis = standings.v2_analysis(ctx, session) if whole else None
    market = analysis.get("market") if analysis else None
    return html(
        request,
        "leaderboard.html",
        {
            "rows": rows,
            "cohort": cohort,
            "cohorts": standings.cohort_rows(session),
            "methodology": methodology,
            "ranking": ranking,
            "analysis": standings.v2_status(ctx, session) if v2 else None,
            "market": market,
            "market_rows": _in_skill_order(market["rows"]) if market else [],
            "power": analysis.get("power") if analysis else None,
            "replicates": _with_replicates(analysis.get("replicates") if analysis else None),
            "family_names": standings.family_names(session),
            "risk": risk_report(ctx, session) if rows else None,
            "columns": LEADERBOARD_COLUMNS,
            "ranking_columns": RANKING_COLUMNS,
            "reliability_columns": RELIABILITY_COLUMNS,
            "execution_columns": EXECUTION_COLUMNS,
            "min_scored_bets": ctx.settings.benchmark.min_scored_bets,
            "next_decision_run": next_slot(ctx.settings, Job.DECISION_RUN, ctx.now()).isoformat(),
            "ranks": trend.rank_over_weeks(
                trend.trend_report(ctx, session), standings.family_names(session)
            ),
            **where_selector(session, chosen),
        },
    )


def _in_skill_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the "against the market" table, highest alpha first (numpy loads only for
    a page that has an analysis to show)."""
    from arena.analytics.market import in_skill_order

    return in_skill_order(rows)


def _with_replicates(split: dict[str, Any] | None) -> dict[str, Any] | None:
    """The replicates' variance split when a family has more than one replicate (an analysis
    stored by an older arena, without ``rows``, shows none until the next), the families too
    close to order to the next marked."""
    if not split or not any(row["replicates"] > 1 for row in split.get("rows", [])):
        return None
    close = {pair["upper"] for pair in split["close_orderings"]}
    rows = [{**row, "close_to_next": row["forecaster"] in close} for row in split["rows"]]
    return {**split, "rows": rows}


def where_selector(session: SessionDep, chosen: Where) -> dict[str, Any]:
    """What the category, horizon and track selector of a page shows."""
    return {
        "categories": where.categories(session),
        "category": chosen.category,
        "horizon": None if chosen.horizon is None else chosen.horizon.value,
        "horizons": [h.value for h in Horizon],
        "track": None if chosen.track is None else chosen.track.value,
        "tracks": [t.value for t in Track],
    }


@router.get("/breakdown", response_class=HTMLResponse)
def breakdown(
    request: Request,
    ctx: ContextDep,
    session: SessionDep,
    chosen: WhereDep,
    by: ByParam = By.CATEGORY,
) -> HTMLResponse:
    data = where.breakdown(ctx, session, by, chosen.category, chosen.horizon, chosen.track)
    context = {"data": data, "by": by.value, **where_selector(session, chosen)}
    return html(request, "breakdown.html", context)


@router.get("/families/{family_id}", response_class=HTMLResponse)
def family(request: Request, ctx: ContextDep, session: SessionDep, family_id: str) -> HTMLResponse:
    data = standings.family(ctx, session, family_id)
    context = {"data": data, "columns": LEADERBOARD_COLUMNS}
    context["trend"] = trend.family_trend(ctx, session, family_id)
    return html(request, "family.html", context)


@router.get("/cohorts", response_class=HTMLResponse)
def cohorts(request: Request, session: SessionDep, page: PageDep) -> HTMLResponse:
    return html(request, "cohorts.html", {"data": standings.cohorts(session, page)})


@router.get("/cohorts/{cohort_id}", response_class=HTMLResponse)
def cohort(
    request: Request, ctx: ContextDep, session: SessionDep, cohort_id: int, page: PageDep
) -> HTMLResponse:
    data = standings.cohort(ctx, session, cohort_id, page)
    return html(request, "cohort.html", {"data": data, "columns": LEADERBOARD_COLUMNS})


@router.get("/cohorts/{cohort_id}/families/{family_id}", response_class=HTMLResponse)
def agent(
    request: Request,
    session: SessionDep,
    cohort_id: int,
    family_id: str,
    page: PageDep,
    replicate: ReplicateParam = 1,
) -> HTMLResponse:
    ctx = web_context(request)
    data = standings.cached_agent(ctx, session, cohort_id, family_id, page, replicate)
    return html(request, "agent.html", {"data": data})


@router.get("/markets", response_class=HTMLResponse)
def markets(
    request: Request, session: SessionDep, chosen: MarketFilterDep, page: PageDep
) -> HTMLResponse:
    data = records.markets(session, page, chosen)
    query = {
        "q": chosen.q or "",
        "status": chosen.status.value if chosen.status else "",
        "category": chosen.category or "",
        "sort": chosen.sort.value,
        "held": chosen.held,
    }
    return html(request, "markets.html", {"data": data, "query": query})


@router.get("/markets/{market_id}", response_class=HTMLResponse)
def market(request: Request, ctx: ContextDep, session: SessionDep, market_id: str) -> HTMLResponse:
    return html(request, "market.html", {"data": records.cached_market(ctx, session, market_id)})


@router.get("/decisions/{decision_id}", response_class=HTMLResponse)
def decision(request: Request, session: SessionDep, decision_id: int) -> HTMLResponse:
    return html(request, "decision.html", {"data": records.decision(session, decision_id)})


@router.get("/status", response_class=HTMLResponse)
def status(request: Request, ctx: ContextDep, session: SessionDep) -> HTMLResponse:
    data = records.cached_status(ctx, session, now())
    return html(request, "status.html", {"data": data})


@router.get("/methodology", response_class=HTMLResponse)
def methodology(request: Request) -> HTMLResponse:
    return html(request, "methodology.html", {"body": render_markdown(methodology_text())})


@router.get("/api/docs", response_class=HTMLResponse)
def api_docs(request: Request) -> HTMLResponse:
    """``/api/docs``: the OpenAPI description rendered on the server (no script, no CDN); the
    descriptions are Markdown, and each enumerated parameter lists the values it allows."""
    document = request.app.openapi()
    operations = [
        {
            "method": method.upper(),
            "path": path,
            "description": render_markdown(op.get("description", "")),
            "responses": list(op.get("responses", {})),
            "parameters": [
                {**p, "values": allowed_values(p, document)} for p in op.get("parameters", [])
            ],
        }
        for path, methods in document["paths"].items()
        for method, op in methods.items()
    ]
    return html(request, "api_docs.html", {"schema": document, "operations": operations})
