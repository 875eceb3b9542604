"""Market sync job: mirror Gamma's top-N universe and every market the arena cares about.

One run (``arena markets sync``):

1. lists the top ``universe_size`` open, tradable markets by ``volumeNum`` (methodology, "The
   market universe");
2. fetches by id every other market the store still needs fresh: each market held in an OPEN
   position (even once out of the top N, or closed), and each market the store still believes
   open that was not in this listing, so a market that closed or fell out of the top N never
   lingers as open and tradable in the table the decision run freezes its universe from
   (:mod:`arena.jobs.universe`);
3. stores them all through the one market-state writer, :func:`arena.jobs.prices.store_markets`
   (its rules: only valid prices of open markets become the mark, a value Gamma left out never
   overwrites a known one, a history row only when the mark changed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock
from arena.config import Settings
from arena.domain.markets import MarketView
from arena.domain.states import MarketStatus
from arena.jobs.prices import store_markets
from arena.jsonable import jsonable
from arena.sources.gamma import FetchStats, MarketSource
from arena.store.db import transaction
from arena.store.models import Market
from arena.store.queries import held_market_ids

log = logging.getLogger(__name__)


@dataclass
class SyncReport:
    """What one sync did, for the CLI summary and the job log (a
    :class:`arena.jobs.report.JobReport`)."""

    at: datetime
    universe_size: int
    listed: int = 0  # tradable markets found for the top N
    refreshed: int = 0  # markets fetched by id (held, or believed open but not listed)
    held: int = 0  # markets with an OPEN position
    missing: list[str] = field(default_factory=list)  # ids Gamma did not return
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    price_changes: int = 0  # market_prices rows appended
    pages: int = 0
    requests: int = 0
    retries: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> listed rows skipped
    parse_errors: list[tuple[str | None, str]] = field(default_factory=list)
    top_ids: list[str] = field(default_factory=list)  # the universe, best first

    @property
    def complete(self) -> bool:
        """Whether the listing yielded the full universe size."""
        return self.listed >= self.universe_size

    def counts(self) -> dict[str, Any]:
        """The sync's figures (lists as their lengths)."""
        figures = {
            "listed": self.listed,
            "refreshed": self.refreshed,
            "held": self.held,
            "missing": len(self.missing),
            "inserted": self.inserted,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "price_changes": self.price_changes,
            "pages": self.pages,
            "requests": self.requests,
            "retries": self.retries,
            "skipped": sum(self.skipped.values()),
            "parse_errors": len(self.parse_errors),
        }
        return dict(jsonable(figures))

    def failure(self) -> None:
        """Never: a short listing or unparseable rows are warnings (the CLI prints them); a
        sync that cannot read Gamma raises."""
        return None

    def summary(self) -> str:
        text = (
            f"markets sync: {self.listed}/{self.universe_size} top markets in {self.pages} "
            f"pages, {self.refreshed} more refreshed by id ({self.held} held); "
            f"{self.inserted} new, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.price_changes} price changes; {sum(self.skipped.values())} listed rows "
            f"skipped, {len(self.parse_errors)} unparseable, {self.retries} retries"
        )
        if self.missing:
            text += f"; {len(self.missing)} not returned by Gamma"
        return text


def sync_markets(
    session_factory: sessionmaker[Session],
    client: MarketSource,
    settings: Settings,
    clock: Clock,
    *,
    on_listed: Callable[[Sequence[MarketView]], object] | None = None,
) -> SyncReport:
    """Upsert the top-N universe and refresh held and formerly listed markets (see module).
    ``on_listed`` hears of the listing as soon as Gamma has given it, before anything is
    stored (the decision run starts fetching its books then:
    :class:`arena.jobs.universe.BooksAhead`)."""
    now = clock.now()
    report = SyncReport(at=now, universe_size=settings.benchmark.universe_size)
    listing = FetchStats()
    top = client.top_markets(report.universe_size, listing)
    if on_listed is not None:
        on_listed(top)
    report.top_ids = [market.id for market in top]
    report.listed = len(top)
    listed_ids = set(report.top_ids)
    with transaction(session_factory) as session:
        held = set(session.scalars(held_market_ids()))
        believed_open = set(
            session.scalars(
                select(Market.id).where(
                    Market.closed.is_(False), Market.status == MarketStatus.OPEN
                )
            )
        )
    wanted = sorted((held | believed_open) - listed_ids)
    lookup = FetchStats()
    fresh = client.markets_by_ids(wanted, include_closed=True, stats=lookup) if wanted else {}
    report.held = len(held)
    report.refreshed = len(fresh)
    report.missing = [market_id for market_id in wanted if market_id not in fresh]
    if report.missing:
        log.warning(
            "gamma returned nothing for %d market(s) the store needs: %s",
            len(report.missing),
            ", ".join(report.missing[:20]),
        )
    with transaction(session_factory) as session:
        stored = store_markets(session, [*top, *fresh.values()], now)
    report.inserted, report.updated = stored.inserted, stored.updated
    report.unchanged, report.price_changes = stored.unchanged, stored.price_changes
    for stats in (listing, lookup):
        report.pages += stats.pages
        report.requests += stats.requests
        report.retries += stats.retries
        report.parse_errors.extend(stats.parse_errors)
        for reason, count in stats.skipped.items():
            report.skipped[reason] = report.skipped.get(reason, 0) + count
    if not report.complete:
        log.warning(
            "markets sync: only %d of %d universe markets listed (%s)",
            report.listed,
            report.universe_size,
            listing.stop_reason,
        )
    log.info("%s", report.summary())
    return report
