"""Read queries of the leaderboard, family, cohort and agent pages (JSON-ready dicts).

Each page calls a fixed number of queries whatever the data size; the expensive aggregates
(the leaderboard, which :func:`arena.analytics.leaderboard.compute_leaderboard` computes for
``arena leaderboard`` too, and the v2 ranking) are cached per data version.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from sqlalchemy import Float, case, cast, func, select
from sqlalchemy.orm import Session

from arena.analytics.leaderboard import FamilyStanding, compute_leaderboard, money_text, to_json
from arena.analytics.stored import (
    V2,
    StoredAnalysis,
    analyse,
    latest_analysis,
    stored_forecasts,
)
from arena.domain.book import Pricing
from arena.domain.ledger import Holding
from arena.domain.markets import stored_prices
from arena.domain.states import PositionStatus
from arena.domain.valuation import position_mark, position_value
from arena.errors import NotFound
from arena.jsonable import jsonable
from arena.store import schema
from arena.store.models import (
    Agent,
    AnalysisResult,
    BookMark,
    BrierScore,
    Cohort,
    Decision,
    Family,
    Forecast,
    Market,
    PortfolioSnapshot,
    Position,
    Trade,
)
from arena.web.context import Page, WebContext, columns, count, fields, row_dict, rows_of

log = logging.getLogger(__name__)
CALIBRATION_BINS = 10
RECENT_DECISIONS = 20
DECISION_COLUMNS = (
    "id",
    "cohort_id",
    "decision_week",
    "status",
    "action",
    "system_hold",
    "claim_count",
    "error",
    "prompt_version",
    "methodology_version",
    "created_at",
    "completed_at",
)


def standings(ctx: WebContext, session: Session, cohort_id: int | None) -> list[FamilyStanding]:
    """The leaderboard rows, exactly as ``arena leaderboard`` computes them (the latest computed:
    :meth:`WebContext.latest`)."""
    if cohort_id is not None and session.get(Cohort, cohort_id) is None:
        raise NotFound(f"cohort {cohort_id} does not exist")
    minimum = ctx.settings.benchmark.min_scored_bets
    return ctx.latest(
        ("leaderboard", cohort_id),
        session,
        lambda _own: compute_leaderboard(ctx.factory, cohort_id=cohort_id, min_scored_bets=minimum),
    )


def leaderboard(ctx: WebContext, session: Session, cohort_id: int | None) -> list[dict[str, Any]]:
    """The ``arena leaderboard --format json`` array."""
    return to_json(standings(ctx, session, cohort_id))


def methodology_in_use(ctx: WebContext, session: Session, cohort_id: int | None) -> str:
    """The cohorts' methodology (the newest cohort in scope), else the configured one."""
    statement = select(Cohort.methodology_version).order_by(Cohort.week_start.desc()).limit(1)
    if cohort_id is not None:
        statement = statement.where(Cohort.id == cohort_id)
    return session.scalar(statement) or ctx.settings.methodology


def v2_result(ctx: WebContext, session: Session) -> StoredAnalysis | None:
    """The latest v2 analysis: the one the daemon stored (:mod:`arena.analytics.stored`),
    however old, with its times; never computed inside a request. With none stored (no daemon
    has analysed this database yet), the one this process computes off the request path
    (:class:`arena.web.background.Background`), None while it is being computed."""
    stamp = session.execute(
        select(AnalysisResult.computed_at, AnalysisResult.data_version).where(
            AnalysisResult.name == V2
        )
    ).one_or_none()
    if stamp is not None:
        stored = ctx.cache.get(("v2", None), tuple(stamp), lambda: latest_analysis(session, V2))
        if stored is not None:
            return stored
    value, _current = ctx.analysis.get(ctx.version(session), lambda: _analyse_here(ctx))
    return value


