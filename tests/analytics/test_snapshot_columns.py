"""The snapshots read from stored columns (:mod:`arena.analytics.snapshot_columns`), on SQLite
and PostgreSQL: the stored body and the snapshots written since equal the row-by-row read, at
the mark and at exit value; what the body cannot account for (a snapshot removed, committed
under an id already held, a stamp that does not describe the body, a damaged body) reads them
all again; the analysis job stores the body and writes it again only when far behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import delete, func, select, update

from arena.analytics import snapshot_columns
from arena.analytics.risk_measures import Snapshots
from arena.analytics.snapshot_columns import NAME, read_stored_snapshots, store_snapshot_rows
from arena.analytics.stored import refresh_analysis
from arena.config import Settings
from arena.store import stored_columns
from arena.store.db import transaction
from arena.store.models import Agent, ForecastColumnsRow, PortfolioSnapshot
from tests.analytics.risk_arena import (
    AT,
    STEP,
    _snapshot,
    assert_same_snapshots,
    seed_risk_arena,
)
from tests.conftest import Database

SETTINGS = Settings.model_validate({"analysis": {"resamples": 40, "seed": 3}})
VALUES = ("mark", "exit")


@pytest.fixture
def stored(db: Database) -> Database:
    seed_risk_arena(db.factory)
    return db


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many snapshot rows each query read from the table, one count per query."""
    counts: list[int] = []
    stream = snapshot_columns._stream

    def counting(*args: Any) -> Iterator[Any]:
        counts.append(0)
        for part in stream(*args):
            counts[-1] += len(part)
            yield part

    monkeypatch.setattr(snapshot_columns, "_stream", counting)
    return counts


def _read(db: Database, value: str) -> Snapshots:
    with db.factory() as session:
        return read_stored_snapshots(session, value)


def _row_by_row(db: Database, value: str) -> Snapshots:
    """The snapshots read with no stored body, as before this module stored any."""
    with db.factory() as session:
        session.execute(delete(ForecastColumnsRow).where(ForecastColumnsRow.name == NAME))
        result = read_stored_snapshots(session, value)
        session.rollback()
    return result


def _assert_same(got: Snapshots, expected: Snapshots) -> None:
    assert len(expected.value) > 0
    assert_same_snapshots(got, expected)


def _assert_read_anew(db: Database, streamed: list[int]) -> None:
    """Each read equals the row-by-row read, and its last query read every snapshot."""
    rows, _through = _count(db)
    for value in VALUES:
        expected = _row_by_row(db, value)
        streamed.clear()
        _assert_same(_read(db, value), expected)
        assert streamed[-1] == rows


def _store(db: Database, at: Any = AT) -> ForecastColumnsRow:
    """The analysis job's part; the stored row afterwards."""
    with transaction(db.factory) as session:
        store_snapshot_rows(session, at)
    with db.factory() as session:
        row = session.get(ForecastColumnsRow, NAME)
        assert row is not None
        return row


def _count(db: Database) -> tuple[int, int]:
    with db.factory() as session:
        rows, through = session.execute(select(func.count(), func.max(PortfolioSnapshot.id))).one()
    return int(rows), int(through)


def _append(db: Database) -> int:
    """New snapshots as the snapshot job writes them: the next slot of two agents (one of a
    book cohort, with an exit value), and a slot missed earlier for another (before its
    newest): three rows."""
    with db.factory.begin() as session:
        gamma, book, other = (session.get(Agent, number) for number in (1, 4, 2))
        assert gamma is not None and book is not None and other is not None
        session.add(_snapshot(gamma, AT, Decimal("10123.45"), None))
        session.add(_snapshot(book, AT, Decimal("9876.54"), Decimal("9860.01")))
        newest = session.scalar(
            select(func.min(PortfolioSnapshot.taken_at)).where(
                PortfolioSnapshot.agent_id == other.id
            )
        )
        assert newest is not None
        session.add(_snapshot(other, newest - STEP, Decimal("10000.01"), None))
    return 3


def test_stored_columns_read_as_the_table(stored: Database, streamed: list[int]) -> None:
    expected = {value: _read(stored, value) for value in VALUES}
    rows, through = _count(stored)
    assert streamed == [rows, rows]  # no body yet: every row read, once per read
    row = _store(stored)
    assert (row.rows, row.through_id, row.written_at) == (rows, through, AT)
    streamed.clear()
    for value in VALUES:
        _assert_same(_read(stored, value), expected[value])
    assert streamed == [0, 0]  # nothing written since: no row read from the table


