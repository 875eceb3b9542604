"""SQLAlchemy 2.0 tables. The unique constraints carry the methodology's integrity rules:

* one cohort per week start (``uq_cohorts_week_start``);
* one agent per (cohort, family);
* one decision per (agent, cohort, decision week) (``uq_decisions_agent_cohort_week``);
* one *open* position per (agent, market, side) (partial unique index ``uq_positions_open``);
* one snapshot per (agent, timestamp); one Brier row per trade;
* one universe per (decision week, freeze time);
* one job run per (job, slot) (``job_runs``: the database-level guard between daemons).

Money is :func:`Money` (cents), shares :func:`Shares`, prices :func:`Price`: all ``Decimal``.
Timestamps are aware UTC (:class:`UTCDateTime`).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from arena.domain.states import CohortStatus, MarketStatus, PositionStatus
from arena.store.types import Bps, Money, Price, Shares, Usd, UTCDateTime, Volume

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON, list[Any]: JSON}


class Family(Base):
    """A configured model family (upserted from config; config edits never rewrite agents)."""

    __tablename__ = "families"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # openrouter | baseline
    display_name: Mapped[str] = mapped_column(String(200))
    provider: Mapped[str] = mapped_column(String(100), default="")
    openrouter_id: Mapped[str | None] = mapped_column(String(200))
    strategy: Mapped[str | None] = mapped_column(String(32))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    first_seen_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Cohort(Base):
    __tablename__ = "cohorts"
    __table_args__ = (UniqueConstraint("week_start", name="uq_cohorts_week_start"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    week_start: Mapped[datetime]
    created_at: Mapped[datetime]
    methodology_version: Mapped[str] = mapped_column(String(16))
    prompt_version: Mapped[str] = mapped_column(String(16))
    starting_balance: Mapped[Decimal] = mapped_column(Money())
    # book | gamma (methodology: "Executable prices"); cohorts from before it are gamma
    pricing: Mapped[str] = mapped_column(String(8), server_default="gamma")
    status: Mapped[str] = mapped_column(String(16), default=CohortStatus.ACTIVE)
    completed_at: Mapped[datetime | None]


class Agent(Base):
    """One family's participant in one cohort, with the family's identity frozen on it."""

    __tablename__ = "agents"
    __table_args__ = (UniqueConstraint("cohort_id", "family_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id"), index=True)
    family_id: Mapped[str] = mapped_column(ForeignKey("families.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    display_name: Mapped[str] = mapped_column(String(200))
    provider: Mapped[str] = mapped_column(String(100), default="")
    openrouter_id: Mapped[str | None] = mapped_column(String(200))
    strategy: Mapped[str | None] = mapped_column(String(32))
    prompt_version: Mapped[str] = mapped_column(String(16))
    methodology_version: Mapped[str] = mapped_column(String(16))
    starting_balance: Mapped[Decimal] = mapped_column(Money())
    cash: Mapped[Decimal] = mapped_column(Money())
    realized_pnl: Mapped[Decimal] = mapped_column(Money(), default=Decimal(0))
    created_at: Mapped[datetime]


class Market(Base):
    """A Polymarket market. ``prices`` always holds the last *valid* prices (each in (0, 1)):
    a missing or invalid fresh price never overwrites them, so they are the last valid mark."""

    __tablename__ = "markets"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # Gamma id
    question: Mapped[str] = mapped_column(Text)
    slug: Mapped[str | None] = mapped_column(String(300))
    description: Mapped[str | None] = mapped_column(Text)
    category: Mapped[str | None] = mapped_column(String(100))
    outcomes: Mapped[list[Any]] = mapped_column(JSON)
    prices: Mapped[list[Any] | None] = mapped_column(JSON)  # decimal strings, aligned
    yes_price: Mapped[Decimal | None] = mapped_column(Price())
    last_raw_prices: Mapped[list[Any] | None] = mapped_column(JSON)  # as Gamma last sent them
    volume: Mapped[Decimal | None] = mapped_column(Volume())
    volume_24h: Mapped[Decimal | None] = mapped_column(Volume())
    liquidity: Mapped[Decimal | None] = mapped_column(Volume())
    end_date: Mapped[datetime | None]
    closed_time: Mapped[datetime | None]
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    closed: Mapped[bool] = mapped_column(Boolean, default=False)
    accepting_orders: Mapped[bool | None] = mapped_column(Boolean)
    uma_resolution_status: Mapped[str | None] = mapped_column(String(32))
    condition_id: Mapped[str | None] = mapped_column(String(80))
    clob_token_ids: Mapped[list[Any] | None] = mapped_column(JSON)  # aligned with outcomes
    neg_risk: Mapped[bool] = mapped_column(Boolean, default=False)
    neg_risk_market_id: Mapped[str | None] = mapped_column(String(80))
    group_item_title: Mapped[str | None] = mapped_column(String(300))
    event_id: Mapped[str | None] = mapped_column(String(32))
    event_slug: Mapped[str | None] = mapped_column(String(300))
    event_title: Mapped[str | None] = mapped_column(Text)
    first_seen_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    prices_updated_at: Mapped[datetime | None]
    # Local settlement state: open | resolved | cancelled (set only by the settling transaction)
    status: Mapped[str] = mapped_column(String(16), default=MarketStatus.OPEN, index=True)
    resolution_state: Mapped[str | None] = mapped_column(String(32))
    winning_outcome: Mapped[str | None] = mapped_column(String(300))
    resolved_at: Mapped[datetime | None]


class MarketPrice(Base):
    """Price history: a row is appended only when a market's prices changed."""

    __tablename__ = "market_prices"
    __table_args__ = (UniqueConstraint("market_id", "observed_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    market_id: Mapped[str] = mapped_column(ForeignKey("markets.id"))
    observed_at: Mapped[datetime]
    prices: Mapped[list[Any]] = mapped_column(JSON)
    yes_price: Mapped[Decimal | None] = mapped_column(Price())
    volume: Mapped[Decimal | None] = mapped_column(Volume())


class DecisionUniverse(Base):
    """A frozen market set and prices of one decision week (immutable once written). A week may
    hold several: a decision prompted more than ``max_price_age_minutes`` after the last freeze
    gets a fresh one (methodology: "Fresh prices, open markets only")."""

    __tablename__ = "decision_universes"
    __table_args__ = (UniqueConstraint("run_slot", "frozen_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_slot: Mapped[datetime]  # the decision run it belongs to (week start of the run)
    frozen_at: Mapped[datetime]
    pricing: Mapped[str] = mapped_column(String(8), server_default="gamma")  # books frozen?
    universe_size: Mapped[int] = mapped_column(Integer)
    market_count: Mapped[int] = mapped_column(Integer)


class UniverseMarket(Base):
    __tablename__ = "universe_markets"

    universe_id: Mapped[int] = mapped_column(ForeignKey("decision_universes.id"), primary_key=True)
    market_id: Mapped[str] = mapped_column(ForeignKey("markets.id"), primary_key=True)
    rank: Mapped[int | None] = mapped_column(Integer)  # None: held-only (valuation/SELL)
    held_only: Mapped[bool] = mapped_column(Boolean, default=False)
    in_panel: Mapped[bool] = mapped_column(Boolean, default=False)  # methodology v2
    question: Mapped[str] = mapped_column(Text)
    category: Mapped[str | None] = mapped_column(String(100))
    outcomes: Mapped[list[Any]] = mapped_column(JSON)
    prices: Mapped[list[Any]] = mapped_column(JSON)
    yes_price: Mapped[Decimal | None] = mapped_column(Price())
    volume: Mapped[Decimal | None] = mapped_column(Volume())
    end_date: Mapped[datetime | None]
    event_id: Mapped[str | None] = mapped_column(String(32))
    # Mode book: each outcome's token and frozen touch (arena.domain.book.Touch), aligned
    # with outcomes
    clob_token_ids: Mapped[list[Any] | None] = mapped_column(JSON)
    books: Mapped[list[Any] | None] = mapped_column(JSON)


class Decision(Base):
    """The claimable decision of one agent for one decision week (methodology: claims)."""

    __tablename__ = "decisions"
    __table_args__ = (
        UniqueConstraint(
            "agent_id", "cohort_id", "decision_week", name="uq_decisions_agent_cohort_week"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"), index=True)
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id"), index=True)
    decision_week: Mapped[int] = mapped_column(Integer)
    universe_id: Mapped[int | None] = mapped_column(ForeignKey("decision_universes.id"))
    # claimed | completed | retryable | budget_skipped (see arena/jobs/decide.py)
    status: Mapped[str] = mapped_column(String(24))
    action: Mapped[str | None] = mapped_column(String(8))  # BET | SELL | HOLD
    system_hold: Mapped[bool] = mapped_column(Boolean, default=False)
    claim_token: Mapped[str | None] = mapped_column(String(64))
    claimed_by: Mapped[str | None] = mapped_column(String(100))  # HOST:PID:START
    lease_expires_at: Mapped[datetime | None]
    claim_count: Mapped[int] = mapped_column(Integer, default=0)
    cash_shown: Mapped[Decimal | None] = mapped_column(Money())
    reasoning: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # the validated decision
    error: Mapped[str | None] = mapped_column(Text)
    # Executions that failed: [{index, market_id, side, kind, reason}] (kind: liquidity |
    # no_book | unavailable | refused); the last execution attempt's
    refusals: Mapped[list[Any] | None] = mapped_column(JSON)
    prompt_version: Mapped[str] = mapped_column(String(16))
    methodology_version: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]


class DecisionAttempt(Base):
    """One model call (or baseline answer) of a decision: appended, never overwritten."""

    __tablename__ = "decision_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    decision_id: Mapped[int] = mapped_column(ForeignKey("decisions.id"), index=True)
    attempt_no: Mapped[int] = mapped_column(Integer)
    claim_token: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))  # initial | repair | transient-retry
    # valid | malformed | transient_error | permanent_error | fatal_error | budget_skipped
    outcome: Mapped[str] = mapped_column(String(24))
    request_messages: Mapped[list[Any]] = mapped_column(JSON)
    raw_response: Mapped[str | None] = mapped_column(Text)
    raw_body: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    parsed: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    http_status: Mapped[int | None] = mapped_column(Integer)
    finish_reason: Mapped[str | None] = mapped_column(String(32))
    provider: Mapped[str | None] = mapped_column(String(100))
    model: Mapped[str | None] = mapped_column(String(200))
    generation_id: Mapped[str | None] = mapped_column(String(100))
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    cost_usd: Mapped[Decimal | None] = mapped_column(Usd())
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    prompt_version: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]


class Position(Base):
    __tablename__ = "positions"
    __table_args__ = (
        Index(
            "uq_positions_open",
            "agent_id",
            "market_id",
            "side",
            unique=True,
            sqlite_where=text(f"status = '{PositionStatus.OPEN}'"),
            postgresql_where=text(f"status = '{PositionStatus.OPEN}'"),
        ),
        # an agent's positions by status (its leading column serves every lookup by agent)
        Index("ix_positions_agent_id_status", "agent_id", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id"), index=True)
    market_id: Mapped[str] = mapped_column(ForeignKey("markets.id"), index=True)
    side: Mapped[str] = mapped_column(String(300))  # YES | NO | outcome name
    shares: Mapped[Decimal] = mapped_column(Shares())
    cost_basis: Mapped[Decimal] = mapped_column(Money())
    # OPEN | CLOSED (sold) | SETTLED (WON/LOST/VOID) | CANCELLED (refunded)
    status: Mapped[str] = mapped_column(String(16), default=PositionStatus.OPEN, index=True)
    settlement_outcome: Mapped[str | None] = mapped_column(String(16))
    payout: Mapped[Decimal | None] = mapped_column(Money())
    realized_pnl: Mapped[Decimal] = mapped_column(Money(), default=Decimal(0))
    opened_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    closed_at: Mapped[datetime | None]


class Trade(Base):
    __tablename__ = "trades"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    decision_id: Mapped[int] = mapped_column(ForeignKey("decisions.id"), index=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"), index=True)
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id"), index=True)
    position_id: Mapped[int] = mapped_column(ForeignKey("positions.id"), index=True)
    market_id: Mapped[str] = mapped_column(ForeignKey("markets.id"), index=True)
    side: Mapped[str] = mapped_column(String(300))
    trade_type: Mapped[str] = mapped_column(String(8))  # BUY | SELL
    # BUY: dollars paid, fees included; SELL: proceeds, net of fees
    amount: Mapped[Decimal] = mapped_column(Money())
    shares: Mapped[Decimal] = mapped_column(Shares())
    # side price executed at (mode book: volume-weighted price of the levels, without fees)
    price: Mapped[Decimal] = mapped_column(Price())
    percentage: Mapped[Decimal | None] = mapped_column(Price())  # SELL only
    basis_out: Mapped[Decimal | None] = mapped_column(Money())  # SELL only
    realized_pnl: Mapped[Decimal | None] = mapped_column(Money())  # SELL only
    implied_confidence: Mapped[Decimal | None] = mapped_column(Price())  # BUY only
    probability: Mapped[Decimal | None] = mapped_column(Price())  # v2: stated probability
    cash_shown: Mapped[Decimal | None] = mapped_column(Money())
    cash_after: Mapped[Decimal] = mapped_column(Money())
    executed_at: Mapped[datetime]
    # Executable prices (mode book; methodology, "Recorded with every execution")
    pricing: Mapped[str] = mapped_column(String(8), server_default="gamma")
    requested_amount: Mapped[Decimal | None] = mapped_column(Money())  # BUY
    requested_shares: Mapped[Decimal | None] = mapped_column(Shares())  # SELL
    fee: Mapped[Decimal | None] = mapped_column(Usd())
    touch_price: Mapped[Decimal | None] = mapped_column(Price())
    mid_price: Mapped[Decimal | None] = mapped_column(Price())
    slippage_touch_bps: Mapped[Decimal | None] = mapped_column(Bps())
    slippage_mid_bps: Mapped[Decimal | None] = mapped_column(Bps())
    fill_ratio: Mapped[Decimal | None] = mapped_column(Price())
    book_hash: Mapped[str | None] = mapped_column(String(64))
    book_timestamp: Mapped[int | None] = mapped_column(BigInteger)  # epoch ms
    token_id: Mapped[str | None] = mapped_column(String(100))
    levels: Mapped[list[Any] | None] = mapped_column(JSON)  # [{price, shares, fee}]


class PortfolioSnapshot(Base):
    __tablename__ = "portfolio_snapshots"
    __table_args__ = (UniqueConstraint("agent_id", "taken_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id"), index=True)
    taken_at: Mapped[datetime] = mapped_column(index=True)
    cash: Mapped[Decimal] = mapped_column(Money())
    positions_value: Mapped[Decimal] = mapped_column(Money())
    total_value: Mapped[Decimal] = mapped_column(Money())
    pnl: Mapped[Decimal] = mapped_column(Money())
    pnl_pct: Mapped[Decimal] = mapped_column(Price())
    realized_pnl: Mapped[Decimal] = mapped_column(Money())
    unrealized_pnl: Mapped[Decimal] = mapped_column(Money())
    brier: Mapped[Decimal | None] = mapped_column(Price())
    resolved_bets: Mapped[int] = mapped_column(Integer)
    open_positions: Mapped[int] = mapped_column(Integer)
    # Mode book: cash + selling every open position into the current bids, fees included
    exit_value: Mapped[Decimal | None] = mapped_column(Money())


class BrierScore(Base):
    __tablename__ = "brier_scores"
    __table_args__ = (UniqueConstraint("trade_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trade_id: Mapped[int] = mapped_column(ForeignKey("trades.id"))
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"), index=True)
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id"), index=True)
    family_id: Mapped[str] = mapped_column(ForeignKey("families.id"), index=True)
    market_id: Mapped[str] = mapped_column(ForeignKey("markets.id"), index=True)
    side: Mapped[str] = mapped_column(String(300))
    implied_confidence: Mapped[Decimal] = mapped_column(Price())
    price_paid: Mapped[Decimal] = mapped_column(Price())
    won: Mapped[bool] = mapped_column(Boolean)
    brier: Mapped[Decimal] = mapped_column(Price())
    market_brier: Mapped[Decimal] = mapped_column(Price())
    scored_at: Mapped[datetime]


class Forecast(Base):
    """Methodology v2: an explicit probability for a panel market (or a bet)."""

    __tablename__ = "forecasts"
    __table_args__ = (UniqueConstraint("decision_id", "market_id", "outcome"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    decision_id: Mapped[int] = mapped_column(ForeignKey("decisions.id"), index=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"), index=True)
    cohort_id: Mapped[int] = mapped_column(ForeignKey("cohorts.id"), index=True)
    family_id: Mapped[str] = mapped_column(ForeignKey("families.id"), index=True)
    market_id: Mapped[str] = mapped_column(ForeignKey("markets.id"), index=True)
    outcome: Mapped[str] = mapped_column(String(300))  # YES or the outcome name
    probability: Mapped[Decimal] = mapped_column(Price())
    market_probability: Mapped[Decimal | None] = mapped_column(Price())
    source: Mapped[str] = mapped_column(String(8))  # panel | bet
    forecast_at: Mapped[datetime]
    resolved_value: Mapped[int | None] = mapped_column(Integer)  # 1/0 once resolved
    brier: Mapped[Decimal | None] = mapped_column(Price())
    scored_at: Mapped[datetime | None]


class BookMark(Base):
    """The last valid mark of one outcome token (mode book): the mid, or the last trade when
    the spread is wider than 0.10; a fetch without a usable mark leaves it as it was."""

    __tablename__ = "book_marks"

    token_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    market_id: Mapped[str] = mapped_column(ForeignKey("markets.id"), index=True)
    mark: Mapped[Decimal] = mapped_column(Price())
    best_bid: Mapped[Decimal | None] = mapped_column(Price())
    best_ask: Mapped[Decimal | None] = mapped_column(Price())
    book_hash: Mapped[str] = mapped_column(String(64))
    book_timestamp: Mapped[int] = mapped_column(BigInteger)
    observed_at: Mapped[datetime]


class MarketFee(Base):
    """A market's taker fee schedule (``GET /clob-markets/{condition_id}``, ``fd``)."""

    __tablename__ = "market_fees"

    condition_id: Mapped[str] = mapped_column(String(80), primary_key=True)
    rate: Mapped[Decimal] = mapped_column(Price())
    exponent: Mapped[Decimal] = mapped_column(Price())
    fetched_at: Mapped[datetime]


class JobRun(Base):
    """One run of a scheduled job for one slot; the unique key stops two daemons doubling it."""

    __tablename__ = "job_runs"
    __table_args__ = (UniqueConstraint("job", "slot"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job: Mapped[str] = mapped_column(String(32))
    slot: Mapped[datetime]
    holder: Mapped[str] = mapped_column(String(100))  # HOST:PID:START (arena.jobs.holders)
    status: Mapped[str] = mapped_column(String(16))  # running | succeeded | failed
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    lease_expires_at: Mapped[datetime]
    counts: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)


class SystemLog(Base):
    __tablename__ = "system_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(index=True)
    level: Mapped[str] = mapped_column(String(10))
    source: Mapped[str] = mapped_column(String(64))  # job or component name
    event: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
