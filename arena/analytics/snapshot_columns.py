"""Portfolio snapshots as :class:`~arena.analytics.risk_measures.Snapshots` columns, from the
store, from an export directory, or from a DataFrame of the export's columns.

Every source gives the same columns: the agent (its id as text), its family, its cohort's
``week_start`` (the curve's start), the agent's ``starting_balance``, the snapshot's
``taken_at`` and its value: ``total_value`` at the mark (``value="mark"``) or ``exit_value``
(``value="exit"``, mode book cohorts only; NaN where a snapshot has none, as in every gamma
cohort). Rows come ordered by agent and time.

From the store, the ~870,000 snapshots of scale 1 take 1.3 s to read row by row, half of risk
for every agent and family. A snapshot is never updated or deleted once written (the snapshot
job inserts, or does nothing on a slot already taken:
:func:`arena.jobs.snapshots.insert_snapshots`), so the analysis job keeps every snapshot's
agent, time and both values as arrow arrays in the ``forecast_columns`` row named :data:`NAME`
(:func:`store_snapshot_rows`, through :mod:`arena.store.stored_columns`), ordered by agent and
time, and rewrites it when it is :data:`~arena.store.stored_columns.STORE_LAG` snapshots
behind. A read is that body and the snapshots written since (ids above the largest it holds),
checked against a count of the table and its largest id: anything else (a snapshot removed, or
committed under an id already held) reads them all again, as does a body this release did not
write. The agents' rows (family, cohort ``week_start``, ``starting_balance``; ~7 per cohort)
are read at every call, so nothing but the snapshots' own columns is stored; a hand edit of a
snapshot's value that keeps the count is what this cannot see (``arena analyze`` on an export
never uses it). With no stored body, every call reads everything, as before; with one and
nothing written since, scale 1 reads in ~0.15 s instead of 1.3 s.

Reading row by row is fast and its memory flat: one streamed query of the snapshots that
selects only (agent, time, value), as an integer, microseconds since the epoch and a float
computed in SQL, so no per-row ``Decimal`` or ``datetime`` is built, and unordered (a sort of
the whole table costs more in SQL than in numpy), each partition converted to one numpy array.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Float,
    Select,
    String,
    cast,
    func,
    select,
    type_coerce,
)
from sqlalchemy.orm import Session

from arena.analytics.loading import read_export_table
from arena.analytics.risk_measures import Snapshots
from arena.errors import ForecastsError
from arena.store.models import Agent, Cohort, PortfolioSnapshot
from arena.store.stored_columns import Stamp, StoredColumns, due, read_stored, store, table_stamp

VALUES = {"mark": "total_value", "exit": "exit_value"}
PARTITION = 100_000  # snapshot rows converted at a time
NAME = "snapshots"
"""The stored body's name in ``forecast_columns`` (:mod:`arena.store.stored_columns`)."""
_AGENT, _TAKEN = "agent_id", "taken_at"
_BODY = {
    _AGENT: np.dtype(np.int64),
    _TAKEN: np.dtype(np.int64),  # microseconds since the epoch
    **{name: np.dtype(np.float64) for name in VALUES.values()},  # NaN where none
}
"""The stored body's columns and their types."""
_TIMESTAMP = pa.timestamp("us", tz="UTC")


def value_column(value: str) -> str:
    """The snapshot column of a valuation: ``mark`` or ``exit``."""
    if value not in VALUES:
        raise ValueError(f"value: {value!r} is not mark or exit")
    return VALUES[value]


