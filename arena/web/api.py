"""``/api/v1``: the JSON twin of every page, built from the same query functions.

Each route declares its response model (:mod:`arena.web.schemas`), which FastAPI checks every
answer against, and the errors it answers with. Endpoint docstrings are the descriptions of
``/api/docs`` and ``/api/openapi.json``: Markdown, not reStructuredText.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from arena.config import AGENT_SCHEMA_VERSION
from arena.web import breakdown as where
from arena.web import records, schemas, standings, trend
from arena.web.breakdown import By, ByParam, HorizonParam, TrackParam
from arena.web.context import WebContext
from arena.web.curves import MAX_POINTS, CurveRange, curves
from arena.web.deps import ContextDep, SessionDep
from arena.web.params import (
    CategoryParam,
    CheckedRoute,
    CohortId,
    CohortParam,
    DecisionId,
    FamilyId,
    FamilyParam,
    MarketFilterDep,
    MarketId,
    PageDep,
    ReplicateParam,
    now,
)
from arena.web.risk import RiskBy, RiskValue, risk_report
from arena.web.schemas import INVALID, NOT_FOUND

router = APIRouter(
    prefix="/api/v1", tags=["api"], route_class=CheckedRoute, responses={**schemas.UNAVAILABLE}
)
# The outside-agent contract, shipped in the package.
AGENT_SCHEMA = resources.files("arena") / "resources" / f"agent_schema_v{AGENT_SCHEMA_VERSION}.json"
# The repository's METHODOLOGY.md, shipped in the package (arena/resources links to it).
METHODOLOGY = Path(str(resources.files("arena") / "resources" / "METHODOLOGY.md"))
# a route with an {id}: an unknown id is a 404, a bad parameter a 422
BY_ID: schemas.Responses = {**NOT_FOUND, **INVALID}


@router.get("/leaderboard", response_model=list[schemas.Standing], responses=BY_ID)
def leaderboard(
    ctx: ContextDep,
    session: SessionDep,
    cohort: CohortParam = None,
    category: CategoryParam = None,
    horizon: HorizonParam = None,
    track: TrackParam = None,
) -> list[dict[str, Any]]:
    """Standings per family: the same rows and fields as `arena leaderboard --format json`
    (404 for an unknown cohort). With `category` or `horizon`: the money and scores of the
    matching positions and bets only, as `arena leaderboard --category/--horizon` (an unknown
    category is a 422 listing the known ones). With `track`: the families on that track only,
    as `arena leaderboard --track` (an unknown track is a 422 listing the known ones)."""
    return where.leaderboard(ctx, session, cohort, category, horizon, track)


@router.get("/breakdown", response_model=schemas.Breakdown, responses=INVALID)
def breakdown(
    ctx: ContextDep,
    session: SessionDep,
    by: ByParam = By.CATEGORY,
    category: CategoryParam = None,
    horizon: HorizonParam = None,
    track: TrackParam = None,
) -> dict[str, Any]:
    """Every family per market category (`by=category`) or horizon bucket (`by=horizon`):
    positions, P/L, cost, scored bets and Brier, and forecasts, scored questions and the
    difficulty-adjusted Brier with its interval; the same as
    `arena analyze breakdown --by ... --format json` at the server's instant (with `track`:
    the forecasters on that track only, as `--track`)."""
    return where.breakdown(ctx, session, by, category, horizon, track)


@router.get("/ranking", response_model=schemas.Ranking, responses=INVALID)
def ranking(
    ctx: ContextDep,
    session: SessionDep,
    category: CategoryParam = None,
    horizon: HorizonParam = None,
    track: TrackParam = None,
) -> dict[str, Any]:
    """Methodology v2: the difficulty-adjusted Brier ranking with 95% intervals (`ranking` is
    null until forecasts resolve, and while the analysis is being computed: `pending`). It is
    the stored analysis the daemon computed after its last write, as of `as_of` and computed
    at `computed_at`; no request computes it. With `category` or `horizon` it is the ranking of
    the forecasts of those markets only, as `arena analyze ranking --category/--horizon`,
    computed at the first such request after a write and then cached; with `track`, of the
    forecasters on that track only, as `--track`."""
    return {
        **_part(ctx, session, "ranking"),
        "ranking": where.v2_ranking(ctx, session, category, horizon, track),
    }


@router.get("/market", response_model=schemas.AgainstMarket)
def market_skill(ctx: ContextDep, session: SessionDep) -> dict[str, Any]:
    """Methodology v2: skill against the market per forecaster (alpha in Brier and log terms,
    the market-copy index, the return per $1 against the odds before and after the fee), as
    `arena analyze market --format json` (`market` is null until forecasts resolve)."""
    return _part(ctx, session, "market")


@router.get("/power", response_model=schemas.Power)
def power(ctx: ContextDep, session: SessionDep) -> dict[str, Any]:
    """Methodology v2: weeks to separate each adjacent pair of the ranking, with its
    assumptions, as `arena analyze power --format json` (`power` is null until forecasts
    resolve)."""
    return _part(ctx, session, "power")


@router.get("/replicates", response_model=schemas.Replicates)
def replicates(ctx: ContextDep, session: SessionDep) -> dict[str, Any]:
    """Methodology v2: skill or the luck of a run. Per family its replicates' mean raw Brier
    and spread, the variance between and within families, the intraclass correlation and the
    adjacent families too close to order, as `arena analyze replicates --format json`
    (`replicates` is null until forecasts resolve)."""
    part = _part(ctx, session, "replicates")
    if part["replicates"] is not None and "rows" not in part["replicates"]:
        part["replicates"] = None  # stored by an older arena: null until the next analysis
    return part


def _part(ctx: WebContext, session: Session, name: str) -> dict[str, Any]:
    """One part of the stored v2 analysis (:func:`arena.web.standings.v2_analysis`; null
    without one) with the methodology in use and which analysis it comes from."""
    analysis = standings.v2_analysis(ctx, session)
    return {
        "methodology": standings.methodology_in_use(ctx, session, None),
        name: None if analysis is None else analysis.get(name),
        **standings.v2_status(ctx, session),
    }


@router.get(
    "/curves",
    response_model=schemas.Curves,
    responses=INVALID,
    description="Each family's total value over its agents (the leaderboard's `total_value`), "
    "its break-even (`base`) and return over a range, at most "
    f"{MAX_POINTS} points per series (`max_points`): each time bucket keeps its first, last, "
    "minimum and maximum point, and each series starts at its last point at or before `start`.",
)
def curve(
    ctx: ContextDep,
    session: SessionDep,
    family: FamilyParam = None,
    cohort: CohortParam = None,
    range: Annotated[
        CurveRange, Query(description="The time range, ending at the newest snapshot in scope.")
    ] = CurveRange.ALL,
) -> dict[str, Any]:
    """The portfolio curves of the chart (described in the decorator, from MAX_POINTS)."""
    return ctx.latest(
        ("curves", family, cohort, range.value),
        session,
        lambda own: curves(own, range, cohort_id=cohort, family_id=family),
    )


@router.get("/risk", response_model=schemas.Risk, responses=INVALID)
def risk(
    ctx: ContextDep,
    session: SessionDep,
    by: Annotated[RiskBy, Query(description="Per family, or per agent.")] = RiskBy.FAMILY,
    value: Annotated[
        RiskValue, Query(description="Value at the mark, or at exit (mode book cohorts only).")
    ] = RiskValue.MARK,
    track: TrackParam = None,
) -> dict[str, Any]:
    """Risk and return of each portfolio curve, as `arena analyze risk --format json`: Sharpe
    and Sortino of the weekly returns (annualised by sqrt(52)), maximum drawdown in % and $
    with its duration in hours and whether it recovered, and Calmar, each with its 95%
    moving-block bootstrap interval or `"insufficient"` (below 8 complete weeks, or no defined
    value; the reason is in `insufficient_reason`). With `track`: the agents on that track
    only, as `--track`."""
    return risk_report(ctx, session, by, value, track)


@router.get("/families/{family_id}", response_model=schemas.Family, responses=BY_ID)
def family(ctx: ContextDep, session: SessionDep, family_id: FamilyId) -> dict[str, Any]:
    """One family across cohorts: standing, cohorts with the frozen lineage, recent decisions,
    calibration, cost and reliability."""
    return standings.family(ctx, session, family_id)


@router.get("/families/{family_id}/trend", response_model=schemas.FamilyTrend, responses=BY_ID)
def family_trend(
    ctx: ContextDep, session: SessionDep, family_id: FamilyId, track: TrackParam = None
) -> dict[str, Any]:
    """One family per cohort week: weekly return, Brier (v1), adjusted score and alpha (v2),
    rank that week and cumulatively among every family, and where its lineage changed; the
    rows of `arena analyze trend --format json` at the same instant. With `track`: its weeks on
    that track, ranked among that track's families only, as `--track`."""
    return trend.family_trend(ctx, session, family_id, track)


