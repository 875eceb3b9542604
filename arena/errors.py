"""The exception tree of arena: every exception class arena defines lives here.

ArenaError                      base of everything arena raises on purpose
├── UserError                   something the operator can fix; CLI prints one line, exit 2
│   ├── OptionError             a command-line option's value is refused (names the option)
│   ├── ConfigError             invalid config file or environment (names the key)
│   ├── DatabaseUnavailable     missing database directory, unreachable PostgreSQL, a file
│   │                           that is not a SQLite database
│   └── ForecastsError          the analytics' forecasts input is unusable (also a ValueError)
├── NotFound                    web: an unknown id (a 404 page, or a 404 JSON body)
├── LedgerError                 a trade that the ledger rules refuse (no state change)
│   └── ExecutionError          a price outside (0, 1), an unknown side, too little cash
│       ├── NoLiquidity         mode book: nothing (or less than the minimum order) fills
│       │                       within the limit price
│       └── NoBook              mode book: no order book for the token (404), or the CLOB
│                               is unreachable
├── BudgetExceeded              the worst case of the next decision does not fit the budget
├── SourceError                 the outside world failed (after retries)
│   ├── TransientError          one attempt failed in a way worth retrying (429, 5xx, a body
│   │                           that is not the JSON expected): what every retry policy
│   │                           retries; from a Polymarket client, it never leaves the client
│   ├── SourceNotFound          a 404 where the caller gives it a meaning (a gone market, a
│   │                           missing book); never leaves a client
│   ├── GammaError              Polymarket Gamma
│   │   └── MarketParseError    one Gamma market row that cannot be parsed (skip it)
│   ├── ClobError               Polymarket CLOB (order books, fees)
│   │   ├── BookMissing         a 404: no order book for a token (not proof the market closed)
│   │   ├── BookUnusable        a book that arrived but is no price: an unreadable or
│   │   │                       unstorable field, a crossed or locked touch (skip that book)
│   │   └── UnreadableField     one field of a CLOB body; the parser adds whose it is
│   ├── AnchorError             a commitment's anchor (file, git, http) failed to take it
│   └── ProviderError           an LLM provider
│       ├── UnknownModelPriceError  OpenRouter's model list has no usable price for a model
│       └── ProviderCallError   one failed call, carrying the attempt's metadata to store
│           ├── TransientProviderError  a TransientError of a provider call: retried
│           ├── PermanentProviderError  fails the same way again: not retried unchanged
│           └── FatalProviderError      401/402, bad key or no credit: stop the whole run
├── MalformedResponse           a model's answer failed extraction or validation (repairable)
├── StorageFailed               a full disk or a database that refuses writes; CLI exits 1
├── JobFailed                   a job ran and failed; CLI exits 1
│   ├── UniverseUnavailable     no fresh, big enough universe: the decision run stores nothing
│   ├── RunAborted              a provider refused the key or credit: the decision run stops
│   └── SiteFailed              publish: a page of the dashboard's static copy did not render
└── FakeSignal                  arena.fakes only: a fake server's handler tells its transport
    ├── FakeDrop                drop the connection without answering
    └── FakeSlow                answer late
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal, TypedDict, Unpack

FailureKind = Literal["transient", "permanent", "fatal"]
"""How a failed provider call is treated: retried, not retried unchanged, or run-stopping."""


class ArenaError(Exception):
    """Base of every error arena raises on purpose."""


class UserError(ArenaError):
    """An error the operator can fix; reported as one line, exit code 2, and optionally a
    ``hint`` saying how to fix it (the CLI prints it on a second line)."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class OptionError(UserError):
    """A command-line option's value is refused; the message names the option (the CLI adds
    where its usage is shown)."""


class ConfigError(UserError):
    """Invalid configuration; the message names the offending key."""


class DatabaseUnavailable(UserError):
    """The database cannot be opened or reached."""


class ForecastsError(UserError, ValueError):
    """The forecasts input is unusable (missing column, value out of range); names the row."""


class NotFound(ArenaError):
    """An unknown id asked of the web app: a 404 page, or a 404 JSON body under ``/api/``."""


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


class BudgetExceeded(ArenaError):
    """The worst-case cost of the next decision does not fit in the budget; the decision is
    stored as skipped for budget."""


class SourceError(ArenaError):
    """An outside service failed after retries."""


