"""What the HTTP clients (Gamma, CLOB, OpenRouter) share: the wait a server asks for, the
backoff between attempts, and how a failure is described in logs and errors."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import httpx

from arena import __version__
from arena.errors import TransientError

USER_AGENT = f"arena/{__version__} (+https://github.com/arena-benchmark/arena)"
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 30.0
RETRY_AFTER_MAX_SECONDS = 120.0


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a server asks for: ``retry-after-ms`` or ``Retry-After`` in seconds, None when
    absent, negative, not a number, or in the rare HTTP-date form (the backoff applies then)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def backoff_seconds(
    exc: BaseException | None, attempt: int, jitter: Callable[[float, float], float]
) -> float:
    """The wait after failed attempt number ``attempt`` (from 1): the server's ``Retry-After``
    when it gave one (capped at two minutes), else full-jitter exponential backoff."""
    if isinstance(exc, TransientError) and exc.retry_after is not None:
        return min(exc.retry_after, RETRY_AFTER_MAX_SECONDS)
    ceiling = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1))
    return jitter(0, ceiling)


def error_text(response: httpx.Response) -> str:
    """``": <message>"`` from a JSON ``{"error": ...}`` body (cut to 200 characters), else ""."""
    try:
        body = response.json()
    except ValueError:
        return ""
    if isinstance(body, Mapping) and body.get("error"):
        return f": {str(body['error'])[:200]}"
    return ""


def describe_error(exc: BaseException | None) -> str:
    """A failure in a few words for a log line: timeouts and connection errors by kind."""
    if exc is None:
        return "unknown error"
    if isinstance(exc, httpx.TimeoutException):
        return f"timeout ({type(exc).__name__})"
    if isinstance(exc, httpx.TransportError):
        return f"connection error ({type(exc).__name__}: {exc})"
    return str(exc)
