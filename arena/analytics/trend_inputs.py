"""The trend's inputs (:mod:`arena.analytics.trend_measures`), from the store or an export.

* **snapshots**: every agent's portfolio snapshots at the mark (``total_value``), with its
  family, its cohort's ``week_start`` and its starting balance
  (:class:`~arena.analytics.risk.Snapshots`), for the family weekly returns;
* **bets**: every v1 Brier score with its family, the time its bet was made (the trade's
  ``executed_at``) and the time it was scored;
* **lineage**: per agent, its family, its cohort's ``week_start`` and the frozen
  ``openrouter_id``, ``prompt_version`` and ``methodology_version``;
* **forecasts** (v2): the ``forecasts`` table as :class:`~arena.analytics.records.Forecasts`,
  None when there is none.

The database and an export directory of the same arena give equal inputs. Only the snapshots
a weekly return can read are kept: a week ends at its cohort's start (Sunday 00:00 UTC) plus
whole weeks, so at a UTC midnight, and the last snapshot at or before a midnight is the last of
the day before or one exactly at that midnight (the first of its day). Each agent's first and
last snapshot of each UTC day are therefore all the trend needs (about 2 a day instead of
144): the database selects them in SQL (one grouped query over the ``(agent_id, taken_at)``
index), an export's are picked in numpy. Times come as SQLite's stored text or PostgreSQL's
epoch microseconds and values as floats cast in SQL, so no per-row ``Decimal`` or ``datetime``
is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pa_parquet
from numpy.typing import NDArray
from sqlalchemy import BigInteger, Float, String, and_, cast, func, or_, select, type_coerce
from sqlalchemy.orm import Session

from arena.analytics.records import Forecasts
from arena.analytics.risk import Snapshots
from arena.analytics.trend_measures import LINEAGE_FIELDS
from arena.errors import ForecastsError
from arena.store.models import Agent, BrierScore, Cohort, PortfolioSnapshot, Trade

PARTITION = 100_000  # snapshot rows converted at a time
_UTC_US = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True, eq=False)
class Bets:
    """Scored v1 bets as parallel columns: family, when made, when scored, Brier score."""

    family_id: NDArray[np.object_]
    made_at: NDArray[np.datetime64]
    scored_at: NDArray[np.datetime64]
    brier: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class TrendInputs:
    """Everything the trend is computed from (module docstring)."""

    snapshots: Snapshots
    bets: Bets
    lineage: list[dict[str, Any]]
    forecasts: Forecasts | None = None


# -- the store ----------------------------------------------------------------------------------


def read_stored_trend_inputs(session: Session) -> TrendInputs:
    """The trend's inputs from the database (module docstring)."""
    agents = session.execute(
        select(
            Agent.id,
            Agent.family_id,
            _time(session, Cohort.week_start),
            cast(Agent.starting_balance, Float),
            *(getattr(Agent, name) for name in LINEAGE_FIELDS),
        )
        .join(Cohort, Cohort.id == Agent.cohort_id)
        .order_by(Agent.id)
    ).all()
    bets = session.execute(
        select(
            BrierScore.family_id,
            _time(session, Trade.executed_at),
            _time(session, BrierScore.scored_at),
            cast(BrierScore.brier, Float),
        ).join(Trade, Trade.id == BrierScore.trade_id)
    ).all()
    return TrendInputs(
        _stored_snapshots(session, agents),
        Bets(
            np.array([row[0] for row in bets], dtype=object),
            _micros([row[1] for row in bets]),
            _micros([row[2] for row in bets]),
            np.array([row[3] for row in bets], dtype=np.float64),
        ),
        [
            {
                "family_id": row[1],
                "week_start": _micros([row[2]])[0],
                **dict(zip(LINEAGE_FIELDS, row[4:], strict=True)),
            }
            for row in agents
        ],
        _stored_forecasts(session),
    )


