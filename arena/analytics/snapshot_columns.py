"""Portfolio snapshots as :class:`~arena.analytics.risk_measures.Snapshots` columns, from the
store, from an export directory, or from a DataFrame of the export's columns.

Every source gives the same columns: the agent (its id as text), its family, its cohort's
``week_start`` (the curve's start), the agent's ``starting_balance``, the snapshot's
``taken_at`` and its value: ``total_value`` at the mark (``value="mark"``) or ``exit_value``
(``value="exit"``, mode book cohorts only; NaN where a snapshot has none, as in every gamma
cohort). Rows come ordered by agent and time.

Reading is fast and its memory flat: from the store, one query of the ~7 agents' rows per
cohort and one streamed query of the snapshots that selects only (agent, time, value), as an
integer, microseconds since the epoch and a float computed in SQL, so no per-row ``Decimal``
or ``datetime`` is built, and unordered (a sort of the whole table costs more in SQL than in
numpy), each partition converted to one numpy array.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray
from sqlalchemy import BigInteger, Float, Select, String, cast, func, select, type_coerce
from sqlalchemy.orm import Session

from arena.analytics.loading import read_export_table
from arena.analytics.risk_measures import Snapshots
from arena.errors import ForecastsError
from arena.store.models import Agent, Cohort, PortfolioSnapshot

VALUES = {"mark": "total_value", "exit": "exit_value"}
PARTITION = 100_000  # snapshot rows converted at a time
_TIMESTAMP = pa.timestamp("us", tz="UTC")


def value_column(value: str) -> str:
    """The snapshot column of a valuation: ``mark`` or ``exit``."""
    if value not in VALUES:
        raise ValueError(f"value: {value!r} is not mark or exit")
    return VALUES[value]


def read_stored_snapshots(session: Session, value: str = "mark") -> Snapshots:
    """Every stored snapshot of every agent, valued at ``value`` (module docstring)."""
    column = getattr(PortfolioSnapshot, value_column(value))
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
    agent_ids = np.array([row[0] for row in agents], dtype=np.int64)
    statement = select(PortfolioSnapshot.agent_id, _micros(session), cast(column, Float))
    parts = []
    for part in _stream(session, statement):
        # microseconds since 1970 stay below 2**53: exact as float64, one conversion per part
        parts.append(np.array(part, dtype=np.float64).reshape(-1, 3))  # None -> NaN
    if not parts:
        return _empty()
    rows = np.concatenate(parts)
    row_agent, taken = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
    order = np.lexsort((taken, row_agent))  # the table's order is no promise: sort here
    at = np.searchsorted(agent_ids, row_agent[order])
    starts = np.array([_micros_of(row[2]) for row in agents], dtype=np.int64)
    return Snapshots(
        np.array([str(row[0]) for row in agents], dtype=object)[at],
        np.array([row[1] for row in agents], dtype=object)[at],
        starts[at].astype("datetime64[us]"),
        np.array([row[3] for row in agents], dtype=np.float64)[at],
        taken[order].astype("datetime64[us]"),
        rows[order, 2],
    )


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