def read_stored_snapshots(session: Session, value: str = "mark") -> Snapshots:
    """Every stored snapshot of every agent, valued at ``value`` (module docstring)."""
    column = value_column(value)
    agents = session.execute(
        select(
            Agent.id,
            Agent.family_id,
            type_coerce(Cohort.week_start, String) if _sqlite(session) else Cohort.week_start,
            cast(Agent.starting_balance, Float),
        )
        .join(Cohort, Cohort.id == Agent.cohort_id)
        .order_by(Agent.id)
    ).all()
    rows = _snapshot_rows(session, (column,))
    if not len(rows[_AGENT]):
        return _empty()
    agent_ids = np.array([row[0] for row in agents], dtype=np.int64)
    row_agent, taken = rows[_AGENT], rows[_TAKEN]
    order = _order(row_agent, taken)
    at = np.searchsorted(agent_ids, row_agent[order])
    starts = np.array([_micros_of(row[2]) for row in agents], dtype=np.int64)
    return Snapshots(
        np.array([str(row[0]) for row in agents], dtype=object)[at],
        np.array([row[1] for row in agents], dtype=object)[at],
        starts[at].astype("datetime64[us]"),
        np.array([row[3] for row in agents], dtype=np.float64)[at],
        taken[order].astype("datetime64[us]"),
        rows[column][order].copy(),  # its own, not a view of the stored body
    )


def _order(agent: NDArray[np.int64], taken: NDArray[np.int64]) -> NDArray[np.intp] | slice:
    """The rows' order by agent and time: as they are when already so (the stored body, with
    nothing written since: a check costs a fifth of the sort), else a sort (the table's order
    is no promise)."""
    later = agent[1:] > agent[:-1]
    later |= (agent[1:] == agent[:-1]) & (taken[1:] > taken[:-1])
    return slice(None) if later.all() else np.lexsort((taken, agent))


def store_snapshot_rows(session: Session, at: datetime) -> None:
    """The analysis job's part: store the snapshots' columns as of ``at``, in ``session``'s
    transaction, when none are stored, the stored ones were read anew, or they are
    :data:`~arena.store.stored_columns.STORE_LAG` snapshots behind."""
    stored = read_stored(session, NAME)
    stamp = table_stamp(session, PortfolioSnapshot.id)
    rows = None if stored is None else _since(session, stored, stamp)
    anew = rows is None
    if rows is None:
        rows = _read(session, tuple(VALUES.values()), PortfolioSnapshot.id <= stamp.through)
    held = Stamp(len(rows[_AGENT]), stamp.through)
    if due(None if stored is None else stored.stamp, held, anew=anew):
        order = np.lexsort((rows[_TAKEN], rows[_AGENT]))  # stored in order: reads sort fast
        store(session, NAME, held, at, {name: pa.array(rows[name][order]) for name in rows})


def _snapshot_rows(session: Session, values: tuple[str, ...]) -> dict[str, NDArray[Any]]:
    """Every snapshot's agent, time and ``values`` columns, in no promised order: the stored
    body and the snapshots since when they account for the table, else all read anew."""
    stored = read_stored(session, NAME)
    if stored is not None:
        rows = _since(session, stored, table_stamp(session, PortfolioSnapshot.id))
        if rows is not None:
            return rows
    return _read(session, values)


def _since(session: Session, stored: StoredColumns, stamp: Stamp) -> dict[str, NDArray[Any]] | None:
    """The stored body and the snapshots written since, or None when they do not hold
    exactly the table's ``stamp.rows`` (or the body is not one of this release's)."""
    held = _held(stored) if stored.stamp.through <= stamp.through else None
    if held is None:
        return None
    new = _read(
        session,
        tuple(VALUES.values()),
        PortfolioSnapshot.id > stored.stamp.through,
        PortfolioSnapshot.id <= stamp.through,
    )
    if stored.stamp.rows + len(new[_AGENT]) != stamp.rows:
        return None
    if not len(new[_AGENT]):
        return held
    return {name: np.concatenate((held[name], new[name])) for name in _BODY}


def _held(stored: StoredColumns) -> dict[str, NDArray[Any]] | None:
    """The stored body's columns as numpy arrays, or None when it is not a body of
    :data:`_BODY` holding ``stored.stamp.rows`` snapshots (damaged, or another release's).
    Views of the arrow buffers, not ``to_numpy``: that imports pandas, 0.4 s of a new
    process's first read."""
    try:
        columns = stored.columns()
    except pa.ArrowInvalid:
        return None
    if set(columns) != set(_BODY) or any(
        values.type != pa.from_numpy_dtype(_BODY[name])
        or len(values) != stored.stamp.rows
        or values.null_count
        for name, values in columns.items()
    ):
        return None
    return {
        name: np.frombuffer(
            values.buffers()[1],
            dtype=_BODY[name],
            count=len(values),
            offset=values.offset * _BODY[name].itemsize,
        )
        for name, values in columns.items()
    }