def analyse_before_serving(ctx: WebContext) -> None:
    """Compute the v2 analysis in this thread when none is stored, so that no page waits on
    :func:`v2_result`'s background thread (the static copy: every page rendered at one instant
    shows the same analysis, whatever a thread's timing)."""
    with ctx.session() as session:
        stored = session.scalar(select(AnalysisResult.name).where(AnalysisResult.name == V2))
        version = ctx.version(session)
    if stored is None:
        ctx.analysis.preset(version, _analyse_here(ctx))


def v2_analysis(ctx: WebContext, session: Session) -> dict[str, Any] | None:
    """The whole stored v2 analysis (:func:`arena.analytics.report.full_analysis`'s dict: its
    ranking, proxy, calibration and every other part); None when there is nothing to rank yet
    or it is being computed (:func:`v2_result`)."""
    result = v2_result(ctx, session)
    return result.body if result is not None else None


def v2_ranking(ctx: WebContext, session: Session) -> dict[str, Any] | None:
    """The difficulty-adjusted Brier ranking with 95% intervals (methodology v2): the
    ``ranking`` part of :func:`v2_analysis`, as ``arena analyze ranking`` computes it at its
    ``as_of``; None when no forecast is resolved yet or it is being computed."""
    scored = select(Forecast.id).where(Forecast.scored_at.is_not(None)).limit(1)
    if (
        ctx.cache.get(("any scored", None), ctx.version(session), lambda: session.scalar(scored))
        is None
    ):
        return None  # an existence test, once per data version (a count read every forecast)
    analysis = v2_analysis(ctx, session)
    return analysis.get("ranking") if analysis is not None else None


def v2_status(ctx: WebContext, session: Session) -> dict[str, Any]:
    """What a page shows beside the v2 analysis: when it was computed and as of when, or that
    it is being computed."""
    result = v2_result(ctx, session)
    if result is None:
        return {"pending": True, "as_of": None, "computed_at": None, "resamples": None}
    return {"pending": False, **result.meta()}


def _analyse_here(ctx: WebContext) -> StoredAnalysis:
    """The v2 analysis of the stored forecasts as of now, computed in this process (by
    :func:`v2_result`'s :class:`~arena.web.background.Background`), computed at the context's
    clock: a static copy rendered at a fixed instant shows the same times every time."""
    from arena.analytics.report import configured_options

    as_of = ctx.now()
    with ctx.session() as session:
        forecasts = stored_forecasts(session)
    result = analyse(forecasts, configured_options(ctx.settings), as_of)
    return replace(result, computed_at=ctx.now())


def family_names(session: Session) -> dict[str, str]:
    """Each family's display name by id (its id when it has none): how pages name a forecaster
    that analyses report by id."""
    return {
        family_id: name or family_id
        for family_id, name in session.execute(select(Family.id, Family.display_name))
    }


