"""The trend's inputs (:mod:`arena.analytics.trend_measures`), from the store or an export.

* **snapshots**: every agent's portfolio snapshots at the mark (``total_value``), with its
  family, its cohort's ``week_start`` and its starting balance
  (:class:`~arena.analytics.risk_measures.Snapshots`), for the family weekly returns;
* **bets**: every v1 Brier score with its family, the time its bet was made (the trade's
  ``executed_at``) and the time it was scored;
* **lineage**: per agent, its family, its cohort's ``week_start``, the frozen
  ``openrouter_id``, ``prompt_version`` and ``methodology_version``, its track and its web
  search settings in one line (an older export without ``web_search``: off);
* **forecasts** (v2): the ``forecasts`` table as :class:`~arena.analytics.records.Forecasts`,
  None when there is none.

The database and an export directory of the same arena give equal inputs. Only the values a
weekly return reads are kept: for each agent and each week end (its cohort's start plus whole
weeks, up to the first end at or after its last snapshot) the value of its last snapshot at or
before that end, as a point *at the end*, which gives the weekly returns of every snapshot
(:func:`arena.analytics.risk_measures.weekly_returns` reads nothing else). The database finds
each with one index seek on ``(agent_id, taken_at)`` (a correlated subquery; ~18k at scale 1
instead of ~870k rows read), an export's are picked in numpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray
from sqlalchemy import BigInteger, Float, String, cast, func, select, type_coerce
from sqlalchemy.orm import Session

from arena.analytics.groups import on_track, restrict_snapshots, restrict_track
from arena.analytics.loading import read_export_table
from arena.analytics.records import Forecasts
from arena.analytics.risk_measures import Snapshots
from arena.analytics.trend_measures import LINEAGE_FIELDS
from arena.domain.tracks import check_track, tools_label, track_of
from arena.errors import ForecastsError
from arena.store.models import Agent, BrierScore, Cohort, PortfolioSnapshot, Trade

BATCH = 5_000  # week ends looked up per statement
WEEK = np.timedelta64(7 * 86_400 * 1_000_000, "us")
_UTC_US = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True, eq=False)
class Bets:
    """Scored v1 bets as parallel columns: family, when made, when scored, Brier score, and
    the agent that made it (as text)."""

    family_id: NDArray[np.object_]
    made_at: NDArray[np.datetime64]
    scored_at: NDArray[np.datetime64]
    brier: NDArray[np.float64]
    agent_id: NDArray[np.object_]


@dataclass(frozen=True, eq=False)
class TrendInputs:
    """Everything the trend is computed from (module docstring)."""

    snapshots: Snapshots
    bets: Bets
    lineage: list[dict[str, Any]]
    forecasts: Forecasts | None = None


def restrict_trend_inputs(
    inputs: TrendInputs, track: str | None, tracks: Mapping[str, str]
) -> TrendInputs:
    """The trend's inputs of the agents on ``track`` (None: all; ``tracks`` maps agent ids to
    tracks): their snapshots, bets and forecasts, and the family weeks whose lineage is on the
    track. Ranks are then among the families of the track."""
    track = check_track(track)
    if track is None:
        return inputs
    bets, forecasts = inputs.bets, inputs.forecasts
    keep = on_track(bets.agent_id, track, tracks)
    return TrendInputs(
        restrict_snapshots(inputs.snapshots, track, tracks),
        Bets(*(getattr(bets, f.name)[keep] for f in fields(Bets))),
        [entry for entry in inputs.lineage if entry["track"] == track],
        None if forecasts is None else restrict_track(forecasts, track, tracks),
    )


# -- the store ----------------------------------------------------------------------------------


def read_stored_trend_inputs(session: Session) -> TrendInputs:
    """The trend's inputs from the database (module docstring)."""
    agents = session.execute(
        select(
            Agent.id,
            Agent.family_id,
            _time(session, Cohort.week_start),
            cast(Agent.starting_balance, Float),
            Agent.kind,
            Agent.web_search,
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
            BrierScore.agent_id,
        ).join(Trade, Trade.id == BrierScore.trade_id)
    ).all()
    return TrendInputs(
        _stored_snapshots(session, agents),
        Bets(
            np.array([row[0] for row in bets], dtype=object),
            _micros([row[1] for row in bets]),
            _micros([row[2] for row in bets]),
            np.array([row[3] for row in bets], dtype=np.float64),
            np.array([str(row[4]) for row in bets], dtype=object),
        ),
        [_lineage(row[1], _micros([row[2]])[0], row[4], row[5], row[6:]) for row in agents],
        _stored_forecasts(session),
    )


