"""The exit value of held order-book positions (pricing mode ``book``), for one snapshot.

Every token held in an open position of an unfinished mode-book cohort is fetched in batches
(``POST /books``), one chunk of markets at a time, with the fee schedules of the chunk's
markets; the chunk's marks are stored (:func:`arena.jobs.books.store_marks`) and the exit
proceeds of its positions summed per agent before the next chunk's books arrive, so no more
than two chunks of books are ever held. The snapshot then takes an agent's exit value only if
it was computed for exactly the positions its own consistent read finds (:func:`seal`). An
outage is recorded and reported, never raised: the snapshot then values at the last valid
marks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.domain.book import FeeSchedule, Pricing, exit_proceeds
from arena.domain.ledger import ZERO
from arena.domain.markets import side_index
from arena.domain.states import CohortStatus, Job, PositionStatus
from arena.errors import ClobError, ExecutionError
from arena.jobs.books import (
    FEE_REFRESH_PER_CALL,
    fee_schedules,
    record_hash_mismatches,
    record_outage,
    refresh_fees_ahead,
    store_marks,
)
from arena.sources.clob import MAX_BATCH
from arena.store.db import transaction
from arena.store.models import Cohort, Market, Position

if TYPE_CHECKING:
    from arena.sources.clob import BookBatch, BookSource


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
                fetched = coming.result()
                if index + 1 < len(chunks):
                    coming = pool.submit(fetch_chunk, factory, source, now, chunks[index + 1])
                value_chunk(factory, now, held, chunk, fetched, cohorts)
    except ClobError as exc:
        held.error = str(exc)
        record_outage(factory, now, Job.SNAPSHOT, str(exc))
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


@dataclass(frozen=True)
class FetchedChunk:
    """One chunk's books, and the fee schedules of its markets that still have a book."""

    answer: BookBatch
    fees: dict[str, FeeSchedule]


def fetch_chunk(
    factory: sessionmaker[Session],
    source: BookSource,
    now: datetime,
    markets: Mapping[str, tuple[str | None, dict[str, str]]],
) -> FetchedChunk:
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
    return FetchedChunk(answer, fee_schedules(factory, source, sorted(booked), now, early=0))


def value_chunk(
    factory: sessionmaker[Session],
    now: datetime,
    held: HeldBooks,
    markets: Mapping[str, tuple[str | None, dict[str, str]]],
    fetched: FetchedChunk,
    cohorts: set[int],
) -> None:
    """Store the marks of one chunk's books and add the exit proceeds of its positions in
    ``cohorts`` (the unfinished mode-book ones) to ``held``."""
    answer, fees = fetched.answer, fetched.fees
    market_of = {token: m for m, (_cid, sides) in markets.items() for token in sides.values()}
    held.fetched += len(answer.books)
    held.missing += len(set(market_of) - set(answer.books))
    record_hash_mismatches(factory, now, Job.SNAPSHOT, answer.books.values())
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
