"""The one retry loop of every outside call, and the policy each source hands it as data.

A :class:`RetryPolicy` says how many attempts a call gets, which failures are worth another
attempt, how long to wait between two (a :class:`Backoff`, or the server's ``Retry-After``
up to a cap) and how to wait. :meth:`RetryPolicy.run` is the loop (tenacity's). The Polymarket
clients (Gamma, the CLOB and its fee schedules) wrap it in :func:`arena.sources.http.with_retries`;
the model providers in :func:`arena.sources.providers.call_with_retries`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx
import tenacity

from arena.errors import TransientError, TransientProviderError

T = TypeVar("T")
OnRetry = Callable[[int, BaseException, float], None]
"""Told before each pause: the failed attempt's number (from 1), its error, the wait."""


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: after failed attempt ``n`` the ceiling is
    ``min(cap, first * 2 ** (n - 1))`` seconds. With ``full_jitter`` the wait is drawn
    between 0 and the ceiling; otherwise it is the ceiling plus a draw between 0 and ``added``,
    at most ``cap``."""

    first: float
    cap: float
    full_jitter: bool = True
    added: float = 0.0

    def seconds(self, attempt: int, draw: Callable[[float, float], float]) -> float:
        """The wait after failed attempt number ``attempt``; ``draw(low, high)`` is random."""
        try:
            ceiling = self.first * 2 ** (attempt - 1)
        except OverflowError:
            ceiling = self.cap
        if self.full_jitter:
            return draw(0, min(self.cap, ceiling))
        return max(0.0, min(ceiling + draw(0, self.added), self.cap))


POLYMARKET_BACKOFF = Backoff(first=0.5, cap=30.0)
"""Gamma and the CLOB: full jitter, from half a second up to 30 s."""
PROVIDER_BACKOFF = Backoff(first=1.0, cap=30.0, full_jitter=False, added=1.0)
"""Model providers: 1 s, 2 s, 4 s ... plus up to 1 s of jitter, at most 30 s."""
RETRY_AFTER_CAP_SECONDS = 120.0
"""The longest ``Retry-After`` honoured; a server asking for more gets this much."""


@dataclass(frozen=True)
class RetryPolicy:
    """How one source retries its calls.

    ``attempts`` in all (the first included); a failure is retried when it is one of
    ``retry_on``; the wait is the server's ``Retry-After`` (a :class:`TransientError`'s
    ``retry_after``) up to ``retry_after_cap`` when it gave one, else ``backoff``. ``sleep``
    waits (tests pass one that records) and ``draw(low, high)`` picks the random part;
    ``service`` names the source in log lines."""

    attempts: int
    backoff: Backoff
    retry_on: tuple[type[BaseException], ...] = (TransientError,)
    retry_after_cap: float = RETRY_AFTER_CAP_SECONDS
    sleep: Callable[[float], None] = time.sleep
    draw: Callable[[float, float], float] = random.uniform
    service: str = ""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def wait(self, error: BaseException | None, attempt: int) -> float:
        """The pause after failed attempt number ``attempt`` (from 1) that raised ``error``."""
        if isinstance(error, TransientError) and error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.retry_after_cap)
        return self.backoff.seconds(attempt, self.draw)

    def run(self, call: Callable[[], T], on_retry: OnRetry | None = None) -> T:
        """``call()`` until it returns, retrying the failures in ``retry_on`` up to
        ``attempts`` attempts in all; the last one is raised as it is. Any other exception
        propagates at once."""

        def wait(state: tenacity.RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            return self.wait(error, state.attempt_number)

        def before_sleep(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            pause = state.next_action.sleep if state.next_action else 0.0
            if on_retry is not None and error is not None:
                on_retry(state.attempt_number, error, pause)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=wait,
            retry=tenacity.retry_if_exception_type(self.retry_on),
            sleep=self.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        return retrying(call)


def polymarket_policy(
    service: str, attempts: int, sleep: Callable[[float], None] = time.sleep
) -> RetryPolicy:
    """The policy of a Polymarket client (``service``: ``gamma``, ``clob``): transient answers
    (:class:`TransientError`), timeouts and connection errors are retried with
    :data:`POLYMARKET_BACKOFF`."""
    retry_on = (TransientError, httpx.TransportError)
    return RetryPolicy(attempts, POLYMARKET_BACKOFF, retry_on, sleep=sleep, service=service)


def provider_policy(
    attempts: int,
    sleep: Callable[[float], None] = time.sleep,
    retry_after_cap: float = RETRY_AFTER_CAP_SECONDS,
) -> RetryPolicy:
    """A model provider's policy: only transient call errors are retried (the provider has
    classified timeouts and connection errors already), with :data:`PROVIDER_BACKOFF`."""
    retry_on = (TransientProviderError,)
    return RetryPolicy(
        attempts, PROVIDER_BACKOFF, retry_on, retry_after_cap, sleep=sleep, service="provider"
    )
