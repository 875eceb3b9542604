"""The OpenRouter provider: one classified call per :meth:`OpenRouterProvider.complete`.

Built on the official ``openai`` SDK pointed at OpenRouter, with the SDK's own retries off
(``max_retries=0``): :func:`arena.sources.providers.call_with_retries` owns the retry loop so
every attempt is reported and stored. The body of every answer is read raw and classified by
:mod:`arena.sources.openrouter_replies`, because OpenRouter reports some failures inside
HTTP 200 bodies that the SDK accepts.

An agent with ``web_search`` (the settings its cohort froze, which the request carries) calls
with OpenRouter's ``openrouter:web_search`` server tool in ``tools`` (the ``web`` plugin and the
``:online`` suffix are deprecated); its answers carry citations (``url_citation`` annotations)
and a search cost, read by the reply parser. What OpenRouter documents about the tool (engines,
limits, pricing, failures) is in METHODOLOGY.md, "Web search".
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import httpx
from pydantic import SecretStr

from arena.config import OpenRouterFamily, Settings, WebSearch
from arena.domain.storable import fits_digits, storable_json
from arena.errors import (
    ConfigError,
    PermanentProviderError,
    ProviderCallError,
    TransientProviderError,
    UnknownModelPriceError,
)
from arena.sources.http import HttpClientOwner, tls_context
from arena.sources.openrouter_replies import (
    COST_BOUND,
    classify_completion,
    error_from_sdk,
    optional_decimal,
    parse_json,
)
from arena.sources.providers import ModelReply, ModelRequest, OnAttempt, call_with_retries
from arena.startup import import_in_background

if TYPE_CHECKING:
    from openai import OpenAI

logger = logging.getLogger(__name__)


def load_sdk_in_background() -> None:
    """Start importing the OpenAI SDK (0.3 s), with the chat completions it loads at the
    first request, on a thread, for a run that will call OpenRouter after other work (its
    market sync and universe freeze): the first request then finds it loaded."""
    import_in_background("load-openai", "openai", "openai.resources.chat.completions")


class ModelPrice(NamedTuple):
    """USD per token, as published by ``GET /models``."""

    prompt: Decimal
    completion: Decimal


class OpenRouterProvider(HttpClientOwner):
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
        super().__init__(
            http_client,
            lambda: httpx.Client(timeout=settings.openrouter.timeout_seconds, verify=tls_context()),
        )
        self._api_key = api_key
        self._pricing_ttl = pricing_ttl_seconds
        self._pricing: dict[str, ModelPrice] | None = None
        self._pricing_at = 0.0
        self._pricing_lock = threading.Lock()

    @functools.cached_property
    def _client(self) -> OpenAI:
        """The SDK's client, made at the first request: the SDK takes 0.3 s to import, which
        :func:`load_sdk_in_background` spends while a run syncs markets and freezes its
        universe."""
        from openai import OpenAI

        cfg = self.settings.openrouter
        return OpenAI(
            base_url=str(cfg.base_url).rstrip("/"),
            api_key=self._api_key.get_secret_value(),
            max_retries=0,
            timeout=cfg.timeout_seconds,
            http_client=cast(Any, self._http),  # the SDK accepts httpx clients too
            default_headers={
                "HTTP-Referer": cfg.app_url,
                "X-Title": cfg.app_title,
                "X-OpenRouter-Title": cfg.app_title,
            },
        )

    def __repr__(self) -> str:
        return f"OpenRouterProvider(base_url={str(self.settings.openrouter.base_url)!r})"

    def request_payload(self, request: ModelRequest) -> dict[str, Any]:
        """The exact JSON body sent for ``request`` (to store with the attempt)."""
        extra: dict[str, Any] = {"usage": {"include": True}}
        family = self._family(request.family_id)
        if family is not None and family.provider_routing:
            extra["provider"] = family.provider_routing
        if family is not None and family.reasoning:
            extra["reasoning"] = family.reasoning
        if request.web_search is not None:  # the agent's frozen settings, not today's config
            extra["tools"] = [WebSearch.model_validate(request.web_search).tool()]
        return {
            "model": request.model,
            "messages": request.messages,
            "temperature": 0,
            "max_tokens": request.max_tokens,
            **extra,
        }

    def complete(self, request: ModelRequest) -> ModelReply:
        """One chat completion; returns the reply or raises a classified ProviderCallError."""
        import openai

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
            error = error_from_sdk(exc, self._elapsed_ms(started))
            error.model = error.model or request.model
            _log_attempt(request, error)
            raise error from None
        latency_ms = self._elapsed_ms(started)
        try:
            reply = classify_completion(
                status, headers, text, latency_ms, searched="tools" in extra_body
            )
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

        Models without a usable price (missing, negative as for routers, beyond any cost the
        attempts table holds) are left out.
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
                prompt = _usable_price(pricing.get("prompt"))
                completion = _usable_price(pricing.get("completion"))
                if prompt is None or completion is None:
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

    def generation(self, generation_id: str) -> dict[str, Any] | None:
        """``GET /generation``: exact cost and latency, or ``None`` while not yet available."""
        try:
            body = self._get_json("/generation", params={"id": generation_id})
        except PermanentProviderError as error:
            if error.status == 404:
                return None
            raise
        data = body.get("data")
        return storable_json(data) if isinstance(data, dict) else None

    def _family(self, family_id: str) -> OpenRouterFamily | None:
        for family in self.settings.families:
            if family.id == family_id and isinstance(family, OpenRouterFamily):
                return family
        return None

    def _get_json(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        import openai

        started = self._monotonic()
        try:
            response = self._client.get(
                path, cast_to=httpx.Response, options={"params": params or {}}
            )
        except openai.APIError as exc:
            raise error_from_sdk(exc, self._elapsed_ms(started)) from None
        body = parse_json(response.text)
        if not isinstance(body, dict):
            raise TransientProviderError(
                f"GET {path}: unreadable body", reason="invalid_body", status=response.status_code
            )
        return body

    def _elapsed_ms(self, started: float) -> int:
        return max(0, round((self._monotonic() - started) * 1000))


def _usable_price(value: Any) -> Decimal | None:
    """A USD-per-token price, or None when missing, negative or beyond any storable cost."""
    price = optional_decimal(value)
    return price if price is not None and price >= 0 and fits_digits(price, COST_BOUND) else None


_NATIVE_FIELDS = frozenset({"model", "messages", "temperature", "max_tokens"})


def _log_attempt(request: ModelRequest, outcome: ModelReply | ProviderCallError) -> None:
    if isinstance(outcome, ModelReply):
        logger.info(
            "openrouter reply: family=%s model=%s served_by=%s/%s generation=%s finish=%s "
            "tokens=%s+%s cost=%s search_cost=%s citations=%d latency_ms=%d",
            request.family_id,
            request.model,
            outcome.provider,
            outcome.model,
            outcome.generation_id,
            outcome.finish_reason,
            outcome.prompt_tokens,
            outcome.completion_tokens,
            outcome.cost_usd,
            outcome.search_cost_usd,
            len(outcome.citations),
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
