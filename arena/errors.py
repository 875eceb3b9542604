"""The exception tree of arena.

ArenaError                      base of everything arena raises on purpose
├── UserError                   something the operator can fix; CLI prints one line, exit 2
│   ├── ConfigError             invalid config file or environment (names the key)
│   └── DatabaseUnavailable     missing database directory, unreachable PostgreSQL
├── LedgerError                 a trade that the ledger rules refuse (no state change)
│   └── ExecutionError          a price outside (0, 1), an unknown side, too little cash
│       ├── NoLiquidity         mode book: nothing (or less than the minimum order) fills
│       │                       within the limit price
│       └── NoBook              mode book: no order book for the token (404), or the CLOB
│                               is unreachable
├── SourceError                 the outside world failed (after retries)
│   ├── GammaError              Polymarket Gamma
│   │   └── MarketParseError    one Gamma market row that cannot be parsed (skip it)
│   ├── ClobError               Polymarket CLOB (order books, fees)
│   │   └── BookMissing         a 404: no order book for a token (not proof the market closed)
│   └── ProviderError           an LLM provider
│       └── ProviderFatal       401/402: stop the whole run at once
├── MalformedResponse           a model's answer failed extraction or validation (repairable)
├── StorageFailed               a full disk or a database that refuses writes; CLI exits 1
└── JobFailed                   a job ran and failed; CLI exits 1
    └── UniverseUnavailable     no fresh, big enough universe: the decision run stores nothing
"""

from __future__ import annotations


class ArenaError(Exception):
    """Base of every error arena raises on purpose."""


class UserError(ArenaError):
    """An error the operator can fix; reported as one line, exit code 2."""

    exit_code = 2


class ConfigError(UserError):
    """Invalid configuration; the message names the offending key."""


class DatabaseUnavailable(UserError):
    """The database cannot be opened or reached."""


class LedgerError(ArenaError):
    """A ledger operation was refused; no state changed."""


class ExecutionError(LedgerError):
    """A trade could not execute (bad price, unknown side, insufficient cash...)."""


class NoLiquidity(ExecutionError):
    """Mode book: the book holds nothing to take within the limit price, or less than its
    minimum order size; counted as an execution refused for liquidity."""


class NoBook(ExecutionError):
    """Mode book: the token has no order book (404) or the CLOB could not be reached
    (``unavailable``)."""

    def __init__(self, message: str, *, unavailable: bool = False) -> None:
        super().__init__(message)
        self.unavailable = unavailable


class SourceError(ArenaError):
    """An outside service failed after retries."""


class GammaError(SourceError):
    """Polymarket Gamma failed."""


class MarketParseError(GammaError):
    """One raw Gamma market could not be parsed; callers log it and skip the row."""

    def __init__(self, market_id: str | None, reason: str) -> None:
        super().__init__(f"market {market_id or '<no id>'}: {reason}")
        self.market_id = market_id
        self.reason = reason


class ClobError(SourceError):
    """The Polymarket CLOB failed (after retries) or answered something unreadable."""


class BookMissing(ClobError):
    """``GET /book`` answered 404: the token has no book (unknown, never booked, closed or
    resolved: the 404 alone does not say which)."""

    def __init__(self, token_id: str) -> None:
        super().__init__(f"no order book for token {token_id}")
        self.token_id = token_id


class ProviderError(SourceError):
    """An LLM provider failed."""


class ProviderFatal(ProviderError):
    """Authentication or credit failure: the whole run must stop (401/402)."""


class MalformedResponse(ArenaError):
    """A model's answer is not a valid decision; the message names the exact error.

    The message is written for the model: the repair prompt quotes it verbatim.
    """


class StorageFailed(ArenaError):
    """The disk is full or the database refuses writes (read-only); the CLI exits 1."""

    exit_code = 1


class JobFailed(ArenaError):
    """A job ran and failed; the CLI exits 1."""

    exit_code = 1


class UniverseUnavailable(JobFailed):
    """The market sync failed or listed too few tradable markets: no universe is frozen, no
    decision is stored, and the decision run fails retryably."""
