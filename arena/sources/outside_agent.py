"""Outside agents (family ``kind: agent``): a decision request POSTed to the family's endpoint.

The contract is the versioned JSON Schema ``arena/resources/agent_schema_v1.json`` (served at
``/api/v1/agent-schema``). One call is one signed POST: the body (:func:`decision_request`)
holds the decision id, the cohort, week and deadline, the agent's portfolio, the frozen
universe with its prices (and each outcome's book touch in pricing mode ``book``), the rules,
the v2 panel, the rendered prompt messages, and on a repair call the errors of the previous
answer. The agent answers ``{"decision_id", "answer", "usage"?}``; ``answer`` (the BET / SELL /
HOLD object a model gives, or text holding it) becomes the reply's content, so the engine
extracts, validates and repairs it exactly as a model's.

Signature: ``X-Arena-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>." + body)>`` with
``X-Arena-Timestamp: <unix seconds>``; the secret comes from the environment variable the
family's ``secret_env`` names, and is sent nowhere. Nothing else of arena's (the OpenRouter
key) is sent: the provider has its own HTTP client.

Failures, in the provider taxonomy (:mod:`arena.sources.providers`):

* transient, retried like OpenRouter's: a refused or dropped connection, 408, 429, 5xx;
* permanent, ending the decision ``retryable`` with the reason: the deadline passed
  (``deadline``), a redirect (never followed: ``redirect``), another 4xx (``http_401``...),
  a reply over :data:`MAX_REPLY_BYTES` (``oversize``), a reply that is not JSON
  (``not_json``), one that breaks the reply schema (``bad_schema``), one for another decision
  (``wrong_decision``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from arena.clock import SystemClock, iso_utc
from arena.config import AGENT_SCHEMA_VERSION, AgentFamily
from arena.domain.ledger import ZERO
from arena.domain.markets import MarketView
from arena.domain.prompting import PromptContext
from arena.domain.storable import (
    storable_amount,
    storable_count,
    storable_json,
    storable_text,
)
from arena.errors import (
    PermanentProviderError,
    ProviderCallError,
    TransientProviderError,
)
from arena.jsonable import jsonable
from arena.sources.http import USER_AGENT, retry_after_seconds, tls_context
from arena.sources.openrouter_replies import (
    COST_BOUND,
    COST_PLACES,
    ERROR_CHARS,
    optional_decimal,
    parse_json,
)
from arena.sources.providers import ModelReply, ModelRequest

SCHEMA_VERSION = AGENT_SCHEMA_VERSION
MAX_REPLY_BYTES = 1_000_000
"""The largest reply read (bytes); a longer one ends the decision (``oversize``)."""
PROVIDER_NAME = "outside agent"
USAGE_LABEL = "agent_reported_usage"
"""The key of ``raw_body`` under which an agent's own ``usage`` is stored: reported by the
agent, never checked, never counted as arena's cost."""
TIMESTAMP_HEADER = "X-Arena-Timestamp"
SIGNATURE_HEADER = "X-Arena-Signature"


