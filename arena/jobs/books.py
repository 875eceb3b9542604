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
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from arena.domain.states import BOOK_HASH_MISMATCH, CLOB_UNAVAILABLE, CohortStatus, PositionStatus
from arena.domain.storable import storable_text
from arena.errors import BookMissing, BookUnusable, ClobError, ExecutionError, NoBook
from arena.sources.clob import MAX_BATCH
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import BookMark, Cohort, Market, MarketFee, Position, SystemLog
from arena.store.upsert import dialect_insert

if TYPE_CHECKING:
    from arena.sources.clob import BookBatch, BookSource

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
class AgentExit:
    """One agent's exit proceeds, summed over the positions they were computed for, and the
    seal of those positions (their count and a sum of hashes of ``(position id, shares)``)."""

    proceeds: Decimal = ZERO
    count: int = 0
    seal: int = 0
    unknown: bool = False  # a position's fee schedule is unknown

    def add(self, position_id: int, shares: Decimal, proceeds: Decimal | None) -> None:
        self.count, self.seal = self.count + 1, seal(self.seal, position_id, shares)
        if proceeds is None:
            self.unknown = True
        else:
            self.proceeds += proceeds


def seal(current: int, position_id: int, shares: Decimal) -> int:
    """Add one position to a seal (order-free, so two reads of the same positions agree)."""
    return (current + hash((position_id, shares))) % SEAL_MODULUS


SEAL_MODULUS = 2**64


@dataclass
class HeldBooks:
    """The exit proceeds of every open mode-book position, computed for one snapshot market
    chunk by market chunk (so no more than one chunk's books is ever held)."""

    tokens: dict[tuple[str, str], str] = field(default_factory=dict)  # (market, side) -> token
    exits: dict[int, AgentExit] = field(default_factory=dict)  # by agent id
    fetched: int = 0  # books fetched
    missing: int = 0  # tokens without a book (404 or silently left out of the batch)
    error: str | None = None  # the CLOB could not be reached: no exit values this time

    def exit_value(self, agent_id: int, cash: Decimal, count: int, sealed: int) -> Decimal | None:
        """The agent's cash plus its exit proceeds, when they were computed for exactly the
        positions the valuation read (``count`` and ``sealed``, see :func:`seal`); else None:
        unknown (an outage, an unknown token or fee, or a trade between the two reads)."""
        if self.error is not None:
            return None
        found = self.exits.get(agent_id, AgentExit())
        if found.unknown or (found.count, found.seal) != (count, sealed):
            return None
        return cash + found.proceeds


def fetch_held_books(
    factory: sessionmaker[Session], source: BookSource, now: datetime
) -> HeldBooks:
    """Value every open position of a mode-book cohort at exit, one chunk of markets at a time:
    fetch the chunk's books in batch (``POST /books``), store their marks, load the fee
    schedules of its markets that still have a book, and sell each of its positions into the
    bids. Only per-agent sums outlive a chunk, so memory does not grow with the books held.
    An outage is recorded and reported, never raised: the snapshot then values at the last
    valid marks."""
    held = HeldBooks()
    with factory() as session:
        cohorts = set(
            session.scalars(
                select(Cohort.id).where(
                    Cohort.pricing == Pricing.BOOK,
                    Cohort.status != CohortStatus.COMPLETED,
                    Cohort.week_start <= now,
                )
            )
        )
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
    markets: dict[str, tuple[str | None, dict[str, str]]] = {}  # id -> (condition, side tokens)
    for market_id, side, outcomes, tokens, condition_id in rows:
        if tokens and len(tokens) == len(outcomes):
            with contextlib.suppress(ExecutionError):
                token = str(tokens[side_index(list(outcomes), side)])
                held.tokens[(market_id, side)] = token
                markets.setdefault(market_id, (condition_id, {}))[1][side] = token
    if not markets:
        return held
    try:
        conditions = [cid for cid, _sides in markets.values() if cid]
        refresh_fees_ahead(factory, source, conditions, now, FEE_REFRESH_PER_CALL)
        chunks = [{m: markets[m] for m in chunk} for chunk in market_chunks(markets)]
        # the next chunk's books and fees are fetched while this one is valued: two chunks of
        # books in memory at most
        with ThreadPoolExecutor(1, thread_name_prefix="clob-books") as pool:
            coming = pool.submit(fetch_chunk, factory, source, now, chunks[0])
            for index, chunk in enumerate(chunks):
                answer, fees = coming.result()
                if index + 1 < len(chunks):
                    coming = pool.submit(fetch_chunk, factory, source, now, chunks[index + 1])
                value_chunk(factory, now, held, chunk, answer, fees, cohorts)
    except ClobError as exc:
        held.error = str(exc)
        record_outage(factory, now, "snapshot", str(exc))
    return held