@router.get("/cohorts", response_model=schemas.CohortPage, responses=INVALID)
def cohorts(session: SessionDep, page: PageDep) -> dict[str, Any]:
    """Cohorts, newest first (paginated)."""
    return standings.cohorts(session, page)


@router.get("/cohorts/{cohort_id}", response_model=schemas.Cohort, responses=BY_ID)
def cohort(
    ctx: ContextDep, session: SessionDep, cohort_id: CohortId, page: PageDep
) -> dict[str, Any]:
    """One cohort: standings (cash, invested, value, P/L, return, resolved bets, trades) and
    its decisions (paginated)."""
    return standings.cohort(ctx, session, cohort_id, page)


@router.get(
    "/cohorts/{cohort_id}/families/{family_id}", response_model=schemas.Agent, responses=BY_ID
)
def agent(
    ctx: ContextDep,
    session: SessionDep,
    cohort_id: CohortId,
    family_id: FamilyId,
    page: PageDep,
    replicate: ReplicateParam = 1,
) -> dict[str, Any]:
    """One agent (replicate 1 of the family unless `replicate` names another): open and closed
    positions, trades (paginated) and decisions."""
    return standings.cached_agent(ctx, session, cohort_id, family_id, page, replicate)


@router.get("/markets", response_model=schemas.Markets, responses=INVALID)
def markets(session: SessionDep, chosen: MarketFilterDep, page: PageDep) -> dict[str, Any]:
    """Markets: search, status and category filters, sorting, only-held toggle (paginated)."""
    return records.markets(session, page, chosen)


