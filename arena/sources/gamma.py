"""The Polymarket Gamma client: the top-N universe, multi-id look-ups, single markets.

Behaviour follows gamma-api.md:

- listings use ``GET /markets/keyset`` ordered by ``volumeNum`` descending, paging with
  ``after_cursor`` and resending every filter on every page; a missing or empty ``next_cursor``
  ends the listing, a short page never does (Gamma clamps ``limit`` to 100 silently); a cursor
  seen before is logged and the page asked again, and if it keeps repeating the listing stops
  with a warning;
- multi-id look-ups send repeated ``id=`` keys, at most 100 a request; since ``closed``
  defaults to false and ``closed=true`` returns *only* closed markets, a look-up that must see
  closed markets asks twice: ``closed=false``, then ``closed=true`` for the ids still missing;
- transient failures (connection errors, timeouts, 429, 5xx, a body that is not the JSON
  expected) are retried with exponential backoff and jitter, honouring ``Retry-After`` (in
  seconds, capped at two minutes); every retry is logged; other 4xx fail at once. After
  ``max_attempts`` a :class:`GammaError` is raised. A malformed *row* is logged with its market
  id and skipped, never fatal.

The listing trusts Gamma's order (it is sorted by ``volumeNum`` on the server) and does not
re-sort, so a row whose volume fields are missing still keeps its rank.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from arena.config import Polymarket
from arena.domain.markets import MarketView
from arena.errors import GammaError, SourceNotFound, TransientError
from arena.sources.gamma_parse import parse_market, parse_rows, should_skip
from arena.sources.http import USER_AGENT as USER_AGENT  # re-exported
from arena.sources.http import HttpClientOwner, json_body, tls_context, with_retries
from arena.sources.retry import polymarket_policy

logger = logging.getLogger(__name__)

MAX_PAGE = 100  # Gamma's silent clamp on `limit`, and its cap on ids per request
MAX_PAGES = 1000  # hard stop for a listing, whatever the server does

Params = list[tuple[str, str]]

retry_sleep: Callable[[float], None] = time.sleep  # the default wait; tests replace it


@dataclass
class FetchStats:
    """Counts of one client operation, for the sync job's report."""

    pages: int = 0
    requests: int = 0
    retries: int = 0
    rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> rows
    parse_errors: list[tuple[str | None, str]] = field(default_factory=list)  # (id, reason)
    stop_reason: str = ""


class MarketSource(Protocol):
    """The market port: what the jobs need from Polymarket's market data.

    :class:`GammaClient` is its adapter; the demo and the tests use fakes. A market the source
    does not know (404, gone) is simply absent from :meth:`markets_by_ids`.
    """

    def top_markets(self, limit: int, stats: FetchStats | None = None) -> list[MarketView]: ...

    def markets_by_ids(
        self, ids: Iterable[str], include_closed: bool = True, stats: FetchStats | None = None
    ) -> dict[str, MarketView]: ...


