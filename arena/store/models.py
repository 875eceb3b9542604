"""The ORM classes, each mapped onto its table of :mod:`arena.store.schema` (where the columns,
types, comments and constraints live). The annotations type the attributes for mypy;
``tests/store/test_schema.py`` keeps them equal to the tables' columns and nullability.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import DeclarativeBase, Mapped

from arena.store import schema


class Base(DeclarativeBase):
    metadata = schema.metadata


class Family(Base):
    """A configured model family (upserted from config; config edits never rewrite agents)."""

    __table__ = schema.families

    id: Mapped[str]
    kind: Mapped[str]
    display_name: Mapped[str]
    provider: Mapped[str]
    openrouter_id: Mapped[str | None]
    strategy: Mapped[str | None]
    active: Mapped[bool]
    first_seen_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Cohort(Base):
    __table__ = schema.cohorts

    id: Mapped[int]
    week_start: Mapped[datetime]
    created_at: Mapped[datetime]
    methodology_version: Mapped[str]
    prompt_version: Mapped[str]
    starting_balance: Mapped[Decimal]
    pricing: Mapped[str]
    status: Mapped[str]
    completed_at: Mapped[datetime | None]


class Agent(Base):
    """One family's participant in one cohort, with the family's identity frozen on it."""

    __table__ = schema.agents

    id: Mapped[int]
    cohort_id: Mapped[int]
    family_id: Mapped[str]
    kind: Mapped[str]
    display_name: Mapped[str]
    provider: Mapped[str]
    openrouter_id: Mapped[str | None]
    strategy: Mapped[str | None]
    prompt_version: Mapped[str]
    methodology_version: Mapped[str]
    web_search: Mapped[dict[str, Any] | None]
    starting_balance: Mapped[Decimal]
    cash: Mapped[Decimal]
    realized_pnl: Mapped[Decimal]
    created_at: Mapped[datetime]
    replicate: Mapped[int]


class Market(Base):
    """A Polymarket market. ``prices`` always holds the last *valid* prices (each in (0, 1)):
    a missing or invalid fresh price never overwrites them, so they are the last valid mark."""

    __table__ = schema.markets

    id: Mapped[str]
    question: Mapped[str]
    slug: Mapped[str | None]
    description: Mapped[str | None]
    category: Mapped[str | None]
    outcomes: Mapped[list[Any]]
    prices: Mapped[list[Any] | None]
    yes_price: Mapped[Decimal | None]
    last_raw_prices: Mapped[list[Any] | None]
    volume: Mapped[Decimal | None]
    volume_24h: Mapped[Decimal | None]
    liquidity: Mapped[Decimal | None]
    end_date: Mapped[datetime | None]
    closed_time: Mapped[datetime | None]
    active: Mapped[bool]
    closed: Mapped[bool]
    accepting_orders: Mapped[bool | None]
    uma_resolution_status: Mapped[str | None]
    condition_id: Mapped[str | None]
    clob_token_ids: Mapped[list[Any] | None]
    neg_risk: Mapped[bool]
    neg_risk_market_id: Mapped[str | None]
    group_item_title: Mapped[str | None]
    event_id: Mapped[str | None]
    event_slug: Mapped[str | None]
    event_title: Mapped[str | None]
    first_seen_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    prices_updated_at: Mapped[datetime | None]
    status: Mapped[str]
    resolution_state: Mapped[str | None]
    winning_outcome: Mapped[str | None]
    resolved_at: Mapped[datetime | None]


class MarketPrice(Base):
    """Price history: a row is appended only when a market's prices changed."""

    __table__ = schema.market_prices

    id: Mapped[int]
    market_id: Mapped[str]
    observed_at: Mapped[datetime]
    prices: Mapped[list[Any]]
    yes_price: Mapped[Decimal | None]
    volume: Mapped[Decimal | None]


class DecisionUniverse(Base):
    """A frozen market set and prices of one decision week (immutable once written). A week may
    hold several: a decision prompted more than ``max_price_age_minutes`` after the last freeze
    gets a fresh one (methodology: "Fresh prices, open markets only")."""

    __table__ = schema.decision_universes

    id: Mapped[int]
    run_slot: Mapped[datetime]
    frozen_at: Mapped[datetime]
    pricing: Mapped[str]
    universe_size: Mapped[int]
    market_count: Mapped[int]
    content_sha256: Mapped[str | None]


class UniverseMarket(Base):
    __table__ = schema.universe_markets

    universe_id: Mapped[int]
    market_id: Mapped[str]
    rank: Mapped[int | None]
    held_only: Mapped[bool]
    in_panel: Mapped[bool]
    question: Mapped[str]
    category: Mapped[str | None]
    outcomes: Mapped[list[Any]]
    prices: Mapped[list[Any]]
    yes_price: Mapped[Decimal | None]
    volume: Mapped[Decimal | None]
    end_date: Mapped[datetime | None]
    event_id: Mapped[str | None]
    clob_token_ids: Mapped[list[Any] | None]
    books: Mapped[list[Any] | None]


