"""Appending to the record chain, in the transaction of what is recorded.

:func:`append` locks the chain's head (``record_head``, one row: ``FOR UPDATE`` on PostgreSQL;
SQLite's ``BEGIN IMMEDIATE`` already serialises writers), so concurrent appends queue and the
chain stays one line. The head is always the last lock a transaction takes, after its decision,
agents, markets and positions, so appending adds no lock cycle.

The rows a record is built from are read through the export's own queries
(:func:`arena.export.values.text_rows`), so a published dataset rebuilds the same record
(:mod:`arena.record.records`).

:func:`chain_backlog` is the genesis pass: it chains whatever is stored and not yet chained
(everything stored before the chain existed), in id order, marked "chained after the fact".
Such records prove nothing about when their content was written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import iso_utc
from arena.domain.states import DecisionStatus, PositionStatus
from arena.export.tables import (
    AGENTS,
    ATTEMPTS,
    BRIER_SCORES,
    CITATIONS,
    COHORTS,
    DECISIONS,
    FORECASTS,
    POSITIONS,
    TRADES,
    UNIVERSE_MARKETS,
)
from arena.export.values import text_rows, text_rows_of
from arena.record.canonical import GENESIS_HASH, canonical, link_hash
from arena.record.records import (
    DECISION_COLUMNS,
    FORECAST_COLUMNS,
    LINEAGE_COLUMNS,
    TRADE_COLUMNS,
    RecordKind,
    assemble_decision,
    attempt_entry,
    by_attempt,
    cohort_body,
    envelope,
    pick,
    settlement_body,
    universe_hash,
)
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import (
    Agent,
    BrierScore,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionUniverse,
    Forecast,
    Position,
    Record,
    RecordHead,
    Trade,
    UniverseMarket,
)
from arena.store.upsert import insert_ignore

log = logging.getLogger(__name__)

HEAD_ID = 1
SETTLED = (PositionStatus.SETTLED, PositionStatus.CANCELLED)
_UNIVERSE_HASHES = "arena.record.universe_hashes"


@dataclass(frozen=True)
class ChainHead:
    seq: int
    hash: str


def head(session: Session) -> ChainHead:
    """The chain's head as this transaction sees it (seq 0: the chain is empty)."""
    row = session.get(RecordHead, HEAD_ID)
    return ChainHead(0, GENESIS_HASH) if row is None else ChainHead(row.seq, row.hash)


def append(
    session: Session,
    kind: RecordKind,
    subject_id: int,
    body: dict[str, Any],
    now: datetime,
    *,
    after_the_fact: bool = False,
) -> Record:
    """Append one record after the head (locked until the transaction ends) and return it."""
    lock = select(RecordHead).where(RecordHead.id == HEAD_ID).with_for_update()
    locked = session.execute(lock).scalar_one_or_none()
    if locked is None:  # the migration writes it; a database emptied by hand lost it
        _restore_head(session)
        locked = session.execute(lock).scalar_one()
    seq = locked.seq + 1
    data = canonical(envelope(seq, kind, subject_id, iso_utc(now), after_the_fact, body))
    record = Record(
        seq=seq,
        kind=str(kind),
        subject_id=subject_id,
        recorded_at=now,
        after_the_fact=after_the_fact,
        prev_hash=locked.hash,
        hash=link_hash(locked.hash, data),
        body=data.decode("utf-8"),
    )
    session.add(record)
    locked.seq, locked.hash = seq, record.hash
    session.flush()
    return record


def _restore_head(session: Session) -> None:
    """Write the head row back from the last record (or the genesis hash when there is none)."""
    last = session.execute(select(Record.seq, Record.hash).order_by(Record.seq.desc()).limit(1))
    seq, hash_ = last.one_or_none() or (0, GENESIS_HASH)
    insert_ignore(session, schema.record_head, {"id": HEAD_ID, "seq": seq, "hash": hash_}, ["id"])


# -- the records: built from the export's rows --------------------------------------------------


def record_decision(
    session: Session, decision_id: int, now: datetime, *, after_the_fact: bool = False
) -> Record:
    """Chain a completed decision (call in the transaction that completes it)."""
    (decision,) = text_rows_of(session, DECISIONS, Decision.id, decision_id)
    (agent,) = text_rows_of(session, AGENTS, Agent.id, decision["agent_id"])
    attempts = text_rows_of(session, ATTEMPTS, DecisionAttempt.decision_id, decision_id)
    cited = by_attempt(text_rows_of(session, CITATIONS, DecisionAttempt.decision_id, decision_id))
    forecasts = text_rows_of(session, FORECASTS, Forecast.decision_id, decision_id)
    trades = text_rows_of(session, TRADES, Trade.decision_id, decision_id)
    body = assemble_decision(  # the universe hashed once per connection, not per decision
        pick(decision, DECISION_COLUMNS),
        pick(agent, LINEAGE_COLUMNS),
        _universe(session, decision["universe_id"]),
        [attempt_entry(row, cited.get(row["attempt_id"], ())) for row in attempts],
        [pick(row, FORECAST_COLUMNS) for row in forecasts],
        [pick(row, TRADE_COLUMNS) for row in trades],
    )
    return append(
        session, RecordKind.DECISION, decision_id, body, now, after_the_fact=after_the_fact
    )