class GammaClient(HttpClientOwner):
    """Reads markets from Gamma. Pass ``http`` to share a client (it is then not closed here).

    Calls are retried under :func:`arena.sources.retry.polymarket_policy` with
    ``settings.max_attempts``; ``sleep`` is the wait between retries (default
    :data:`retry_sleep`, which tests zero).
    """

    def __init__(
        self,
        settings: Polymarket | None = None,
        *,
        http: httpx.Client | None = None,
        base_url: str | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self._settings = settings or Polymarket()
        self._base_url = (base_url or str(self._settings.gamma_url)).rstrip("/")
        self._timeout = httpx.Timeout(self._settings.timeout_seconds)
        super().__init__(http, lambda: httpx.Client(timeout=self._timeout, verify=tls_context()))
        self._retry = polymarket_policy(
            "gamma", self._settings.max_attempts, sleep if sleep is not None else retry_sleep
        )
        self._page_size = min(self._settings.page_size, MAX_PAGE)

    # -- public operations -------------------------------------------------------------------

    def top_markets(self, limit: int, stats: FetchStats | None = None) -> list[MarketView]:
        """The ``limit`` highest-``volumeNum`` open, tradable markets, best first."""
        stats = stats if stats is not None else FetchStats()
        if limit <= 0:
            return []
        filters: Params = [
            ("order", "volumeNum"),
            ("ascending", "false"),
            ("closed", "false"),
            ("active", "true"),
            ("limit", str(self._page_size)),
        ]
        chosen: dict[str, MarketView] = {}
        for rows in self._keyset_pages(filters, stats):
            for market in self._parse_page(rows, stats):
                reason = universe_skip_reason(market)
                if reason is None and market.id in chosen:
                    reason = "duplicate row"
                if reason is not None:
                    stats.skipped[reason] += 1
                    continue
                chosen[market.id] = market
                if len(chosen) >= limit:
                    stats.stop_reason = f"collected {limit} tradable markets"
                    return list(chosen.values())
        return list(chosen.values())

    def markets_by_ids(
        self, ids: Iterable[str], include_closed: bool = True, stats: FetchStats | None = None
    ) -> dict[str, MarketView]:
        """The markets with these ids that Gamma returns (unparseable or unknown ones are absent).

        With ``include_closed`` the ids not found open are asked again with ``closed=true``.
        """
        stats = stats if stats is not None else FetchStats()
        wanted = list(dict.fromkeys(str(i) for i in ids))
        found: dict[str, MarketView] = {}
        passes = ("false", "true") if include_closed else ("false",)
        for closed in passes:
            missing = [i for i in wanted if i not in found]
            for start in range(0, len(missing), MAX_PAGE):
                chunk = missing[start : start + MAX_PAGE]
                filters: Params = [("id", i) for i in chunk]
                filters += [("closed", closed), ("limit", str(MAX_PAGE))]
                for rows in self._keyset_pages(filters, stats):
                    for market in self._parse_page(rows, stats):
                        if market.id in chunk:
                            found[market.id] = market
        stats.stop_reason = f"found {len(found)} of {len(wanted)}"
        return found

    def market(self, market_id: str) -> MarketView | None:
        """One market by id; ``None`` when Gamma answers 404 (the market is gone).

        Raises :class:`MarketParseError` when the row cannot be parsed.
        """
        try:
            body = self._get_json(f"/markets/{market_id}", [], FetchStats(), allow_404=True)
        except SourceNotFound:
            return None
        if not isinstance(body, Mapping):
            raise GammaError(f"GET /markets/{market_id}: expected an object")
        return parse_market(body)

    # -- paging and parsing ------------------------------------------------------------------

    def _keyset_pages(self, filters: Params, stats: FetchStats) -> Iterable[list[Any]]:
        """Yield the rows of each keyset page until the cursor ends.

        A ``next_cursor`` seen before is treated as a glitch: the page is asked again (its rows
        come back as duplicates, which callers drop) up to ``max_attempts`` times, then the
        listing stops with a warning.
        """
        seen: set[str] = set()
        cursor: str | None = None
        repeats = 0
        for _ in range(MAX_PAGES):
            params = list(filters) + ([("after_cursor", cursor)] if cursor else [])
            body = self._get_json("/markets/keyset", params, stats, keyset=True)
            rows, next_cursor = _keyset_envelope(body)
            stats.pages += 1
            stats.rows += len(rows)
            yield rows
            if not next_cursor:
                stats.stop_reason = "no next_cursor"
                return
            if next_cursor in seen:
                repeats += 1
                if repeats >= self._retry.attempts:
                    logger.warning(
                        "gamma keyset cursor keeps repeating after %d pages; stopping", stats.pages
                    )
                    stats.stop_reason = "cursor repeated"
                    return
                logger.warning(
                    "gamma retry: keyset cursor repeated on page %d (%d/%d); asking again",
                    stats.pages,
                    repeats,
                    self._retry.attempts,
                )
                stats.retries += 1
                continue
            repeats = 0
            seen.add(next_cursor)
            cursor = next_cursor
        logger.warning("gamma keyset listing stopped at the %d-page limit", MAX_PAGES)
        stats.stop_reason = "page limit"

    @staticmethod
    def _parse_page(rows: list[Any], stats: FetchStats) -> list[MarketView]:
        parsed = parse_rows(rows)
        stats.parse_errors.extend((e.market_id, e.reason) for e in parsed.errors)
        return parsed.markets

    # -- HTTP with retries -------------------------------------------------------------------

    def _get_json(
        self,
        path: str,
        params: Params,
        stats: FetchStats,
        *,
        allow_404: bool = False,
        keyset: bool = False,
    ) -> Any:
        def count_retry() -> None:
            stats.retries += 1

        return with_retries(
            lambda: self._get_once(path, params, stats, allow_404, keyset),
            self._retry,
            what=f"GET {path}",
            log=logger,
            failed=GammaError,
            on_retry=count_retry,
        )

    def _get_once(
        self, path: str, params: Params, stats: FetchStats, allow_404: bool, keyset: bool
    ) -> Any:
        stats.requests += 1
        response = self._http.get(
            self._base_url + path,
            params=tuple(params),
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            timeout=self._timeout,
        )
        body = json_body(
            response,
            allow_404=allow_404,
            refused=lambda reason: GammaError(f"GET {path}: {reason}"),
        )
        if keyset and not _is_keyset_envelope(body):
            raise TransientError("body is not a keyset page")
        return body


def universe_skip_reason(market: MarketView) -> str | None:
    """Why a listed market is not in the tradable universe (methodology), or ``None``."""
    reason = should_skip(market)
    if reason is not None:
        return reason
    if market.closed:
        return "closed"
    if market.accepting_orders is False:
        return "not accepting orders"
    if not market.has_valid_prices:
        return "prices not strictly inside (0, 1)"
    return None


def _is_keyset_envelope(body: Any) -> bool:
    return isinstance(body, list) or (
        isinstance(body, Mapping) and isinstance(body.get("markets"), list)
    )


def _keyset_envelope(body: Any) -> tuple[list[Any], str | None]:
    """``{"markets": [...], "next_cursor": ...}``; a legacy bare array is accepted as one page."""
    if isinstance(body, list):
        return body, None
    cursor = body.get("next_cursor")
    return body["markets"], cursor if isinstance(cursor, str) and cursor.strip() else None
