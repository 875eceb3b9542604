"""The small interface every model provider implements, and its failure taxonomy.

A provider turns one :class:`ModelRequest` into one :class:`ModelReply` with ONE call, or raises
one classified :class:`ProviderCallError`. Retrying is not the provider's business: the engine
calls :func:`call_with_retries`, which runs the one retry loop (:mod:`arena.sources.retry`)
and reports every try (reply or error) to a callback, so every attempt can be stored with its
metadata.

    ProviderError (arena.errors)
    └── ProviderCallError           one failed call, with the attempt's metadata
        ├── TransientProviderError  a TransientError: retry after a pause (408, 429, 5xx,
        │                           timeouts, cold starts)
        ├── PermanentProviderError  a plain retry will not help (400, 403, 404, exhausted tokens)
        └── FatalProviderError      401/402: stop the run
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, runtime_checkable

from arena.errors import ProviderCallError
from arena.sources.retry import RETRY_AFTER_CAP_SECONDS, provider_policy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelRequest:
    """One call to a model: which family, which model id, the messages and the output cap
    (and, for a repair call, the errors it repairs: the messages quote them too).
    ``web_search``: the agent's web search settings as its cohort froze them (None: off); the
    call follows them, never the family's current configuration."""

    family_id: str
    model: str
    messages: list[dict[str, Any]]
    max_tokens: int
    context: object | None = None  # provider-specific extras (baselines: universe, portfolio)
    repair: str | None = None  # a repair call: the errors of the previous answer
    web_search: dict[str, Any] | None = None  # the frozen web search settings; None: off


@dataclass(frozen=True)
class Citation:
    """One web source a reply cites (a ``url_citation`` annotation of OpenRouter's web search
    server tool): its URL, title and the content OpenRouter adds, in the reply's order."""

    url: str
    title: str | None = None
    content: str | None = None


@dataclass(frozen=True)
class ModelReply:
    """What one successful call returned, with everything worth storing about it."""

    content: str | None
    reasoning: str | None
    finish_reason: str | None
    provider: str | None  # the upstream that served (OpenRouter's `provider`)
    model: str | None  # the model that actually served
    generation_id: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: Decimal | None
    latency_ms: int
    raw: dict[str, Any] | None
    content_from_reasoning: bool = False  # content was empty; the answer came from `reasoning`
    citations: tuple[Citation, ...] = ()  # web search sources (families with web search)
    search_cost_usd: Decimal | None = None  # what the web search cost, when reported
    search_note: str | None = None  # web search was on but gave no citations: why, if known


@runtime_checkable
class ModelProvider(Protocol):
    """Anything that answers a :class:`ModelRequest` with one call."""

    def complete(self, request: ModelRequest) -> ModelReply: ...


AttemptOutcome = ModelReply | ProviderCallError
OnAttempt = Callable[[int, AttemptOutcome], None]


def call_with_retries(
    provider: ModelProvider,
    request: ModelRequest,
    *,
    max_attempts: int,
    on_attempt: OnAttempt | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_retry_after: float = RETRY_AFTER_CAP_SECONDS,
) -> ModelReply:
    """Call ``provider.complete`` until it answers, retrying only transient failures
    (:func:`arena.sources.retry.provider_policy`: ``max_attempts``, ``sleep``, and the
    server's ``Retry-After`` up to ``max_retry_after`` seconds).

    ``on_attempt(number, reply_or_error)`` is called after every try (1-based), before any
    pause, so the caller can store each attempt. The last error is re-raised when attempts
    run out; permanent and fatal errors are raised at once.
    """
    policy = provider_policy(max_attempts, sleep, max_retry_after)
    number = 0

    def attempt() -> ModelReply:
        nonlocal number
        number += 1
        try:
            reply = provider.complete(request)
        except ProviderCallError as error:
            if on_attempt is not None:
                on_attempt(number, error)
            raise
        if on_attempt is not None:
            on_attempt(number, reply)
        return reply

    def log_retry(failed: int, error: BaseException, wait: float) -> None:
        logger.warning(
            "provider call failed, retrying: family=%s model=%s attempt=%d/%d reason=%s "
            "status=%s wait=%.2fs",
            request.family_id,
            request.model,
            failed,
            max_attempts,
            getattr(error, "reason", type(error).__name__),
            getattr(error, "status", None),
            wait,
        )

    return policy.run(attempt, log_retry)
