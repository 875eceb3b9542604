"""The export's tables: their columns (names, types) and how each is queried and sliced.

One :class:`TableSpec` per exported file, in :data:`TABLES`. Column types come from the
database columns they read (``ExactDecimal(p, s)`` -> decimal with that precision and scale,
``UTCDateTime`` -> UTC timestamp, ``JSON`` -> JSON text...), so the export follows the schema.
``docs/EXPORT_SCHEMA.md`` documents every column; a test keeps the two in step. The column
machinery is :mod:`arena.export.spec`, the slices :mod:`arena.export.slices`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import Select, String, cast, func, null

from arena.clock import week_start
from arena.domain.states import CLOB_UNAVAILABLE
from arena.export.slices import (
    BRIER_SLICE,
    DECISIONS_SLICE,
    FORECASTS_SLICE,
    POSITIONS_SLICE,
    TRADES_SLICE,
    agent_join,
    book_marks_restrict,
    cohorts_restrict,
    families_restrict,
    market_prices_restrict,
    markets_restrict,
    slice_on,
    universes_restrict,
)
from arena.export.spec import TableSpec, col, from_table
from arena.masking import masked_text
from arena.store.models import (
    Agent,
    BookMark,
    BrierScore,
    Citation,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionUniverse,
    Family,
    Forecast,
    JobRun,
    Market,
    MarketFee,
    MarketPrice,
    PortfolioSnapshot,
    Position,
    SystemLog,
    Trade,
    UniverseMarket,
)

FAMILIES = TableSpec(
    "families",
    (
        col("family_id", Family.id),
        col("kind", Family.kind),
        col("display_name", Family.display_name),
        col("provider", Family.provider),
        col("openrouter_id", Family.openrouter_id),
        col("strategy", Family.strategy),
        col("active", Family.active),
        col("first_seen_at", Family.first_seen_at),
        col("updated_at", Family.updated_at),
    ),
    from_table(Family),
    Family.id,
    families_restrict,
)

COHORTS = TableSpec(
    "cohorts",
    (
        col("cohort_id", Cohort.id),
        col("week_start", Cohort.week_start),
        col("created_at", Cohort.created_at),
        col("methodology_version", Cohort.methodology_version),
        col("pricing", Cohort.pricing),
        col("prompt_version", Cohort.prompt_version),
        col("starting_balance", Cohort.starting_balance),
        col("status", Cohort.status),
        col("completed_at", Cohort.completed_at),
    ),
    from_table(Cohort),
    Cohort.id,
    cohorts_restrict,
)

AGENTS = TableSpec(
    "agents",
    (
        col("agent_id", Agent.id),
        col("cohort_id", Agent.cohort_id),
        col("family_id", Agent.family_id),
        col("replicate", Agent.replicate),
        col("kind", Agent.kind),
        col("display_name", Agent.display_name),
        col("provider", Agent.provider),
        col("openrouter_id", Agent.openrouter_id),
        col("strategy", Agent.strategy),
        col("prompt_version", Agent.prompt_version),
        col("methodology_version", Agent.methodology_version),
        col("web_search", Agent.web_search),
        col("starting_balance", Agent.starting_balance),
        col("cash", Agent.cash),
        col("realized_pnl", Agent.realized_pnl),
        col("created_at", Agent.created_at),
    ),
    from_table(Agent),
    Agent.id,
    slice_on(Agent.cohort_id, Agent.family_id),
)

DECISIONS = TableSpec(
    "decisions",
    (
        col("decision_id", Decision.id),
        col("cohort_id", Decision.cohort_id),
        col("agent_id", Decision.agent_id),
        col("family_id", Agent.family_id),
        col("decision_week", Decision.decision_week),
        col("universe_id", Decision.universe_id),
        col("status", Decision.status),
        col("action", Decision.action),
        col("system_hold", Decision.system_hold),
        col("claim_count", Decision.claim_count),
        col("cash_shown", Decision.cash_shown),
        col("reasoning", Decision.reasoning),
        col("payload", Decision.payload),
        col("error", Decision.error),
        col("prompt_version", Decision.prompt_version),
        col("methodology_version", Decision.methodology_version),
        col("created_at", Decision.created_at),
        col("updated_at", Decision.updated_at),
        col("completed_at", Decision.completed_at),
    ),
    agent_join(Decision, Decision.agent_id),
    Decision.id,
    DECISIONS_SLICE,
)

ATTEMPTS = TableSpec(
    "attempts",
    (
        col("attempt_id", DecisionAttempt.id),
        col("decision_id", DecisionAttempt.decision_id),
        col("cohort_id", Decision.cohort_id),
        col("agent_id", Decision.agent_id),
        col("family_id", Agent.family_id),
        col("attempt_no", DecisionAttempt.attempt_no),
        col("kind", DecisionAttempt.kind),
        col("outcome", DecisionAttempt.outcome),
        col("request_messages", DecisionAttempt.request_messages, prompt=True),
        col("raw_response", DecisionAttempt.raw_response, prompt=True),
        col("raw_body", DecisionAttempt.raw_body, prompt=True),
        col("parsed", DecisionAttempt.parsed),
        col("error", DecisionAttempt.error),
        col("http_status", DecisionAttempt.http_status),
        col("finish_reason", DecisionAttempt.finish_reason),
        col("provider", DecisionAttempt.provider),
        col("model", DecisionAttempt.model),
        col("generation_id", DecisionAttempt.generation_id),
        col("prompt_tokens", DecisionAttempt.prompt_tokens),
        col("completion_tokens", DecisionAttempt.completion_tokens),
        col("cost_usd", DecisionAttempt.cost_usd),
        col("latency_ms", DecisionAttempt.latency_ms),
        col("prompt_version", DecisionAttempt.prompt_version),
        col("started_at", DecisionAttempt.started_at),
        col("finished_at", DecisionAttempt.finished_at),
        col("search_cost_usd", DecisionAttempt.search_cost_usd),
        col("search_note", DecisionAttempt.search_note),
    ),
    lambda statement: (
        statement.select_from(DecisionAttempt)
        .join(Decision, Decision.id == DecisionAttempt.decision_id)
        .join(Agent, Agent.id == Decision.agent_id)
    ),
    DecisionAttempt.id,
    slice_on(Decision.cohort_id, Agent.family_id, DecisionAttempt.started_at),
    batch_rows=50,  # prompts run to ~50 KB each
)

CITATIONS = TableSpec(
    "citations",
    (
        col("citation_id", Citation.id),
        col("attempt_id", Citation.attempt_id),
        col("decision_id", DecisionAttempt.decision_id),
        col("cohort_id", Decision.cohort_id),
        col("agent_id", Decision.agent_id),
        col("family_id", Agent.family_id),
        col("position", Citation.position),
        col("url", Citation.url),
        col("title", Citation.title),
        col("content", Citation.content),
        col("cited_at", Citation.cited_at),
    ),
    lambda statement: (
        statement.select_from(Citation)
        .join(DecisionAttempt, DecisionAttempt.id == Citation.attempt_id)
        .join(Decision, Decision.id == DecisionAttempt.decision_id)
        .join(Agent, Agent.id == Decision.agent_id)
    ),
    Citation.id,
    slice_on(Decision.cohort_id, Agent.family_id, DecisionAttempt.started_at),  # as its attempt
)

TRADES = TableSpec(
    "trades",
    (
        col("trade_id", Trade.id),
        col("decision_id", Trade.decision_id),
        col("cohort_id", Trade.cohort_id),
        col("agent_id", Trade.agent_id),
        col("family_id", Agent.family_id),
        col("position_id", Trade.position_id),
        col("market_id", Trade.market_id),
        col("side", Trade.side),
        col("trade_type", Trade.trade_type),
        col("amount", Trade.amount),
        col("shares", Trade.shares),
        col("price", Trade.price),
        col("percentage", Trade.percentage),
        col("basis_out", Trade.basis_out),
        col("realized_pnl", Trade.realized_pnl),
        col("implied_confidence", Trade.implied_confidence),
        col("probability", Trade.probability),
        col("cash_shown", Trade.cash_shown),
        col("cash_after", Trade.cash_after),
        col("executed_at", Trade.executed_at),
        col("pricing", Trade.pricing),
        col("requested_amount", Trade.requested_amount),
        col("requested_shares", Trade.requested_shares),
        col("fee", Trade.fee),
        col("touch_price", Trade.touch_price),
        col("mid_price", Trade.mid_price),
        col("slippage_touch_bps", Trade.slippage_touch_bps),
        col("slippage_mid_bps", Trade.slippage_mid_bps),
        col("fill_ratio", Trade.fill_ratio),
        col("book_hash", Trade.book_hash),
        col("book_timestamp", Trade.book_timestamp),
        col("token_id", Trade.token_id),
        col("levels", Trade.levels),
    ),
    agent_join(Trade, Trade.agent_id),
    Trade.id,
    TRADES_SLICE,
)

POSITIONS = TableSpec(
    "positions",
    (
        col("position_id", Position.id),
        col("cohort_id", Position.cohort_id),
        col("agent_id", Position.agent_id),
        col("family_id", Agent.family_id),
        col("market_id", Position.market_id),
        col("side", Position.side),
        col("shares", Position.shares),
        col("cost_basis", Position.cost_basis),
        col("status", Position.status),
        col("settlement_outcome", Position.settlement_outcome),
        col("payout", Position.payout),
        col("realized_pnl", Position.realized_pnl),
        col("opened_at", Position.opened_at),
        col("updated_at", Position.updated_at),
        col("closed_at", Position.closed_at),
    ),
    agent_join(Position, Position.agent_id),
    Position.id,
    POSITIONS_SLICE,
)

SNAPSHOTS = TableSpec(
    "snapshots",
    (
        col("snapshot_id", PortfolioSnapshot.id),
        col("cohort_id", PortfolioSnapshot.cohort_id),
        col("agent_id", PortfolioSnapshot.agent_id),
        col("family_id", Agent.family_id),
        col("taken_at", PortfolioSnapshot.taken_at),
        col("cash", PortfolioSnapshot.cash),
        col("positions_value", PortfolioSnapshot.positions_value),
        col("total_value", PortfolioSnapshot.total_value),
        col("pnl", PortfolioSnapshot.pnl),
        col("pnl_pct", PortfolioSnapshot.pnl_pct),
        col("realized_pnl", PortfolioSnapshot.realized_pnl),
        col("unrealized_pnl", PortfolioSnapshot.unrealized_pnl),
        col("brier", PortfolioSnapshot.brier),
        col("resolved_bets", PortfolioSnapshot.resolved_bets),
        col("open_positions", PortfolioSnapshot.open_positions),
        col("exit_value", PortfolioSnapshot.exit_value),
    ),
    agent_join(PortfolioSnapshot, PortfolioSnapshot.agent_id),
    PortfolioSnapshot.id,
    slice_on(PortfolioSnapshot.cohort_id, Agent.family_id, PortfolioSnapshot.taken_at),
)

BRIER_SCORES = TableSpec(
    "brier_scores",
    (
        col("brier_id", BrierScore.id),
        col("trade_id", BrierScore.trade_id),
        col("decision_id", Trade.decision_id),
        col("cohort_id", BrierScore.cohort_id),
        col("agent_id", BrierScore.agent_id),
        col("family_id", BrierScore.family_id),
        col("market_id", BrierScore.market_id),
        col("side", BrierScore.side),
        col("implied_confidence", BrierScore.implied_confidence),
        col("price_paid", BrierScore.price_paid),
        col("won", BrierScore.won),
        col("brier", BrierScore.brier),
        col("market_brier", BrierScore.market_brier),
        col("scored_at", BrierScore.scored_at),
    ),
    lambda statement: statement.select_from(BrierScore).join(
        Trade, Trade.id == BrierScore.trade_id
    ),
    BrierScore.id,
    BRIER_SLICE,
)

MARKETS = TableSpec(
    "markets",
    (
        col("market_id", Market.id),
        col("question", Market.question),
        col("slug", Market.slug),
        col("description", Market.description),
        col("category", Market.category),
        col("outcomes", Market.outcomes),
        col("prices", Market.prices),
        col("yes_price", Market.yes_price),
        col("last_raw_prices", Market.last_raw_prices),
        col("volume", Market.volume),
        col("volume_24h", Market.volume_24h),
        col("liquidity", Market.liquidity),
        col("end_date", Market.end_date),
        col("closed_time", Market.closed_time),
        col("active", Market.active),
        col("closed", Market.closed),
        col("accepting_orders", Market.accepting_orders),
        col("uma_resolution_status", Market.uma_resolution_status),
        col("condition_id", Market.condition_id),
        col("clob_token_ids", Market.clob_token_ids),
        col("neg_risk", Market.neg_risk),
        col("neg_risk_market_id", Market.neg_risk_market_id),
        col("group_item_title", Market.group_item_title),
        col("event_id", Market.event_id),
        col("event_slug", Market.event_slug),
        col("event_title", Market.event_title),
        col("first_seen_at", Market.first_seen_at),
        col("updated_at", Market.updated_at),
        col("prices_updated_at", Market.prices_updated_at),
        col("status", Market.status),
        col("resolution_state", Market.resolution_state),
        col("winning_outcome", Market.winning_outcome),
        col("resolved_at", Market.resolved_at),
    ),
    from_table(Market),
    Market.id,
    markets_restrict,
)

MARKET_PRICES = TableSpec(
    "market_prices",
    (
        col("price_id", MarketPrice.id),
        col("market_id", MarketPrice.market_id),
        col("observed_at", MarketPrice.observed_at),
        col("prices", MarketPrice.prices),
        col("yes_price", MarketPrice.yes_price),
        col("volume", MarketPrice.volume),
    ),
    from_table(MarketPrice),
    MarketPrice.id,
    market_prices_restrict,
)

# The columns arena.analytics.records reads (methodology v2 forecasts), exactly.
FORECASTS = TableSpec(
    "forecasts",
    (
        col("forecast_id", Forecast.id),
        col("cohort_id", Forecast.cohort_id),
        col("agent_id", Forecast.agent_id),
        col("family_id", Forecast.family_id),
        col("family_kind", Agent.kind),
        col("decision_id", Forecast.decision_id),
        col("market_id", Forecast.market_id),
        col("outcome", Forecast.outcome),
        col("source", Forecast.source),
        col("probability", Forecast.probability),
        col("market_probability", Forecast.market_probability),
        col("forecast_at", Forecast.forecast_at),
        col("week_start", Forecast.forecast_at, derive=week_start),
        col("event_group", func.coalesce(Market.neg_risk_market_id, Market.event_id)),
        col("scheduled_close_at", Market.end_date),
        col("resolved_at", Market.resolved_at),
        col("resolved_value", Forecast.resolved_value),
        col("pricing", Cohort.pricing),
        col("fee_rate", MarketFee.rate),
        col("fee_exponent", MarketFee.exponent),
        col("category", Market.category),
        # a researcher's own grouping of questions: arena's data has none
        col("question_type", cast(null(), String)),
    ),
    lambda statement: with_market_fee(
        forecast_owners(statement).join(Market, Market.id == Forecast.market_id)
    ),
    Forecast.id,
    FORECASTS_SLICE,
)

FORECAST_MARKET_COLUMNS = (
    "event_group",
    "scheduled_close_at",
    "resolved_at",
    "fee_rate",
    "fee_exponent",
    "category",
)
"""The columns of :data:`FORECASTS` read from the forecast's market and its fee (they can
change after the forecast is written); every other column is the forecast's own, its agent's or
its cohort's, fixed once written (``resolved_value`` apart: null until the market settles)."""


