"""Order-book state (mode book): the one writer of book marks and fee schedules, and the book
fetches of executions.

* A token's mark (``book_marks``) is the mid of its book, or the last trade when the spread is
  wider than 0.10 (:func:`arena.domain.book.mark`). A book that gives no usable mark, a 404
  or an outage leaves the stored mark as it was: the last valid mark holds.
* A market's fee schedule (``market_fees``) is fetched once per condition id, concurrently,
  used for :data:`FEE_MAX_AGE` and refreshed ahead of time in bounded numbers per call (see
  :func:`fee_schedules`), so a day's schedules never all expire at once. A failed fetch is
  never read as "no fee": the execution that needed it fails, the exit value that needed it
  is unknown.
* An execution fetches each token's live book with ``GET /book`` right before it executes; a
  404, an unusable book (:class:`~arena.errors.BookUnusable`: unreadable, unstorable, crossed
  or locked) or an unreachable CLOB fails that execution with its reason (never a fallback to
  Gamma's price), and an outage is written to the system log, where ``arena status`` finds it.
* Every book fetched carries the hash arena computed of it; books whose served hash differs
  are counted in the system log (:func:`record_hash_mismatches`), one row per fetch.

The exit values of held positions, which a snapshot computes from these books chunk by chunk,
are in :mod:`arena.jobs.held_books`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.domain.book import (
    BOOK_HASH_ALGORITHM,
    FeeSchedule,
    OrderBook,
    mark,
)
from arena.domain.states import BOOK_HASH_MISMATCH, CLOB_UNAVAILABLE, Job
from arena.domain.storable import storable_text
from arena.errors import BookMissing, BookUnusable, ClobError, NoBook
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import BookMark, MarketFee
from arena.store.system_log import LogMessage, log_event
from arena.store.upsert import dialect_insert

if TYPE_CHECKING:
    from arena.sources.clob import BookSource

log = logging.getLogger(__name__)

FEE_MAX_AGE = timedelta(days=1)  # a fee schedule older than this is not used
FEE_REFRESH_AGE = timedelta(hours=12)  # one older than this is fetched again ahead of time
# early refreshes per call: a snapshot every 10 minutes refreshes 72 x 300 = 21,600 schedules
# in the 12 hours before they expire (scale 10 holds about 17,800)
FEE_REFRESH_PER_CALL = 300
IN_CHUNK = 500  # ids per IN (...) list: far inside SQLite's and PostgreSQL's parameter limits
MISMATCH_EXAMPLES = 20  # books named in a hash-mismatch row


def store_marks(
    session: Session, books: Iterable[tuple[str, OrderBook]], now: datetime
) -> dict[str, Decimal]:
    """Upsert the mark of each (market id, book) that has one; returns them by token id."""
    rows = []
    for market_id, book in books:
        value = mark(book)
        if value is None:
            continue
        rows.append(
            {
                "token_id": book.token_id,
                "market_id": market_id,
                "mark": value,
                "best_bid": book.best_bid,
                "best_ask": book.best_ask,
                "book_hash": book.hash,
                "book_timestamp": book.timestamp,
                "observed_at": now,
            }
        )
    if rows:
        statement = dialect_insert(session, schema.book_marks)
        excluded = statement.excluded
        session.execute(
            statement.on_conflict_do_update(
                index_elements=["token_id"],
                set_={
                    name: excluded[name]
                    for name in (
                        "mark",
                        "best_bid",
                        "best_ask",
                        "book_hash",
                        "book_timestamp",
                        "observed_at",
                    )
                },
            ),
            rows,
        )
    return {row["token_id"]: row["mark"] for row in rows}  # type: ignore[misc]


def stored_marks(session: Session, token_ids: Iterable[str]) -> dict[str, Decimal]:
    """The last valid mark of each token that has one."""
    found: dict[str, Decimal] = {}
    for chunk in chunks(sorted(set(token_ids))):
        found.update(
            session.execute(
                select(BookMark.token_id, BookMark.mark).where(BookMark.token_id.in_(chunk))
            ).all()
        )
    return found


def fee_schedules(
    factory: sessionmaker[Session],
    source: BookSource,
    condition_ids: Iterable[str],
    now: datetime,
    *,
    early: int = FEE_REFRESH_PER_CALL,
) -> dict[str, FeeSchedule]:
    """The fee schedule of each market, from the store while fresh, else from the CLOB (and
    stored), concurrently (:meth:`~arena.sources.clob.ClobClient.fee_schedules`).

    A schedule is used for :data:`FEE_MAX_AGE`; up to ``early`` of the ones about to expire
    are fetched again ahead of time, as :func:`refresh_fees_ahead` does. A market whose schedule is
    unknown (never fetched, or expired and not fetched again) is absent from the answer: never
    "no fee". Raises :class:`ClobError` when the CLOB stopped answering before every such
    market was asked; what was fetched before is stored all the same.
    """
    wanted = sorted({cid for cid in condition_ids if cid})
    cached = stored_fees(factory, wanted)
    schedules = {cid: fee for cid, (fee, at) in cached.items() if now - at <= FEE_MAX_AGE}
    needed = [cid for cid in wanted if cid not in schedules]
    ahead = ageing(cached, now, early)
    if not needed and not ahead:
        return schedules
    batch = source.fee_schedules(needed + ahead)  # the needed ones first
    if batch.schedules:
        store_fees(factory, batch.schedules, now)
    schedules.update(batch.schedules)
    unasked = [cid for cid in needed if cid not in batch.schedules and cid not in batch.failed]
    if unasked:
        reasons = "; ".join(list(batch.failed.values())[:3])
        raise ClobError(
            f"fee schedules: gave up after {len(batch.failed)} failures, {len(unasked)} of "
            f"{len(needed)} markets not asked ({reasons})"
        )
    return schedules


def refresh_fees_ahead(
    factory: sessionmaker[Session],
    source: BookSource,
    condition_ids: Iterable[str],
    now: datetime,
    limit: int = FEE_REFRESH_PER_CALL,
) -> int:
    """Fetch again, ahead of their expiry, up to ``limit`` of these markets' stored schedules
    older than :data:`FEE_REFRESH_AGE`, the oldest first, so the schedules fetched together on
    one day do not all expire together on the next. A failed refresh keeps the stored
    schedule, which is still valid. Returns the number refreshed."""
    ahead = ageing(stored_fees(factory, sorted(set(condition_ids))), now, limit)
    if not ahead:
        return 0
    batch = source.fee_schedules(ahead)
    if batch.schedules:
        store_fees(factory, batch.schedules, now)
    return len(batch.schedules)


def ageing(
    cached: Mapping[str, tuple[FeeSchedule, datetime]], now: datetime, limit: int
) -> list[str]:
    """The ``limit`` oldest of the still valid schedules older than :data:`FEE_REFRESH_AGE`."""
    due = sorted(
        (at, cid) for cid, (_fee, at) in cached.items() if FEE_REFRESH_AGE < now - at <= FEE_MAX_AGE
    )
    return [cid for _at, cid in due[: max(0, limit)]]


def stored_fees(
    factory: sessionmaker[Session], condition_ids: Sequence[str]
) -> dict[str, tuple[FeeSchedule, datetime]]:
    """The stored schedule of each market that has one, with the time it was fetched."""
    found: dict[str, tuple[FeeSchedule, datetime]] = {}
    with factory() as session:
        for chunk in chunks([cid for cid in condition_ids if cid]):
            for cid, rate, exponent, fetched_at in session.execute(
                select(
                    MarketFee.condition_id,
                    MarketFee.rate,
                    MarketFee.exponent,
                    MarketFee.fetched_at,
                ).where(MarketFee.condition_id.in_(chunk))
            ):
                found[cid] = (FeeSchedule(rate, exponent), fetched_at)
    return found


def store_fees(
    factory: sessionmaker[Session], fees: Mapping[str, FeeSchedule], now: datetime
) -> None:
    """Upsert fetched fee schedules, stamped ``now``."""
    rows = [
        {"condition_id": cid, "rate": fee.rate, "exponent": fee.exponent, "fetched_at": now}
        for cid, fee in fees.items()
    ]
    with transaction(factory) as session:
        statement = dialect_insert(session, schema.market_fees)
        upsert = statement.on_conflict_do_update(
            index_elements=["condition_id"],
            set_={
                "rate": statement.excluded.rate,
                "exponent": statement.excluded.exponent,
                "fetched_at": statement.excluded.fetched_at,
            },
        )
        for start in range(0, len(rows), IN_CHUNK):
            session.execute(upsert, rows[start : start + IN_CHUNK])


def chunks(items: Sequence[str], size: int = IN_CHUNK) -> Iterator[Sequence[str]]:
    """``items`` in slices of ``size``: the most ids one ``IN (...)`` list holds."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


