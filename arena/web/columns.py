"""The leaderboard's columns: the JSON field each shows, its header and its tooltip."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    field: str
    header: str
    tooltip: str
    format: str = "text"  # money | signed_money | percent | fixed | signed_fixed | share | int


LEADERBOARD_COLUMNS = (
    Column(
        "total_value", "Value", "Cash plus open positions marked at the last valid price.", "money"
    ),
    Column(
        "pnl",
        "P/L",
        "Total value minus the starting balances of the family's agents.",
        "signed_money",
    ),
    Column("return_pct", "Return", "P/L as a percentage of the starting balances.", "percent"),
    Column(
        "brier",
        "Brier",
        "Mean Brier score of the scored bets: (confidence - outcome)^2; "
        "lower is better, 0.25 is a coin flip.",
        "fixed",
    ),
    Column(
        "bss_uniform",
        "BSS vs 0.25",
        "Brier skill score against always saying 50%: 1 - Brier / 0.25; above 0 beats a coin flip.",
        "signed_fixed",
    ),
    Column(
        "bss_market",
        "BSS vs market",
        "Brier skill score against the market price paid: "
        "above 0 forecasts better than the market did.",
        "signed_fixed",
    ),
    Column("scored_bets", "Scored bets", "Resolved BUY trades with a Brier score.", "int"),
    Column("win_rate", "Win rate", "Share of scored bets that won.", "share"),
    Column(
        "cost_usd", "Cost (USD)", "Model spend in OpenRouter credits over every attempt.", "cost"
    ),
)

RELIABILITY_COLUMNS = (
    Column("decisions", "Decisions", "Weekly decisions made by the family's agents.", "int"),
    Column(
        "malformed_share",
        "Malformed",
        "Share of model answers that failed to parse or "
        "validate (repaired or turned into a system HOLD).",
        "share",
    ),
    Column(
        "system_holds",
        "System HOLDs",
        "Decisions that became a HOLD after the repairs were exhausted.",
        "int",
    ),
    Column("failures", "Failed calls", "Model calls that ended in an error.", "int"),
    Column("attempts", "Attempts", "Model calls and baseline answers.", "int"),
    Column("retries", "Retries", "Attempts beyond the first of each decision.", "int"),
    Column("prompt_tokens", "Prompt tokens", "Tokens sent to the model.", "int"),
    Column("completion_tokens", "Completion tokens", "Tokens the model returned.", "int"),
)

EXECUTION_COLUMNS = (
    Column(
        "exit_pnl",
        "P/L at exit",
        "Mode book: cash plus selling every open position into the current bids, fees "
        "included, minus the starting balances (latest snapshot of each agent).",
        "signed_money",
    ),
    Column(
        "slippage_mid_bps",
        "Slippage (bps)",
        "Mode book: mean distance of the price paid from the mid, in basis points; "
        "a worse price is positive.",
        "fixed2",
    ),
    Column("fees_usd", "Fees (USD)", "Mode book: Polymarket taker fees paid.", "cost"),
    Column(
        "fill_ratio",
        "Fill ratio",
        "Mode book: mean share of each order that the book filled within the limit price.",
        "share",
    ),
    Column(
        "liquidity_refusals",
        "Refused",
        "Mode book: executions refused because the book held too little within the limit.",
        "int",
    ),
)

RANKING_COLUMNS = (
    Column(
        "adjusted_brier",
        "Adjusted Brier",
        "Difficulty-adjusted Brier score (two-way fixed "
        "effects, market-anchored; always-50% scores 0.25). Lower is better.",
        "fixed",
    ),
    Column("ci_low", "95% low", "Lower end of the 95% t-interval of the adjusted score.", "fixed"),
    Column(
        "ci_high", "95% high", "Upper end of the 95% t-interval of the adjusted score.", "fixed"
    ),
    Column("brier", "Brier", "Plain mean Brier score over the same forecasts.", "fixed"),
    Column("n_questions", "Questions", "Resolved panel questions forecast.", "int"),
    Column(
        "peer_score",
        "Peer score",
        "Mean log-score advantage over the other forecasters on "
        "the same questions; higher is better.",
        "signed_fixed",
    ),
)
