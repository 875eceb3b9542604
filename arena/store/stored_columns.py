"""Columns of an append-mostly table, stored whole so that a reader need not read every row.

Reading hundreds of thousands of rows through the driver costs seconds; the same rows held as
arrow arrays in one row of ``forecast_columns`` (an Arrow IPC stream, zstd) cost a tenth of a
second to read. Two readers keep such a body there, each under its own name:
:mod:`arena.export.forecast_columns` (``forecasts``) and
:mod:`arena.analytics.snapshot_columns` (``snapshots``). Both follow one rule: a read is the
stored body plus the rows with an id above the body's largest (``through``), and a
:class:`Stamp` of the table (how many rows, the largest id) must account for exactly those;
anything else (a row removed, or committed under an id already held) reads the table anew.
The analysis job writes the body again (:func:`store`) when it is missing, was read anew, or is
:data:`STORE_LAG` rows behind (:func:`due`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
from sqlalchemy import func, literal, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from arena.store.models import ForecastColumnsRow

STORE_LAG = 5_000
"""A stored body is written again when the rows held, or resolved, moved by this many."""


@dataclass(frozen=True)
class Stamp:
    """What a table holds, or a body holds of it: how many rows, the largest id, and how many
    are resolved (forecasts; 0 for a table whose rows never resolve)."""

    rows: int
    through: int
    resolved: int = 0


@dataclass(frozen=True)
class StoredColumns:
    """A stored body and its stamp, read in one statement so that they belong together."""

    stamp: Stamp
    body: bytes

    def columns(self) -> dict[str, pa.Array]:
        """The body's columns, each one array as stored (raises ``pa.ArrowInvalid`` on a
        damaged body)."""
        table = pa.ipc.open_stream(pa.py_buffer(self.body)).read_all()
        return {name: _one_array(table.column(name)) for name in table.column_names}


def read_stored(session: Session, name: str) -> StoredColumns | None:
    """The body stored under ``name``, or None when the job has stored none yet."""
    row = session.execute(
        select(
            ForecastColumnsRow.rows,
            ForecastColumnsRow.through_id,
            ForecastColumnsRow.resolved,
            ForecastColumnsRow.body,
        ).where(ForecastColumnsRow.name == name)
    ).one_or_none()
    if row is None:
        return None
    return StoredColumns(Stamp(row.rows, row.through_id, row.resolved), row.body)


def table_stamp(
    session: Session, id_column: InstrumentedAttribute[int], resolved: Any = None
) -> Stamp:
    """The table's :class:`Stamp` in one query: its rows, its largest ``id_column``, and how
    many hold a ``resolved`` column (when given)."""
    counted = literal(0) if resolved is None else func.count(resolved)
    rows, through, done = session.execute(select(func.count(), func.max(id_column), counted)).one()
    return Stamp(int(rows), int(through or 0), int(done))


def due(stored: Stamp | None, held: Stamp, *, anew: bool) -> bool:
    """Whether the job writes the body again: none stored, read anew, or
    :data:`STORE_LAG` rows or resolutions behind."""
    return (
        stored is None
        or anew
        or abs(held.rows - stored.rows) >= STORE_LAG
        or abs(held.resolved - stored.resolved) >= STORE_LAG
    )


def store(
    session: Session,
    name: str,
    stamp: Stamp,
    at: datetime,
    columns: dict[str, pa.Array | pa.ChunkedArray],
) -> None:
    """Write ``columns`` (which ``stamp`` describes) as the body named ``name``, in
    ``session``'s transaction."""
    sink = pa.BufferOutputStream()
    table = pa.table(columns)
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    session.merge(
        ForecastColumnsRow(
            name=name,
            through_id=stamp.through,
            rows=stamp.rows,
            resolved=stamp.resolved,
            written_at=at,
            body=bytes(sink.getvalue()),
        )
    )


def _one_array(column: pa.ChunkedArray) -> pa.Array:
    """The column's one chunk as it is (``combine_chunks`` would copy it)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
