"""The OpenRouter provider: one classified call per :meth:`OpenRouterProvider.complete`.

Built on the official ``openai`` SDK pointed at OpenRouter, with the SDK's own retries off
(``max_retries=0``): :func:`arena.sources.providers.call_with_retries` owns the retry loop so
every attempt is reported and stored. The body of every answer is read raw and classified
here, because OpenRouter reports some failures inside HTTP 200 bodies that the SDK accepts.

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
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple, cast

import httpx
import openai
from openai import OpenAI
from pydantic import SecretStr

from arena.config import OpenRouterFamily, Settings
from arena.errors import (
    ConfigError,
    FatalProviderError,
    PermanentProviderError,
    ProviderCallError,
    TransientProviderError,
    UnknownModelPriceError,
)
from arena.sources.http import retry_after_seconds
from arena.sources.providers import ModelReply, ModelRequest, OnAttempt, call_with_retries

logger = logging.getLogger(__name__)

_JSON_SCAN_LIMIT = 200  # candidate "{" positions tried when looking for a JSON object


class ModelPrice(NamedTuple):
    """USD per token, as published by ``GET /models``."""

    prompt: Decimal
    completion: Decimal


@dataclass(frozen=True)
class KeyStatus:
    """``GET /key``: the key's credit limit and what remains (``None`` = unlimited)."""

    label: str | None
    limit: Decimal | None
    limit_remaining: Decimal | None
    usage: Decimal | None
    is_free_tier: bool | None