class Decision(Base):
    """The claimable decision of one agent for one decision week (methodology: claims)."""

    __table__ = schema.decisions

    id: Mapped[int]
    agent_id: Mapped[int]
    cohort_id: Mapped[int]
    decision_week: Mapped[int]
    universe_id: Mapped[int | None]
    status: Mapped[str]
    action: Mapped[str | None]
    system_hold: Mapped[bool]
    claim_token: Mapped[str | None]
    holder: Mapped[str | None]
    lease_until: Mapped[datetime | None]
    claim_count: Mapped[int]
    cash_shown: Mapped[Decimal | None]
    reasoning: Mapped[str | None]
    payload: Mapped[dict[str, Any] | None]
    error: Mapped[str | None]
    refusals: Mapped[list[Any] | None]
    prompt_version: Mapped[str]
    methodology_version: Mapped[str]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]


class DecisionAttempt(Base):
    """One model call (or baseline answer) of a decision: appended, never overwritten."""

    __table__ = schema.decision_attempts

    id: Mapped[int]
    decision_id: Mapped[int]
    attempt_no: Mapped[int]
    claim_token: Mapped[str]
    kind: Mapped[str]
    outcome: Mapped[str]
    request_messages: Mapped[list[Any]]
    raw_response: Mapped[str | None]
    raw_body: Mapped[dict[str, Any] | None]
    parsed: Mapped[dict[str, Any] | None]
    error: Mapped[str | None]
    http_status: Mapped[int | None]
    finish_reason: Mapped[str | None]
    provider: Mapped[str | None]
    model: Mapped[str | None]
    generation_id: Mapped[str | None]
    prompt_tokens: Mapped[int | None]
    completion_tokens: Mapped[int | None]
    cost_usd: Mapped[Decimal | None]
    latency_ms: Mapped[int | None]
    prompt_version: Mapped[str]
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    search_cost_usd: Mapped[Decimal | None]
    search_note: Mapped[str | None]


class Citation(Base):
    """One web source an attempt's answer cites (web search families)."""

    __table__ = schema.citations

    id: Mapped[int]
    attempt_id: Mapped[int]
    position: Mapped[int]
    url: Mapped[str]
    title: Mapped[str | None]
    content: Mapped[str | None]
    cited_at: Mapped[datetime]


class Position(Base):
    __table__ = schema.positions

    id: Mapped[int]
    agent_id: Mapped[int]
    cohort_id: Mapped[int]
    market_id: Mapped[str]
    side: Mapped[str]
    shares: Mapped[Decimal]
    cost_basis: Mapped[Decimal]
    status: Mapped[str]
    settlement_outcome: Mapped[str | None]
    payout: Mapped[Decimal | None]
    realized_pnl: Mapped[Decimal]
    opened_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    closed_at: Mapped[datetime | None]


class Trade(Base):
    __table__ = schema.trades

    id: Mapped[int]
    decision_id: Mapped[int]
    agent_id: Mapped[int]
    cohort_id: Mapped[int]
    position_id: Mapped[int]
    market_id: Mapped[str]
    side: Mapped[str]
    trade_type: Mapped[str]
    amount: Mapped[Decimal]
    shares: Mapped[Decimal]
    price: Mapped[Decimal]
    percentage: Mapped[Decimal | None]
    basis_out: Mapped[Decimal | None]
    realized_pnl: Mapped[Decimal | None]
    implied_confidence: Mapped[Decimal | None]
    probability: Mapped[Decimal | None]
    cash_shown: Mapped[Decimal | None]
    cash_after: Mapped[Decimal]
    executed_at: Mapped[datetime]
    pricing: Mapped[str]
    requested_amount: Mapped[Decimal | None]
    requested_shares: Mapped[Decimal | None]
    fee: Mapped[Decimal | None]
    touch_price: Mapped[Decimal | None]
    mid_price: Mapped[Decimal | None]
    slippage_touch_bps: Mapped[Decimal | None]
    slippage_mid_bps: Mapped[Decimal | None]
    fill_ratio: Mapped[Decimal | None]
    book_hash: Mapped[str | None]
    book_timestamp: Mapped[int | None]
    token_id: Mapped[str | None]
    levels: Mapped[list[Any] | None]


class PortfolioSnapshot(Base):
    __table__ = schema.portfolio_snapshots

    id: Mapped[int]
    agent_id: Mapped[int]
    cohort_id: Mapped[int]
    taken_at: Mapped[datetime]
    cash: Mapped[Decimal]
    positions_value: Mapped[Decimal]
    total_value: Mapped[Decimal]
    pnl: Mapped[Decimal]
    pnl_pct: Mapped[Decimal]
    realized_pnl: Mapped[Decimal]
    unrealized_pnl: Mapped[Decimal]
    brier: Mapped[Decimal | None]
    resolved_bets: Mapped[int]
    open_positions: Mapped[int]
    exit_value: Mapped[Decimal | None]


