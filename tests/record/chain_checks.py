"""Reading and checking the record chain of a test database."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from arena.record.canonical import GENESIS_HASH, link_hash
from arena.store.models import Record, RecordHead
from tests.conftest import Database


def chain(db: Database) -> list[Record]:
    with db.factory() as session:
        return list(session.scalars(select(Record).order_by(Record.seq)))


def assert_linear(db: Database) -> list[Record]:
    """Seq 1..N without a gap, each record hashed onto the one before, the head at the end."""
    records = chain(db)
    previous = GENESIS_HASH
    for number, record in enumerate(records, start=1):
        assert record.seq == number, [r.seq for r in records]
        assert record.prev_hash == previous, f"record {record.seq} forks the chain"
        assert record.hash == link_hash(previous, record.body.encode("utf-8"))
        assert json.loads(record.body)["seq"] == record.seq
        previous = record.hash
    with db.factory() as session:
        head = session.get(RecordHead, 1)
        assert head is not None and (head.seq, head.hash) == (len(records), previous)
    return records


def subjects(db: Database, kind: str) -> list[int]:
    return [r.subject_id for r in chain(db) if r.kind == kind]


def body(record: Record) -> dict[str, Any]:
    return dict(json.loads(record.body)["body"])