class OpenRouterProvider:
    """Calls OpenRouter chat completions, one HTTP request per :meth:`complete`.

    ``http_client`` is shared by every call (and closed only if this provider created it).
    ``sleep`` is the pause between retries in :meth:`complete_with_retries`; ``monotonic``
    measures latency and the pricing cache age.
    """

    def __init__(
        self,
        settings: Settings,
        api_key: SecretStr,
        http_client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        *,
        monotonic: Callable[[], float] = time.perf_counter,
        pricing_ttl_seconds: float = 3600.0,
    ) -> None:
        if not api_key.get_secret_value():
            raise ConfigError("OPENROUTER_API_KEY: empty")
        self.settings = settings
        self.sleep = sleep
        self._monotonic = monotonic
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=settings.openrouter.timeout_seconds)
        cfg = settings.openrouter
        self._client = OpenAI(
            base_url=str(cfg.base_url).rstrip("/"),
            api_key=api_key.get_secret_value(),
            max_retries=0,
            timeout=cfg.timeout_seconds,
            http_client=cast(Any, self._http),  # the SDK accepts httpx clients too
            default_headers={
                "HTTP-Referer": cfg.app_url,
                "X-Title": cfg.app_title,
                "X-OpenRouter-Title": cfg.app_title,
            },
        )
        self._pricing_ttl = pricing_ttl_seconds
        self._pricing: dict[str, ModelPrice] | None = None
        self._pricing_at = 0.0
        self._pricing_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenRouterProvider(base_url={str(self.settings.openrouter.base_url)!r})"

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> OpenRouterProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def request_payload(self, request: ModelRequest) -> dict[str, Any]:
        """The exact JSON body sent for ``request`` (to store with the attempt)."""
        extra: dict[str, Any] = {"usage": {"include": True}}
        family = self._family(request.family_id)
        if family is not None and family.provider_routing:
            extra["provider"] = family.provider_routing
        if family is not None and family.reasoning:
            extra["reasoning"] = family.reasoning
        return {
            "model": request.model,
            "messages": request.messages,
            "temperature": 0,
            "max_tokens": request.max_tokens,
            **extra,
        }

    def complete(self, request: ModelRequest) -> ModelReply:
        """One chat completion; returns the reply or raises a classified ProviderCallError."""
        payload = self.request_payload(request)
        extra_body = {k: v for k, v in payload.items() if k not in _NATIVE_FIELDS}
        started = self._monotonic()
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=request.model,
                messages=request.messages,  # type: ignore[arg-type]
                temperature=0,
                max_tokens=request.max_tokens,
                extra_body=extra_body,
            )
            status, headers, text = raw.status_code, raw.headers, raw.text
        except openai.APIError as exc:
            error = _error_from_sdk(exc, self._elapsed_ms(started))
            error.model = error.model or request.model
            _log_attempt(request, error)
            raise error from None
        latency_ms = self._elapsed_ms(started)
        try:
            reply = classify_completion(status, headers, text, latency_ms)
        except ProviderCallError as error:
            error.model = error.model or request.model
            _log_attempt(request, error)
            raise
        _log_attempt(request, reply)
        return reply

    def complete_with_retries(
        self, request: ModelRequest, on_attempt: OnAttempt | None = None
    ) -> ModelReply:
        """:meth:`complete` in the retry loop, with ``openrouter.max_attempts`` and ``sleep``."""
        return call_with_retries(
            self,
            request,
            max_attempts=self.settings.openrouter.max_attempts,
            on_attempt=on_attempt,
            sleep=self.sleep,
        )

    def fetch_model_pricing(self, *, refresh: bool = False) -> dict[str, ModelPrice]:
        """Prices per model id from ``GET /models``, cached for ``pricing_ttl_seconds``.

        Models without a usable price (missing, negative as for routers) are left out.
        """
        with self._pricing_lock:
            age = self._monotonic() - self._pricing_at
            if self._pricing is not None and not refresh and age < self._pricing_ttl:
                return self._pricing
            body = self._get_json("/models")
            prices: dict[str, ModelPrice] = {}
            for model in body.get("data") or []:
                pricing = model.get("pricing") if isinstance(model, dict) else None
                if not isinstance(pricing, dict) or not model.get("id"):
                    continue
                prompt = _decimal(pricing.get("prompt"))
                completion = _decimal(pricing.get("completion"))
                if prompt is None or completion is None or prompt < 0 or completion < 0:
                    continue
                prices[str(model["id"])] = ModelPrice(prompt, completion)
            self._pricing, self._pricing_at = prices, self._monotonic()
            logger.info("openrouter pricing loaded: %d models", len(prices))
            return prices

    def model_price(self, model_id: str) -> ModelPrice:
        """The price of ``model_id``; a variant suffix (``:nitro``) falls back to the base id."""
        prices = self.fetch_model_pricing()
        price = prices.get(model_id) or prices.get(model_id.split(":", 1)[0])
        if price is None:
            raise UnknownModelPriceError(model_id)
        return price

    def worst_case_cost(
        self, model_id: str, prompt_tokens_estimate: int, max_tokens: int
    ) -> Decimal:
        """The most one call can cost: the whole prompt plus ``max_tokens`` of output, in USD.

        Per-request fees and image pricing are not included (none of the chat models we run
        carries them).
        """
        price = self.model_price(model_id)
        return price.prompt * prompt_tokens_estimate + price.completion * max_tokens

    def key_status(self) -> KeyStatus:
        """``GET /key``: credit limit and remaining credit, for a pre-run check."""
        data = self._get_json("/key").get("data") or {}
        return KeyStatus(
            label=data.get("label"),
            limit=_decimal(data.get("limit")),
            limit_remaining=_decimal(data.get("limit_remaining")),
            usage=_decimal(data.get("usage")),
            is_free_tier=data.get("is_free_tier"),
        )

    def generation(self, generation_id: str) -> dict[str, Any] | None:
        """``GET /generation``: exact cost and latency, or ``None`` while not yet available."""
        try:
            body = self._get_json("/generation", params={"id": generation_id})
        except PermanentProviderError as error:
            if error.status == 404:
                return None
            raise
        data = body.get("data")
        return data if isinstance(data, dict) else None

    def _family(self, family_id: str) -> OpenRouterFamily | None:
        for family in self.settings.families:
            if family.id == family_id and isinstance(family, OpenRouterFamily):
                return family
        return None

    def _get_json(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        started = self._monotonic()
        try:
            response = self._client.get(
                path, cast_to=httpx.Response, options={"params": params or {}}
            )
        except openai.APIError as exc:
            raise _error_from_sdk(exc, self._elapsed_ms(started)) from None
        body = _parse_json(response.text)
        if not isinstance(body, dict):
            raise TransientProviderError(
                f"GET {path}: unreadable body", reason="invalid_body", status=response.status_code
            )
        return body

    def _elapsed_ms(self, started: float) -> int:
        return max(0, round((self._monotonic() - started) * 1000))


_NATIVE_FIELDS = frozenset({"model", "messages", "temperature", "max_tokens"})


def classify_completion(
    status: int, headers: Mapping[str, str], text: str, latency_ms: int
) -> ModelReply:
    """Turn one HTTP 200 chat completion into a reply, or raise its classified failure."""
    body = _parse_json(text)
    generation_id = _header(headers, "x-generation-id")
    if not isinstance(body, dict):
        raise TransientProviderError(
            "unreadable response body",
            reason="invalid_body",
            status=status,
            generation_id=generation_id,
            latency_ms=latency_ms,
            raw={"text": text[:2000]},
        )
    meta = _metadata(body, generation_id, latency_ms, status)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        if isinstance(body.get("error"), dict):
            raise _error_from_object(body["error"], "error_in_200", meta)
        raise TransientProviderError("response without choices", reason="null_choices", **meta)
    choice = choices[0]
    finish_reason = choice.get("finish_reason")
    if finish_reason == "error" or isinstance(choice.get("error"), dict):
        raise _error_from_object(choice.get("error") or {}, "error_in_200", meta)
    message = _dict(choice.get("message"))
    content = _text(message.get("content"))
    reasoning = _text(message.get("reasoning"))
    reply_fields = {k: meta[k] for k in _REPLY_META}
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


def _error_from_sdk(exc: openai.APIError, latency_ms: int) -> ProviderCallError:
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
        body = _parse_json(response.text)
        raw: dict[str, Any] = body if isinstance(body, dict) else {"text": response.text[:2000]}
        meta = _metadata(raw, _header(response.headers, "x-generation-id"), latency_ms, None)
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
    provider = metadata.get("provider_name") or meta.get("provider")  # who failed, if named
    return cls(
        message,
        reason=reason,
        error_code=code,
        error_type=metadata.get("error_type"),
        **{**meta, "provider": provider},
    )


def _metadata(
    body: dict[str, Any], generation_id: str | None, latency_ms: int, status: int | None
) -> dict[str, Any]:
    usage = _dict(body.get("usage"))
    body_id = body.get("id")
    return {
        "status": status,
        "provider": body.get("provider") if isinstance(body.get("provider"), str) else None,
        "model": body.get("model") if isinstance(body.get("model"), str) else None,
        "generation_id": generation_id or (body_id if isinstance(body_id, str) else None),
        "prompt_tokens": _int(usage.get("prompt_tokens")),
        "completion_tokens": _int(usage.get("completion_tokens")),
        "cost_usd": _decimal(usage.get("cost")),
        "latency_ms": latency_ms,
        "raw": body,
    }


def _log_attempt(request: ModelRequest, outcome: ModelReply | ProviderCallError) -> None:
    if isinstance(outcome, ModelReply):
        logger.info(
            "openrouter reply: family=%s model=%s served_by=%s/%s generation=%s finish=%s "
            "tokens=%s+%s cost=%s latency_ms=%d",
            request.family_id,
            request.model,
            outcome.provider,
            outcome.model,
            outcome.generation_id,
            outcome.finish_reason,
            outcome.prompt_tokens,
            outcome.completion_tokens,
            outcome.cost_usd,
            outcome.latency_ms,
        )
        return
    logger.warning(
        "openrouter failure: family=%s model=%s kind=%s reason=%s status=%s code=%s "
        "provider=%s generation=%s latency_ms=%s message=%s",
        request.family_id,
        request.model,
        outcome.kind,
        outcome.reason,
        outcome.status,
        outcome.error_code,
        outcome.provider,
        outcome.generation_id,
        outcome.latency_ms,
        outcome.message,
    )


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by name, case-insensitively (httpx headers or a plain dict)."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _text(value: Any) -> str | None:
    """Content as text; a list of content parts is joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text", "") for p in value if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _decimal(value: Any) -> Decimal | None:
    """A JSON number or decimal string as an exact Decimal (floats via their shortest repr)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        result = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return result if result.is_finite() else None