def signature(secret: SecretStr, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 of ``"<timestamp>." + body`` under ``secret``."""
    key = secret.get_secret_value().encode()
    digest = hmac.new(key, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


class Usage(BaseModel):
    """What the agent says its answer used (stored as it says, labelled so)."""

    model_config = ConfigDict(extra="ignore")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: Decimal | str | float | None = None


class AgentReply(BaseModel):
    """The body an outside agent answers with (``$defs.reply`` of the schema)."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int | None = None
    decision_id: str = Field(min_length=1, max_length=40)
    answer: dict[str, Any] | str
    usage: Usage | None = None


class OutsideAgentProvider:
    """One outside agent family behind the provider interface: one signed POST per call."""

    def __init__(
        self, family: AgentFamily, secret: SecretStr, http: httpx.Client | None = None
    ) -> None:
        self.family = family
        self._secret = secret
        self._owns_http = http is None
        self._http = http or httpx.Client(follow_redirects=False, verify=tls_context())

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def complete(self, request: ModelRequest) -> ModelReply:
        ctx = request.context
        if not isinstance(ctx, PromptContext):
            raise self._permanent("the request holds no decision context", "no_context")
        deadline = float(self.family.deadline_seconds)
        sent_at = SystemClock().now()
        payload = decision_request(ctx, request, sent_at + timedelta(seconds=deadline))
        body = json.dumps(payload, separators=(",", ":")).encode()
        stamp = str(int(sent_at.timestamp()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            TIMESTAMP_HEADER: stamp,
            SIGNATURE_HEADER: signature(self._secret, stamp, body),
        }
        started = time.monotonic()
        try:
            status, reply_headers, text = self._post(body, headers, deadline, started)
        except httpx.ConnectTimeout:
            raise self._transient("connection timed out", "connection", started) from None
        except httpx.TimeoutException:
            raise self._deadline(started) from None
        except httpx.TransportError as exc:
            raise self._transient(
                f"connection failed: {type(exc).__name__}", "connection", started
            ) from None
        latency = _ms(started)
        if 300 <= status < 400:
            raise self._permanent(
                f"the agent answered {status}, a redirect; redirects are not followed",
                "redirect",
                latency,
                status,
            )
        if status >= 400:
            detail = storable_text(text, 300)
            message = f"the agent answered {status}: {detail}" if detail else f"HTTP {status}"
            if status in (408, 429) or status >= 500:
                raise TransientProviderError(
                    storable_text(message, ERROR_CHARS),
                    reason=f"http_{status}",
                    status=status,
                    provider=PROVIDER_NAME,
                    model=request.model,
                    latency_ms=latency,
                    retry_after=retry_after_seconds(reply_headers),
                )
            raise self._permanent(message, f"http_{status}", latency, status)
        return self._reply(ctx, request, text, latency)

    def _post(
        self, body: bytes, headers: dict[str, str], deadline: float, started: float
    ) -> tuple[int, httpx.Headers, str]:
        """POST and read at most :data:`MAX_REPLY_BYTES` of the reply before the deadline."""
        timeout = httpx.Timeout(deadline)
        url = str(self.family.endpoint)
        with self._http.stream(
            "POST", url, content=body, headers=headers, timeout=timeout, follow_redirects=False
        ) as response:
            if 300 <= response.status_code < 400:
                return response.status_code, response.headers, ""
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
                raise self._oversize(started)
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise self._oversize(started)
                if time.monotonic() - started > deadline:
                    raise self._deadline(started)
                chunks.append(chunk)
            text = b"".join(chunks).decode("utf-8", errors="replace")
            return response.status_code, response.headers, text

    def _reply(
        self, ctx: PromptContext, request: ModelRequest, text: str, latency: int
    ) -> ModelReply:
        body = parse_json(text)
        if body is None and text.strip() != "null":
            raise self._permanent(
                f"the reply is not JSON: {storable_text(text, 200)!r}", "not_json", latency
            )
        try:
            reply = AgentReply.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "reply"
            raise self._permanent(
                f"the reply breaks the schema (v{SCHEMA_VERSION}): {where}: {first['msg']}",
                "bad_schema",
                latency,
            ) from None
        if reply.schema_version not in (None, SCHEMA_VERSION):
            raise self._permanent(
                f"the reply is for schema version {reply.schema_version}, not {SCHEMA_VERSION}",
                "bad_schema",
                latency,
            )
        if reply.decision_id != ctx.decision_id:
            raise self._permanent(
                f"the reply is for decision {storable_text(reply.decision_id, 40)!r}, "
                f"not {ctx.decision_id!r}",
                "wrong_decision",
                latency,
            )
        answer = reply.answer if isinstance(reply.answer, str) else json.dumps(reply.answer)
        raw: dict[str, Any] = {"agent_reply": storable_json(body)}
        if reply.usage is not None:
            raw[USAGE_LABEL] = jsonable(
                {
                    "prompt_tokens": storable_count(reply.usage.prompt_tokens),
                    "completion_tokens": storable_count(reply.usage.completion_tokens),
                    "cost_usd": storable_amount(
                        optional_decimal(reply.usage.cost_usd), COST_BOUND, COST_PLACES
                    ),
                }
            )
        return ModelReply(
            content=storable_text(answer, MAX_REPLY_BYTES),
            reasoning=None,
            finish_reason="stop",
            provider=PROVIDER_NAME,
            model=request.model,
            generation_id=None,
            prompt_tokens=None,
            completion_tokens=None,
            cost_usd=ZERO,  # arena pays nothing; what the agent reports is in raw_body
            latency_ms=latency,
            raw=raw,
        )

    def _permanent(
        self, message: str, reason: str, latency: int | None = None, status: int | None = None
    ) -> PermanentProviderError:
        return PermanentProviderError(
            storable_text(message, ERROR_CHARS),
            reason=reason,
            status=status,
            provider=PROVIDER_NAME,
            model=f"agent/{self.family.id}",
            latency_ms=latency,
        )

    def _transient(self, message: str, reason: str, started: float) -> ProviderCallError:
        return TransientProviderError(
            message,
            reason=reason,
            provider=PROVIDER_NAME,
            model=f"agent/{self.family.id}",
            latency_ms=_ms(started),
        )

    def _deadline(self, started: float) -> ProviderCallError:
        return self._permanent(
            f"no answer within the deadline ({self.family.deadline_seconds:g} s)",
            "deadline",
            _ms(started),
        )

    def _oversize(self, started: float) -> ProviderCallError:
        return self._permanent(
            f"the reply is larger than {MAX_REPLY_BYTES} bytes", "oversize", _ms(started)
        )


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


# --- the request body ----------------------------------------------------------------------


def decision_request(
    ctx: PromptContext, request: ModelRequest, deadline: datetime
) -> dict[str, Any]:
    """The JSON body of one call (``$defs.request`` of the schema)."""
    payload = {
        "schema_version": SCHEMA_VERSION,
        "decision_id": ctx.decision_id,
        "call": "repair" if request.repair is not None else "decision",
        "cohort": {
            "id": ctx.cohort_id,
            "decision_week": ctx.decision_week,
            "methodology": ctx.methodology,
            "pricing": ctx.pricing,
        },
        "agent": {"id": ctx.agent_id, "family_id": request.family_id},
        "now": iso_utc(ctx.now),
        "deadline": iso_utc(deadline),
        "portfolio": {
            "cash": ctx.cash,
            "starting_balance": ctx.starting_balance,
            "positions": [
                {
                    "position_id": p.position_id,
                    "market_id": p.market.id,
                    "question": p.market.question,
                    "side": p.side,
                    "shares": p.shares,
                    "cost_basis": p.basis,
                    "current_price": p.current_price,
                    "value": p.value,
                }
                for p in ctx.positions
            ],
        },
        "universe": [_market(market) for market in ctx.markets],
        "rules": {
            "actions": ["BET", "SELL", "HOLD"],
            "min_bet": ctx.min_bet,
            "max_bet": ctx.max_bet,
            "max_bet_fraction": ctx.max_bet_fraction,
            "max_total_bet": ctx.cash,
            "max_slippage": ctx.max_slippage,
            "sides": "YES or NO for a binary market, else one of the market's outcomes",
        },
        "panel": [
            {"market_id": m.id, "question": m.question, "outcomes": list(m.outcomes)}
            for m in ctx.panel
        ],
        "messages": request.messages,
        "repair": None if request.repair is None else {"error": request.repair},
    }
    result: dict[str, Any] = jsonable(payload)
    return result


def _market(market: MarketView) -> dict[str, Any]:
    return {
        "market_id": market.id,
        "question": market.question,
        "category": market.category,
        "outcomes": list(market.outcomes),
        "sides": list(market.sides()),
        "prices": None if market.prices is None else list(market.prices),
        "volume": market.volume,
        "end_date": market.end_date,
        "books": [
            {
                "outcome": outcome,
                "token_id": touch.token_id,
                "best_bid": touch.best_bid,
                "best_ask": touch.best_ask,
                "mid": touch.mid,
                "bid_size": touch.bid_size,
                "ask_size": touch.ask_size,
                "book_hash": touch.book_hash,
            }
            for outcome, touch in zip(market.outcomes, market.books, strict=False)
        ],
    }
