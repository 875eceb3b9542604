"""The Polymarket CLOB client: order books, midpoints and fee schedules (public market data).

Behaviour follows clob-api.md:

- ``GET /book?token_id=`` answers one book; a 404 (unknown, malformed, never-booked, closed or
  resolved token: the 404 alone does not say which) raises :class:`BookMissing`;
- ``POST /books`` takes a JSON array ``[{"token_id": ...}]`` of at most 500 items, so larger
  requests are sent in chunks. The server reorders the answer and silently omits tokens
  without a book, so results are keyed by ``asset_id``; the tokens asked for and not answered
  are reported (and logged) as missing, and answers for tokens never asked for are ignored.
  A book refused at the edge (:func:`~arena.sources.clob_parse.parse_book`) is missing too:
  one bad book costs that token only;
- ``POST /midpoints`` (same body and cap) answers ``{"<token id>": "<mid>"}``;
- ``GET /clob-markets/{condition_id}`` carries the fee schedule in ``fd`` (see
  :func:`~arena.sources.clob_parse.parse_fee_schedule`). The CLOB has no batch form of it, so
  :meth:`ClobClient.fee_schedules` sends one request per market, :data:`FEE_CONCURRENCY` at a
  time (well inside the CLOB's general limit of 9,000 requests per 10 s), and stops starting
  new ones after :data:`FEE_FAILURES_TO_STOP` failures (an outage must not cost every market
  its retries);
- transient failures (connection errors, timeouts, 429, 5xx, a body that is not the JSON
  expected, such as an HTML error page or an object where an array belongs) are retried with
  exponential backoff and jitter, honouring ``Retry-After`` (capped at two minutes); every
  retry is logged; other 4xx fail at once. After ``max_attempts`` a :class:`ClobError` is
  raised. The discipline is the Gamma client's, from the same pieces (:mod:`arena.sources.http`).

Parsing and the server's book hash live in :mod:`arena.sources.clob_parse` and are re-exported
here.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

import httpx

from arena.config import Polymarket
from arena.domain.book import FeeSchedule, OrderBook
from arena.errors import BookMissing, ClobError, SourceNotFound, TransientError
from arena.sources.clob_parse import book_hash, parse_book, parse_fee_schedule, parse_midpoints
from arena.sources.http import USER_AGENT, HttpClientOwner, json_body, tls_context, with_retries
from arena.sources.retry import polymarket_policy

__all__ = [
    "CLOB_URL",
    "FEE_CONCURRENCY",
    "MAX_BATCH",
    "BookBatch",
    "BookSource",
    "ClobClient",
    "FeeBatch",
    "book_hash",
    "parse_book",
    "parse_fee_schedule",
]

logger = logging.getLogger(__name__)

CLOB_URL = "https://clob.polymarket.com"
MAX_BATCH = 500  # items per POST /books or /midpoints; 501 -> 400 "Payload exceeds the limit"
FEE_CONCURRENCY = 32  # GET /clob-markets requests in flight at once (640 a second at 50 ms)
FEE_FAILURES_TO_STOP = 3  # failed fee fetches after which a batch starts no new request

retry_sleep: Callable[[float], None] = time.sleep  # the default wait; tests replace it


@dataclass(frozen=True)
class BookBatch:
    """The answer to a batch of book requests: the books found, keyed by token id, and the
    requested tokens the CLOB did not answer (no book, or an unreadable one; both logged)."""

    books: dict[str, OrderBook]
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class FeeBatch:
    """The answer to a batch of fee-schedule requests: the schedules found, keyed by condition
    id, and the reason each failed one failed. ``stopped`` says the batch gave up after
    :data:`FEE_FAILURES_TO_STOP` failures (the CLOB looks unreachable): the ids in neither map
    were never asked."""

    schedules: dict[str, FeeSchedule]
    failed: dict[str, str] = field(default_factory=dict)
    stopped: bool = False


class BookSource(Protocol):
    """The order-book port: what the jobs need from the CLOB.

    :class:`ClobClient` is its adapter; tests and the demo point it at the fake CLOB
    (:mod:`arena.fakes.clob`).
    """

    def book(self, token_id: str) -> OrderBook: ...

    def books(self, token_ids: Sequence[str]) -> BookBatch: ...

    def fee_schedule(self, condition_id: str) -> FeeSchedule: ...

    def fee_schedules(self, condition_ids: Sequence[str]) -> FeeBatch: ...

    def close(self) -> None: ...


class ClobClient(HttpClientOwner):
    """Reads public market data from the CLOB.

    ``settings`` supplies the timeout and the number of attempts (the Gamma client's; pass a
    copy to change them). Pass ``http`` to share a client (it is then not closed here) or
    ``transport`` to build one over it (the fake's, in tests). Calls are retried under
    :func:`arena.sources.retry.polymarket_policy`; ``sleep`` is the wait between retries
    (default :data:`retry_sleep`, which tests replace).
    """

    def __init__(
        self,
        settings: Polymarket | None = None,
        *,
        base_url: str = CLOB_URL,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] | None = None,
        fee_concurrency: int = FEE_CONCURRENCY,
    ) -> None:
        if http is not None and transport is not None:
            raise ValueError("pass either http or transport, not both")
        settings = settings or Polymarket()
        self._base_url = base_url.rstrip("/")
        self._timeout = httpx.Timeout(settings.timeout_seconds)
        self._retry = polymarket_policy(
            "clob", settings.max_attempts, sleep if sleep is not None else retry_sleep
        )
        if fee_concurrency < 1:
            raise ValueError("fee_concurrency must be at least 1")
        self._fee_concurrency = fee_concurrency
        # a connection kept alive for each fee request in flight
        limits = httpx.Limits(max_keepalive_connections=max(20, fee_concurrency))
        super().__init__(
            http,
            lambda: httpx.Client(
                timeout=self._timeout, transport=transport, limits=limits, verify=tls_context()
            ),
        )
        self.requests = 0  # HTTP requests sent, retries included
        self.retries = 0
        self._count_lock = threading.Lock()  # fee batches count from several threads

    # -- public operations -------------------------------------------------------------------

    def book(self, token_id: str) -> OrderBook:
        """The token's current book. Raises :class:`BookMissing` on a 404,
        :class:`BookUnusable` for a book refused at the edge (unreadable, unstorable, crossed
        or locked), :class:`ClobError` on any other failure (after retries for the transient
        ones)."""
        _check_token(token_id)
        try:
            body = self._request(
                "GET", "/book", dict, params={"token_id": token_id}, allow_404=True
            )
        except SourceNotFound:
            raise BookMissing(token_id) from None
        book = parse_book(body)
        if book.token_id != token_id:
            raise ClobError(f"GET /book for token {token_id} answered token {book.token_id}")
        return book

    def books(self, token_ids: Sequence[str]) -> BookBatch:
        """The books of ``token_ids`` (duplicates asked once), in chunks of :data:`MAX_BATCH`.

        Tokens without an answer, or whose book cannot be read, are in ``missing`` (in request
        order) and logged; the call fails only when a whole request fails.
        """
        wanted = _unique_tokens(token_ids)
        found: dict[str, OrderBook] = {}
        unreadable: set[str] = set()
        for chunk in _chunks(wanted, MAX_BATCH):
            body = self._request("POST", "/books", list, payload=_token_payload(chunk))
            asked = set(chunk)
            for raw in body:
                token = raw.get("asset_id") if isinstance(raw, Mapping) else None
                if token not in asked:
                    logger.info("clob /books answered token %s, which was not asked for", token)
                    continue
                try:
                    book = parse_book(raw)
                except ClobError as exc:
                    logger.warning("clob /books: skipping an unreadable book: %s", exc)
                    unreadable.add(str(token))
                    continue
                current = found.get(book.token_id)
                if current is None or book.timestamp >= current.timestamp:
                    found[book.token_id] = book
        missing = tuple(t for t in wanted if t not in found)
        if missing:
            logger.warning(
                "clob /books: no book for %d of %d tokens (%d unreadable): %s",
                len(missing),
                len(wanted),
                len(unreadable & set(missing)),
                ", ".join(missing[:20]) + (" ..." if len(missing) > 20 else ""),
            )
        return BookBatch(books=found, missing=missing)

    def midpoints(self, token_ids: Sequence[str]) -> dict[str, Decimal]:
        """The midpoint of each token that has one (tokens without a book are absent), in
        chunks of :data:`MAX_BATCH`."""
        wanted = _unique_tokens(token_ids)
        mids: dict[str, Decimal] = {}
        for chunk in _chunks(wanted, MAX_BATCH):
            body = self._request("POST", "/midpoints", dict, payload=_token_payload(chunk))
            mids.update(parse_midpoints(body, set(chunk)))
        return mids

    def fee_schedule(self, condition_id: str) -> FeeSchedule:
        """The market's taker fee from ``GET /clob-markets/{condition_id}`` (``fd``; none:
        fee-free). An unknown market raises :class:`ClobError`."""
        _check_condition(condition_id)
        body = self._request("GET", f"/clob-markets/{condition_id}", dict)
        return parse_fee_schedule(body, condition_id)

    def fee_schedules(self, condition_ids: Sequence[str]) -> FeeBatch:
        """The fee schedule of each market (duplicates asked once), fetched
        :data:`FEE_CONCURRENCY` at a time, each with its own retries. A market whose schedule
        cannot be fetched or read is in ``failed`` with the reason (and logged), never read as
        fee-free; after :data:`FEE_FAILURES_TO_STOP` failures no new request starts
        (``stopped``). Ids are asked in the order given, so the ones that matter most go
        first."""
        wanted = list(dict.fromkeys(condition_ids))
        for condition_id in wanted:
            _check_condition(condition_id)
        found: dict[str, FeeSchedule] = {}
        failed: dict[str, str] = {}
        lock = threading.Lock()

        def fetch(condition_id: str) -> None:
            with lock:
                if len(failed) >= FEE_FAILURES_TO_STOP:
                    return
            try:
                fee = self.fee_schedule(condition_id)
            except ClobError as exc:
                with lock:
                    failed[condition_id] = str(exc)
                return
            with lock:
                found[condition_id] = fee

        if wanted:
            workers = min(self._fee_concurrency, len(wanted))
            with ThreadPoolExecutor(workers, thread_name_prefix="clob-fees") as pool:
                list(pool.map(fetch, wanted))  # re-raises what is not a ClobError (a bug)
        stopped = len(found) + len(failed) < len(wanted)
        if failed:
            logger.warning(
                "clob /clob-markets: no fee schedule for %d of %d markets%s: %s",
                len(failed),
                len(wanted),
                " (stopped asking)" if stopped else "",
                "; ".join(f"{cid}: {why}" for cid, why in list(failed.items())[:5]),
            )
        return FeeBatch(found, failed, stopped)

    # -- HTTP with retries -------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        expect: type[dict[str, Any]] | type[list[Any]],
        *,
        params: Mapping[str, str] | None = None,
        payload: Any = None,
        allow_404: bool = False,
    ) -> Any:
        return with_retries(
            lambda: self._request_once(method, path, expect, params, payload, allow_404),
            self._retry,
            what=f"{method} {path}",
            log=logger,
            failed=ClobError,
            on_retry=self._count_retry,
        )

    def _count_retry(self) -> None:
        with self._count_lock:
            self.retries += 1

    def _request_once(
        self,
        method: str,
        path: str,
        expect: type[dict[str, Any]] | type[list[Any]],
        params: Mapping[str, str] | None,
        payload: Any,
        allow_404: bool,
    ) -> Any:
        with self._count_lock:
            self.requests += 1
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        content = None
        if payload is not None:
            headers["Content-Type"] = "application/json"
            content = json.dumps(payload, separators=(",", ":")).encode()
        response = self._http.request(
            method,
            self._base_url + path,
            params=params,
            content=content,
            headers=headers,
            timeout=self._timeout,
        )
        body = json_body(
            response,
            allow_404=allow_404,
            refused=lambda reason: ClobError(f"{method} {path}: {reason}"),
        )
        if not isinstance(body, expect):
            wanted = "an array" if expect is list else "an object"
            raise TransientError(
                f"HTTP {response.status_code} body is not {wanted}: {type(body).__name__}"
            )
        return body


def _check_token(token_id: object) -> None:
    """Token ids are uint256 decimal strings: an int or a float here has already lost or may
    lose digits somewhere upstream, so it is refused rather than converted."""
    if not isinstance(token_id, str) or not token_id:
        raise TypeError(f"a token id must be a non-empty string, got {token_id!r}")


def _check_condition(condition_id: object) -> None:
    if not isinstance(condition_id, str) or not condition_id or "/" in condition_id:
        raise ValueError(f"not a condition id: {condition_id!r}")


def _unique_tokens(token_ids: Sequence[str]) -> list[str]:
    for token in token_ids:
        _check_token(token)
    return list(dict.fromkeys(token_ids))


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _token_payload(tokens: list[str]) -> list[dict[str, str]]:
    return [{"token_id": token} for token in tokens]