def _stored_snapshots(session: Session, agents: Sequence[Any]) -> Snapshots:
    """Each agent's first and last snapshot of each UTC day (module docstring)."""
    snapshot = PortfolioSnapshot
    if session.get_bind().dialect.name == "sqlite":  # stored as UTC text: the day is its prefix
        day: Any = func.substr(type_coerce(snapshot.taken_at, String), 1, 10)
    else:
        day = func.date(func.timezone("UTC", snapshot.taken_at))
    bounds = (
        select(
            snapshot.agent_id.label("agent_id"),
            func.min(snapshot.taken_at).label("first"),
            func.max(snapshot.taken_at).label("last"),
        )
        .group_by(snapshot.agent_id, day)
        .subquery()
    )
    statement = (
        select(
            snapshot.agent_id,
            _time(session, snapshot.taken_at),
            cast(snapshot.total_value, Float),
        )
        .join(
            bounds,
            and_(
                bounds.c.agent_id == snapshot.agent_id,
                or_(snapshot.taken_at == bounds.c.first, snapshot.taken_at == bounds.c.last),
            ),
        )
        .execution_options(stream_results=True)
    )
    ids, times, values = [], [], []
    # Core, not the ORM's session.execute: no per-row ORM loading (several times faster)
    for part in session.connection().execute(statement).partitions(PARTITION):
        agent, taken, worth = zip(*part, strict=True)
        ids.append(np.array(agent, dtype=np.int64))
        times.append(_micros(list(taken)))
        values.append(np.array(worth, dtype=np.float64))  # None -> NaN
    agent_ids = np.array([row[0] for row in agents], dtype=np.int64)
    row_agent = np.concatenate(ids) if ids else np.array([], dtype=np.int64)
    at = np.searchsorted(agent_ids, row_agent)
    starts = _micros([row[2] for row in agents])
    return Snapshots(
        np.array([str(row[0]) for row in agents], dtype=object)[at],
        np.array([row[1] for row in agents], dtype=object)[at],
        starts[at],
        np.array([row[3] for row in agents], dtype=np.float64)[at],
        np.concatenate(times) if times else np.array([], dtype="datetime64[us]"),
        np.concatenate(values) if values else np.array([], dtype=np.float64),
    )


def _stored_forecasts(session: Session) -> Forecasts | None:
    from arena.export.writer import table_columns

    columns = table_columns(session, "forecasts")
    return Forecasts.from_columns(columns) if columns["probability"] else None


def _time(session: Session, column: Any) -> Any:
    """A timestamp column as the driver hands it over cheapest: SQLite's stored UTC text,
    PostgreSQL's microseconds since the epoch."""
    if session.get_bind().dialect.name == "sqlite":
        return type_coerce(column, String)
    return cast(func.extract("epoch", column) * 1_000_000, BigInteger)


def _micros(values: list[Any]) -> NDArray[np.datetime64]:
    """Stored times (SQLite text, epoch microseconds, or aware datetimes) as ``datetime64``."""
    if values and isinstance(values[0], datetime):
        values = [v.astimezone(UTC).replace(tzinfo=None) for v in values]
        return np.array(values, dtype="datetime64[us]")
    if values and isinstance(values[0], str):
        return np.array(values, dtype="datetime64[us]")
    return np.array(values, dtype=np.int64).astype("datetime64[us]")


# -- an export directory ------------------------------------------------------------------------