def cohort_rows(session: Session, cohort_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """Cohorts with their agent count (newest first)."""
    agents = (
        select(Agent.cohort_id, func.count().label("agents")).group_by(Agent.cohort_id).subquery()
    )
    statement = (
        select(Cohort, func.coalesce(agents.c.agents, 0))
        .outerjoin(agents, agents.c.cohort_id == Cohort.id)
        .order_by(Cohort.week_start.desc())
    )
    if cohort_ids is not None:
        statement = statement.where(Cohort.id.in_(cohort_ids))
    return [
        {**row_dict(cohort, *columns(Cohort)), "agents": int(n)}
        for cohort, n in session.execute(statement)
    ]


def cohorts(session: Session, page: Page) -> dict[str, Any]:
    total = int(session.scalar(select(func.count()).select_from(Cohort)) or 0)
    ids = list(session.scalars(page.apply(select(Cohort.id).order_by(Cohort.week_start.desc()))))
    return page.wrap(cohort_rows(session, ids), total)


def cohort(ctx: WebContext, session: Session, cohort_id: int, page: Page) -> dict[str, Any]:
    rows = cohort_rows(session, [cohort_id])
    if not rows:
        raise NotFound(f"cohort {cohort_id} does not exist")
    trades = dict(
        session.execute(
            select(Agent.family_id, func.count())
            .join(Trade, Trade.agent_id == Agent.id)
            .where(Agent.cohort_id == cohort_id)
            .group_by(Agent.family_id)
        ).all()
    )
    table = []
    for standing in standings(ctx, session, cohort_id):
        row = standing.to_json()
        row["cash"] = money_text(standing.cash)
        row["invested"] = money_text(standing.open_cost_basis)
        row["positions_value"] = money_text(standing.positions_value)
        row["trades"] = int(trades.get(standing.family_id, 0))
        table.append(row)
    return {
        "cohort": rows[0],
        "standings": table,
        "decisions": decisions(session, page, cohort_id=cohort_id),
    }


def decisions(
    session: Session,
    page: Page,
    *,
    cohort_id: int | None = None,
    family_id: str | None = None,
    agent_id: int | None = None,
) -> dict[str, Any]:
    """Decisions, newest first, with their agent's family and replicate."""
    wanted = [schema.decisions.c[name] for name in DECISION_COLUMNS]
    statement = select(*wanted, Agent.family_id, Agent.replicate, Agent.display_name).join(
        Agent, Agent.id == Decision.agent_id
    )
    if cohort_id is not None:
        statement = statement.where(Decision.cohort_id == cohort_id)
    if family_id is not None:
        statement = statement.where(Agent.family_id == family_id)
    if agent_id is not None:
        statement = statement.where(Decision.agent_id == agent_id)
    total = count(session, statement.with_only_columns(Decision.id))
    ordered = statement.order_by(Decision.created_at.desc(), Decision.id.desc())
    return page.wrap(rows_of(session, page.apply(ordered)), total)


def family(ctx: WebContext, session: Session, family_id: str) -> dict[str, Any]:
    """One family across cohorts: standing, per-cohort rows with the frozen lineage, recent
    decisions, calibration, cost and reliability."""
    found = session.get(Family, family_id)
    if found is None:
        raise NotFound(f"family {family_id} does not exist")
    board = {row.family_id: row for row in standings(ctx, session, None)}
    standing = board[family_id].to_json() if family_id in board else None
    # the newest snapshot of each agent: one index lookup per agent (agent_id, taken_at)
    latest = (
        select(func.max(PortfolioSnapshot.taken_at))
        .where(PortfolioSnapshot.agent_id == Agent.id)
        .correlate(Agent)
        .scalar_subquery()
    )
    lineage = [
        schema.agents.c[name]
        for name in (
            "id",
            "cohort_id",
            "replicate",
            "display_name",
            "openrouter_id",
            "strategy",
            "prompt_version",
            "methodology_version",
            "starting_balance",
            "cash",
            "realized_pnl",
        )
    ]
    snapshot = [
        schema.portfolio_snapshots.c[name].label(f"snapshot_{name}")
        for name in ("taken_at", "total_value", "pnl", "pnl_pct", "brier", "resolved_bets")
    ]
    per_cohort = []
    for row in rows_of(
        session,
        select(*lineage, Cohort.week_start, *snapshot)
        .join(Cohort, Cohort.id == Agent.cohort_id)
        .outerjoin(
            PortfolioSnapshot,
            (PortfolioSnapshot.agent_id == Agent.id) & (PortfolioSnapshot.taken_at == latest),
        )
        .where(Agent.family_id == family_id)
        .order_by(Cohort.week_start.desc(), Agent.replicate),
    ):
        snap = {k.removeprefix("snapshot_"): row.pop(k) for k in list(row) if k[:9] == "snapshot_"}
        row["snapshot"] = snap if snap["taken_at"] is not None else None
        per_cohort.append(row)
    return {
        "family": row_dict(found, *columns(Family)),
        "standing": standing,
        "cohorts": per_cohort,
        "recent_decisions": decisions(session, Page(1, RECENT_DECISIONS), family_id=family_id),
        "calibration": calibration(session, family_id),
        "research": research(v2_analysis(ctx, session), family_id),
    }


def research(analysis: dict[str, Any] | None, family_id: str) -> dict[str, Any] | None:
    """The family's row of ``analysis`` (:func:`v2_analysis`) against the market and of its
    calibration in depth, with the calibration's bin rule; None without an analysis."""
    if analysis is None or "market" not in analysis:  # none, or stored by an older release
        return None

    def row_of(part: str) -> dict[str, Any] | None:
        return next((r for r in analysis[part]["rows"] if r["forecaster"] == family_id), None)

    return {
        "market": row_of("market"),
        "calibration": row_of("calibration"),
        "bin_rule": analysis["calibration"].get("bin_rule"),
    }


def calibration(session: Session, family_id: str) -> list[dict[str, Any]]:
    """Scored bets binned by implied confidence (stake / max bet, tenths): mean confidence vs.
    share won, per bin, aggregated in SQL (one row per bin, whatever the number of bets)."""
    confidence = cast(BrierScore.implied_confidence, Float)
    edges = [(confidence < (i + 1) / CALIBRATION_BINS, i) for i in range(CALIBRATION_BINS - 1)]
    bin_of = case(*edges, else_=CALIBRATION_BINS - 1).label("bin")
    won = func.sum(case((BrierScore.won.is_(True), 1), else_=0))
    rows = {
        int(b): (int(n), float(mean), int(wins or 0))
        for b, n, mean, wins in session.execute(
            select(bin_of, func.count(), func.avg(confidence), won)
            .where(BrierScore.family_id == family_id)
            .group_by(bin_of)
        )
    }
    out = []
    for i in range(CALIBRATION_BINS):
        n, mean, wins = rows.get(i, (0, 0.0, 0))
        out.append(
            {
                "low": i / CALIBRATION_BINS,
                "high": (i + 1) / CALIBRATION_BINS,
                "n": n,
                "mean_confidence": round(mean, 4) if n else None,
                "observed": round(wins / n, 4) if n else None,
            }
        )
    return out


def cached_agent(
    ctx: WebContext,
    session: Session,
    cohort_id: int,
    family_id: str,
    page: Page,
    replicate: int = 1,
) -> dict[str, Any]:
    """:func:`agent`, once per data version and page of it (:meth:`WebContext.per_version`)."""
    key = ("agent", cohort_id, family_id, replicate, page.page, page.per_page)
    return ctx.per_version(
        key, session, lambda: agent(session, cohort_id, family_id, page, replicate)
    )


def agent(
    session: Session, cohort_id: int, family_id: str, page: Page, replicate: int = 1
) -> dict[str, Any]:
    """One agent (replicate ``replicate`` of the family in the cohort): its valuation (cash,
    open positions at their marks, total value, P/L, return; the latest snapshot beside it),
    open positions with entry price, mark, value and unrealised
    P/L, closed positions with their markets, trades, decisions."""
    found = session.scalar(
        select(Agent).where(
            Agent.cohort_id == cohort_id,
            Agent.family_id == family_id,
            Agent.replicate == replicate,
        )
    )
    if found is None:
        raise NotFound(f"no agent r{replicate} of family {family_id} in cohort {cohort_id}")
    mine = (
        select(*fields(Position), Market.question)
        .join(Market, Market.id == Position.market_id)
        .where(Position.agent_id == found.id)
        .order_by(Position.opened_at.desc(), Position.id.desc())
    )
    closed = mine.where(Position.status != PositionStatus.OPEN)
    # every open position (bounded by the universe), then the requested page of closed ones
    held = session.execute(mine.where(Position.status == PositionStatus.OPEN)).mappings().all()
    open_positions, positions_value = _valued(session, held, found.cohort_id)
    closed_count = count(session, closed.with_only_columns(Position.id))
    closed_page = rows_of(session, page.apply(closed))
    trades = rows_of(
        session,
        page.apply(
            select(*fields(Trade), Market.question)
            .join(Market, Market.id == Trade.market_id)
            .where(Trade.agent_id == found.id)
            .order_by(Trade.executed_at.desc(), Trade.id.desc())
        ),
    )
    trade_total = int(
        session.scalar(select(func.count()).select_from(Trade).where(Trade.agent_id == found.id))
        or 0
    )
    snapshot = session.scalar(
        select(PortfolioSnapshot)
        .where(PortfolioSnapshot.agent_id == found.id)
        .order_by(PortfolioSnapshot.taken_at.desc())
        .limit(1)
    )
    return {
        "agent": row_dict(found, *columns(Agent)),
        "valuation": _valuation(found, positions_value),
        "latest_snapshot": row_dict(snapshot, *columns(PortfolioSnapshot)) if snapshot else None,
        "open_positions": open_positions,
        "closed_positions": page.wrap(closed_page, closed_count),
        "trades": page.wrap(trades, trade_total),
        "decisions": decisions(session, Page(1, 100), agent_id=found.id),
    }


ENTRY_PRICE_PLACES = Decimal("0.000001")
"""An entry price (cost basis over shares, fees included) is a quotient, not a quoted price: it
is written to the millionth, the precision of the ledger's shares."""

OPEN_POSITION_DROPS = ("settlement_outcome", "payout", "realized_pnl", "closed_at")
"""Fields of a position that stay empty while it is open (the closed positions keep them)."""


def _valued(
    session: Session, held: Sequence[Any], cohort_id: int
) -> tuple[list[dict[str, Any]], Decimal]:
    """The open positions with the snapshots' valuation rule
    (:func:`arena.domain.valuation.position_mark`): entry price (cost per share), mark, value
    and unrealised P/L; and their total value."""
    book = session.scalar(select(Cohort.pricing).where(Cohort.id == cohort_id)) == Pricing.BOOK
    market_ids = {row["market_id"] for row in held}
    markets = {
        market_id: (outcomes, stored_prices(prices), tokens)
        for market_id, outcomes, prices, tokens in session.execute(
            select(Market.id, Market.outcomes, Market.prices, Market.clob_token_ids).where(
                Market.id.in_(market_ids)
            )
        )
    }
    token_marks: dict[str, Decimal] = {}
    if book:
        token_marks = dict(
            session.execute(
                select(BookMark.token_id, BookMark.mark).where(BookMark.market_id.in_(market_ids))
            ).all()
        )
    rows, total = [], Decimal(0)
    for position in held:
        outcomes, prices, tokens = markets.get(position["market_id"], (None, None, None))
        shares, basis = position["shares"], position["cost_basis"]
        mark = position_mark(outcomes, prices, tokens, token_marks, position["side"], book)
        value = position_value(shares, basis, mark)
        total += value
        row = {k: v for k, v in position.items() if k not in OPEN_POSITION_DROPS}
        row.update(
            avg_entry_price=Holding(shares, basis).avg_entry_price.quantize(ENTRY_PRICE_PLACES),
            mark=mark,
            value=value,
            unrealized_pnl=value - basis,
        )
        rows.append(jsonable(row, trim=True))
    return rows, total


def _valuation(found: Agent, positions_value: Decimal) -> dict[str, Any]:
    """Cash, open positions' value, total value, P/L and return of ``found`` now (the
    snapshots' rule: what the next snapshot at the same marks would store)."""
    total = found.cash + positions_value
    pnl = total - found.starting_balance
    pct = pnl / found.starting_balance * 100 if found.starting_balance else None
    return jsonable(
        {
            "cash": found.cash,
            "positions_value": positions_value,
            "total_value": total,
            "pnl": pnl,
            "return_pct": pct.quantize(Decimal("0.0001")) if pct is not None else None,
            "realized_pnl": found.realized_pnl,
        },
        trim=True,
    )
