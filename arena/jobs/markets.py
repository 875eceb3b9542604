"""Market sync job: mirror Gamma's top-N universe and every market the arena cares about.

One run (``arena markets sync``):

1. lists the top ``universe_size`` open, tradable markets by ``volumeNum`` (methodology, "The
   market universe");
2. fetches by id every other market the store still needs fresh: each market held in an OPEN
   position (even once out of the top N, or closed), and each market the store still believes
   open that was not in this listing, so a market that closed or fell out of the top N never
   lingers as open and tradable in the table the decision run freezes its universe from
   (:mod:`arena.jobs.universe`);
3. upserts them all and appends a ``market_prices`` row only for markets whose valid prices
   changed since their last history row.

Stored values follow the rules of :mod:`arena.jobs.prices`: ``prices``/``yes_price`` only ever
receive valid prices (every outcome strictly inside (0, 1)); ``last_raw_prices`` keeps what
Gamma last sent; a value Gamma left out (``None``) never overwrites a known one. Everything is
one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE <something changed>`` per chunk (SQLite and
PostgreSQL), so a rerun with unchanged data writes nothing, and two syncs running at once
serialise on the rows (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the upsert's row locks, taken
in id order, before the history is read) and never duplicate a history row.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from sqlalchemy import JSON, Text, bindparam, case, cast, func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock
from arena.config import Settings
from arena.domain.markets import Market
from arena.sources.gamma import FetchStats
from arena.store.db import transaction
from arena.store.models import Market as MarketRow
from arena.store.models import MarketPrice, Position
from arena.store.upsert import dialect_insert

log = logging.getLogger(__name__)

CHUNK = 400  # rows per statement: ~30 columns each stays far below SQLite's 32,766 parameters
VOLUME_PLACES = Decimal("0.000001")  # the scale of the Volume() columns
PRICE_PLACES = Decimal("0.0000000001")  # the scale of the Price() columns
# Columns a missing fresh value never overwrites (COALESCE(new, old)).
_KEEP_KNOWN = (
    "slug", "description", "category", "volume", "volume_24h", "liquidity", "end_date",
    "closed_time", "accepting_orders", "uma_resolution_status", "condition_id",
    "neg_risk_market_id", "group_item_title", "event_id", "event_slug", "event_title",
    "last_raw_prices", "prices", "yes_price",
)  # fmt: skip
_ALWAYS = ("outcomes", "active", "closed", "neg_risk")
_JSON = ("outcomes", "prices", "last_raw_prices")
_SQL_NULL_JSON = JSON(none_as_null=True)  # a missing price list is SQL NULL, so COALESCE works


class MarketClient(Protocol):
    """What the sync needs from Gamma (:class:`arena.sources.gamma.GammaClient`)."""

    def top_markets(self, limit: int, stats: FetchStats | None = None) -> list[Market]: ...

    def markets_by_ids(
        self, ids: Sequence[str], include_closed: bool = True, stats: FetchStats | None = None
    ) -> dict[str, Market]: ...


@dataclass
class SyncReport:
    """What one sync did, for the CLI summary and the job log."""

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
        return {
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
    session_factory: sessionmaker[Session], client: MarketClient, settings: Settings, clock: Clock
) -> SyncReport:
    """Upsert the top-N universe and refresh held and formerly listed markets (see module)."""
    now = clock.now()
    report = SyncReport(at=now, universe_size=settings.benchmark.universe_size)
    listing = FetchStats()
    top = client.top_markets(report.universe_size, listing)
    report.top_ids = [market.id for market in top]
    report.listed = len(top)
    listed_ids = set(report.top_ids)
    with transaction(session_factory) as session:
        held = set(
            session.scalars(select(Position.market_id).where(Position.status == "OPEN").distinct())
        )
        believed_open = set(
            session.scalars(
                select(MarketRow.id).where(MarketRow.closed.is_(False), MarketRow.status == "open")
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
    markets = sorted([*top, *fresh.values()], key=lambda m: int(m.id))
    with transaction(session_factory) as session:
        for start in range(0, len(markets), CHUNK):
            chunk = markets[start : start + CHUNK]
            inserted, updated = upsert_markets(session, chunk, now)
            report.inserted += inserted
            report.updated += updated
            report.price_changes += append_price_history(session, chunk, now)
    report.unchanged = len(markets) - report.inserted - report.updated
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


def upsert_markets(session: Session, markets: Sequence[Market], now: datetime) -> tuple[int, int]:
    """Insert new markets and update changed ones in one statement; (inserted, updated)."""
    if not markets:
        return 0, 0
    table = MarketRow.__table__
    ids = [market.id for market in markets]
    existing = set(session.scalars(select(MarketRow.id).where(MarketRow.id.in_(ids))))
    insert = dialect_insert(session, MarketRow.__table__).values(
        prices=bindparam("prices", type_=_SQL_NULL_JSON),
        last_raw_prices=bindparam("last_raw_prices", type_=_SQL_NULL_JSON),
    )
    new = insert.excluded
    values: dict[str, Any] = {
        "question": func.coalesce(func.nullif(new.question, ""), table.c.question),
        **{name: func.coalesce(new[name], table.c[name]) for name in _KEEP_KNOWN},
        **{name: new[name] for name in _ALWAYS},
    }
    changed = [_distinct(table.c[name], expr, name in _JSON) for name, expr in values.items()]
    prices_changed = new.prices.is_not(None) & _distinct(table.c.prices, new.prices, True)
    values["prices_updated_at"] = case(
        (prices_changed, new.prices_updated_at), else_=table.c.prices_updated_at
    )
    values["updated_at"] = new.updated_at
    statement = insert.on_conflict_do_update(
        index_elements=["id"], set_=values, where=or_(*changed)
    ).returning(table.c.id)
    written = set(session.scalars(statement, [market_row(market, now) for market in markets]))
    return len(written - existing), len(written & existing)


def append_price_history(session: Session, markets: Sequence[Market], now: datetime) -> int:
    """Append a ``market_prices`` row for each market whose valid prices differ from its last."""
    priced = {
        m.id: m for m in markets if m.has_valid_prices and m.prices is not None and not m.closed
    }
    if not priced:
        return 0
    latest = (
        select(MarketPrice.market_id, func.max(MarketPrice.observed_at).label("last"))
        .where(MarketPrice.market_id.in_(list(priced)))
        .group_by(MarketPrice.market_id)
        .subquery()
    )
    last_prices: dict[str, Any] = dict(
        session.execute(
            select(MarketPrice.market_id, MarketPrice.prices).join(
                latest,
                (MarketPrice.market_id == latest.c.market_id)
                & (MarketPrice.observed_at == latest.c.last),
            )
        ).all()
    )
    rows = []
    for market_id, market in priced.items():
        before = last_prices.get(market_id)
        if before is not None and [Decimal(str(p)) for p in before] == list(market.prices or ()):
            continue
        rows.append(
            {
                "market_id": market_id,
                "observed_at": now,
                "prices": [str(p) for p in market.prices or ()],
                "yes_price": _quantize(market.yes_price, PRICE_PLACES),
                "volume": _quantize(market.volume, VOLUME_PLACES),
            }
        )
    if not rows:
        return 0
    statement = (
        dialect_insert(session, MarketPrice.__table__)
        .on_conflict_do_nothing(index_elements=["market_id", "observed_at"])
        .returning(MarketPrice.__table__.c.id)
    )
    return len(session.scalars(statement, rows).all())


def market_row(market: Market, now: datetime) -> dict[str, Any]:
    """The ``markets`` row for a freshly parsed market (SQL NULL where Gamma gave nothing)."""
    # A closed market's prices are resolution prices ([0.5, 0.5] after a 50-50 looks valid):
    # they never become the mark; the last valid mark from while it traded is kept.
    valid = market.has_valid_prices and market.prices is not None and not market.closed
    prices = [str(p) for p in market.prices] if market.prices is not None else None
    row: dict[str, Any] = {
        "id": market.id,
        "question": market.question,
        "slug": market.slug,
        "description": market.description,
        "category": market.category,
        "outcomes": list(market.outcomes),
        "prices": prices if valid else None,
        "yes_price": _quantize(market.yes_price, PRICE_PLACES) if valid else None,
        "last_raw_prices": prices,
        "volume": _quantize(market.volume, VOLUME_PLACES),
        "volume_24h": _quantize(market.volume_24h, VOLUME_PLACES),
        "liquidity": _quantize(market.liquidity, VOLUME_PLACES),
        "end_date": market.end_date,
        "closed_time": market.closed_time,
        "active": market.active,
        "closed": market.closed,
        "accepting_orders": market.accepting_orders,
        "uma_resolution_status": market.uma_resolution_status,
        "condition_id": market.condition_id,
        "neg_risk": market.neg_risk,
        "neg_risk_market_id": market.neg_risk_market_id,
        "group_item_title": market.group_item_title,
        "event_id": market.event_id,
        "event_slug": market.event_slug,
        "event_title": market.event_title,
        "first_seen_at": now,
        "updated_at": now,
        "prices_updated_at": now if valid else None,
        "status": "open",
    }
    return row


def _distinct(column: Any, value: Any, is_json: bool) -> Any:
    """``column IS DISTINCT FROM value``; JSON compared as text (PostgreSQL json has no =)."""
    if is_json:
        return cast(column, Text).is_distinct_from(cast(value, Text))
    return column.is_distinct_from(value)


def _quantize(value: Decimal | None, places: Decimal) -> Decimal | None:
    return None if value is None else value.quantize(places)
