"""The outside-agent contract: the request arena builds and the replies it reads keep to the
versioned JSON Schema it serves (``/api/v1/agent-schema``), and the provider refuses what the
schema does not allow."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from arena.config import AgentFamily
from arena.domain.book import Touch
from arena.domain.states import FamilyKind
from arena.errors import PermanentProviderError, TransientProviderError
from arena.sources.outside_agent import (
    MAX_REPLY_BYTES,
    OutsideAgentProvider,
    decision_request,
    signature,
)
from arena.sources.providers import ModelRequest
from arena.web.api import AGENT_SCHEMA
from tests.domain.prompt_builders import binary, context, named, position

SCHEMA: dict[str, Any] = json.loads(AGENT_SCHEMA.read_text(encoding="utf-8"))
FAMILY = AgentFamily(
    kind=FamilyKind.AGENT,
    id="fake-agent",
    endpoint="http://127.0.0.1:9/decide",  # type: ignore[arg-type]
    secret_env="FAKE_AGENT_SECRET",
    deadline_seconds=5,
)
SECRET = SecretStr("s3cret")


def violations(value: Any, schema: dict[str, Any], at: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema`` (the few JSON Schema keywords the contract uses)."""
    if "$ref" in schema:
        return violations(value, SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]], at)
    if "anyOf" in schema:
        branches = [violations(value, branch, at) for branch in schema["anyOf"]]
        return [] if any(not b for b in branches) else min(branches, key=len)
    if "const" in schema and value != schema["const"]:
        return [f"{at}: not {schema['const']!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{at}: {value!r} not in {schema['enum']}"]
    kind = schema.get("type")
    types = {
        "object": dict,
        "array": list,
        "string": str,
        "integer": int,
        "number": int | float,
        "null": type(None),
    }
    if kind and not isinstance(value, types[kind]):
        return [f"{at}: not {kind}"]
    if isinstance(value, str) and "pattern" in schema and not re.match(schema["pattern"], value):
        return [f"{at}: {value!r} does not match {schema['pattern']}"]
    out: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        out += [f"{at}: missing {k}" for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            out += [f"{at}: extra {k}" for k in value if k not in props]
        for key, item in value.items():
            if key in props:
                out += violations(item, props[key], f"{at}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += violations(item, schema["items"], f"{at}[{i}]")
    return out


def touch(bid: str, ask: str) -> Touch:
    mid = (Decimal(bid) + Decimal(ask)) / 2
    return Touch("tok", Decimal(bid), Decimal(ask), mid, Decimal(10), Decimal(20), "hash", 7)


def full_context() -> Any:
    rain = binary("1001", "0.40", books=(touch("0.39", "0.41"), touch("0.59", "0.61")))
    game = named("1003", ("FaZe", "illwill"), ("0.65", "0.35"))
    return context(
        markets=[rain, game],
        positions=[position("7", rain, side="NO")],
        methodology="v2",
        panel=[rain, game],
        decision_id="42",
        cohort_id="3",
        agent_id="9",
        pricing="book",
    )


def request_for(ctx: Any, repair: str | None = None) -> ModelRequest:
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "markets"}]
    return ModelRequest("fake-agent", "agent/fake-agent", messages, 100, ctx, repair=repair)


@pytest.mark.parametrize("repair", [None, "bets[0].amount: below the minimum bet"])
def test_the_request_keeps_to_the_schema(repair: str | None) -> None:
    deadline = datetime(2026, 11, 22, 0, 15, tzinfo=UTC)
    body = decision_request(full_context(), request_for(full_context(), repair), deadline)
    assert violations(body, SCHEMA["$defs"]["request"]) == []
    assert body["decision_id"] == "42" and body["cohort"]["pricing"] == "book"
    assert body["call"] == ("decision" if repair is None else "repair")
    assert body["repair"] == (None if repair is None else {"error": repair})
    [rain, game] = body["universe"]
    assert rain["books"][0] == {
        "outcome": "Yes",
        "token_id": "tok",
        "best_bid": "0.39",
        "best_ask": "0.41",
        "mid": "0.40",
        "bid_size": "10",
        "ask_size": "20",
        "book_hash": "hash",
    }
    assert game["books"] == [] and game["sides"] == ["FaZe", "illwill"]
    assert [p["market_id"] for p in body["panel"]] == ["1001", "1003"]
    assert body["portfolio"]["positions"][0]["side"] == "NO"
    assert body["deadline"] == "2026-11-22T00:15:00Z"


def test_the_schema_is_versioned_and_describes_the_reply() -> None:
    assert SCHEMA["version"] == 1 and SCHEMA["$id"].endswith("/agent-schema/v1")
    reply = SCHEMA["$defs"]["reply"]
    good = {"decision_id": "42", "answer": {"action": "HOLD"}, "usage": {"cost_usd": 0.1}}
    assert violations(good, reply) == []
    assert violations({"answer": "HOLD"}, reply) == ["$: missing decision_id"]
    assert violations({**good, "extra": 1}, reply) == ["$: extra extra"]


def test_the_signature_is_hmac_sha256_of_timestamp_and_body() -> None:
    digest = hmac.new(b"s3cret", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert signature(SECRET, "1700000000", b"{}") == f"sha256={digest}"


def answer_with(status: int, body: bytes, headers: dict[str, str] | None = None) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers or {}, content=body)

    http = httpx.Client(transport=httpx.MockTransport(handler))
    return OutsideAgentProvider(FAMILY, SECRET, http).complete(request_for(full_context()))


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (200, b"not json", "not_json"),
        (200, b"null", "bad_schema"),
        (200, b'{"decision_id": "42"}', "bad_schema"),
        (200, b'{"decision_id": "42", "answer": 5}', "bad_schema"),
        (200, b'{"schema_version": 2, "decision_id": "42", "answer": "x"}', "bad_schema"),
        (200, b'{"decision_id": "41", "answer": "HOLD"}', "wrong_decision"),
        (200, b" " * (MAX_REPLY_BYTES + 1), "oversize"),
        (302, b"", "redirect"),
        (401, b'{"detail": "bad signature"}', "http_401"),
        (402, b"", "http_402"),
        (404, b"", "http_404"),
    ],
)
def test_what_ends_a_call_for_good(status: int, body: bytes, reason: str) -> None:
    with pytest.raises(PermanentProviderError) as info:
        answer_with(status, body)
    assert info.value.reason == reason and info.value.provider == "outside agent"


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_what_is_retried(status: int) -> None:
    with pytest.raises(TransientProviderError) as info:
        answer_with(status, b"busy", {"Retry-After": "2"})
    assert info.value.reason == f"http_{status}" and info.value.retry_after == 2


def test_a_reply_becomes_the_content_the_engine_validates() -> None:
    body = {"decision_id": "42", "answer": {"action": "HOLD"}, "usage": {"prompt_tokens": -1}}
    reply = answer_with(200, json.dumps(body).encode())
    assert json.loads(reply.content) == {"action": "HOLD"}
    assert reply.cost_usd == 0 and reply.prompt_tokens is None
    assert reply.raw["agent_reported_usage"]["prompt_tokens"] is None  # not storable: dropped
    text = answer_with(200, b'{"decision_id": "42", "answer": "```{\\"action\\": \\"HOLD\\"}```"}')
    assert text.content == '```{"action": "HOLD"}```'
