"""Market state: the one writer of the ``markets`` rows and their price history.

Every job that learns something from Gamma stores it here: the market sync (the listing and
the markets it refreshes by id), the refresh of held markets before a snapshot, the refresh of
the traded markets right before an execution, and settlement. One rule set (methodology, "The
market universe" and "Valuation and snapshots"):

* a market Gamma returned is stored, known before or not;
* ``prices``/``yes_price`` (the mark) only ever receive *valid* prices (as many as outcomes,
  each strictly inside (0, 1)) of a market that is still *open*. A missing or invalid fresh
  price never overwrites the last valid mark, and neither does any price of a closed market:
  once trading stops, Gamma's prices are resolution prices (a 50-50 result shows a "valid"
  ``["0.5", "0.5"]``), not marks;
* ``last_raw_prices`` keeps what Gamma last sent;
* a value Gamma left out (``None``: a missing UMA status, volume, date) never overwrites a
  known one; the state flags (``active``, ``closed``, ``neg_risk``) and outcomes always take
  Gamma's value;
* decimals are stored at their columns' scale (prices 1e-10, volumes 1e-6);
* ``prices_updated_at`` is when the mark last changed, and a ``market_prices`` history row is
  appended exactly then (compared with the stored mark).

Everything is one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE <something changed>`` per chunk
(SQLite and PostgreSQL), in id order, so a rerun with unchanged data writes nothing and two
writers at once serialise on the rows (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the upsert's
row locks) and never duplicate a history row.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, Text, bindparam, case, cast, func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock
from arena.domain.markets import MarketView, stored_prices
from arena.domain.states import MarketStatus
from arena.sources.gamma import MarketSource
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import Market, MarketPrice
from arena.store.queries import built_once, held_market_ids
from arena.store.upsert import dialect_insert, insert_ignore

log = logging.getLogger(__name__)

CHUNK = 400  # rows per statement: ~30 columns each stays far below SQLite's 32,766 parameters
VOLUME_PLACES = Decimal("0.000001")  # the scale of the Volume() columns
PRICE_PLACES = Decimal("0.0000000001")  # the scale of the Price() columns
# Columns a missing fresh value never overwrites (COALESCE(new, old)).
_KEEP_KNOWN = (
    "slug", "description", "volume", "volume_24h", "liquidity", "end_date",
    "closed_time", "accepting_orders", "uma_resolution_status", "condition_id",
    "neg_risk_market_id", "group_item_title", "event_id", "event_slug", "event_title",
    "last_raw_prices", "prices", "yes_price", "clob_token_ids",
)  # fmt: skip
_ALWAYS = ("outcomes", "active", "closed", "neg_risk")
# the category is derived once: the first one known stays (a later row without its event's tags
# would otherwise re-derive it from the title alone), so a market never moves between
# categories of a breakdown
_FIRST_KNOWN = ("category",)
_JSON = ("outcomes", "prices", "last_raw_prices", "clob_token_ids")
_SQL_NULL_JSON = JSON(none_as_null=True)  # a missing price list is SQL NULL, so COALESCE works


@dataclass
class StoredMarkets:
    """What one write did."""

    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    price_changes: int = 0  # market_prices rows appended

    @property
    def stored(self) -> int:
        return self.inserted + self.updated + self.unchanged


def store_markets(session: Session, markets: Iterable[MarketView], now: datetime) -> StoredMarkets:
    """Store fresh Gamma state of these markets by the rules above, in id order."""
    ordered = sorted({m.id: m for m in markets}.values(), key=lambda m: (len(m.id), m.id))
    counts = StoredMarkets()
    for start in range(0, len(ordered), CHUNK):
        chunk = ordered[start : start + CHUNK]
        # The stored marks, rows locked in id order (PostgreSQL; SQLite's BEGIN IMMEDIATE
        # already serialises writers): concurrent writers of markets queue instead of
        # deadlocking. FOR NO KEY UPDATE, not FOR UPDATE: inserts of rows that reference a
        # market (universe, trades, positions) hold FOR KEY SHARE on it, in their own order.
        stored: dict[str, Any] = dict(
            session.execute(
                select(Market.id, Market.prices)
                .where(Market.id.in_([m.id for m in chunk]))
                .order_by(Market.id)
                .with_for_update(key_share=True)
            ).all()
        )
        inserted, updated = _upsert(session, chunk, now, set(stored))
        counts.inserted += inserted
        counts.updated += updated
        # The mark before this write: the last history row where there is one (read after the
        # upsert holds the rows, so a concurrent writer's committed row is seen), else the
        # stored mark read above.
        stored.update(_last_history(session, [m.id for m in chunk]))
        counts.price_changes += insert_ignore(
            session,
            schema.market_prices,
            _price_history(chunk, stored, now),
            conflict=["market_id", "observed_at"],
        )
    counts.unchanged = len(ordered) - counts.inserted - counts.updated
    return counts


def refresh_markets(
    factory: sessionmaker[Session], source: MarketSource, ids: Iterable[str], clock: Clock
) -> int:
    """Fetch these markets and store their fresh state (right before an execution, so a market
    that closed since the freeze is seen closed). A Gamma failure keeps the stored state."""
    wanted = sorted(set(ids))
    if not wanted:
        return 0
    try:
        fresh = source.markets_by_ids(wanted, include_closed=True)
    except Exception as exc:
        log.warning("could not refresh markets %s before execution: %s", wanted[:10], exc)
        return 0
    with transaction(factory) as session:
        return store_markets(session, fresh.values(), clock.now()).stored


def refresh_held_markets(factory: sessionmaker[Session], source: MarketSource, clock: Clock) -> int:
    """Fetch every market with an OPEN position and store its fresh state; returns how many
    markets Gamma returned (and were stored). Missing markets are logged and left as they are.
    """
    with transaction(factory) as session:
        ids = list(session.scalars(held_market_ids()))
    if not ids:
        return 0
    fresh = source.markets_by_ids(ids, include_closed=True)
    missing = [market_id for market_id in ids if market_id not in fresh]
    if missing:
        log.warning(
            "gamma returned no data for %d held market(s): %s",
            len(missing),
            ", ".join(missing[:20]),
        )
    with transaction(factory) as session:
        return store_markets(session, fresh.values(), clock.now()).stored


def _upsert(
    session: Session, markets: Sequence[MarketView], now: datetime, existing: set[str]
) -> tuple[int, int]:
    """Insert new markets and update changed ones in one statement; (inserted, updated)."""
    dialect = session.get_bind().dialect.name
    statement = built_once(("markets upsert", dialect), lambda: _upsert_statement(session))
    written = set(session.scalars(statement, [market_row(market, now) for market in markets]))
    return len(written - existing), len(written & existing)


def _upsert_statement(session: Session) -> Any:
    """The markets upsert of the session's database; the rows are its parameters, so it is
    built once (:func:`built_once`: building it took 4 ms, once for each decision's refresh)."""
    table = schema.markets
    insert = dialect_insert(session, schema.markets).values(
        prices=bindparam("prices", type_=_SQL_NULL_JSON),
        last_raw_prices=bindparam("last_raw_prices", type_=_SQL_NULL_JSON),
        clob_token_ids=bindparam("clob_token_ids", type_=_SQL_NULL_JSON),
    )
    new = insert.excluded
    values: dict[str, Any] = {
        "question": func.coalesce(func.nullif(new.question, ""), table.c.question),
        **{name: func.coalesce(new[name], table.c[name]) for name in _KEEP_KNOWN},
        **{name: func.coalesce(table.c[name], new[name]) for name in _FIRST_KNOWN},
        **{name: new[name] for name in _ALWAYS},
    }
    changed = [_distinct(table.c[name], expr, name in _JSON) for name, expr in values.items()]
    prices_changed = new.prices.is_not(None) & _distinct(table.c.prices, new.prices, True)
    values["prices_updated_at"] = case(
        (prices_changed, new.prices_updated_at), else_=table.c.prices_updated_at
    )
    values["updated_at"] = new.updated_at
    return insert.on_conflict_do_update(
        index_elements=["id"], set_=values, where=or_(*changed)
    ).returning(table.c.id)


def _last_history(session: Session, ids: list[str]) -> dict[str, Any]:
    """The prices of each market's newest ``market_prices`` row."""
    latest = (
        select(MarketPrice.market_id, func.max(MarketPrice.observed_at).label("last"))
        .where(MarketPrice.market_id.in_(ids))
        .group_by(MarketPrice.market_id)
        .subquery()
    )
    return dict(
        session.execute(
            select(MarketPrice.market_id, MarketPrice.prices).join(
                latest,
                (MarketPrice.market_id == latest.c.market_id)
                & (MarketPrice.observed_at == latest.c.last),
            )
        ).all()
    )


def _price_history(
    markets: Sequence[MarketView], stored: dict[str, Any], now: datetime
) -> list[dict[str, Any]]:
    """A ``market_prices`` row for each market whose mark differs from the stored one."""
    return [
        {
            "market_id": market.id,
            "observed_at": now,
            "prices": [str(p) for p in market.prices or ()],
            "yes_price": _quantize(market.yes_price, PRICE_PLACES),
            "volume": _quantize(market.volume, VOLUME_PLACES),
        }
        for market in markets
        if _mark(market) is not None and stored_prices(stored.get(market.id)) != market.prices
    ]


def _mark(market: MarketView) -> tuple[Decimal, ...] | None:
    """The prices that may become the mark: valid prices of an open market, else None."""
    if market.has_valid_prices and market.prices is not None and not market.closed:
        return market.prices
    return None


def market_row(market: MarketView, now: datetime) -> dict[str, Any]:
    """The ``markets`` row for a freshly parsed market (SQL NULL where Gamma gave nothing)."""
    mark = _mark(market)
    prices = [str(p) for p in market.prices] if market.prices is not None else None
    return {
        "id": market.id,
        "question": market.question,
        "slug": market.slug,
        "description": market.description,
        "category": market.category,
        "outcomes": list(market.outcomes),
        "prices": prices if mark is not None else None,
        "yes_price": _quantize(market.yes_price, PRICE_PLACES) if mark is not None else None,
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
        # index-aligned with outcomes; decimal strings end to end (clob-api.md, pitfall 4)
        "clob_token_ids": list(market.clob_token_ids)
        if len(market.clob_token_ids) == len(market.outcomes)
        else None,
        "neg_risk": market.neg_risk,
        "neg_risk_market_id": market.neg_risk_market_id,
        "group_item_title": market.group_item_title,
        "event_id": market.event_id,
        "event_slug": market.event_slug,
        "event_title": market.event_title,
        "first_seen_at": now,
        "updated_at": now,
        "prices_updated_at": now if mark is not None else None,
        "status": MarketStatus.OPEN,
    }


def _distinct(column: Any, value: Any, is_json: bool) -> Any:
    """``column IS DISTINCT FROM value``; JSON compared as text (PostgreSQL json has no =)."""
    if is_json:
        return cast(column, Text).is_distinct_from(cast(value, Text))
    return column.is_distinct_from(value)


def _quantize(value: Decimal | None, places: Decimal) -> Decimal | None:
    return None if value is None else value.quantize(places)