def read_export_trend_inputs(directory: Path) -> TrendInputs:
    """The trend's inputs from an export directory: its ``snapshots``, ``agents``,
    ``cohorts``, ``brier_scores``, ``trades`` and (when present) ``forecasts`` files, each
    parquet, CSV or JSON lines."""
    from arena.analytics.loading import read_export

    directory = Path(directory)
    if not directory.is_dir():
        raise ForecastsError(f"export directory not found: {directory}")
    cohorts = _read(directory, "cohorts", ("cohort_id", "week_start"))
    starts = dict(zip(_strings(cohorts, "cohort_id"), _times(cohorts, "week_start"), strict=True))
    agents = _read(
        directory,
        "agents",
        ("agent_id", "cohort_id", "family_id", "starting_balance", *LINEAGE_FIELDS),
    )
    agent_ids = _strings(agents, "agent_id")
    agent_start = np.array([starts[c] for c in _strings(agents, "cohort_id")], "datetime64[us]")
    agent_family = _strings(agents, "family_id")
    snapshots = _read(directory, "snapshots", ("agent_id", "taken_at", "total_value"))
    snapshot_agent, taken = _strings(snapshots, "agent_id"), _times(snapshots, "taken_at")
    kept = _day_bounds(snapshot_agent, taken)
    order = np.argsort(agent_ids)
    at = order[np.searchsorted(agent_ids[order], snapshot_agent[kept])]
    scores = _read(directory, "brier_scores", ("trade_id", "family_id", "brier", "scored_at"))
    trades = _read(directory, "trades", ("trade_id", "executed_at"))
    executed = dict(zip(_strings(trades, "trade_id"), _times(trades, "executed_at"), strict=True))
    lineage_columns = {name: _strings(agents, name) for name in LINEAGE_FIELDS}
    forecasts = None
    if any((directory / f"forecasts.{suffix}").is_file() for suffix in ("parquet", "csv", "jsonl")):
        forecasts = read_export(directory)
    return TrendInputs(
        Snapshots(
            agent_ids[at],
            agent_family[at],
            agent_start[at],
            _floats(agents, "starting_balance")[at],
            taken[kept],
            _floats(snapshots, "total_value")[kept],
        ),
        Bets(
            _strings(scores, "family_id"),
            np.array([executed[t] for t in _strings(scores, "trade_id")], "datetime64[us]"),
            _times(scores, "scored_at"),
            _floats(scores, "brier"),
        ),
        [
            {
                "family_id": agent_family[i],
                "week_start": agent_start[i],
                **{name: lineage_columns[name][i] for name in LINEAGE_FIELDS},
            }
            for i in range(len(agent_ids))
        ],
        forecasts if forecasts is not None and len(forecasts) else None,
    )


def _day_bounds(agent: NDArray[np.object_], taken: NDArray[np.datetime64]) -> NDArray[np.int64]:
    """The positions of each agent's first and last snapshot of each UTC day."""
    if len(agent) == 0:
        return np.array([], dtype=np.int64)
    order = np.lexsort((taken, agent.astype(str)))
    key_agent, key_day = agent[order], taken[order].astype("datetime64[D]")
    change = np.r_[True, (key_agent[1:] != key_agent[:-1]) | (key_day[1:] != key_day[:-1])]
    last = np.r_[change[1:], True]
    return order[change | last]


def _read(directory: Path, name: str, columns: tuple[str, ...]) -> pa.Table:
    """Columns of one export table, from whichever of its files the directory holds."""
    for suffix in ("parquet", "csv", "jsonl"):
        path = directory / f"{name}.{suffix}"
        if not path.is_file():
            continue
        try:
            if suffix == "parquet":
                return pa_parquet.read_table(path, columns=list(columns))
            if suffix == "csv":
                convert = pa_csv.ConvertOptions(
                    column_types=dict.fromkeys(columns, pa.string()),
                    include_columns=list(columns),
                    strings_can_be_null=True,
                )
                return pa_csv.read_csv(path, convert_options=convert)
            if path.stat().st_size == 0:
                return pa.table({column: pa.array([], pa.string()) for column in columns})
            return pa_json.read_json(path).select(list(columns))
        except (pa.ArrowInvalid, KeyError, OSError) as exc:
            raise ForecastsError(f"cannot read {path}: {exc}") from exc
    raise ForecastsError(f"no {name}.parquet / .csv / .jsonl in export directory {directory}")


def _strings(table: pa.Table, name: str) -> NDArray[np.object_]:
    """A column as text (None stays None)."""
    column = table.column(name)
    if not pa.types.is_string(column.type) and not pa.types.is_null(column.type):
        column = pc.cast(column, pa.string())
    return np.array(column.to_pylist(), dtype=object)


def _floats(table: pa.Table, name: str) -> NDArray[np.float64]:
    column = table.column(name)
    if pa.types.is_decimal(column.type):
        column = pc.cast(column, pa.string())  # exact text, then the nearest float as SQL's
    return np.array(pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _times(table: pa.Table, name: str) -> NDArray[np.datetime64]:
    column = table.column(name)
    if not pa.types.is_timestamp(column.type):
        column = pc.cast(pc.cast(column, pa.string()), _UTC_US)
    micros = pc.cast(pc.cast(column, _UTC_US), pa.int64()).to_numpy(zero_copy_only=False)
    return np.asarray(micros, dtype=np.int64).astype("datetime64[us]")