class TransientError(SourceError):
    """A failure worth retrying (429, 5xx, a body that is not the JSON expected): what every
    retry policy (:class:`arena.sources.retry.RetryPolicy`) retries.

    The Polymarket clients retry it and, after the last attempt, raise their own error
    instead; a provider's is a :class:`TransientProviderError`, which carries the call's
    metadata. ``retry_after`` is the wait the server asked for, in seconds, if any.
    """

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class SourceNotFound(SourceError):
    """A 404 from an endpoint where the caller gives it a meaning (Gamma: the market is gone;
    CLOB: the token has no book). Raised and caught inside one client."""


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


class BookUnusable(ClobError):
    """A book the CLOB sent that arena refuses at the edge: a field it cannot read or the
    database cannot hold (a size of ``1e1000000``, a 25-digit ``timestamp``), or a crossed or
    locked touch (best bid at or above best ask). It costs that token's book only: the market
    is left out of the universe, its execution is refused with ``reason``, it is not marked."""

    def __init__(self, token_id: str, reason: str) -> None:
        super().__init__(f"unusable order book of token {token_id}: {reason}")
        self.token_id = token_id
        self.reason = reason


class UnreadableField(ClobError):
    """One field of a CLOB body cannot be read; the parser catches it and raises a
    :class:`ClobError` that adds whose field it is."""


class AnchorError(SourceError):
    """An anchor (file, git, http) failed to take a commitment; the message says why (no
    credential of the anchor's URL in it)."""


class ProviderError(SourceError):
    """An LLM provider failed."""


class UnknownModelPriceError(ProviderError):
    """``GET /models`` lists no usable price for this model id."""

    def __init__(self, model: str) -> None:
        super().__init__(f"no OpenRouter price for model {model!r}")
        self.model = model


class CallDetails(TypedDict, total=False):
    """What is known about one failed provider call, each item optional (None when absent)."""

    status: int | None  # the HTTP status
    error_code: int | str | None  # the provider's error code
    error_type: str | None
    provider: str | None  # the upstream that served
    model: str | None
    generation_id: str | None
    latency_ms: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: Decimal | None
    retry_after: float | None  # seconds the server asked to wait
    raw: dict[str, Any] | None  # the body received


class ProviderCallError(ProviderError):
    """One failed call, carrying the attempt's metadata (:class:`CallDetails`, as attributes)
    so the engine can store it.

    ``reason`` is a short stable label (``http_429``, ``error_in_200``, ``null_choices``,
    ``empty_content``, ``reasoning_only``, ``length_exhausted``, ``timeout``, ``connection``...).
    """

    kind: FailureKind = "transient"
    status: int | None
    error_code: int | str | None
    error_type: str | None
    provider: str | None
    model: str | None
    generation_id: str | None
    latency_ms: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: Decimal | None
    retry_after: float | None
    raw: dict[str, Any] | None

    def __init__(self, message: str, *, reason: str, **details: Unpack[CallDetails]) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        for name in CallDetails.__annotations__:
            setattr(self, name, details.get(name))

    def as_dict(self) -> dict[str, Any]:
        """The attempt's metadata as plain data (for storage and structured logs)."""
        fixed = {"kind": self.kind, "reason": self.reason, "message": self.message}
        return fixed | {name: getattr(self, name) for name in CallDetails.__annotations__}


class TransientProviderError(ProviderCallError, TransientError):
    """A provider call worth retrying after a pause: a :class:`TransientError` with the
    call's metadata; ``retry_after`` (seconds) when the server said so."""

    kind: FailureKind = "transient"


class PermanentProviderError(ProviderCallError):
    """The same request will fail the same way: do not retry it unchanged."""

    kind: FailureKind = "permanent"


class FatalProviderError(ProviderCallError):
    """Bad key or no credit (401/402): stop the whole run, leave the rest retryable."""

    kind: FailureKind = "fatal"


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


class RunAborted(JobFailed):
    """The provider refused the key or credit (401/402): the decision run stops at once."""


class SiteFailed(JobFailed):
    """``arena publish``: the dashboard did not render a page of its static copy, or the page
    needs a file the copy lacks (names the page)."""


class FakeSignal(ArenaError):
    """Raised by a fake server's handler (``arena.fakes``) to make its transport misbehave."""


class FakeDrop(FakeSignal):
    """The transport must drop the connection without answering."""

    def __init__(self, kind: str = "drop") -> None:
        super().__init__(kind)
        self.kind = kind


class FakeSlow(FakeSignal):
    """The transport must wait ``delay`` seconds before sending ``reply``."""

    def __init__(self, delay: float, reply: tuple[int, dict[str, str], bytes]) -> None:
        super().__init__(delay)
        self.delay = delay
        self.reply = reply
