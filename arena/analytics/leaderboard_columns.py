"""The one table of the leaderboard's columns, which ``arena leaderboard`` and the dashboard
both render: for each statistic, the field of the leaderboard row it shows (a field of
``arena leaderboard --format json`` and ``/api/v1/leaderboard``), its header, the shorter header
of the 80-column terminal table, its tooltip, how its value is written, and whether the
terminal shows it without ``--wide``.

Values are written by :mod:`arena.numbers` (:meth:`LeaderboardColumn.text`), from the exact JSON
values (money as decimal text): the terminal and the web pages show the same text for the same
value.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from arena import numbers


class ValueFormat(enum.StrEnum):
    """How a column writes its value ("-" when there is none)."""

    MONEY = "money"
    """Dollars to the cent with thousands separators: ``$10,234.50``."""
    SIGNED_MONEY = "signed_money"
    """Dollars with a sign: ``+$234.50``, ``-$12.00``."""
    PERCENT = "percent"
    """A percentage already in percent, signed, two places: ``+2.35%``."""
    FIXED = "fixed"
    """A score to four places: ``0.2140``."""
    SIGNED_FIXED = "signed_fixed"
    """A skill score, signed, three places: ``+0.142``."""
    BPS = "bps"
    """Basis points to one place: ``12.5``."""
    SHARE = "share"
    """A rate in [0, 1] as a percentage to one place: ``55.0%``."""
    COST = "cost"
    """Dollars of spend or fees to the cent, a fraction of a cent as ``<$0.01``."""
    INT = "int"
    """A count with thousands separators: ``12,345``."""


WRITERS = {
    ValueFormat.MONEY: numbers.money,
    ValueFormat.SIGNED_MONEY: lambda v: numbers.money(v, signed=True),
    ValueFormat.PERCENT: numbers.percent,
    ValueFormat.FIXED: numbers.fixed,
    ValueFormat.SIGNED_FIXED: lambda v: numbers.fixed(v, 3, signed=True),
    ValueFormat.BPS: numbers.bps,
    ValueFormat.SHARE: numbers.share,
    ValueFormat.COST: numbers.cost,
    ValueFormat.INT: numbers.count,
}


@dataclass(frozen=True)
class LeaderboardColumn:
    """One statistic of the standings shown as a column (see the module docstring)."""

    field: str
    header: str
    tooltip: str
    format: ValueFormat
    short: str = ""  # the header in the 80-column terminal table; empty: the header itself
    essential: bool = True  # in the terminal table without --wide

    @property
    def short_header(self) -> str:
        return self.short or self.header

    def text(self, value: Any) -> str:
        """``value`` (this column's field of a leaderboard row) as shown to people."""
        return WRITERS[self.format](value)


_F = ValueFormat
_C = LeaderboardColumn

COST_COLUMN = _C(
    "cost_usd",
    "Cost (USD)",
    "Model spend in OpenRouter credits over every attempt.",
    _F.COST,
    "cost USD",
    essential=False,
)
"""The model spend: the standings' last column, and the first of the terminal's cost table."""

LEADERBOARD_COLUMNS = (
    _C(
        "total_value", "Value", "Cash plus open positions marked at the last valid price.", _F.MONEY
    ),
    _C(
        "pnl",
        "P/L",
        "Total value minus the starting balances of the family's agents.",
        _F.SIGNED_MONEY,
    ),
    _C("return_pct", "Return", "P/L as a percentage of the starting balances.", _F.PERCENT),
    _C(
        "pnl_mean",
        "P/L per replicate",
        "Mean P/L of the family's replicates (its agents r1..rN in each cohort); the families "
        "rank on it. Without replicates it is the P/L.",
        _F.SIGNED_MONEY,
        "P/L mean",
        essential=False,
    ),
    _C(
        "pnl_spread",
        "Replicate spread",
        "Sample standard deviation of the replicates' P/L: how far luck moves one replicate "
        "(none with a single replicate).",
        _F.MONEY,
        "spread",
        essential=False,
    ),
    _C(
        "brier",
        "Brier",
        'Mean Brier score of the scored bets (the v1 score, METHODOLOGY.md "Scores"): '
        "(implied confidence - won)^2, where a BUY's implied confidence is its amount over the "
        "maximum bet (max_bet_fraction x cash shown), clipped to [0, 1]: the stake's size, not a "
        "stated probability. Lower is better, 0.25 is a coin flip.",
        _F.FIXED,
    ),
    _C(
        "bss_uniform",
        "BSS vs 0.25",
        "Brier skill score against always saying 50%: 1 - Brier / 0.25; above 0 beats a coin flip.",
        _F.SIGNED_FIXED,
        essential=False,
    ),
    _C(
        "bss_market",
        "BSS vs market",
        "Brier skill score against the market price paid: "
        "above 0 forecasts better than the market did.",
        _F.SIGNED_FIXED,
        short="BSS vs mkt",
        essential=False,
    ),
    _C("scored_bets", "Scored bets", "Resolved BUY trades with a Brier score.", _F.INT, "bets"),
    _C("win_rate", "Win rate", "Share of scored bets that won.", _F.SHARE, essential=False),
    COST_COLUMN,
)
"""The standings: value, P/L, scores and cost per family."""

RELIABILITY_COLUMNS = (
    _C("decisions", "Decisions", "Weekly decisions made by the family's agents.", _F.INT),
    _C(
        "malformed_share",
        "Malformed",
        "Share of model answers that failed to parse or "
        "validate (repaired or turned into a system HOLD).",
        _F.SHARE,
    ),
    _C(
        "system_holds",
        "System HOLDs",
        "Decisions that became a HOLD after the repairs were exhausted.",
        _F.INT,
        "sys HOLD",
    ),
    _C("failures", "Failed calls", "Model calls that ended in an error.", _F.INT),
    _C(
        "failed_decisions",
        "Failed decisions",
        "Decisions that ended in a failure state (no answer stored).",
        _F.INT,
        "failed dec.",
        essential=False,
    ),
    _C("attempts", "Attempts", "Model calls and baseline answers.", _F.INT, essential=False),
    _C(
        "retries",
        "Retries",
        "Attempts beyond the first of each decision.",
        _F.INT,
        essential=False,
    ),
    _C(
        "prompt_tokens",
        "Prompt tokens",
        "Tokens sent to the model.",
        _F.INT,
        "prompt tok",
        essential=False,
    ),
    _C(
        "completion_tokens",
        "Completion tokens",
        "Tokens the model returned.",
        _F.INT,
        "compl. tok",
        essential=False,
    ),
)
"""Cost and reliability: what the family's model calls cost and how often they failed."""

EXECUTION_COLUMNS = (
    _C(
        "exit_pnl",
        "P/L at exit",
        "Mode book: cash plus selling every open position into the current bids, fees "
        "included, minus the starting balances (latest snapshot of each agent).",
        _F.SIGNED_MONEY,
    ),
    _C(
        "slippage_mid_bps",
        "Slippage (bps)",
        "Mode book: mean distance of the price paid from the mid, in basis points; "
        "a worse price is positive.",
        _F.BPS,
        "slip bps",
    ),
    _C("fees_usd", "Fees (USD)", "Mode book: Polymarket taker fees paid.", _F.COST, "fees USD"),
    _C(
        "fill_ratio",
        "Fill ratio",
        "Mode book: mean share of each order that the book filled within the limit price.",
        _F.SHARE,
        "fill",
    ),
    _C(
        "liquidity_refusals",
        "Refused",
        "Mode book: executions refused because the book held too little within the limit.",
        _F.INT,
    ),
)
"""Execution against the order book (mode book)."""