LIVE_BOOK_WORKERS = 8
"""Books fetched at once right before an execution (a decision trades a handful of markets;
each waits one CLOB round trip, not one per token in turn)."""


def live_books(
    factory: sessionmaker[Session],
    source: BookSource,
    tokens: Iterable[str],
    now: datetime,
    *,
    component: Job,
) -> dict[str, OrderBook | NoBook]:
    """Each token's book fetched now (``GET /book``, the tokens side by side), or the
    :class:`NoBook` that fails its execution: a 404, or the CLOB unreachable (logged as an
    outage)."""
    wanted = list(dict.fromkeys(tokens))
    outages: list[str] = []

    def fetch(token: str) -> OrderBook | NoBook:
        try:
            return source.book(token)
        except BookMissing:
            return NoBook(f"no order book for token {token} (404 at execution time)")
        except BookUnusable as exc:
            return NoBook(str(exc))
        except ClobError as exc:
            outages.append(str(exc))
            return NoBook(f"order book unavailable: {exc}", unavailable=True)

    if len(wanted) > 1:
        with ThreadPoolExecutor(min(len(wanted), LIVE_BOOK_WORKERS)) as pool:
            fetched = list(pool.map(fetch, wanted))
    else:
        fetched = [fetch(token) for token in wanted]
    books = dict(zip(wanted, fetched, strict=True))
    for outage in outages:
        record_outage(factory, now, component, outage)
    record_hash_mismatches(
        factory, now, component, [b for b in books.values() if isinstance(b, OrderBook)]
    )
    return books