def market_chunks(markets: Mapping[str, tuple[str | None, dict[str, str]]]) -> Iterator[list[str]]:
    """Market ids in chunks whose tokens fill one ``POST /books`` request at most."""
    chunk: list[str] = []
    size = 0
    for market_id, (_cid, sides) in markets.items():
        if chunk and size + len(sides) > MAX_BATCH:
            yield chunk
            chunk, size = [], 0
        chunk.append(market_id)
        size += len(sides)
    if chunk:
        yield chunk


def chunk_tokens(markets: Mapping[str, tuple[str | None, dict[str, str]]]) -> list[str]:
    return [token for _cid, sides in markets.values() for token in sides.values()]


def fetch_chunk(
    factory: sessionmaker[Session],
    source: BookSource,
    now: datetime,
    markets: Mapping[str, tuple[str | None, dict[str, str]]],
) -> tuple[BookBatch, dict[str, FeeSchedule]]:
    """One chunk's books (``POST /books``) and the fee schedules of its markets that still
    have a book: one the CLOB no longer knows has no bids to sell into (and its 404 on
    ``/clob-markets`` is not an outage). Raises :class:`ClobError` when the CLOB cannot be
    reached."""
    answer = source.books(chunk_tokens(markets))
    booked = {
        cid
        for cid, sides in markets.values()
        if cid and any(token in answer.books for token in sides.values())
    }
    return answer, fee_schedules(factory, source, sorted(booked), now, early=0)


def value_chunk(
    factory: sessionmaker[Session],
    now: datetime,
    held: HeldBooks,
    markets: Mapping[str, tuple[str | None, dict[str, str]]],
    answer: BookBatch,
    fees: Mapping[str, FeeSchedule],
    cohorts: set[int],
) -> None:
    """Store the marks of one chunk's books and add the exit proceeds of its positions in
    ``cohorts`` (the unfinished mode-book ones) to ``held``."""
    market_of = {token: m for m, (_cid, sides) in markets.items() for token in sides.values()}
    held.fetched += len(answer.books)
    held.missing += len(set(market_of) - set(answer.books))
    record_hash_mismatches(factory, now, "snapshot", answer.books.values())
    with transaction(factory) as session:
        store_marks(
            session, [(market_of[t], b) for t, b in answer.books.items() if t in market_of], now
        )
    with factory() as session:  # Core rows, on the market index; the cohorts are known
        positions = (
            session.connection()
            .execute(
                select(
                    Position.id,
                    Position.agent_id,
                    Position.market_id,
                    Position.side,
                    Position.shares,
                    Position.cohort_id,
                ).where(
                    Position.status == PositionStatus.OPEN, Position.market_id.in_(list(markets))
                )
            )
            .all()
        )
    for position_id, agent_id, market_id, side, shares, cohort_id in positions:
        if cohort_id not in cohorts:
            continue  # not a mode-book cohort, or one that is finished
        token = held.tokens.get((market_id, side))
        if token is None:
            continue  # its side has no token: the valuation finds its exit value unknown
        book = answer.books.get(token)
        condition_id = markets[market_id][0]
        fee = fees.get(condition_id or "")
        if book is None:
            proceeds: Decimal | None = ZERO  # no book: no bids to sell into
        else:
            proceeds = None if fee is None else exit_proceeds(book, shares, fee)
        held.exits.setdefault(agent_id, AgentExit()).add(position_id, shares, proceeds)