def _read(
    session: Session, values: tuple[str, ...], *where: ColumnElement[bool]
) -> dict[str, NDArray[Any]]:
    """The snapshots' agent, time (microseconds) and ``values`` columns (floats, NaN where
    none), read row by row from the table, in no promised order."""
    value_columns = [cast(getattr(PortfolioSnapshot, name), Float) for name in values]
    statement = select(PortfolioSnapshot.agent_id, _micros(session), *value_columns).where(*where)
    width = 2 + len(values)
    parts = [np.empty((0, width))]
    for part in _stream(session, statement):
        # microseconds since 1970 stay below 2**53: exact as float64, one conversion per part
        parts.append(np.array(part, dtype=np.float64).reshape(-1, width))  # None -> NaN
    rows = np.concatenate(parts)
    return {
        _AGENT: rows[:, 0].astype(np.int64),
        _TAKEN: rows[:, 1].astype(np.int64),
        **{name: rows[:, 2 + i] for i, name in enumerate(values)},
    }


def _stream(session: Session, statement: Select[Any]) -> Iterator[Sequence[Any]]:
    """The rows of ``statement`` as the driver's plain tuples, :data:`PARTITION` at a time,
    through the session's connection (its transaction, so its snapshot): SQLAlchemy's row
    objects cost more than the whole conversion. PostgreSQL streams from a server-side cursor
    (memory stays flat); SQLite's cursor steps through the table as it is fetched."""
    connection = session.connection()
    sql = str(statement.compile(dialect=connection.dialect, compile_kwargs={"literal_binds": True}))
    driver = connection.connection.dbapi_connection
    assert driver is not None
    postgres = connection.dialect.name == "postgresql"
    cursor = driver.cursor(name="arena_snapshots") if postgres else driver.cursor()
    try:
        cursor.execute(sql)
        while part := cursor.fetchmany(PARTITION):
            yield part
    finally:
        cursor.close()


def _sqlite(session: Session) -> bool:
    return session.get_bind().dialect.name == "sqlite"


def _micros(session: Session) -> Any:
    """``taken_at`` as microseconds since the epoch, an integer computed in SQL. SQLite holds
    the text ``YYYY-MM-DD HH:MM:SS.ffffff`` (always six digits): whole seconds by ``strftime``
    plus the digits; PostgreSQL's ``extract(epoch)`` is exact to the microsecond."""
    taken = PortfolioSnapshot.taken_at
    if _sqlite(session):
        text = type_coerce(taken, String)
        seconds = cast(func.strftime("%s", text), BigInteger)
        return seconds * 1_000_000 + cast(func.substr(text, 21, 6), BigInteger)
    return cast(func.extract("epoch", taken) * 1_000_000, BigInteger)


def _micros_of(moment: Any) -> int:
    """A cohort's start as microseconds (SQLite text, or an aware datetime)."""
    if isinstance(moment, str):
        return int(np.datetime64(moment, "us").astype(np.int64))
    return int(np.datetime64(moment.astimezone(UTC).replace(tzinfo=None), "us").astype(np.int64))


def _empty() -> Snapshots:
    return Snapshots(
        np.array([], dtype=object),
        np.array([], dtype=object),
        np.array([], dtype="datetime64[us]"),
        np.array([], dtype=np.float64),
        np.array([], dtype="datetime64[us]"),
        np.array([], dtype=np.float64),
    )


# -- export directory and DataFrames ------------------------------------------------------------

_SNAPSHOT_COLUMNS = ("agent_id", "family_id", "taken_at", "total_value", "exit_value")
_TYPES = {
    "agent_id": pa.string(),
    "cohort_id": pa.string(),
    "family_id": pa.string(),
    "taken_at": _TIMESTAMP,
    "week_start": _TIMESTAMP,
    "total_value": pa.string(),
    "exit_value": pa.string(),
    "starting_balance": pa.string(),
}


