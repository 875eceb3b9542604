"""What the HTTP clients (Gamma, CLOB, OpenRouter) share: the wait a server asks for, the
backoff between attempts, the Polymarket clients' retry loop, how a failure is described in
logs and errors, and how a Polymarket data API answer is read."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

import httpx
import tenacity

from arena import __version__
from arena.errors import SourceNotFound, TransientError

MAX_INT_DIGITS = 4000  # below sys.get_int_max_str_digits() (4300 by default)

USER_AGENT = f"arena/{__version__} (+https://github.com/arena-benchmark/arena)"
T = TypeVar("T")
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


def with_retries(
    call: Callable[[], T],
    *,
    what: str,
    log: logging.Logger,
    service: str,
    max_attempts: int,
    jitter: Callable[[float, float], float],
    sleep: Callable[[float], None],
    failed: Callable[[str], Exception],
    on_retry: Callable[[], None] = lambda: None,
) -> T:
    """``call()`` until it succeeds, retrying transient failures (:class:`TransientError`, a
    timeout or a connection error) up to ``max_attempts`` attempts in all, waiting
    :func:`backoff_seconds` through ``sleep``. Each retry is logged as a warning
    (``"<service> retry: attempt 1/3 of <what> failed (...)"``) and counted by ``on_retry``;
    the last transient failure raises ``failed("<what>: <reason> (after N attempts)")``. Any
    other exception propagates at once."""

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return backoff_seconds(exc, state.attempt_number, jitter)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        on_retry()
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "%s retry: attempt %d/%d of %s failed (%s); waiting %.2fs",
            service,
            state.attempt_number,
            max_attempts,
            what,
            describe_error(exc),
            state.next_action.sleep if state.next_action else 0.0,
        )

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max_attempts),
        wait=wait,
        retry=tenacity.retry_if_exception_type((TransientError, httpx.TransportError)),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        return retrying(call)
    except (TransientError, httpx.TransportError) as exc:
        raise failed(f"{what}: {describe_error(exc)} (after {max_attempts} attempts)") from exc


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


def json_int(text: str) -> int | Decimal:
    """A JSON integer: an ``int``, or a :class:`Decimal` past Python's 4,300-digit limit on
    ``int(str)`` (whose ``ValueError`` would fail the whole body over one field)."""
    return int(text) if len(text) <= MAX_INT_DIGITS else Decimal(text)


def json_body(
    response: httpx.Response, *, allow_404: bool, refused: Callable[[str], Exception]
) -> Any:
    """The body of a Polymarket data API answer (Gamma, CLOB) as JSON with exact decimals, or
    the exception that says what the answer was: :class:`TransientError` for a 429 (with its
    ``Retry-After``), a 5xx or a body that is not JSON (an HTML error page): retried;
    :class:`SourceNotFound` for a 404 the caller gives a meaning; ``refused(reason)`` for any
    other 4xx: final."""
    status = response.status_code
    if status == 429 or status >= 500:
        raise TransientError(
            f"HTTP {status}{error_text(response)}", retry_after_seconds(response.headers)
        )
    if status == 404 and allow_404:
        raise SourceNotFound()
    if status >= 400:
        raise refused(f"HTTP {status}{error_text(response)}")
    try:
        return json.loads(response.content, parse_float=Decimal, parse_int=json_int)
    except ValueError:
        kind = response.headers.get("content-type", "no content type")
        raise TransientError(f"HTTP {status} body is not JSON ({kind})") from None
