"""The ``forecasts`` table as the analyses read it, without reading 364,000 rows each time.

:func:`arena.export.writer.table_columns` reads :data:`arena.export.tables.FORECASTS` row by
row: at scale 1 (364,000 forecasts) the driver makes some eight million Python values, 6 to 8 s.
Yet almost all of it is fixed once written: a forecast's own columns, its agent's kind and its
cohort's pricing. The analysis job stores those as arrow arrays in the ``forecast_columns`` row
named ``forecasts`` (:func:`read_forecast_columns` with ``store_at``, through
:mod:`arena.store.stored_columns`), and :func:`forecast_columns` starts from them and reads
only what can have changed since:

* the forecasts written since (ids above the largest stored);
* ``resolved_value``, which changes once, from null to 1 or 0 when the market settles
  (:mod:`arena.jobs.settle`): when fewer are resolved than in the database, the forecasts of
  the markets that were open are read again;
* the market's columns (:data:`~arena.export.tables.FORECAST_MARKET_COLUMNS`: event group,
  close, resolution time, category, fee), read per market at every call (a few thousand rows)
  and spread over the forecasts.

A *stamp* (how many forecasts, the largest id, how many resolved) checks every call that the
result holds exactly the database's forecasts; anything else (a row removed, or committed under
an id already held) reads them all again, and the job stores them anew. The job writes the row
again when it is :data:`~arena.store.stored_columns.STORE_LAG` forecasts or resolutions
behind. arena never deletes or edits a forecast's own columns; a hand edit that keeps the stamp
is what this cannot see (``arena analyze`` on an export never uses it). With no stored row,
every call reads everything, as before. Nothing is kept between calls: the stored row costs
~0.1 s to read.

The result equals ``table_columns(session, "forecasts")`` value for value; tests compare them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from arena.export.spec import col, raw_value
from arena.export.tables import (
    FORECAST_MARKET_COLUMNS,
    FORECASTS,
    forecast_owners,
    with_market_fee,
)
from arena.export.writer import arrow_columns, table_columns
from arena.store.models import Forecast, Market
from arena.store.stored_columns import Stamp, due, read_stored, store, table_stamp

NAME = "forecasts"
MARKETS_PER_QUERY = 500

OWN = tuple(c for c in FORECASTS.columns if c.name not in FORECAST_MARKET_COLUMNS)
MARKET = (
    col("market_id", Market.id),
    *(c for c in FORECASTS.columns if c.name in FORECAST_MARKET_COLUMNS),
)


@dataclass(frozen=True)
class Held:
    """The own columns (:data:`OWN`) of the forecasts up to ``through``, in id order;
    ``anew``: read row by row, not from the stored row."""

    columns: dict[str, pa.Array | pa.ChunkedArray]
    anew: bool = False

    @property
    def rows(self) -> int:
        return len(self.columns["forecast_id"])

    @property
    def through(self) -> int:
        ids = self.columns["forecast_id"]
        return int(ids[-1].as_py()) if len(ids) else 0

    @property
    def resolved(self) -> int:
        values = self.columns["resolved_value"]
        return len(values) - values.null_count

    @property
    def stamp(self) -> Stamp:
        return Stamp(self.rows, self.through, self.resolved)


@dataclass(frozen=True)
class ForecastColumns:
    """The ``forecasts`` table's columns and a version of them: equal versions, equal columns
    (None: not known, e.g. read row by row)."""

    columns: dict[str, pa.Array | pa.ChunkedArray]
    version: str | None


def forecast_columns(session: Session) -> dict[str, pa.Array | pa.ChunkedArray]:
    """The ``forecasts`` export table as arrow arrays, equal to ``table_columns(session,
    "forecasts")``, reading only what changed since the stored columns (everything, row by
    row, when none are stored)."""
    return read_forecast_columns(session).columns


def read_forecast_columns(session: Session, *, store_at: datetime | None = None) -> ForecastColumns:
    """:func:`forecast_columns` with their version. With ``store_at`` (the analysis job), the
    stored row is written too, in ``session``'s transaction, when it is missing, was read
    anew, or is far behind (:func:`arena.store.stored_columns.due`)."""
    stored = read_stored(session, NAME)
    if stored is None and store_at is None:
        return ForecastColumns(dict(table_columns(session, NAME)), None)
    try:
        held = current(session, None if stored is None else Held(stored.columns()))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return ForecastColumns(dict(table_columns(session, NAME)), None)  # export's rounding
    if store_at is not None and due(
        None if stored is None else stored.stamp, held.stamp, anew=held.anew
    ):
        store(session, NAME, held.stamp, store_at, held.columns)
    return joined(session, held)


def current(session: Session, held: Held | None) -> Held:
    """``held`` brought up to the database's forecasts, or all of them read anew when
    ``held`` is None or does not match the database's :class:`Stamp`."""
    stamp = table_stamp(session, Forecast.id, Forecast.resolved_value)
    if held is not None and held.through <= stamp.through:
        new = _own(session, Forecast.id > held.through, Forecast.id <= stamp.through)
        if held.rows + len(new["forecast_id"]) == stamp.rows:
            columns = held.columns
            if len(new["forecast_id"]):  # chunks, not a copy of everything held
                columns = {
                    name: pa.chunked_array([*_chunks(held.columns[name]), new[name]])
                    for name in new
                }
            result = _resolve(session, Held(columns), stamp)
            if result is not None:
                return result
    return Held(dict(_own(session)), anew=True)


