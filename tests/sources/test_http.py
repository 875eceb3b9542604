"""One Retry-After parser and one retry loop for every Polymarket client."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

import httpx
import pytest

from arena.errors import GammaError, SourceNotFound, TransientError
from arena.sources.http import json_body, retry_after_seconds, with_retries
from arena.sources.retry import polymarket_policy


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        ({"Retry-After": "-3"}, None),
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": "inf"}, None),
        ({}, None),
    ],
)
def test_retry_after(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(httpx.Headers(headers)) == seconds


def _retrying(call: Callable[[], str], waits: list[float], retries: list[int]) -> str:
    policy = replace(
        polymarket_policy("test", 3, waits.append),
        draw=lambda low, high: high,  # the ceiling: 0.5 s, then 1 s
    )
    return with_retries(
        call,
        policy,
        what="GET /thing",
        log=logging.getLogger("test"),
        failed=GammaError,
        on_retry=lambda: retries.append(1),
    )


def test_the_retry_loop_retries_transient_failures_with_backoff_then_names_the_last() -> None:
    answers: list[Exception | str] = [
        TransientError("HTTP 503", retry_after=4.0),
        httpx.ConnectError("refused"),
        "ok",
    ]

    def call() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    waits: list[float] = []
    retries: list[int] = []
    assert _retrying(call, waits, retries) == "ok"
    assert waits == [4.0, 1.0]  # the server's Retry-After, then the second backoff ceiling
    assert len(retries) == 2

    def always_down() -> str:
        raise httpx.ReadTimeout("slow")

    with pytest.raises(
        GammaError, match=r"^GET /thing: timeout \(ReadTimeout\) \(after 3 attempts\)$"
    ):
        _retrying(always_down, [], [])


def test_the_retry_loop_lets_other_failures_through_at_once() -> None:
    calls: list[int] = []

    def refused() -> str:
        calls.append(1)
        raise SourceNotFound("HTTP 404")

    waits: list[float] = []
    with pytest.raises(SourceNotFound):
        _retrying(refused, waits, [])
    assert calls == [1] and waits == []


def test_a_json_integer_past_the_digit_limit_does_not_fail_the_body() -> None:
    """``int()`` refuses a string of more than 4,300 digits; one such field (a hostile book's
    timestamp) must not make the whole ``/books`` answer unreadable."""
    digits = "9" * 5000
    content = ('[{"timestamp": ' + digits + '}, {"timestamp": 12}]').encode()
    body = json_body(httpx.Response(200, content=content), allow_404=False, refused=GammaError)
    assert str(body[0]["timestamp"]) == digits and body[1]["timestamp"] == 12


def test_every_client_arena_makes_shares_one_tls_context() -> None:
    """Loading the CA roots takes 20 ms a client: Gamma, the CLOB, OpenRouter, an outside
    agent and an HTTP anchor load them once between them, with httpx's own defaults."""
    from pydantic import SecretStr

    from arena.sources.anchors import HttpAnchor
    from arena.sources.clob import ClobClient
    from arena.sources.gamma import GammaClient
    from arena.sources.http import tls_context
    from arena.sources.openrouter import OpenRouterProvider
    from arena.sources.outside_agent import OutsideAgentProvider
    from tests.sources.anchor_fakes import FakeAnchorServer
    from tests.sources.test_openrouter import make_settings
    from tests.sources.test_outside_agent import FAMILY, SECRET

    clients = [
        GammaClient()._http,
        ClobClient()._http,
        OpenRouterProvider(make_settings("http://127.0.0.1:9/api/v1"), SecretStr("k"))._http,
        OutsideAgentProvider(FAMILY, SECRET)._http,
        HttpAnchor(FakeAnchorServer.config("http://127.0.0.1:9/commit"))._http,
    ]
    contexts = {id(client._transport._pool._ssl_context) for client in clients}  # type: ignore[attr-defined]
    assert contexts == {id(tls_context())}
    assert tls_context().verify_mode == httpx.create_ssl_context().verify_mode
    for client in clients:
        client.close()