def read_export_snapshots(directory: Path, value: str = "mark") -> Snapshots:
    """The snapshots of an export directory (its ``snapshots``, ``agents`` and ``cohorts``
    files, parquet, CSV or JSON lines), valued at ``value``."""
    snapshots = read_export_table(directory, "snapshots", (*_SNAPSHOT_COLUMNS, "cohort_id"), _TYPES)
    agents = read_export_table(directory, "agents", ("agent_id", "starting_balance"), _TYPES)
    cohorts = read_export_table(directory, "cohorts", ("cohort_id", "week_start"), _TYPES)
    return snapshot_columns(
        {name: snapshots.column(name) for name in snapshots.column_names},
        agents={name: agents.column(name) for name in agents.column_names},
        cohorts={name: cohorts.column(name) for name in cohorts.column_names},
        value=value,
    )


def snapshot_columns(
    snapshots: Any,
    *,
    agents: Any = None,
    cohorts: Any = None,
    value: str = "mark",
) -> Snapshots:
    """:class:`Snapshots` from the export's ``snapshots`` columns (a DataFrame or a mapping of
    columns) and its ``agents`` (``agent_id``, ``starting_balance``) and ``cohorts``
    (``cohort_id``, ``week_start``) tables; columns ``starting_balance`` and ``week_start``
    already on ``snapshots`` (a merged frame) need no other table."""
    table = _table(snapshots)
    if agents is not None and "starting_balance" not in table.column_names:
        table = table.join(
            _table(agents).select(["agent_id", "starting_balance"]), "agent_id", "agent_id"
        )
    if cohorts is not None and "week_start" not in table.column_names:
        table = table.join(
            _table(cohorts).select(["cohort_id", "week_start"]), "cohort_id", "cohort_id"
        )
    needed = ("agent_id", "family_id", "week_start", "starting_balance", "taken_at")
    missing = [name for name in (*needed, value_column(value)) if name not in table.column_names]
    if missing:
        raise ForecastsError(f"snapshots: missing column(s) {', '.join(missing)}")
    table = table.sort_by([("agent_id", "ascending"), ("taken_at", "ascending")])
    return Snapshots(
        _strings(table.column("agent_id")),
        _strings(table.column("family_id")),
        _times(table.column("week_start")),
        _floats(table.column("starting_balance")),
        _times(table.column("taken_at")),
        _floats(table.column(value_column(value))),
    )


def _table(data: Any) -> pa.Table:
    """A pyarrow table of a DataFrame, a mapping of columns or a table; ids as text."""
    if isinstance(data, pa.Table):
        table = data
    elif isinstance(data, Mapping):
        table = pa.table({str(k): _array(v) for k, v in data.items()})
    elif hasattr(data, "columns"):
        table = pa.table({str(k): _array(data[k]) for k in data.columns})
    else:
        raise TypeError(f"snapshots: expected a DataFrame or columns, got {type(data).__name__}")
    for name in ("agent_id", "cohort_id"):
        if name in table.column_names:
            index = table.column_names.index(name)
            table = table.set_column(index, name, pc.cast(table.column(name), pa.string()))
    return table


def _array(raw: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(raw, pa.Array | pa.ChunkedArray):
        return raw
    return pa.array(raw, from_pandas=True)


def _strings(column: pa.ChunkedArray) -> NDArray[np.object_]:
    return np.asarray(pc.cast(column, pa.string()).to_numpy(zero_copy_only=False), dtype=object)


def _floats(column: pa.ChunkedArray) -> NDArray[np.float64]:
    if pa.types.is_decimal(column.type):
        column = pc.cast(column, pa.string())  # exact rounding, as the text formats give
    return np.array(pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def _times(column: pa.ChunkedArray) -> NDArray[np.datetime64]:
    if pa.types.is_timestamp(column.type) and column.type.tz is None:
        column = pc.cast(column, pa.timestamp("us"))
    else:
        column = pc.cast(column, _TIMESTAMP)
    micros = pc.cast(column, pa.int64()).to_numpy(zero_copy_only=False)
    return np.asarray(micros, dtype=np.int64).astype("datetime64[us]")
