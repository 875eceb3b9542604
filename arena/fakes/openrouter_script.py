"""How the fake OpenRouter answers one completion: :class:`Behaviour` and the factories that
build one per failure mode of ``openrouter-api.md`` (:func:`answer`, :func:`http_error`,
:func:`error_in_200`, :func:`null_choices`...). :mod:`arena.fakes.openrouter` serves them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

Content = str | Callable[[list[dict[str, Any]]], str] | None
ERROR_MESSAGES = {
    400: "is not a valid model ID",
    401: "No auth credentials found",
    402: "Insufficient credits. Add more using https://openrouter.ai/settings/credits",
    403: "Input was flagged by the moderation guardrail",
    404: "No endpoints found that can handle the requested parameters.",
    408: "Request timed out",
    429: "Rate limit exceeded: too many requests",
    502: "Provider returned error",
    503: "No available providers for this model: service overloaded",
}


@dataclass(frozen=True)
class Behaviour:
    """How the fake answers one completion. Build with the factory functions below."""

    kind: str  # answer | http_error | error_in_200 | null_choices
    content: Content = None
    reasoning: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    message: str | None = None
    metadata: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # top-level error of a null-choices body
    retry_after: str | None = None
    delay: float = 0.0  # seconds before answering
    provider: str | None = None  # overrides the model's default upstream
    fields: dict[str, Any] | None = None  # set over the completion body ("usage" key by key)
    headers: dict[str, str] | None = None  # set over the response headers
    search: Search | None = None  # the web search of a request with the tool (else DEFAULT)


@dataclass(frozen=True)
class Search:
    """What the web search server tool did for one answer (served only when the request
    carries ``openrouter:web_search``): the searches run, the ``url_citation`` annotations
    (``{url, title, content}``) and the search cost in USD, added to ``usage.cost``."""

    searches: int = 1
    citations: tuple[dict[str, Any], ...] = ()
    cost: str = "0"


SEARCH_PRICE_PER_RESULT = "0.004"  # Exa: $4 per 1000 results
DEFAULT_SEARCH = Search(
    searches=1,
    citations=(
        {
            "url": "https://example.org/news/markets",
            "title": "Markets this week",
            "content": "What the fake search found about the markets.",
        },
        {
            "url": "https://example.com/analysis",
            "title": "An analysis",
            "content": "A second source.",
        },
    ),
    cost="0.008",
)


def searched(
    then: Behaviour, *citations: dict[str, Any], cost: str | None = None, searches: int = 1
) -> Behaviour:
    """``then``, with a web search that found ``citations`` (each ``{url, title, content}``,
    or any odd annotation body), costing ``cost`` (default: Exa's price per citation)."""
    price = Decimal(SEARCH_PRICE_PER_RESULT) * len(citations)
    return replace(then, search=Search(searches, citations, cost or str(price)))


def search_unavailable(then: Behaviour) -> Behaviour:
    """``then`` with no search run (the tool unavailable): no annotations, no search cost."""
    return replace(then, search=Search(searches=0))


def no_results(then: Behaviour) -> Behaviour:
    """``then`` after a search that found nothing: no annotations, the search still paid."""
    return replace(then, search=Search(searches=1, cost=SEARCH_PRICE_PER_RESULT))


def answer(
    content: Content,
    *,
    reasoning: str | None = None,
    finish_reason: str = "stop",
    provider: str | None = None,
    delay: float = 0.0,
) -> Behaviour:
    """A normal completion; ``content`` may be a callable receiving the request messages."""
    return Behaviour(
        "answer",
        content=content,
        reasoning=reasoning,
        finish_reason=finish_reason,
        provider=provider,
        delay=delay,
    )


def fenced(obj: dict[str, Any]) -> Behaviour:
    """The JSON answer wrapped in a ```json fence."""
    return answer(f"```json\n{json.dumps(obj, indent=2)}\n```")


def chatty(obj: dict[str, Any]) -> Behaviour:
    """The JSON answer with prose before and after it."""
    return answer(f"Let me think about these markets.\n{json.dumps(obj)}\nHope that helps!")


def http_error(
    status: int,
    message: str | None = None,
    *,
    retry_after: str | float | None = None,
    metadata: dict[str, Any] | None = None,
) -> Behaviour:
    """An HTTP error with OpenRouter's ``{"error": {code, message, metadata}}`` body."""
    if metadata is None and status == 403:
        metadata = {"reasons": ["violence"], "flagged_input": "...", "provider_name": "Fake"}
    if metadata is None and status in (502, 503):
        metadata = {"raw": "upstream unavailable", "provider_name": "FakeProvider"}
    return Behaviour(
        "http_error",
        status=status,
        message=message,
        metadata=metadata,
        retry_after=None if retry_after is None else str(retry_after),
    )


def error_in_200(
    code: int = 502,
    message: str = "Provider returned error",
    metadata: dict[str, Any] | None = None,
) -> Behaviour:
    """HTTP 200 with ``finish_reason: "error"`` and ``choices[0].error``."""
    meta = metadata if metadata is not None else {"raw": "stream interrupted"}
    return Behaviour(
        "error_in_200", finish_reason="error", message=message, metadata=meta, error={"code": code}
    )


def null_choices(error: dict[str, Any] | None = None) -> Behaviour:
    """HTTP 200 with ``"choices": null``, with this top-level ``error`` or none at all."""
    return Behaviour("null_choices", error=error)


def null_choices_rate_limited(provider: str = "FakeProvider") -> Behaviour:
    """The documented upstream 429 inside a 200 body with null choices."""
    return null_choices(
        {
            "code": 429,
            "message": "Provider returned error",
            "metadata": {"raw": "Too Many Requests", "provider_name": provider},
        }
    )


def empty_content() -> Behaviour:
    return answer("")


def null_content() -> Behaviour:
    return answer(None)


def reasoning_only(reasoning: str = "Thinking about the markets...") -> Behaviour:
    """No content; the text (maybe holding the JSON answer) only in ``message.reasoning``."""
    return answer(None, reasoning=reasoning)


def length_exhausted() -> Behaviour:
    """A reasoning model that spent all of ``max_tokens`` thinking: empty content, length."""
    return answer("", reasoning="Let me weigh each market carefully...", finish_reason="length")


def with_fields(
    then: Behaviour, *, headers: dict[str, str] | None = None, **fields: Any
) -> Behaviour:
    """``then`` with these fields set over its completion body (``usage`` merged key by key;
    ``finish_reason`` goes to the choice) and these response headers."""
    finish_reason = fields.pop("finish_reason", then.finish_reason)
    return replace(
        then,
        finish_reason=finish_reason,
        fields={**(then.fields or {}), **fields},
        headers={**(then.headers or {}), **(headers or {})},
    )


LONG_ID = "gen-" + "7" * 146  # 150 characters: past generation_id VARCHAR(100)
ODD_FIELDS: dict[str, Any] = {
    "provider": "P\x00" + "p" * 148,  # 150 characters with a NUL: past provider VARCHAR(100)
    "model": "m/" + "m" * 298,  # 300 characters: past model VARCHAR(200)
    "id": LONG_ID,
    "finish_reason": "stop_" + "s" * 40,  # 45 characters: past finish_reason VARCHAR(32)
    "usage": {"prompt_tokens": 10**30, "completion_tokens": -5, "cost": "1e999999"},
}


def odd_fields(then: Behaviour | None = None) -> Behaviour:
    """``then`` (a HOLD answer if omitted) with every field of the reply odd at once, as
    :data:`ODD_FIELDS` and an over-long ``X-Generation-Id``: what no column can hold as sent."""
    base = then or answer('{"action": "HOLD", "reasoning": "odd fields"}')
    return with_fields(base, headers={"X-Generation-Id": LONG_ID}, **ODD_FIELDS)


def slow(seconds: float, then: Behaviour | None = None) -> Behaviour:
    """``then`` (a default answer if omitted), delivered after ``seconds``."""
    return replace(then or answer('{"action": "HOLD", "reasoning": "slow"}'), delay=seconds)