class BrierScore(Base):
    __table__ = schema.brier_scores

    id: Mapped[int]
    trade_id: Mapped[int]
    agent_id: Mapped[int]
    cohort_id: Mapped[int]
    family_id: Mapped[str]
    market_id: Mapped[str]
    side: Mapped[str]
    implied_confidence: Mapped[Decimal]
    price_paid: Mapped[Decimal]
    won: Mapped[bool]
    brier: Mapped[Decimal]
    market_brier: Mapped[Decimal]
    scored_at: Mapped[datetime]


class Forecast(Base):
    """Methodology v2: an explicit probability for a panel market (or a bet)."""

    __table__ = schema.forecasts

    id: Mapped[int]
    decision_id: Mapped[int]
    agent_id: Mapped[int]
    cohort_id: Mapped[int]
    family_id: Mapped[str]
    market_id: Mapped[str]
    outcome: Mapped[str]
    probability: Mapped[Decimal]
    market_probability: Mapped[Decimal | None]
    source: Mapped[str]
    forecast_at: Mapped[datetime]
    resolved_value: Mapped[int | None]
    brier: Mapped[Decimal | None]
    scored_at: Mapped[datetime | None]


class BookMark(Base):
    """The last valid mark of one outcome token (mode book): the mid, or the last trade when
    the spread is wider than 0.10; a fetch without a usable mark leaves it as it was."""

    __table__ = schema.book_marks

    token_id: Mapped[str]
    market_id: Mapped[str]
    mark: Mapped[Decimal]
    best_bid: Mapped[Decimal | None]
    best_ask: Mapped[Decimal | None]
    book_hash: Mapped[str]
    book_timestamp: Mapped[int]
    observed_at: Mapped[datetime]


class MarketFee(Base):
    """A market's taker fee schedule (``GET /clob-markets/{condition_id}``, ``fd``)."""

    __table__ = schema.market_fees

    condition_id: Mapped[str]
    rate: Mapped[Decimal]
    exponent: Mapped[Decimal]
    fetched_at: Mapped[datetime]


class JobRun(Base):
    """One run of a scheduled job for one slot; the unique key stops two daemons doubling it."""

    __table__ = schema.job_runs

    id: Mapped[int]
    job: Mapped[str]
    slot: Mapped[datetime]
    holder: Mapped[str]
    status: Mapped[str]
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    lease_until: Mapped[datetime]
    counts: Mapped[dict[str, Any] | None]
    error: Mapped[str | None]


class ForecastColumnsRow(Base):
    """A stored column body (:mod:`arena.store.stored_columns`), so that a new process starts
    from it instead of reading every row. It holds both: ``name`` ``forecasts``, the
    forecasts' columns that never change once written, as the analyses read them
    (:mod:`arena.export.forecast_columns`), and ``snapshots``, the portfolio snapshots' agent,
    time and values, as risk reads them (:mod:`arena.analytics.snapshot_columns`)."""

    __table__ = schema.forecast_columns

    name: Mapped[str]
    through_id: Mapped[int]
    rows: Mapped[int]
    resolved: Mapped[int]
    written_at: Mapped[datetime]
    body: Mapped[bytes]


class AnalysisResult(Base):
    """The latest stored analysis of one name (``v2``:
    :func:`arena.analytics.stored.refresh_analysis`)."""

    __table__ = schema.analysis_results

    name: Mapped[str]
    data_version: Mapped[str]
    as_of: Mapped[datetime]
    computed_at: Mapped[datetime]
    seconds: Mapped[float]
    resamples: Mapped[int]
    seed: Mapped[int]
    body: Mapped[str]


class SystemLog(Base):
    __table__ = schema.system_log

    id: Mapped[int]
    at: Mapped[datetime]
    level: Mapped[str]
    source: Mapped[str]
    event: Mapped[str]
    message: Mapped[str]
    details: Mapped[dict[str, Any] | None]


class Record(Base):
    """One link of the record chain (:mod:`arena.record`): ``body`` is the canonical JSON that
    was hashed, ``hash = sha256(prev_hash bytes || body)``."""

    __table__ = schema.records

    seq: Mapped[int]
    kind: Mapped[str]
    subject_id: Mapped[int]
    recorded_at: Mapped[datetime]
    after_the_fact: Mapped[bool]
    prev_hash: Mapped[str]
    hash: Mapped[str]
    body: Mapped[str]


class RecordHead(Base):
    __table__ = schema.record_head

    id: Mapped[int]
    seq: Mapped[int]
    hash: Mapped[str]


class Commitment(Base):
    __table__ = schema.commitments

    id: Mapped[int]
    seq: Mapped[int]
    head_hash: Mapped[str]
    count: Mapped[int]
    committed_at: Mapped[datetime]
    body: Mapped[str]
    signature: Mapped[str | None]
    key_id: Mapped[str | None]


class AnchorDelivery(Base):
    __table__ = schema.anchor_deliveries

    id: Mapped[int]
    commitment_id: Mapped[int]
    anchor: Mapped[str]
    status: Mapped[str]
    attempts: Mapped[int]
    last_error: Mapped[str | None]
    answer: Mapped[str | None]
    updated_at: Mapped[datetime]
    delivered_at: Mapped[datetime | None]