def seal_universe(session: Session, universe_id: int) -> str | None:
    """Hash a universe just frozen (in its transaction) and store the hash on it."""
    rows = text_rows(session, UNIVERSE_MARKETS, UniverseMarket.universe_id == universe_id)
    sha256 = universe_hash(rows) if rows else None
    universe = session.get(DecisionUniverse, universe_id)
    if universe is not None:
        universe.content_sha256 = sha256
    return sha256


def _universe(session: Session, universe_id: int | None) -> tuple[int, str | None]:
    """(markets, sha256) of a frozen universe: the hash stored when it was frozen, else (a
    universe frozen before the chain) its hash computed; either read once per database
    connection, as universes never change once written."""
    if universe_id is None:
        return 0, None
    cache: dict[int, tuple[int, str | None]] = session.connection().info.setdefault(
        _UNIVERSE_HASHES, {}
    )
    if universe_id in cache:
        return cache[universe_id]
    sealed = session.execute(
        select(DecisionUniverse.content_sha256, func.count(UniverseMarket.market_id))
        .join(UniverseMarket, UniverseMarket.universe_id == DecisionUniverse.id, isouter=True)
        .where(DecisionUniverse.id == universe_id)
        .group_by(DecisionUniverse.content_sha256)
    ).one_or_none()
    if sealed is not None and sealed[0] is not None:
        cache[universe_id] = (int(sealed[1]), sealed[0])
    else:
        rows = text_rows(session, UNIVERSE_MARKETS, UniverseMarket.universe_id == universe_id)
        cache[universe_id] = (len(rows), universe_hash(rows) if rows else None)
    return cache[universe_id]


def record_settlements(
    session: Session, position_ids: Iterable[int], now: datetime, *, after_the_fact: bool = False
) -> list[Record]:
    """Chain settled (or cancelled) positions, each with its trades' Brier rows."""
    records = []
    for position_id in position_ids:
        (position,) = text_rows_of(session, POSITIONS, Position.id, position_id)
        trades = select(Trade.id).where(Trade.position_id == position_id)
        brier = text_rows(session, BRIER_SCORES, BrierScore.trade_id.in_(trades))
        body = settlement_body(position, brier)
        records.append(
            append(
                session,
                RecordKind.SETTLEMENT,
                position_id,
                body,
                now,
                after_the_fact=after_the_fact,
            )
        )
    return records


def record_cohort(
    session: Session, cohort_id: int, now: datetime, *, after_the_fact: bool = False
) -> Record:
    """Chain a started cohort with its agents (in the transaction that creates them)."""
    (cohort,) = text_rows(session, COHORTS, Cohort.id == cohort_id)
    agents = text_rows(session, AGENTS, Agent.cohort_id == cohort_id)
    body = cohort_body(cohort, agents)
    return append(session, RecordKind.COHORT, cohort_id, body, now, after_the_fact=after_the_fact)


# -- genesis: what was stored before the chain -------------------------------------------------


def _unchained(kind: RecordKind, subject: Any) -> Any:
    return ~exists().where(and_(Record.kind == str(kind), Record.subject_id == subject))


def chain_backlog(factory: sessionmaker[Session], now: datetime, *, batch: int = 500) -> int:
    """Chain every cohort, completed decision and settled position that has no record yet, in
    id order, marked after the fact; the number chained. Idempotent; batches of ``batch``
    records per transaction."""
    chained = 0
    kinds = (
        (RecordKind.COHORT, select(Cohort.id).where(_unchained(RecordKind.COHORT, Cohort.id))),
        (
            RecordKind.DECISION,
            select(Decision.id).where(
                Decision.status == DecisionStatus.COMPLETED,
                _unchained(RecordKind.DECISION, Decision.id),
            ),
        ),
        (
            RecordKind.SETTLEMENT,
            select(Position.id).where(
                Position.status.in_(SETTLED), _unchained(RecordKind.SETTLEMENT, Position.id)
            ),
        ),
    )
    for kind, pending in kinds:
        while True:
            with transaction(factory) as session:
                ordered = pending.order_by(pending.selected_columns[0]).limit(batch)
                ids = list(session.scalars(ordered))
                for subject_id in ids:
                    _RECORDERS[kind](session, subject_id, now)
            chained += len(ids)
            if len(ids) < batch:
                break
    if chained:
        log.info("record chain: %s earlier records chained after the fact", chained)
    return chained


def _after_the_fact_decision(session: Session, subject_id: int, now: datetime) -> None:
    record_decision(session, subject_id, now, after_the_fact=True)


def _after_the_fact_settlement(session: Session, subject_id: int, now: datetime) -> None:
    record_settlements(session, [subject_id], now, after_the_fact=True)


def _after_the_fact_cohort(session: Session, subject_id: int, now: datetime) -> None:
    record_cohort(session, subject_id, now, after_the_fact=True)


_RECORDERS = {
    RecordKind.DECISION: _after_the_fact_decision,
    RecordKind.SETTLEMENT: _after_the_fact_settlement,
    RecordKind.COHORT: _after_the_fact_cohort,
}
