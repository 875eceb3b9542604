"""Order-book state (mode book): the one writer of book marks and fee schedules, and the book
fetches of executions.

* A token's mark (``book_marks``) is the mid of its book, or the last trade when the spread is
  wider than 0.10 (:func:`arena.domain.book.mark`). A book that gives no usable mark, a 404
  or an outage leaves the stored mark as it was: the last valid mark holds.
* A market's fee schedule (``market_fees``) is fetched once per condition id and refreshed
  after :data:`FEE_MAX_AGE`. A failed fetch is never read as "no fee": the execution that
  needed it fails instead.
* An execution fetches each token's live book with ``GET /book`` right before it executes; a
  404, an unusable book (:class:`~arena.errors.BookUnusable`: unreadable, unstorable, crossed
  or locked) or an unreachable CLOB fails that execution with its reason (never a fallback to
  Gamma's price), and an outage is written to the system log, where ``arena status`` finds it.
* Every book fetched carries the hash arena computed of it; books whose served hash differs
  are counted in the system log (:func:`record_hash_mismatches`), one row per fetch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.domain.book import (
    BOOK_HASH_ALGORITHM,
    FeeSchedule,
    OrderBook,
    Pricing,
    exit_proceeds,
    mark,
)
from arena.domain.ledger import ZERO
from arena.domain.markets import side_index
from arena.domain.states import BOOK_HASH_MISMATCH, CLOB_UNAVAILABLE, PositionStatus
from arena.domain.storable import storable_text
from arena.errors import BookMissing, BookUnusable, ClobError, ExecutionError, NoBook
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import BookMark, Cohort, Market, MarketFee, Position, SystemLog
from arena.store.upsert import dialect_insert

if TYPE_CHECKING:
    from arena.sources.clob import BookSource

log = logging.getLogger(__name__)

FEE_MAX_AGE = timedelta(days=1)
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
    wanted = sorted(set(token_ids))
    found: dict[str, Decimal] = {}
    for start in range(0, len(wanted), 500):
        found.update(
            session.execute(
                select(BookMark.token_id, BookMark.mark).where(
                    BookMark.token_id.in_(wanted[start : start + 500])
                )
            ).all()
        )
    return found


def fee_schedules(
    factory: sessionmaker[Session],
    source: BookSource,
    condition_ids: Iterable[str],
    now: datetime,
) -> dict[str, FeeSchedule]:
    """The fee schedule of each market, from the store while fresh, else from the CLOB (and
    stored). Raises :class:`ClobError` when one cannot be fetched."""
    wanted = sorted({cid for cid in condition_ids if cid})
    if not wanted:
        return {}
    with factory() as session:
        cached = {
            row.condition_id: row
            for row in session.scalars(select(MarketFee).where(MarketFee.condition_id.in_(wanted)))
        }
    schedules = {
        cid: FeeSchedule(row.rate, row.exponent)
        for cid, row in cached.items()
        if now - row.fetched_at <= FEE_MAX_AGE
    }
    fetched = {cid: source.fee_schedule(cid) for cid in wanted if cid not in schedules}
    if fetched:
        with transaction(factory) as session:
            statement = dialect_insert(session, schema.market_fees)
            session.execute(
                statement.on_conflict_do_update(
                    index_elements=["condition_id"],
                    set_={
                        "rate": statement.excluded.rate,
                        "exponent": statement.excluded.exponent,
                        "fetched_at": statement.excluded.fetched_at,
                    },
                ),
                [
                    {
                        "condition_id": cid,
                        "rate": fee.rate,
                        "exponent": fee.exponent,
                        "fetched_at": now,
                    }
                    for cid, fee in fetched.items()
                ],
            )
    return {**schedules, **fetched}


def live_books(
    factory: sessionmaker[Session],
    source: BookSource,
    tokens: Iterable[str],
    now: datetime,
    *,
    component: str,
) -> dict[str, OrderBook | NoBook]:
    """Each token's book fetched now (``GET /book``), or the :class:`NoBook` that fails its
    execution: a 404, or the CLOB unreachable (logged as an outage)."""
    books: dict[str, OrderBook | NoBook] = {}
    for token in dict.fromkeys(tokens):
        try:
            books[token] = source.book(token)
        except BookMissing:
            books[token] = NoBook(f"no order book for token {token} (404 at execution time)")
        except BookUnusable as exc:
            books[token] = NoBook(str(exc))
        except ClobError as exc:
            books[token] = NoBook(f"order book unavailable: {exc}", unavailable=True)
            record_outage(factory, now, component, str(exc))
    record_hash_mismatches(
        factory, now, component, [b for b in books.values() if isinstance(b, OrderBook)]
    )
    return books


def record_hash_mismatches(
    factory: sessionmaker[Session], now: datetime, component: str, books: Iterable[OrderBook]
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
    try:
        with transaction(factory) as session:
            session.add(
                SystemLog(
                    at=now,
                    level="WARNING",
                    source=component,
                    event=BOOK_HASH_MISMATCH,
                    message=message,
                    details={
                        "count": len(mismatched),
                        "algorithm": BOOK_HASH_ALGORITHM,
                        "books": examples,
                    },
                )
            )
    except Exception:  # the mismatch is already logged; a failed log row must not stop a run
        log.exception("could not record the book hash mismatch in the system log")
    return len(mismatched)


def record_outage(
    factory: sessionmaker[Session], now: datetime, component: str, error: str
) -> None:
    """Write a CLOB outage to the system log (``arena status`` lists recent ones)."""
    log.error("CLOB unavailable (%s): %s", component, error)
    try:
        with transaction(factory) as session:
            session.add(
                SystemLog(
                    at=now,
                    level="ERROR",
                    source=component,
                    event=CLOB_UNAVAILABLE,
                    message=f"Polymarket CLOB unavailable: {error}"[:2000],
                    details=None,
                )
            )
    except Exception:  # the outage is already logged; a failed log row must not hide it
        log.exception("could not record the CLOB outage in the system log")


def touch_fee(fees: Mapping[str, FeeSchedule], condition_id: str | None) -> FeeSchedule:
    """The fee schedule of a market fetched for an execution."""
    if condition_id is None or condition_id not in fees:
        raise NoBook(f"no fee schedule for condition {condition_id}", unavailable=True)
    return fees[condition_id]


@dataclass
class HeldBooks:
    """The books of every token held in a mode-book position, fetched for one snapshot."""

    books: dict[str, OrderBook] = field(default_factory=dict)  # by token id
    fees: dict[str, FeeSchedule] = field(default_factory=dict)  # by condition id
    tokens: dict[tuple[str, str], tuple[str, str | None]] = field(default_factory=dict)
    missing: int = 0  # tokens without a book (404 or silently left out of the batch)
    error: str | None = None  # the CLOB could not be reached: no exit values this time

    def exit_proceeds(self, market_id: str, side: str, shares: Decimal) -> Decimal | None:
        """What selling these shares into the current bids brings (0 without a book), or
        None when it is unknown (an outage, an unknown token or fee)."""
        if self.error is not None or (market_id, side) not in self.tokens:
            return None
        token, condition_id = self.tokens[(market_id, side)]
        book = self.books.get(token)
        if book is None:
            return ZERO
        fee = self.fees.get(condition_id or "")
        return None if fee is None else exit_proceeds(book, shares, fee)


def fetch_held_books(
    factory: sessionmaker[Session], source: BookSource, now: datetime
) -> HeldBooks:
    """Fetch in batch (``POST /books``) the book of every token held in an open position of a
    mode-book cohort, store their marks, and load their fee schedules. An outage is recorded
    and reported, never raised: the snapshot then values at the last valid marks."""
    held = HeldBooks()
    with factory() as session:
        held_sides = (
            select(Position.market_id, Position.side)
            .join(Cohort, Cohort.id == Position.cohort_id)
            .where(Position.status == PositionStatus.OPEN, Cohort.pricing == Pricing.BOOK)
            .distinct()
            .subquery()
        )
        rows = session.execute(
            select(
                held_sides.c.market_id,
                held_sides.c.side,
                Market.outcomes,
                Market.clob_token_ids,
                Market.condition_id,
            ).join(Market, Market.id == held_sides.c.market_id)
        ).all()
    for market_id, side, outcomes, tokens, condition_id in rows:
        if tokens and len(tokens) == len(outcomes):
            with contextlib.suppress(ExecutionError):
                index = side_index(list(outcomes), side)
                held.tokens[(market_id, side)] = (str(tokens[index]), condition_id)
    if not held.tokens:
        return held
    by_token = {token: market_id for (market_id, _s), (token, _c) in held.tokens.items()}
    try:
        answer = source.books(list(by_token))
        # the fees of the markets that still have a book: one the CLOB no longer knows has
        # no bids to sell into (and its 404 on /clob-markets is not an outage)
        booked = [cid for token, cid in held.tokens.values() if cid and token in answer.books]
        held.fees = fee_schedules(factory, source, booked, now)
    except ClobError as exc:
        held.error = str(exc)
        record_outage(factory, now, "snapshot", str(exc))
        return held
    held.books = dict(answer.books)
    held.missing = len(set(by_token) - set(held.books))
    record_hash_mismatches(factory, now, "snapshot", held.books.values())
    with transaction(factory) as session:
        store_marks(
            session, [(by_token[t], b) for t, b in held.books.items() if t in by_token], now
        )
    return held