def _stored_snapshots(session: Session, agents: Sequence[Any]) -> Snapshots:
    """Each agent's value at each week end (module docstring)."""
    snapshot = PortfolioSnapshot
    last = session.execute(
        select(
            Agent.id,
            select(func.max(snapshot.taken_at))
            .where(snapshot.agent_id == Agent.id)
            .scalar_subquery(),
        )
    ).all()
    last_at = {row[0]: row[1] for row in last if row[1] is not None}
    pair_agent, pair_end = [], []  # (agent, week end)
    for row in agents:
        if row[0] not in last_at:
            continue
        start = _micros([row[2]])[0]
        final = _micros([last_at[row[0]]])[0]
        weeks = max(1, int(-(-(final - start) // WEEK)))
        pair_agent.append(np.full(weeks, row[0], dtype=np.int64))
        pair_end.append(start + WEEK * np.arange(1, weeks + 1))
    row_agent = np.concatenate(pair_agent) if pair_agent else np.array([], dtype=np.int64)
    ends = np.concatenate(pair_end) if pair_end else np.array([], dtype="datetime64[us]")
    values = _values_at(session, row_agent, ends)
    agent_ids = np.array([row[0] for row in agents], dtype=np.int64)
    at = np.searchsorted(agent_ids, row_agent)
    starts = _micros([row[2] for row in agents])
    return Snapshots(
        np.array([str(row[0]) for row in agents], dtype=object)[at],
        np.array([row[1] for row in agents], dtype=object)[at],
        starts[at],
        np.array([row[3] for row in agents], dtype=np.float64)[at],
        ends.astype("datetime64[us]"),
        values,
    )


def _values_at(
    session: Session, agent: NDArray[np.int64], moment: NDArray[np.datetime64]
) -> NDArray[np.float64]:
    """The value of each agent's last snapshot at or before each instant (NaN if none), one
    index seek per pair: on PostgreSQL one statement over two arrays, on SQLite one statement
    per batch of ``VALUES`` rows. Written as driver SQL: SQLAlchemy would compile a new
    statement for every batch of literal rows, which costs more than the query."""
    sqlite = session.get_bind().dialect.name == "sqlite"
    table = PortfolioSnapshot.__table__.name
    real = "REAL" if sqlite else "double precision"
    value = (
        f"SELECT (SELECT CAST(s.total_value AS {real}) FROM {table} s "
        "WHERE s.agent_id = ends.agent_id AND s.taken_at <= ends.week_end "
        "ORDER BY s.taken_at DESC LIMIT 1)"
    )
    connection = session.connection()
    texts = _end_texts(moment, sqlite)
    found: list[Any] = []
    if not sqlite:
        sql = (
            f"{value} FROM unnest(%s::bigint[], %s::text[]::timestamptz[]) "
            "WITH ORDINALITY AS ends(agent_id, week_end, n) ORDER BY ends.n"
        )
        found = [
            row[0] for row in connection.exec_driver_sql(sql, ([int(a) for a in agent], texts))
        ]
    for first in range(0, len(agent) if sqlite else 0, BATCH):
        batch = range(first, min(first + BATCH, len(agent)))
        rows = ", ".join(["(?, ?, ?)"] * len(batch))
        sql = (
            f"WITH ends(n, agent_id, week_end) AS (VALUES {rows}) {value} FROM ends ORDER BY ends.n"
        )
        parameters = tuple(item for i in batch for item in (i - first, int(agent[i]), texts[i]))
        found.extend(row[0] for row in connection.exec_driver_sql(sql, parameters))
    return np.array([np.nan if v is None else v for v in found], dtype=np.float64)


def _end_texts(moments: NDArray[np.datetime64], sqlite: bool) -> list[str]:
    """Week ends as the database compares them: SQLite's stored text, or ISO 8601 UTC."""
    texts = np.datetime_as_string(moments.astype("datetime64[us]"), unit="us")
    if sqlite:
        return [text.replace("T", " ") for text in texts.tolist()]
    return [text + "+00:00" for text in texts.tolist()]


def _stored_forecasts(session: Session) -> Forecasts | None:
    from arena.export.forecast_columns import forecast_columns

    columns = forecast_columns(session)
    return Forecasts.from_arrow(columns) if columns["probability"] else None


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
    cohorts = read_export_table(directory, "cohorts", ("cohort_id", "week_start"))
    starts = dict(zip(_strings(cohorts, "cohort_id"), _times(cohorts, "week_start"), strict=True))
    agents = read_export_table(
        directory,
        "agents",
        (
            "agent_id",
            "cohort_id",
            "family_id",
            "starting_balance",
            "kind",
            "web_search",
            *LINEAGE_FIELDS,
        ),
    )
    agent_ids = _strings(agents, "agent_id")
    agent_start = np.array([starts[c] for c in _strings(agents, "cohort_id")], "datetime64[us]")
    agent_family = _strings(agents, "family_id")
    snapshots = read_export_table(directory, "snapshots", ("agent_id", "taken_at", "total_value"))
    week_agent, week_end, week_value = _week_ends(
        agent_ids,
        agent_start,
        _strings(snapshots, "agent_id"),
        _times(snapshots, "taken_at"),
        _floats(snapshots, "total_value"),
    )
    order = np.argsort(agent_ids)
    at = order[np.searchsorted(agent_ids[order], week_agent)]
    scores = read_export_table(
        directory, "brier_scores", ("trade_id", "agent_id", "family_id", "brier", "scored_at")
    )
    trades = read_export_table(directory, "trades", ("trade_id", "executed_at"))
    executed = dict(zip(_strings(trades, "trade_id"), _times(trades, "executed_at"), strict=True))
    lineage_columns = {name: _strings(agents, name) for name in LINEAGE_FIELDS}
    kinds, web_search = _strings(agents, "kind"), _strings(agents, "web_search")
    forecasts = None
    if any((directory / f"forecasts.{suffix}").is_file() for suffix in ("parquet", "csv", "jsonl")):
        forecasts = read_export(directory)
    return TrendInputs(
        Snapshots(
            agent_ids[at],
            agent_family[at],
            agent_start[at],
            _floats(agents, "starting_balance")[at],
            week_end,
            week_value,
        ),
        Bets(
            _strings(scores, "family_id"),
            np.array([executed[t] for t in _strings(scores, "trade_id")], "datetime64[us]"),
            _times(scores, "scored_at"),
            _floats(scores, "brier"),
            _strings(scores, "agent_id"),
        ),
        [
            _lineage(
                agent_family[i],
                agent_start[i],
                kinds[i],
                web_search[i],
                [lineage_columns[name][i] for name in LINEAGE_FIELDS],
            )
            for i in range(len(agent_ids))
        ],
        forecasts if forecasts is not None and len(forecasts) else None,
    )


def _lineage(
    family: str, week: np.datetime64, kind: str, web_search: Any, values: Sequence[Any]
) -> dict[str, Any]:
    """One agent's lineage entry: its family and week, the stored lineage ``values`` (in
    :data:`LINEAGE_FIELDS` order), its track and its web search settings in one line."""
    return {
        "family_id": family,
        "week_start": week,
        **dict(zip(LINEAGE_FIELDS, values, strict=True)),
        "track": track_of(kind, web_search),
        "web_search": tools_label(web_search),
    }


def _week_ends(
    agents: NDArray[np.object_],
    starts: NDArray[np.datetime64],
    agent: NDArray[np.object_],
    taken: NDArray[np.datetime64],
    value: NDArray[np.float64],
) -> tuple[NDArray[np.object_], NDArray[np.datetime64], NDArray[np.float64]]:
    """Each agent's value at each of its week ends (module docstring), from all its
    snapshots: the agent, the end and the value of each, agents in id order."""
    order = np.lexsort((taken, agent.astype(str)))
    agent, taken, value = agent[order], taken[order], value[order]
    out_agent, out_end, out_value = [], [], []
    for name, start in sorted(zip(agents, starts, strict=True), key=lambda pair: int(pair[0])):
        lo, hi = np.searchsorted(agent, name, "left"), np.searchsorted(agent, name, "right")
        if lo == hi:
            continue
        times = taken[lo:hi]
        weeks = max(1, int(-(-(times[-1] - start) // WEEK)))
        ends = start + WEEK * np.arange(1, weeks + 1)
        at = np.searchsorted(times, ends, side="right") - 1
        out_agent.extend([name] * weeks)
        out_end.append(ends)
        out_value.append(np.where(at >= 0, value[lo:hi][np.maximum(at, 0)], np.nan))
    if not out_end:
        return np.array([], dtype=object), np.array([], "datetime64[us]"), np.array([])
    return (
        np.array(out_agent, dtype=object),
        np.concatenate(out_end).astype("datetime64[us]"),
        np.concatenate(out_value),
    )


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