def forecast_owners(statement: Select) -> Select:
    """FROM ``forecasts`` with each forecast's agent and cohort."""
    return (
        statement.select_from(Forecast)
        .join(Agent, Agent.id == Forecast.agent_id)
        .join(Cohort, Cohort.id == Forecast.cohort_id)
    )


def with_market_fee(statement: Select) -> Select:
    """``statement`` (which has ``markets``) with each market's fee, if it has one."""
    return statement.outerjoin(MarketFee, MarketFee.condition_id == Market.condition_id)


def touch_field(name: str) -> Callable[[str], str]:
    """A derived column of ``universe_markets.books``: one field of each outcome's frozen
    touch, as a JSON list aligned with ``outcomes``."""

    def derive(books: str) -> str:
        return json.dumps([touch.get(name) for touch in json.loads(books)])

    return derive


# The frozen market set and prices each decision run showed and traded at.
UNIVERSE_MARKETS = TableSpec(
    "universe_markets",
    (
        col("universe_id", UniverseMarket.universe_id),
        col("run_slot", DecisionUniverse.run_slot),
        col("frozen_at", DecisionUniverse.frozen_at),
        col("market_id", UniverseMarket.market_id),
        col("rank", UniverseMarket.rank),
        col("held_only", UniverseMarket.held_only),
        col("in_panel", UniverseMarket.in_panel),
        col("question", UniverseMarket.question),
        col("category", UniverseMarket.category),
        col("outcomes", UniverseMarket.outcomes),
        col("prices", UniverseMarket.prices),
        col("yes_price", UniverseMarket.yes_price),
        col("volume", UniverseMarket.volume),
        col("end_date", UniverseMarket.end_date),
        col("event_id", UniverseMarket.event_id),
        col("pricing", DecisionUniverse.pricing),
        col("clob_token_ids", UniverseMarket.clob_token_ids),
        # mode book: each outcome token's frozen touch, as lists aligned with outcomes
        col("best_bid", UniverseMarket.books, derive=touch_field("best_bid")),
        col("best_ask", UniverseMarket.books, derive=touch_field("best_ask")),
        col("mid", UniverseMarket.books, derive=touch_field("mid")),
        col("book_hash", UniverseMarket.books, derive=touch_field("book_hash")),
        col("books", UniverseMarket.books),
    ),
    lambda statement: statement.select_from(UniverseMarket).join(
        DecisionUniverse, DecisionUniverse.id == UniverseMarket.universe_id
    ),
    (UniverseMarket.universe_id, UniverseMarket.market_id),
    universes_restrict,
)

