"""What the HTTP clients (Gamma, CLOB, OpenRouter) share: who closes the ``httpx`` client,
the wait a server asks for, the Polymarket clients' use of the one retry loop
(:mod:`arena.sources.retry`), how a failure is described in logs and errors, and how a
Polymarket data API answer is read."""

from __future__ import annotations

import functools
import json
import logging
import math
import ssl
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Self, TypeVar

import httpx

from arena import __version__
from arena.errors import SourceNotFound, TransientError
from arena.sources.retry import RetryPolicy

MAX_INT_DIGITS = 4000  # below sys.get_int_max_str_digits() (4300 by default)

USER_AGENT = f"arena/{__version__} (+https://github.com/arena-benchmark/arena)"
T = TypeVar("T")


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


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The one TLS context of every client arena makes (httpx's default: certifi's roots, or
    ``SSL_CERT_FILE``/``SSL_CERT_DIR``): loading the roots takes 20 ms a client."""
    return httpx.create_ssl_context()


class HttpClientOwner:
    """Base of the clients of an HTTP API (Gamma, the CLOB, OpenRouter): it uses the
    ``httpx.Client`` it is handed, shared and left open, or one it makes itself, and closes
    only the one it made (:meth:`close`, or the end of a ``with`` block)."""

    def __init__(self, http: httpx.Client | None, make: Callable[[], httpx.Client]) -> None:
        self._owns_http = http is None
        self._http = make() if http is None else http

    def close(self) -> None:
        """Close the HTTP client if this object made it."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    what: str,
    log: logging.Logger,
    failed: Callable[[str], Exception],
    on_retry: Callable[[], None] = lambda: None,
) -> T:
    """``call()`` in the one retry loop under a Polymarket client's ``policy``
    (:func:`arena.sources.retry.polymarket_policy`). Each retry is logged as a warning
    (``"<service> retry: attempt 1/3 of <what> failed (...)"``) and counted by ``on_retry``;
    the last transient failure raises ``failed("<what>: <reason> (after N attempts)")``. Any
    other exception propagates at once."""

    def before_sleep(attempt: int, error: BaseException, wait: float) -> None:
        on_retry()
        log.warning(
            "%s retry: attempt %d/%d of %s failed (%s); waiting %.2fs",
            policy.service,
            attempt,
            policy.attempts,
            what,
            describe_error(error),
            wait,
        )

    try:
        return policy.run(call, before_sleep)
    except policy.retry_on as exc:
        raise failed(f"{what}: {describe_error(exc)} (after {policy.attempts} attempts)") from exc


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