@router.get("/markets/{market_id}", response_model=schemas.Market, responses=BY_ID)
def market(ctx: ContextDep, session: SessionDep, market_id: MarketId) -> dict[str, Any]:
    """One market with every agent's positions and trades, Brier rows and forecasts."""
    return records.cached_market(ctx, session, market_id)


@router.get("/decisions/{decision_id}", response_model=schemas.Decision, responses=BY_ID)
def decision(session: SessionDep, decision_id: DecisionId) -> dict[str, Any]:
    """One decision with every attempt (prompt, raw response, error), its trades and claims."""
    return records.decision(session, decision_id)


@router.get("/status", response_model=schemas.Status)
def status(ctx: ContextDep, session: SessionDep) -> dict[str, Any]:
    """What `arena status` shows: jobs, unfinished cohorts, warnings."""
    return records.cached_status(ctx, session, now())


@router.get("/record", response_model=schemas.RecordLine)
def record(ctx: ContextDep, session: SessionDep) -> dict[str, Any]:
    """The record chain's head, its latest commitment (`null` until one is made; `signed` says
    whether it carries an Ed25519 signature) and each configured anchor's deliveries: the
    latest commitment it took, how many wait for it, and its latest failure."""
    return records.record(ctx, session)


@router.get("/methodology", response_model=schemas.Methodology)
def methodology() -> dict[str, Any]:
    """METHODOLOGY.md as Markdown text."""
    return {"markdown": methodology_text()}


@router.get("/agent-schema", response_model=dict[str, Any])
def agent_contract() -> dict[str, Any]:
    """The outside-agent contract (families of `kind: agent`), a versioned JSON Schema: the
    decision request arena POSTs to an agent (`$defs.request`) and the reply it reads
    (`$defs.reply`)."""
    schema: dict[str, Any] = json.loads(AGENT_SCHEMA.read_text(encoding="utf-8"))
    return schema


def methodology_text() -> str:
    """The text of METHODOLOGY.md (a stub when this copy of arena ships without it)."""
    try:
        return METHODOLOGY.read_text(encoding="utf-8")
    except OSError:
        return "# Methodology\n\nMETHODOLOGY.md is not installed with this copy of arena."