# Mode book: the last valid mark of each outcome token, which open positions are valued at.
# Current state, not history: the slice keeps the markets it refers to, whatever its times.
BOOK_MARKS = TableSpec(
    "book_marks",
    (
        col("token_id", BookMark.token_id),
        col("market_id", BookMark.market_id),
        col("mark", BookMark.mark),
        col("best_bid", BookMark.best_bid),
        col("best_ask", BookMark.best_ask),
        col("book_hash", BookMark.book_hash),
        col("book_timestamp", BookMark.book_timestamp),
        col("observed_at", BookMark.observed_at),
    ),
    from_table(BookMark),
    BookMark.token_id,
    book_marks_restrict,
)

# The scheduled job runs, one row per job and slot (its last run): what the incident log of a
# published dataset classifies (arena.publish.incidents). The holder (host and process) is left
# out; errors have the credentials of any URL masked.
JOB_RUNS = TableSpec(
    "job_runs",
    (
        col("job_run_id", JobRun.id),
        col("job", JobRun.job),
        col("slot", JobRun.slot),
        col("status", JobRun.status),
        col("started_at", JobRun.started_at),
        col("finished_at", JobRun.finished_at),
        col("counts", JobRun.counts),
        col("error", JobRun.error, derive=masked_text),
    ),
    from_table(JobRun),
    JobRun.id,
    slice_on(time=JobRun.slot),
)

PUBLISHED_EVENTS = (CLOB_UNAVAILABLE,)
"""The ``system_log`` events exported: the CLOB outages the incident log lists."""

SYSTEM_LOG = TableSpec(
    "system_log",
    (
        col("log_id", SystemLog.id),
        col("at", SystemLog.at),
        col("level", SystemLog.level),
        col("source", SystemLog.source),
        col("event", SystemLog.event),
        col("message", SystemLog.message, derive=masked_text),
    ),
    lambda statement: statement.select_from(SystemLog).where(SystemLog.event.in_(PUBLISHED_EVENTS)),
    SystemLog.id,
    slice_on(time=SystemLog.at),
)

TABLES: tuple[TableSpec, ...] = (
    FAMILIES,
    COHORTS,
    AGENTS,
    DECISIONS,
    ATTEMPTS,
    CITATIONS,
    TRADES,
    POSITIONS,
    SNAPSHOTS,
    BRIER_SCORES,
    MARKETS,
    MARKET_PRICES,
    FORECASTS,
    UNIVERSE_MARKETS,
    BOOK_MARKS,
    JOB_RUNS,
    SYSTEM_LOG,
)