def test_snapshots_written_since_are_read_alone(stored: Database, streamed: list[int]) -> None:
    _store(stored)
    added = _append(stored)
    expected = {value: _row_by_row(stored, value) for value in VALUES}
    streamed.clear()
    for value in VALUES:
        _assert_same(_read(stored, value), expected[value])
    assert streamed == [added, added]  # only the new ones read from the table
    assert _store(stored, AT + timedelta(hours=1)).written_at == AT  # a few: not stored again


def test_a_removed_snapshot_reads_everything_again(stored: Database, streamed: list[int]) -> None:
    _store(stored)
    with stored.factory.begin() as session:
        last = select(func.max(PortfolioSnapshot.id)).scalar_subquery()
        session.execute(delete(PortfolioSnapshot).where(PortfolioSnapshot.id == last))
    _assert_read_anew(stored, streamed)
    rows, _through = _count(stored)
    later = AT + timedelta(hours=1)
    row = _store(stored, later)  # read anew: stored again
    assert (row.written_at, row.rows) == (later, rows)


def test_a_snapshot_committed_under_a_held_id_reads_everything_again(
    stored: Database, streamed: list[int]
) -> None:
    """PostgreSQL hands out ids before commit: a transaction that took id n can commit after
    one that took n + 1 was read."""
    with stored.factory.begin() as session:
        gap = session.scalars(select(PortfolioSnapshot).order_by(PortfolioSnapshot.id)).first()
        assert gap is not None
        late = {c.key: getattr(gap, c.key) for c in PortfolioSnapshot.__table__.columns}
        session.delete(gap)
    _store(stored)
    with stored.factory.begin() as session:
        session.add(PortfolioSnapshot(**late))
    _assert_read_anew(stored, streamed)


@pytest.mark.parametrize(
    "damage",
    [
        {"rows": ForecastColumnsRow.rows + 1},  # the stamp does not describe the body
        {"through_id": ForecastColumnsRow.through_id + 1_000},  # ahead of the table
        {"body": b"not arrow"},
    ],
    ids=["rows", "through", "body"],
)
def test_a_stored_row_that_does_not_hold_is_read_anew(
    stored: Database, streamed: list[int], damage: dict[str, Any]
) -> None:
    _store(stored)
    with stored.factory.begin() as session:
        session.execute(
            update(ForecastColumnsRow).where(ForecastColumnsRow.name == NAME).values(**damage)
        )
    _assert_read_anew(stored, streamed)
    rows, through = _count(stored)
    later = AT + timedelta(hours=1)
    row = _store(stored, later)  # stored anew
    assert (row.written_at, row.rows, row.through_id) == (later, rows, through)
    expected = _row_by_row(stored, "exit")
    streamed.clear()
    _assert_same(_read(stored, "exit"), expected)
    assert streamed == [0]


def test_the_analysis_job_stores_them_and_writes_again_only_when_far_behind(
    stored: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh_analysis(stored.factory, SETTINGS, AT)
    with stored.factory() as session:
        row = session.get(ForecastColumnsRow, NAME)
    assert row is not None
    assert (row.rows, row.through_id, row.written_at) == (*_count(stored), AT)
    added = _append(stored)
    refresh_analysis(stored.factory, SETTINGS, AT + timedelta(hours=1))
    with stored.factory() as session:
        row = session.get(ForecastColumnsRow, NAME)
        assert row is not None and row.written_at == AT  # close enough
    monkeypatch.setattr(stored_columns, "STORE_LAG", added)
    later = AT + timedelta(hours=2)
    refresh_analysis(stored.factory, SETTINGS, later)
    with stored.factory() as session:
        row = session.get(ForecastColumnsRow, NAME)
    assert row is not None
    assert (row.rows, row.through_id, row.written_at) == (*_count(stored), later)
    for value in VALUES:
        _assert_same(_read(stored, value), _row_by_row(stored, value))


def test_an_empty_table_reads_empty_with_or_without_a_body(stored: Database) -> None:
    with stored.factory.begin() as session:
        session.execute(delete(PortfolioSnapshot))
    row = _store(stored)
    assert (row.rows, row.through_id) == (0, 0)
    for value in VALUES:
        assert len(_read(stored, value).value) == 0