def record_hash_mismatches(
    factory: sessionmaker[Session], now: datetime, component: Job, books: Iterable[OrderBook]
) -> int:
    """Log and count the books whose served hash differs from the hash computed of them
    (the stored proof is always the computed one): one system-log row per fetch, with the
    count in ``details``. Returns the count."""
    mismatched = [book for book in books if book.hash_mismatch]
    if not mismatched:
        return 0
    examples = [
        {
            "token_id": book.token_id,
            "served": None if book.served_hash is None else storable_text(book.served_hash, 80),
            "computed": book.hash,
        }
        for book in mismatched[:MISMATCH_EXAMPLES]
    ]
    first = examples[0]
    message = (
        f"{len(mismatched)} order book(s) served a hash other than the one computed of them; "
        f"token {first['token_id']}: served {first['served']!r}, computed {first['computed']}"
    )
    log.warning("book hash mismatch (%s): %s", component, message)
    details = {"count": len(mismatched), "algorithm": BOOK_HASH_ALGORITHM, "books": examples}
    log_event(factory, now, component, BOOK_HASH_MISMATCH, LogMessage(message, "WARNING", details))
    return len(mismatched)


def record_outage(
    factory: sessionmaker[Session], now: datetime, component: Job, error: str
) -> None:
    """Write a CLOB outage to the system log (``arena status`` lists recent ones)."""
    log.error("CLOB unavailable (%s): %s", component, error)
    message = f"Polymarket CLOB unavailable: {error}"
    log_event(factory, now, component, CLOB_UNAVAILABLE, LogMessage(message, "ERROR"))


def touch_fee(fees: Mapping[str, FeeSchedule], condition_id: str | None) -> FeeSchedule:
    """The fee schedule of a market fetched for an execution."""
    if condition_id is None or condition_id not in fees:
        raise NoBook(f"no fee schedule for condition {condition_id}", unavailable=True)
    return fees[condition_id]
