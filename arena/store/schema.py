"""The database schema as SQLAlchemy Core tables: the one definition of every table, column,
index and constraint. The migrations create it (``tests/store/test_schema.py`` compares the
two), the ORM classes of :mod:`arena.store.models` are mapped onto it, and read paths that must
start fast (``arena status``) query it without loading the ORM.

The unique constraints carry the methodology's integrity rules:

* one cohort per week start (``uq_cohorts_week_start``);
* one agent per (cohort, family);
* one decision per (agent, cohort, decision week) (``uq_decisions_agent_cohort_week``);
* one *open* position per (agent, market, side) (partial unique index ``uq_positions_open``);
* one snapshot per (agent, timestamp); one Brier row per trade;
* one universe per (decision week, freeze time);
* one job run per (job, slot) (``job_runs``: the database-level guard between daemons).

Money is :func:`Money` (cents), shares :func:`Shares`, prices :func:`Price`: all ``Decimal``.
Timestamps are aware UTC (:class:`UTCDateTime`). A foreign key column takes the type of the
column it refers to.
"""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from arena.domain.states import CohortStatus, MarketStatus, PositionStatus
from arena.store.types import Bps, Money, Price, Shares, Usd, UTCDateTime, Volume

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)


# A configured model family (upserted from config; config edits never rewrite agents).
families = Table(
    "families",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),  # openrouter | baseline
    Column("display_name", String(200), nullable=False),
    Column("provider", String(100), default="", nullable=False),
    Column("openrouter_id", String(200)),
    Column("strategy", String(32)),
    Column("active", Boolean, default=True, nullable=False),
    Column("first_seen_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
)


cohorts = Table(
    "cohorts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("week_start", UTCDateTime(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("methodology_version", String(16), nullable=False),
    Column("prompt_version", String(16), nullable=False),
    Column("starting_balance", Money(), nullable=False),
    # book | gamma (methodology: "Executable prices"); cohorts from before it are gamma
    Column("pricing", String(8), server_default="gamma", nullable=False),
    Column("status", String(16), default=CohortStatus.ACTIVE, nullable=False),
    Column("completed_at", UTCDateTime()),
    UniqueConstraint("week_start", name="uq_cohorts_week_start"),
)


