"""Read queries of the market, decision and status pages (JSON-ready dicts), a fixed number of
queries per page."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy import Float, func, or_, select
from sqlalchemy.orm import Session

from arena.domain.states import PositionStatus
from arena.domain.storable import is_market_id
from arena.errors import NotFound
from arena.jobs.status import read_record, read_status
from arena.jsonable import jsonable
from arena.record.records import RecordKind
from arena.store import schema
from arena.store.models import (
    Agent,
    BrierScore,
    Citation,
    Cohort,
    Commitment,
    Decision,
    DecisionAttempt,
    Forecast,
    Market,
    MarketPrice,
    Position,
    Record,
    Trade,
)
from arena.web.context import Page, WebContext, columns, count, fields, row_dict, rows_of
from arena.web.params import MarketFilter, MarketSort

POLYMARKET = "https://polymarket.com"
PRICE_HISTORY = 200
MARKET_LIST_COLUMNS = (
    "id",
    "question",
    "category",
    "status",
    "yes_price",
    "volume",
    "end_date",
    "closed",
    "winning_outcome",
)


def markets(session: Session, page: Page, chosen: MarketFilter | None = None) -> dict[str, Any]:
    """The markets ``chosen`` keeps (default: every market, by volume)."""
    chosen = chosen or MarketFilter()
    q, status, category = chosen.q, chosen.status, chosen.category
    statement = select(*(schema.markets.c[name] for name in MARKET_LIST_COLUMNS))
    if q:
        pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        statement = statement.where(
            or_(Market.question.ilike(pattern, escape="\\"), Market.id == q)
        )
    if status is not None:
        statement = statement.where(Market.status == status.value)
    if category:
        statement = statement.where(Market.category == category)
    if chosen.held:
        # IN without DISTINCT: SQLite plans a correlated EXISTS on the status index (seconds)
        holders = select(Position.market_id).where(Position.status == PositionStatus.OPEN)
        statement = statement.where(Market.id.in_(holders))
    if chosen.sort is MarketSort.CLOSE:
        order = [Market.end_date.is_(None), Market.end_date, Market.id]
    else:
        # volume is exact text on SQLite: order numerically on every backend
        order = [Market.volume.is_(None), func.cast(Market.volume, Float()).desc(), Market.id]
    # the total rides along as a window count: the filter runs once, not twice
    rows = session.execute(
        page.apply(statement.add_columns(func.count().over().label("total")).order_by(*order))
    ).all()
    items = [
        {k: jsonable(v, trim=True) for k, v in row._mapping.items() if k != "total"} for row in rows
    ]
    # past the last page (or when nothing matches) the count is read separately
    total = int(rows[0].total) if rows else count(session, statement.with_only_columns(Market.id))
    result = page.wrap(items, total)
    result["categories"] = list(
        session.scalars(
            select(Market.category)
            .where(Market.category.is_not(None))
            .distinct()
            .order_by(Market.category)
        )
    )
    return result


def polymarket_url(market: Market) -> str:
    """The market on polymarket.com (by its event when known)."""
    if market.event_slug:
        return f"{POLYMARKET}/event/{quote(market.event_slug, safe='')}"
    if market.slug:
        return f"{POLYMARKET}/market/{quote(market.slug, safe='')}"
    return POLYMARKET


def cached_market(ctx: WebContext, session: Session, market_id: str) -> dict[str, Any]:
    """:func:`market`, once per data version (:meth:`WebContext.per_version`)."""
    return ctx.per_version(("market", market_id), session, lambda: market(session, market_id))


def market(session: Session, market_id: str) -> dict[str, Any]:
    """One market: prices, resolution, every agent's positions and trades, Brier rows and
    forecasts."""
    found = session.get(Market, market_id) if is_market_id(market_id) else None
    if found is None:
        raise NotFound(f"market {market_id} does not exist")
    prices = [
        row_dict(p, "observed_at", "prices", "yes_price", "volume")
        for p in session.scalars(
            select(MarketPrice)
            .where(MarketPrice.market_id == market_id)
            .order_by(MarketPrice.observed_at.desc())
            .limit(PRICE_HISTORY)
        )
    ]

    def with_agent(model: Any, order: Any) -> list[dict[str, Any]]:
        return rows_of(
            session,
            select(
                *fields(model, "family_id"), Agent.family_id, Agent.replicate, Agent.display_name
            )
            .join(Agent, Agent.id == model.agent_id)
            .where(model.market_id == market_id)
            .order_by(order, model.id),
        )

    return {
        "market": {**row_dict(found, *columns(Market)), "polymarket_url": polymarket_url(found)},
        "price_history": prices,
        "positions": with_agent(Position, Position.opened_at),
        "trades": with_agent(Trade, Trade.executed_at),
        "brier_scores": with_agent(BrierScore, BrierScore.scored_at),
        "forecasts": with_agent(Forecast, Forecast.forecast_at),
    }


def decision(session: Session, decision_id: int) -> dict[str, Any]:
    """The whole record of one decision: every attempt (prompt messages, raw response, error,
    provider, tokens, cost, latency, the web sources its answer cites), the parsed decision,
    its trades and forecasts, and the claim history (which holder's claim made which
    attempts)."""
    row = session.execute(
        select(Decision, Agent, Cohort)
        .join(Agent, Agent.id == Decision.agent_id)
        .join(Cohort, Cohort.id == Decision.cohort_id)
        .where(Decision.id == decision_id)
    ).first()
    if row is None:
        raise NotFound(f"decision {decision_id} does not exist")
    found, agent, cohort = row
    attempts = rows_of(
        session,
        select(*fields(DecisionAttempt, "raw_body"))
        .where(DecisionAttempt.decision_id == decision_id)
        .order_by(DecisionAttempt.attempt_no, DecisionAttempt.id),
    )
    cited: dict[int, list[dict[str, Any]]] = {}
    for citation in rows_of(
        session,
        select(Citation.attempt_id, *fields(Citation, "id", "attempt_id"))
        .join(DecisionAttempt, DecisionAttempt.id == Citation.attempt_id)
        .where(DecisionAttempt.decision_id == decision_id)
        .order_by(Citation.attempt_id, Citation.position),
    ):
        cited.setdefault(citation.pop("attempt_id"), []).append(citation)
    for attempt in attempts:
        attempt["citations"] = cited.get(attempt["id"], [])
    trades = rows_of(
        session,
        select(*fields(Trade), Market.question)
        .join(Market, Market.id == Trade.market_id)
        .where(Trade.decision_id == decision_id)
        .order_by(Trade.executed_at, Trade.id),
    )
    forecasts = rows_of(
        session,
        select(*fields(Forecast), Market.question)
        .join(Market, Market.id == Forecast.market_id)
        .where(Forecast.decision_id == decision_id)
        .order_by(Forecast.id),
    )
    claims: dict[str, dict[str, Any]] = {}
    for attempt in attempts:
        claim = claims.setdefault(
            attempt["claim_token"],
            {"claim_token": attempt["claim_token"], "attempts": [], "first": None, "last": None},
        )
        claim["attempts"].append(attempt["attempt_no"])
        claim["first"] = claim["first"] or attempt["started_at"]
        claim["last"] = attempt["finished_at"]
    record = row_dict(found, *columns(Decision, "claim_token"))
    return {
        "record": chain_record(session, decision_id),
        "decision": record,
        "agent": row_dict(
            agent, "id", "family_id", "replicate", "display_name", "kind", "openrouter_id"
        ),
        "cohort": row_dict(cohort, "id", "week_start", "methodology_version"),
        "attempts": attempts,
        "trades": trades,
        "forecasts": forecasts,
        "claim_history": {
            "claim_count": found.claim_count,
            "holder": found.holder,
            "lease_until": jsonable(found.lease_until),
            "claims": list(claims.values()),
        },
    }


def chain_record(session: Session, decision_id: int) -> dict[str, Any] | None:
    """A decision's record in the chain (None until it completes) and the commitment that
    covers it: the first at or after its sequence number
    (:func:`arena.record.commitments.covering`, here as a query), None until one is made."""
    found = session.execute(
        select(Record.seq, Record.hash, Record.recorded_at, Record.after_the_fact).where(
            Record.kind == RecordKind.DECISION, Record.subject_id == decision_id
        )
    ).first()
    if found is None:
        return None
    covering = session.execute(
        select(Commitment.seq, Commitment.committed_at, Commitment.signature, Commitment.key_id)
        .where(Commitment.seq >= found.seq)
        .order_by(Commitment.seq, Commitment.id)
        .limit(1)
    ).first()
    commitment = None
    if covering is not None:
        commitment = {
            "seq": covering.seq,
            "committed_at": jsonable(covering.committed_at),
            "signed": covering.signature is not None,
            "key_id": covering.key_id,
        }
    return {
        "seq": found.seq,
        "hash": found.hash,
        "recorded_at": jsonable(found.recorded_at),
        "after_the_fact": found.after_the_fact,
        "commitment": commitment,
    }


def record(ctx: WebContext, session: Session) -> dict[str, Any]:
    """The record chain's head, its latest commitment and each configured anchor's
    deliveries (:func:`arena.jobs.status.read_record`, as ``arena status`` shows them)."""
    return ctx.cache.get(
        ("record", None),
        ctx.version(session),
        lambda: read_record(session, ctx.settings).to_json(),
    )


STATUS_REFRESH_S = 15


def cached_status(ctx: WebContext, session: Session, now: datetime) -> dict[str, Any]:
    """:func:`status`, recomputed when the data change or every :data:`STATUS_REFRESH_S`
    seconds (next run times and leases move with the clock, not only with the data)."""
    tick = int(now.timestamp()) // STATUS_REFRESH_S
    return ctx.cache.get(
        ("status", tick), ctx.version(session), lambda: status(ctx, session, now, now)
    )


def status(ctx: WebContext, session: Session, now: datetime, real_now: datetime) -> dict[str, Any]:
    """What ``arena status`` shows (:func:`arena.jobs.status.read_status`, the same query):
    each job's latest run and next run time, the unfinished cohorts with their agents and open
    positions, and the open warnings."""
    return read_status(session, ctx.settings, now, real_now).to_json()
