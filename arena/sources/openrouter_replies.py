"""Reading OpenRouter's answers: a chat completion becomes a :class:`ModelReply` or raises its
classified :class:`ProviderCallError`, and so does an exception of the ``openai`` SDK.

Classification (``reason`` in brackets), see ``openrouter-api.md``, Failures:

- HTTP 401, 402 -> :class:`FatalProviderError` [http_401, http_402]: stop the whole run.
- HTTP 408, 429, 5xx -> :class:`TransientProviderError` [http_<status>], with ``Retry-After``.
- Other HTTP 4xx (400, 403, 404...) -> :class:`PermanentProviderError` [http_<status>].
- Timeout / network failure -> transient [timeout, connection]; unreadable body -> transient
  [invalid_body].
- 200 with ``finish_reason: "error"`` or ``choices: null`` plus an ``error`` object -> classified
  by the error's ``code`` with the same table [error_in_200]; a missing code is transient.
- 200 with ``choices`` null or empty and no error -> transient [null_choices].
- Empty or null content with ``finish_reason: "length"`` -> permanent [length_exhausted]: the
  model spent ``max_tokens`` (usually on reasoning); raise ``max_tokens`` or lower the effort.
- Empty content, ``message.reasoning`` holding a JSON object -> a reply whose content is the
  reasoning text (``content_from_reasoning=True``): some models put the answer only there, and
  the decision parser extracts the last valid object from it.
- Empty content, reasoning without any JSON object -> permanent [reasoning_only].
- Empty or null content and no reasoning -> transient [empty_content] (a cold start).

Web search (a family with ``web_search``, ``searched=True``): every ``url_citation``
annotation of the message becomes a :class:`Citation` (an http(s) URL that fits its column,
else the citation is dropped; title and content cut to theirs), at most
:data:`MAX_CITATIONS`; the search cost comes from ``usage.cost_details.web_search_cost`` when
reported (``usage.cost`` stays the whole charge). A search that gave no citations is no
failure: the answer stands, with a ``search_note`` saying whether any search ran
(``usage.server_tool_use.web_search_requests``).

Every field kept from an answer passes the storable rule (:mod:`arena.domain.storable`) here,
at the edge, before it is used or stored: text is cut to its ``decision_attempts`` column with
NUL and lone surrogates replaced (``provider``, ``model``, ``finish_reason``, content,
reasoning, error messages); a generation id that does not fit is dropped, never cut; token
counts outside ``[0, 2^31)`` and costs that are negative, non-finite or too large for
``NUMERIC(20, 10)`` become unknown (None); the raw body keeps its strings storable and its
non-finite numbers as null. An odd field costs that field only, never the attempt's row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from arena.domain.storable import (
    MODEL_TEXT,
    has_unstorable,
    optional_text,
    storable_amount,
    storable_count,
    storable_id,
    storable_json,
    storable_text,
)
from arena.errors import (
    FatalProviderError,
    PermanentProviderError,
    ProviderCallError,
    TransientProviderError,
)
from arena.sources.http import retry_after_seconds
from arena.sources.providers import Citation, ModelReply

if TYPE_CHECKING:
    import openai

_JSON_SCAN_LIMIT = 200  # candidate "{" positions tried when looking for a JSON object
# What decision_attempts keeps of an answer (pinned against the schema by a test).
PROVIDER_CHARS = 100  # provider VARCHAR(100)
MODEL_CHARS = 200  # model VARCHAR(200)
GENERATION_ID_CHARS = 100  # generation_id VARCHAR(100)
FINISH_REASON_CHARS = 32  # finish_reason VARCHAR(32)
COST_BOUND = Decimal("1e10")  # cost_usd NUMERIC(20, 10): 10 integer digits
COST_PLACES = 10
ERROR_CHARS = 2000  # an error message or unreadable body kept with the attempt
CODE_CHARS = 64  # an error code or type given as text
URL_CHARS = 2000  # citations.url VARCHAR(2000): a longer URL is dropped, never cut
TITLE_CHARS = 500  # citations.title VARCHAR(500)
CITATION_TEXT = 20_000  # citations.content: what OpenRouter adds of the page
MAX_CITATIONS = 100  # kept per answer, in the answer's order
SEARCH_NOTE_CHARS = 200  # decision_attempts.search_note VARCHAR(200)


def classify_completion(
    status: int,
    headers: Mapping[str, str],
    text: str,
    latency_ms: int,
    *,
    searched: bool = False,
) -> ModelReply:
    """Turn one HTTP 200 chat completion into a reply, or raise its classified failure.
    ``searched``: the request carried the web search tool (its citations and cost are read)."""
    body = parse_json(text)
    generation_id = storable_id(_header(headers, "x-generation-id"), GENERATION_ID_CHARS)
    if not isinstance(body, dict):
        raise TransientProviderError(
            "unreadable response body",
            reason="invalid_body",
            status=status,
            generation_id=generation_id,
            latency_ms=latency_ms,
            raw={"text": storable_text(text, ERROR_CHARS)},
        )
    meta = _metadata(body, generation_id, latency_ms, status)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        if isinstance(body.get("error"), dict):
            raise _error_from_object(body["error"], "error_in_200", meta)
        raise TransientProviderError("response without choices", reason="null_choices", **meta)
    choice = choices[0]
    finish_reason = _short(choice.get("finish_reason"), FINISH_REASON_CHARS)
    if finish_reason == "error" or isinstance(choice.get("error"), dict):
        raise _error_from_object(_dict(choice.get("error")), "error_in_200", meta)
    message = _dict(choice.get("message"))
    content = optional_text(_text(message.get("content")), MODEL_TEXT)
    reasoning = optional_text(_text(message.get("reasoning")), MODEL_TEXT)
    reply_fields = {k: meta[k] for k in _REPLY_META}
    if searched:
        reply_fields.update(web_search_fields(message, _dict(body.get("usage"))))
    if content and content.strip():
        return ModelReply(
            content=content, reasoning=reasoning, finish_reason=finish_reason, **reply_fields
        )
    if finish_reason == "length":
        raise PermanentProviderError(
            "empty answer: the model used all of max_tokens (often on reasoning); raise "
            "max_tokens or lower the reasoning effort",
            reason="length_exhausted",
            **meta,
        )
    if reasoning and reasoning.strip():
        if has_json_object(reasoning):
            return ModelReply(
                content=reasoning,
                reasoning=reasoning,
                finish_reason=finish_reason,
                content_from_reasoning=True,
                **reply_fields,
            )
        raise PermanentProviderError(
            "empty content; the reasoning holds no JSON answer", reason="reasoning_only", **meta
        )
    raise TransientProviderError("empty content", reason="empty_content", **meta)


_REPLY_META = (
    "provider",
    "model",
    "generation_id",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_ms",
    "raw",
)


def web_search_fields(message: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    """The web search part of a reply: its citations, search cost and, without citations, a
    note saying whether any search ran."""
    citations = tuple(_citations(message.get("annotations")))
    details = _dict(usage.get("cost_details"))
    cost = storable_amount(
        optional_decimal(details.get("web_search_cost")), COST_BOUND, COST_PLACES
    )
    note = None
    if not citations:
        searches = storable_count(_dict(usage.get("server_tool_use")).get("web_search_requests"))
        note = (
            f"web search ran ({searches} requests) but gave no citations"
            if searches
            else "web search did not run (unavailable, or the model did not search)"
        )
    return {
        "citations": citations,
        "search_cost_usd": cost,
        "search_note": storable_text(note, SEARCH_NOTE_CHARS) if note else None,
    }


def _citations(annotations: Any) -> list[Citation]:
    found: list[Citation] = []
    for annotation in annotations if isinstance(annotations, list) else []:
        if len(found) >= MAX_CITATIONS:
            break
        if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
            continue
        cited = _dict(annotation.get("url_citation"))
        url = cited.get("url")
        if not isinstance(url, str) or not _web_url(url):
            continue
        found.append(
            Citation(
                url=url,
                title=_short(cited.get("title"), TITLE_CHARS),
                content=_short(cited.get("content"), CITATION_TEXT),
            )
        )
    return found


def _web_url(url: str) -> bool:
    """An http(s) URL that fits its column unchanged (anything else is no link to show)."""
    return (
        len(url) <= URL_CHARS
        and url.lower().startswith(("http://", "https://"))
        and not has_unstorable(url)
        and not any(c.isspace() or ord(c) < 32 for c in url)
    )


def has_json_object(text: str) -> bool:
    """True when some ``{`` in ``text`` starts a complete JSON object (last ones tried first)."""
    decoder = json.JSONDecoder()
    starts = [i for i, char in enumerate(text) if char == "{"][-_JSON_SCAN_LIMIT:]
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return True
    return False


def classify_status(code: int | None) -> type[ProviderCallError]:
    """The failure class for an HTTP status or an OpenRouter error code."""
    if code in (401, 402):
        return FatalProviderError
    if code is None or code in (408, 429) or code >= 500 or code < 400:
        return TransientProviderError
    return PermanentProviderError


def error_from_sdk(exc: openai.APIError, latency_ms: int) -> ProviderCallError:
    import openai  # loaded by the call that failed

    if isinstance(exc, openai.APITimeoutError):
        return TransientProviderError("request timed out", reason="timeout", latency_ms=latency_ms)
    if isinstance(exc, openai.APIConnectionError):
        return TransientProviderError(
            f"connection failed: {type(exc.__cause__ or exc).__name__}",
            reason="connection",
            latency_ms=latency_ms,
        )
    if isinstance(exc, openai.APIStatusError):
        response = exc.response
        body = parse_json(response.text)
        raw: dict[str, Any] = (
            body if isinstance(body, dict) else {"text": storable_text(response.text, ERROR_CHARS)}
        )
        generation_id = storable_id(
            _header(response.headers, "x-generation-id"), GENERATION_ID_CHARS
        )
        meta = _metadata(raw, generation_id, latency_ms, None)
        meta["status"] = response.status_code
        meta["retry_after"] = retry_after_seconds(response.headers)
        error = _dict(raw.get("error"))
        return _error_from_object(
            {"code": response.status_code, **error}, f"http_{response.status_code}", meta
        )
    return TransientProviderError(
        f"SDK error: {type(exc).__name__}", reason="sdk_error", latency_ms=latency_ms
    )


def _error_from_object(
    error: dict[str, Any], reason: str, meta: dict[str, Any]
) -> ProviderCallError:
    code = error.get("code")
    numeric = code if isinstance(code, int) and not isinstance(code, bool) else None
    cls = classify_status(meta.get("status") if reason.startswith("http_") else numeric)
    metadata = _dict(error.get("metadata"))
    message = str(error.get("message") or reason)
    if metadata.get("raw") and isinstance(metadata["raw"], str):
        message = f"{message}: {metadata['raw'][:300]}"
    # who failed, if named
    provider = _short(metadata.get("provider_name"), PROVIDER_CHARS) or meta.get("provider")
    return cls(
        storable_text(message, ERROR_CHARS),
        reason=reason,
        error_code=numeric if numeric is not None else _short(code, CODE_CHARS),
        error_type=_short(metadata.get("error_type"), CODE_CHARS),
        **{**meta, "provider": provider},
    )


def _metadata(
    body: dict[str, Any], generation_id: str | None, latency_ms: int, status: int | None
) -> dict[str, Any]:
    """What an answer says about itself, every field made storable (``generation_id`` is
    already checked: the header's, else the body's ``id``)."""
    usage = _dict(body.get("usage"))
    return {
        "status": status,
        "provider": _short(body.get("provider"), PROVIDER_CHARS),
        "model": _short(body.get("model"), MODEL_CHARS),
        "generation_id": generation_id or storable_id(body.get("id"), GENERATION_ID_CHARS),
        "prompt_tokens": storable_count(usage.get("prompt_tokens")),
        "completion_tokens": storable_count(usage.get("completion_tokens")),
        "cost_usd": storable_amount(optional_decimal(usage.get("cost")), COST_BOUND, COST_PLACES),
        "latency_ms": latency_ms,
        "raw": storable_json(body),
    }


def _short(value: Any, limit: int) -> str | None:
    """A text field of an answer (provider, model, finish reason, a citation's title),
    storable."""
    return storable_text(value, limit) if isinstance(value, str) else None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by name, case-insensitively (httpx headers or a plain dict)."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_json(text: str) -> Any:
    """The JSON value of ``text``, or None when unreadable (nested past the parser too)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _text(value: Any) -> str | None:
    """Content as text; a list of content parts is joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text", "") for p in value if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return None


def optional_decimal(value: Any) -> Decimal | None:
    """A JSON number or decimal string as an exact Decimal (floats via their shortest repr)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        result = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return result if result.is_finite() else None