# One family's participant in one cohort, with the family's identity frozen on it.
agents = Table(
    "agents",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("cohort_id", ForeignKey("cohorts.id"), index=True, nullable=False),
    Column("family_id", ForeignKey("families.id"), index=True, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("display_name", String(200), nullable=False),
    Column("provider", String(100), default="", nullable=False),
    Column("openrouter_id", String(200)),
    Column("strategy", String(32)),
    Column("prompt_version", String(16), nullable=False),
    Column("methodology_version", String(16), nullable=False),
    # The family's web search settings frozen at cohort start (null: none); with ``kind``
    # they give the agent's track (``arena.domain.tracks``).
    Column("web_search", JSON),
    Column("starting_balance", Money(), nullable=False),
    Column("cash", Money(), nullable=False),
    Column("realized_pnl", Money(), default=Decimal(0), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    # replicate n of the family in the cohort (1..replicates), each with its own claims and book
    Column("replicate", Integer, default=1, server_default="1", nullable=False),
    UniqueConstraint("cohort_id", "family_id", "replicate"),
)


# A Polymarket market. ``prices`` always holds the last *valid* prices (each in (0, 1)):
# a missing or invalid fresh price never overwrites them, so they are the last valid mark.
markets = Table(
    "markets",
    metadata,
    Column("id", String(32), primary_key=True),  # Gamma id
    Column("question", Text, nullable=False),
    Column("slug", String(300)),
    Column("description", Text),
    Column("category", String(100)),
    Column("outcomes", JSON, nullable=False),
    Column("prices", JSON),  # decimal strings, aligned
    Column("yes_price", Price()),
    Column("last_raw_prices", JSON),  # as Gamma last sent them
    Column("volume", Volume()),
    Column("volume_24h", Volume()),
    Column("liquidity", Volume()),
    Column("end_date", UTCDateTime()),
    Column("closed_time", UTCDateTime()),
    Column("active", Boolean, default=True, nullable=False),
    Column("closed", Boolean, default=False, nullable=False),
    Column("accepting_orders", Boolean),
    Column("uma_resolution_status", String(32)),
    Column("condition_id", String(80)),
    Column("clob_token_ids", JSON),  # aligned with outcomes
    Column("neg_risk", Boolean, default=False, nullable=False),
    Column("neg_risk_market_id", String(80)),
    Column("group_item_title", String(300)),
    Column("event_id", String(32)),
    Column("event_slug", String(300)),
    Column("event_title", Text),
    Column("first_seen_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("prices_updated_at", UTCDateTime()),
    # Local settlement state: open | resolved | cancelled (set only by the settling transaction)
    Column("status", String(16), default=MarketStatus.OPEN, index=True, nullable=False),
    Column("resolution_state", String(32)),
    Column("winning_outcome", String(300)),
    Column("resolved_at", UTCDateTime()),
)


# Price history: a row is appended only when a market's prices changed.
market_prices = Table(
    "market_prices",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("market_id", ForeignKey("markets.id"), nullable=False),
    Column("observed_at", UTCDateTime(), nullable=False),
    Column("prices", JSON, nullable=False),
    Column("yes_price", Price()),
    Column("volume", Volume()),
    UniqueConstraint("market_id", "observed_at"),
)


# A frozen market set and prices of one decision week (immutable once written). A week may
# hold several: a decision prompted more than ``max_price_age_minutes`` after the last freeze
# gets a fresh one (methodology: "Fresh prices, open markets only").
decision_universes = Table(
    "decision_universes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "run_slot", UTCDateTime(), nullable=False
    ),  # the decision run it belongs to (week start of the run)
    Column("frozen_at", UTCDateTime(), nullable=False),
    Column("pricing", String(8), server_default="gamma", nullable=False),  # books frozen?
    Column("universe_size", Integer, nullable=False),
    Column("market_count", Integer, nullable=False),
    # sha256 of the universe as shown (arena.record.records.universe_hash), set when frozen;
    # null for universes frozen before the record chain (hashed when first recorded)
    Column("content_sha256", String(64)),
    UniqueConstraint("run_slot", "frozen_at"),
)


universe_markets = Table(
    "universe_markets",
    metadata,
    Column("universe_id", ForeignKey("decision_universes.id"), primary_key=True),
    Column("market_id", ForeignKey("markets.id"), primary_key=True),
    Column("rank", Integer),  # None: held-only (valuation/SELL)
    Column("held_only", Boolean, default=False, nullable=False),
    Column("in_panel", Boolean, default=False, nullable=False),  # methodology v2
    Column("question", Text, nullable=False),
    Column("category", String(100)),
    Column("outcomes", JSON, nullable=False),
    Column("prices", JSON, nullable=False),
    Column("yes_price", Price()),
    Column("volume", Volume()),
    Column("end_date", UTCDateTime()),
    Column("event_id", String(32)),
    # Mode book: each outcome's token and frozen touch (arena.domain.book.Touch), aligned
    # with outcomes
    Column("clob_token_ids", JSON),
    Column("books", JSON),
)


# The claimable decision of one agent for one decision week (methodology: claims).
decisions = Table(
    "decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("agent_id", ForeignKey("agents.id"), index=True, nullable=False),
    Column("cohort_id", ForeignKey("cohorts.id"), index=True, nullable=False),
    Column("decision_week", Integer, nullable=False),
    Column("universe_id", ForeignKey("decision_universes.id")),
    # claimed | completed | retryable | budget_skipped (see arena/jobs/decide.py)
    Column("status", String(24), nullable=False),
    Column("action", String(8)),  # BET | SELL | HOLD
    Column("system_hold", Boolean, default=False, nullable=False),
    Column("claim_token", String(64)),
    Column("holder", String(100)),  # HOST:PID:START
    Column("lease_until", UTCDateTime()),
    Column("claim_count", Integer, default=0, nullable=False),
    Column("cash_shown", Money()),
    Column("reasoning", Text),
    Column("payload", JSON),  # the validated decision
    Column("error", Text),
    # Executions that failed: [{index, market_id, side, kind, reason}] (kind: liquidity |
    # no_book | unavailable | refused); the last execution attempt's
    Column("refusals", JSON),
    Column("prompt_version", String(16), nullable=False),
    Column("methodology_version", String(16), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("completed_at", UTCDateTime()),
    UniqueConstraint(
        "agent_id", "cohort_id", "decision_week", name="uq_decisions_agent_cohort_week"
    ),
)


# One model call (or baseline answer) of a decision: appended, never deleted. A paid answer is
# stored `received` on arrival; its verdict (valid | malformed) is written once afterwards.
decision_attempts = Table(
    "decision_attempts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("decision_id", ForeignKey("decisions.id"), index=True, nullable=False),
    Column("attempt_no", Integer, nullable=False),
    Column("claim_token", String(64), nullable=False),
    Column("kind", String(16), nullable=False),  # initial | repair | retry (AttemptKind)
    # valid | malformed | transient_error | permanent_error | fatal_error | budget_skipped
    # | received
    Column("outcome", String(24), nullable=False),
    Column("request_messages", JSON, nullable=False),
    Column("raw_response", Text),
    Column("raw_body", JSON),
    Column("parsed", JSON),
    Column("error", Text),
    Column("http_status", Integer),
    Column("finish_reason", String(32)),
    Column("provider", String(100)),
    Column("model", String(200)),
    Column("generation_id", String(100)),
    Column("prompt_tokens", Integer),
    Column("completion_tokens", Integer),
    Column("cost_usd", Usd()),
    Column("latency_ms", Integer),
    Column("prompt_version", String(16), nullable=False),
    Column("started_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime(), nullable=False),
    # Web search (families with `web_search`): its cost when reported (part of cost_usd), and
    # why an answer has no citations (no search ran, or it found nothing)
    Column("search_cost_usd", Usd()),
    Column("search_note", String(200)),
    # the leaderboard's one pass over every attempt reads only this index: on SQLite the
    # columns sit behind the prompt's overflow pages (0.7 s -> 0.05 s at scale 1)
    Index(
        "ix_decision_attempts_usage",
        "decision_id",
        "outcome",
        "cost_usd",
        "prompt_tokens",
        "completion_tokens",
    ),
)


# The web sources one attempt's answer cites (OpenRouter's url_citation annotations), in the
# answer's order; cited_at is when the answer arrived.
citations = Table(
    "citations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("attempt_id", ForeignKey("decision_attempts.id"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("url", String(2000), nullable=False),
    Column("title", String(500)),
    Column("content", Text),
    Column("cited_at", UTCDateTime(), nullable=False),
    UniqueConstraint("attempt_id", "position", name="uq_citations_attempt_position"),
)


positions = Table(
    "positions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("agent_id", ForeignKey("agents.id"), nullable=False),
    Column("cohort_id", ForeignKey("cohorts.id"), index=True, nullable=False),
    Column("market_id", ForeignKey("markets.id"), index=True, nullable=False),
    Column("side", String(300), nullable=False),  # YES | NO | outcome name
    Column("shares", Shares(), nullable=False),
    Column("cost_basis", Money(), nullable=False),
    # OPEN | CLOSED (sold) | SETTLED (WON/LOST/VOID) | CANCELLED (refunded)
    Column("status", String(16), default=PositionStatus.OPEN, index=True, nullable=False),
    Column("settlement_outcome", String(16)),
    Column("payout", Money()),
    Column("realized_pnl", Money(), default=Decimal(0), nullable=False),
    Column("opened_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("closed_at", UTCDateTime()),
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


trades = Table(
    "trades",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("decision_id", ForeignKey("decisions.id"), index=True, nullable=False),
    Column("agent_id", ForeignKey("agents.id"), index=True, nullable=False),
    Column("cohort_id", ForeignKey("cohorts.id"), index=True, nullable=False),
    Column("position_id", ForeignKey("positions.id"), index=True, nullable=False),
    Column("market_id", ForeignKey("markets.id"), index=True, nullable=False),
    Column("side", String(300), nullable=False),
    Column("trade_type", String(8), nullable=False),  # BUY | SELL
    # BUY: dollars paid, fees included; SELL: proceeds, net of fees
    Column("amount", Money(), nullable=False),
    Column("shares", Shares(), nullable=False),
    # side price executed at (mode book: volume-weighted price of the levels, without fees)
    Column("price", Price(), nullable=False),
    Column("percentage", Price()),  # SELL only
    Column("basis_out", Money()),  # SELL only
    Column("realized_pnl", Money()),  # SELL only
    Column("implied_confidence", Price()),  # BUY only
    Column("probability", Price()),  # v2: stated probability
    Column("cash_shown", Money()),
    Column("cash_after", Money(), nullable=False),
    Column("executed_at", UTCDateTime(), nullable=False),
    # Executable prices (mode book; methodology, "Recorded with every execution")
    Column("pricing", String(8), server_default="gamma", nullable=False),
    Column("requested_amount", Money()),  # BUY
    Column("requested_shares", Shares()),  # SELL
    Column("fee", Usd()),
    Column("touch_price", Price()),
    Column("mid_price", Price()),
    Column("slippage_touch_bps", Bps()),
    Column("slippage_mid_bps", Bps()),
    Column("fill_ratio", Price()),
    Column("book_hash", String(64)),
    Column("book_timestamp", BigInteger),  # epoch ms
    Column("token_id", String(100)),
    Column("levels", JSON),  # [{price, shares, fee}]
)


portfolio_snapshots = Table(
    "portfolio_snapshots",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("agent_id", ForeignKey("agents.id"), nullable=False),
    Column("cohort_id", ForeignKey("cohorts.id"), index=True, nullable=False),
    Column("taken_at", UTCDateTime(), index=True, nullable=False),
    Column("cash", Money(), nullable=False),
    Column("positions_value", Money(), nullable=False),
    Column("total_value", Money(), nullable=False),
    Column("pnl", Money(), nullable=False),
    Column("pnl_pct", Price(), nullable=False),
    Column("realized_pnl", Money(), nullable=False),
    Column("unrealized_pnl", Money(), nullable=False),
    Column("brier", Price()),
    Column("resolved_bets", Integer, nullable=False),
    Column("open_positions", Integer, nullable=False),
    # Mode book: cash + selling every open position into the current bids, fees included
    Column("exit_value", Money()),
    UniqueConstraint("agent_id", "taken_at"),
)


brier_scores = Table(
    "brier_scores",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trade_id", ForeignKey("trades.id"), nullable=False),
    Column("agent_id", ForeignKey("agents.id"), index=True, nullable=False),
    Column("cohort_id", ForeignKey("cohorts.id"), index=True, nullable=False),
    Column("family_id", ForeignKey("families.id"), index=True, nullable=False),
    Column("market_id", ForeignKey("markets.id"), index=True, nullable=False),
    Column("side", String(300), nullable=False),
    Column("implied_confidence", Price(), nullable=False),
    Column("price_paid", Price(), nullable=False),
    Column("won", Boolean, nullable=False),
    Column("brier", Price(), nullable=False),
    Column("market_brier", Price(), nullable=False),
    Column("scored_at", UTCDateTime(), nullable=False),
    UniqueConstraint("trade_id"),
)


# Methodology v2: an explicit probability for a panel market (or a bet).
forecasts = Table(
    "forecasts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("decision_id", ForeignKey("decisions.id"), index=True, nullable=False),
    Column("agent_id", ForeignKey("agents.id"), index=True, nullable=False),
    Column("cohort_id", ForeignKey("cohorts.id"), index=True, nullable=False),
    Column("family_id", ForeignKey("families.id"), index=True, nullable=False),
    Column("market_id", ForeignKey("markets.id"), index=True, nullable=False),
    Column("outcome", String(300), nullable=False),  # YES or the outcome name
    Column("probability", Price(), nullable=False),
    Column("market_probability", Price()),
    Column("source", String(8), nullable=False),  # panel | bet
    Column("forecast_at", UTCDateTime(), nullable=False),
    Column("resolved_value", Integer),  # 1/0 once resolved
    Column("brier", Price()),
    Column("scored_at", UTCDateTime()),
    UniqueConstraint("decision_id", "market_id", "outcome"),
)


# The last valid mark of one outcome token (mode book): the mid, or the last trade when
# the spread is wider than 0.10; a fetch without a usable mark leaves it as it was.
book_marks = Table(
    "book_marks",
    metadata,
    Column("token_id", String(100), primary_key=True),
    Column("market_id", ForeignKey("markets.id"), index=True, nullable=False),
    Column("mark", Price(), nullable=False),
    Column("best_bid", Price()),
    Column("best_ask", Price()),
    Column("book_hash", String(64), nullable=False),
    Column("book_timestamp", BigInteger, nullable=False),
    Column("observed_at", UTCDateTime(), nullable=False),
)


# A market's taker fee schedule (``GET /clob-markets/{condition_id}``, ``fd``).
market_fees = Table(
    "market_fees",
    metadata,
    Column("condition_id", String(80), primary_key=True),
    Column("rate", Price(), nullable=False),
    Column("exponent", Price(), nullable=False),
    Column("fetched_at", UTCDateTime(), nullable=False),
)


# One run of a scheduled job for one slot; the unique key stops two daemons doubling it.
job_runs = Table(
    "job_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job", String(32), nullable=False),
    Column("slot", UTCDateTime(), nullable=False),
    Column("holder", String(100), nullable=False),  # HOST:PID:START (arena.jobs.holders)
    Column("status", String(16), nullable=False),  # running | succeeded | failed
    Column("started_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime()),
    Column("lease_until", UTCDateTime(), nullable=False),
    Column("counts", JSON),
    Column("error", Text),
    UniqueConstraint("job", "slot"),
)


# The latest full v2 analysis the daemon computed (arena.analytics.stored), one row per analysis
# name: what the dashboard serves instead of computing in a request. Operational state, like
# job_runs: derived from the forecasts, so neither exported nor in the record chain.
analysis_results = Table(
    "analysis_results",
    metadata,
    Column("name", String(32), primary_key=True),  # "v2"
    Column("data_version", String(64), nullable=False),  # sha256 of the input and options
    Column("as_of", UTCDateTime(), nullable=False),
    Column("computed_at", UTCDateTime(), nullable=False),
    Column("seconds", Float, nullable=False),  # how long the computation took
    Column("resamples", Integer, nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("body", Text, nullable=False),  # the analysis as JSON text; "null": nothing to rank
)


# forecast_columns: stored column bodies of two tables (arena.store.stored_columns), one row
# each: "forecasts" (arena.export.forecast_columns) and "snapshots", the portfolio snapshots
# (arena.analytics.snapshot_columns). Operational state derived from those tables.
forecast_columns = Table(
    "forecast_columns",
    metadata,
    Column("name", String(32), primary_key=True),  # "forecasts" or "snapshots"
    Column("through_id", Integer, nullable=False),  # the largest id of its table it holds
    Column("rows", Integer, nullable=False),
    Column("resolved", Integer, nullable=False),  # forecasts with a resolved_value; snapshots: 0
    Column("written_at", UTCDateTime(), nullable=False),
    Column("body", LargeBinary, nullable=False),  # Arrow IPC stream, zstd
)

system_log = Table(
    "system_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UTCDateTime(), index=True, nullable=False),
    Column("level", String(10), nullable=False),
    Column("source", String(64), nullable=False),  # job or component name
    Column("event", String(64), nullable=False),
    Column("message", Text, nullable=False),
    Column("details", JSON),
)


# The record chain (arena.record): every completed decision, settled position and started cohort,
# as canonical JSON, each hashed onto the one before it. A row is written in the transaction of
# what it records and never changed. ``body`` holds the exact canonical bytes that were hashed.
records = Table(
    "records",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),  # 1, 2, ... no gap
    Column("kind", String(16), nullable=False),  # decision | settlement | cohort
    Column("subject_id", BigInteger, nullable=False),  # the decision, position or cohort id
    Column("recorded_at", UTCDateTime(), nullable=False),
    Column("after_the_fact", Boolean, nullable=False),  # chained by the genesis pass
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False, unique=True),
    Column("body", Text, nullable=False),
    UniqueConstraint("kind", "subject_id"),
)

# The chain's head: one row (id 1), locked by every append, so appends queue and the chain never
# forks, whatever the number of writers.
record_head = Table(
    "record_head",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, nullable=False),
    Column("hash", String(64), nullable=False),
)

# A commitment to the chain's head: signed (Ed25519) when a signing key is configured.
commitments = Table(
    "commitments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("seq", BigInteger, nullable=False, index=True),
    Column("head_hash", String(64), nullable=False),
    Column("count", Integer, nullable=False),  # records added since the previous commitment
    Column("committed_at", UTCDateTime(), nullable=False),
    Column("body", Text, nullable=False),  # the canonical JSON that is signed
    Column("signature", Text),  # base64; null when no signing key was configured
    Column("key_id", String(64)),  # sha256 of the raw public key
)

# Each commitment's delivery to each configured anchor (file, git, http), retried until done.
anchor_deliveries = Table(
    "anchor_deliveries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "commitment_id",
        ForeignKey("commitments.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("anchor", String(300), nullable=False),  # kind:target, e.g. "git:/srv/record"
    Column("status", String(16), nullable=False),  # pending | delivered | failed
    Column("attempts", Integer, nullable=False),
    Column("last_error", Text),
    Column("answer", Text),  # the anchor's receipt: a commit id, an HTTP answer
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("delivered_at", UTCDateTime()),
    UniqueConstraint("commitment_id", "anchor"),
)
