"""Refresh the markets the arena holds: fresh Gamma state onto the ``markets`` rows.

Used before every snapshot (methodology, "Valuation and snapshots") and by settlement. The rule
that makes valuation safe lives here: ``markets.prices`` only ever receives *valid* prices (as
many as outcomes, each strictly inside (0, 1)) of a market that is still *open*. A missing or
invalid fresh price (a row without prices, ``["1", "0"]``) never overwrites the last valid
mark, and neither does any price of a closed market: once trading stops, Gamma's prices are
resolution prices (a 50-50 result shows a "valid" ``["0.5", "0.5"]``, a proposal ``["1",
"0"]``), not marks, so a closed-unsettled market keeps the last mark it traded at.
``last_raw_prices`` always records what Gamma last sent. A ``market_prices`` history row is
appended only when the stored mark changed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock
from arena.domain.markets import Market
from arena.store.db import transaction
from arena.store.models import Market as MarketRow
from arena.store.models import MarketPrice, Position
from arena.store.upsert import insert_ignore

log = logging.getLogger(__name__)

INSERT_CHUNK = 500


class MarketSource(Protocol):
    """What the jobs need from Gamma: markets by id, closed ones included.

    :class:`arena.sources.gamma.GammaClient` implements it; tests pass in-memory fakes. A
    market Gamma does not know (404, gone) is simply absent from the result.
    """

    def markets_by_ids(
        self, ids: Iterable[str], include_closed: bool = True
    ) -> dict[str, Market]: ...


def held_market_ids(session: Session) -> list[str]:
    """Ids of the markets with at least one OPEN position, sorted."""
    statement = (
        select(Position.market_id)
        .where(Position.status == "OPEN")
        .distinct()
        .order_by(Position.market_id)
    )
    return list(session.execute(statement).scalars())


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
        return store_fresh_markets(session, fresh, clock.now())


def refresh_held_markets(factory: sessionmaker[Session], source: MarketSource, clock: Clock) -> int:
    """Fetch every market with an OPEN position and store its fresh state; returns how many
    markets Gamma returned (and were stored). Missing markets are logged and left as they are.
    """
    with transaction(factory) as session:
        ids = held_market_ids(session)
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
        stored = store_fresh_markets(session, fresh, clock.now())
    return stored


def store_fresh_markets(session: Session, fresh: Mapping[str, Market], now: datetime) -> int:
    """Write fresh Gamma state onto already known ``markets`` rows (unknown ids are skipped).

    Returns the number of rows updated. Status fields (closed, active, accepting orders, UMA
    status) always take Gamma's value; prices only when valid and the market is open; dates
    and volumes only when Gamma gave one. Bulk statements: one UPDATE batch per key set, one
    history INSERT.
    """
    if not fresh:
        return 0
    # Rows locked in id order (PostgreSQL) so concurrent writers of markets queue, not deadlock.
    known: dict[str, Any] = dict(
        session.execute(
            select(MarketRow.id, MarketRow.prices)
            .where(MarketRow.id.in_(list(fresh)))
            .order_by(MarketRow.id)
            .with_for_update()
        ).all()
    )
    updates: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    history: list[dict[str, Any]] = []
    for market_id, market in fresh.items():
        if market_id not in known:
            continue
        values = _row_values(market, now)
        if market.has_valid_prices and market.prices is not None and not market.closed:
            values["prices"] = [str(price) for price in market.prices]
            values["yes_price"] = market.yes_price
            values["prices_updated_at"] = now
            if _decimals(known[market_id]) != list(market.prices):
                history.append(
                    {
                        "market_id": market_id,
                        "observed_at": now,
                        "prices": values["prices"],
                        "yes_price": market.yes_price,
                        "volume": market.volume,
                    }
                )
        updates.setdefault(tuple(sorted(values)), []).append(values)
    for rows in updates.values():
        session.execute(update(MarketRow), rows)
    for start in range(0, len(history), INSERT_CHUNK):
        insert_ignore(
            session,
            MarketPrice.__table__,  # type: ignore[arg-type]
            history[start : start + INSERT_CHUNK],
            conflict=["market_id", "observed_at"],
        )
    return sum(len(rows) for rows in updates.values())


def _row_values(market: Market, now: datetime) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": market.id,
        "last_raw_prices": None if market.prices is None else [str(p) for p in market.prices],
        "closed": market.closed,
        "active": market.active,
        "uma_resolution_status": market.uma_resolution_status,
        "updated_at": now,
    }
    optional = {
        "accepting_orders": market.accepting_orders,
        "closed_time": market.closed_time,
        "end_date": market.end_date,
        "volume": market.volume,
        "volume_24h": market.volume_24h,
        "liquidity": market.liquidity,
    }
    values.update({key: value for key, value in optional.items() if value is not None})
    return values


def _decimals(prices: list[Any] | None) -> list[Decimal] | None:
    if prices is None:
        return None
    return [Decimal(str(price)) for price in prices]