def _chunks(values: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return values.chunks if isinstance(values, pa.ChunkedArray) else [values]


def joined(session: Session, held: Held) -> ForecastColumns:
    """The held own columns with each forecast's market columns, in the table's order; the
    version is the held columns' stamp and the market columns' values."""
    markets = arrow_columns(
        session,
        MARKET,
        with_market_fee(
            select(*(raw_value(c) for c in MARKET))
            .select_from(Market)
            .where(Market.id.in_(select(Forecast.market_id).distinct()))
        ),
    )
    at = pc.index_in(held.columns["market_id"], value_set=markets["market_id"])
    columns = {
        column.name: pc.take(markets[column.name], at)
        if column.name in FORECAST_MARKET_COLUMNS
        else held.columns[column.name]
        for column in FORECASTS.columns
    }
    version = hashlib.sha256(
        json.dumps(
            [held.rows, held.through, held.resolved, pa.table(markets).to_pylist()],
            default=str,
        ).encode()
    )
    return ForecastColumns(columns, version.hexdigest())


def _own(session: Session, *where: ColumnElement[bool]) -> dict[str, pa.Array]:
    statement = forecast_owners(select(*(raw_value(c) for c in OWN)))
    return arrow_columns(session, OWN, statement.where(*where).order_by(Forecast.id))


def _resolve(session: Session, held: Held, stamp: Stamp) -> Held | None:
    """``held`` with the resolutions of forecasts it holds unresolved; None when that does not
    account for every resolution the stamp counts."""
    if held.resolved >= stamp.resolved:
        return held
    values = held.columns["resolved_value"]
    ids = held.columns["forecast_id"].to_numpy()
    unresolved = pc.is_null(values)
    open_markets = pc.unique(pc.filter(held.columns["market_id"], unresolved)).to_pylist()
    found: list[tuple[int, int | None]] = []
    for start in range(0, len(open_markets), MARKETS_PER_QUERY):
        chunk = open_markets[start : start + MARKETS_PER_QUERY]
        rows = session.execute(
            select(Forecast.id, Forecast.resolved_value).where(
                Forecast.market_id.in_(chunk),
                Forecast.resolved_value.is_not(None),
                Forecast.id <= held.through,
            )
        )
        found.extend((row[0], row[1]) for row in rows)
    if not found:
        return None
    got = np.array(found, dtype=np.int64)
    at = np.searchsorted(ids, got[:, 0])
    if (at >= len(ids)).any() or (ids[at.clip(max=len(ids) - 1)] != got[:, 0]).any():
        return None  # a forecast committed under an id already held
    filled = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    missing = unresolved.to_numpy(zero_copy_only=False).copy()
    filled[at], missing[at] = got[:, 1], False
    columns = dict(held.columns)
    columns["resolved_value"] = pa.array(filled, mask=missing, type=values.type)
    result = Held(columns, held.anew)
    return result if result.resolved >= stamp.resolved else None
