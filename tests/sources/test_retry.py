"""The one retry policy and loop of every outside call, and the one owner of an HTTP client."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest
from pydantic import SecretStr

from arena.config import Settings
from arena.errors import PermanentProviderError, TransientError, TransientProviderError
from arena.sources.clob import ClobClient
from arena.sources.gamma import GammaClient
from arena.sources.openrouter import OpenRouterProvider
from arena.sources.retry import (
    POLYMARKET_BACKOFF,
    PROVIDER_BACKOFF,
    RetryPolicy,
    polymarket_policy,
    provider_policy,
)


def ceiling(low: float, high: float) -> float:
    return high


def test_each_source_backoff_is_data() -> None:
    """Polymarket: full jitter up to 0.5 s, 1 s, 2 s ... 30 s; providers: 1 s, 2 s, 4 s ...
    plus up to 1 s, at most 30 s (as tenacity's ``wait_exponential_jitter(1, 30, 1)``)."""
    assert [POLYMARKET_BACKOFF.seconds(n, ceiling) for n in (1, 2, 3, 7, 8, 2000)] == [
        0.5, 1.0, 2.0, 30.0, 30.0, 30.0,
    ]  # fmt: skip
    assert [POLYMARKET_BACKOFF.seconds(n, lambda low, high: low) for n in (1, 5)] == [0, 0]
    assert [PROVIDER_BACKOFF.seconds(n, ceiling) for n in (1, 2, 3, 5, 6, 2000)] == [
        2.0, 3.0, 5.0, 17.0, 30.0, 30.0,
    ]  # fmt: skip
    assert PROVIDER_BACKOFF.seconds(1, lambda low, high: low) == 1.0


def test_retry_after_is_honoured_up_to_the_cap_whoever_sent_it() -> None:
    policy = replace(provider_policy(3, retry_after_cap=60), draw=ceiling)
    assert policy.wait(TransientError("429", retry_after=7), 1) == 7
    assert policy.wait(TransientProviderError("429", reason="r", retry_after=3600), 1) == 60
    assert policy.wait(TransientProviderError("429", reason="r", retry_after=-4), 1) == 0
    assert policy.wait(TransientProviderError("503", reason="r"), 2) == 3.0  # the backoff


def test_the_loop_retries_what_the_policy_says_and_reraises_the_last() -> None:
    waits: list[float] = []
    told: list[tuple[int, str, float]] = []
    policy = replace(polymarket_policy("test", 3, waits.append), draw=ceiling)
    answers: list[Exception | str] = [httpx.ConnectError("down"), TransientError("503"), "ok"]

    def call() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert policy.run(call, lambda n, error, wait: told.append((n, str(error), wait))) == "ok"
    assert waits == [0.5, 1.0]
    assert told == [(1, "down", 0.5), (2, "503", 1.0)]

    def refused() -> str:
        raise PermanentProviderError("400", reason="http_400")

    provider = provider_policy(5, waits.append)
    with pytest.raises(PermanentProviderError):
        provider.run(refused)
    assert len(waits) == 2  # not retried
    calls: list[int] = []

    def busy() -> str:
        calls.append(1)
        raise TransientProviderError("busy", reason="http_503", retry_after=0)

    with pytest.raises(TransientProviderError):
        provider.run(busy)
    assert len(calls) == 5


def test_a_policy_needs_an_attempt() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RetryPolicy(0, POLYMARKET_BACKOFF)


def test_a_client_closes_the_http_client_it_made_and_only_that() -> None:
    shared = httpx.Client()
    settings = Settings()
    made = [
        GammaClient(settings.polymarket),
        ClobClient(settings.polymarket),
        OpenRouterProvider(settings, SecretStr("sk-test")),
    ]
    given = [
        GammaClient(settings.polymarket, http=shared),
        ClobClient(settings.polymarket, http=shared),
        OpenRouterProvider(settings, SecretStr("sk-test"), http_client=shared),
    ]
    for client in made + given:
        with client:
            pass
    assert all(client._http.is_closed for client in made)
    assert not shared.is_closed
    shared.close()
