"""Export values: what a database value becomes in an export, the one value every format
starts from (:mod:`arena.export.writer` writes it as JSON lines, CSV or Parquet) and the
record chain (:mod:`arena.record`) hashes. No pyarrow here: the daemon imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sqlalchemy import Select, bindparam
from sqlalchemy.orm import InstrumentedAttribute, Session

from arena.clock import iso_utc
from arena.export.spec import ExportColumn, ExportFilters, Kind, TableSpec
from arena.store.queries import built_once

BATCH_ROWS = 2_000
BATCH_BYTES = 4 * 1024 * 1024


def batches(
    session: Session,
    statement: Select,
    columns: tuple[ExportColumn, ...],
    batch_rows: int,
    *,
    stream: bool = True,
    params: dict[str, Any] | None = None,
) -> Iterator[list[tuple[Any, ...]]]:
    """Rows converted to export values, in lists of at most ``batch_rows`` / ~BATCH_BYTES;
    streamed (``yield_per``: a server-side cursor on PostgreSQL) unless ``stream`` is off, for
    reads of a few rows where a cursor's extra round trips would cost more than the rows."""
    # Only the columns whose values change are converted (text and integers come as they are).
    converters = [
        (i, convert)
        for i, convert in enumerate(_CONVERT[column.kind](column) for column in columns)
        if convert is not None
    ]
    textual = [i for i, column in enumerate(columns) if column.kind in (Kind.TEXT, Kind.JSON)]
    batch: list[tuple[Any, ...]] = []
    size = 0
    result = session.execute(
        statement.execution_options(yield_per=batch_rows) if stream else statement, params
    )
    for raw in result:
        values = list(raw)
        for i, convert in converters:
            value = values[i]
            if value is not None:
                values[i] = convert(value)
        row = tuple(values)
        batch.append(row)
        size += sum(len(row[i]) for i in textual if row[i] is not None)
        if len(batch) >= batch_rows or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


# -- value conversion: database value -> the one export value every format starts from ------


def _to_text(column: ExportColumn) -> Callable[[Any], Any] | None:
    """None: text is exported as read (a derived column maps it)."""
    derive = column.derive
    if derive is None:
        return None
    return lambda value: None if value is None else derive(value)


def _to_int(_column: ExportColumn) -> Callable[[Any], Any] | None:
    """None: both databases' drivers read integers as ``int``."""
    return None


def _to_bool(_column: ExportColumn) -> Callable[[Any], Any]:
    return lambda value: None if value is None else bool(value)


def _to_decimal(column: ExportColumn) -> Callable[[Any], Any]:
    """Quantized to the column's scale, half-up as PostgreSQL's NUMERIC does, so an export
    from SQLite (which keeps decimal text as written) equals one from PostgreSQL."""
    step = Decimal(1).scaleb(-column.scale)

    def convert(value: Any) -> Decimal | None:
        if value is None:
            return None
        return Decimal(value).quantize(step, rounding=ROUND_HALF_UP)

    return convert


def _to_time(column: ExportColumn) -> Callable[[Any], Any]:
    derive = column.derive

    def convert(value: Any) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(UTC)
        return derive(value) if derive else value

    return convert


def _to_json_text(column: ExportColumn) -> Callable[[Any], Any]:
    """JSON columns are read as their stored text; a stored JSON ``null`` becomes null. A
    derived JSON column maps the stored text to its own."""
    derive = column.derive

    def convert(value: Any) -> str | None:
        if value is None or value == "null":
            return None
        return derive(str(value)) if derive else str(value)

    return convert


_CONVERT: dict[Kind, Callable[[ExportColumn], Callable[[Any], Any] | None]] = {
    Kind.INT: _to_int,
    Kind.TEXT: _to_text,
    Kind.BOOL: _to_bool,
    Kind.DECIMAL: _to_decimal,
    Kind.TIME: _to_time,
    Kind.JSON: _to_json_text,
}


def converter(column: ExportColumn) -> Callable[[Any], Any] | None:
    """What turns a database value of ``column`` into its export value (None: kept as read)."""
    return _CONVERT[column.kind](column)


def decimal_text(value: Decimal, scale: int) -> str:
    """Money (scale 2) keeps its cents (``"10000.00"``); other decimals drop trailing zeros."""
    text = format(value, "f")
    if scale == 2 or "." not in text:
        return text
    return text.rstrip("0").rstrip(".")


def text_value(column: ExportColumn, value: Any) -> Any:
    """The JSON-lines value of an export value (CSV writes the same, null as an empty cell)."""
    if value is None:
        return None
    if column.kind is Kind.DECIMAL:
        return decimal_text(value, column.scale)
    if column.kind is Kind.TIME:
        return iso_utc(value)
    return value


def text_rows(session: Session, spec: TableSpec, *where: Any) -> list[dict[str, Any]]:
    """The rows of one exported table that match ``where`` (a few: they are read at once), as
    their JSON-lines values (with prompts): exactly what ``arena export --format jsonl``
    writes for them."""
    return _text_rows(session, spec, spec.query(ExportFilters(), True).where(*where))


def text_rows_of(
    session: Session, spec: TableSpec, key: InstrumentedAttribute[Any], value: Any
) -> list[dict[str, Any]]:
    """:func:`text_rows` of ``key == value``, for what is read once per decision or
    settlement: its statement is built once per (table, key) (:func:`built_once`)."""
    statement = built_once(
        ("export rows", spec.name, str(key)),
        lambda: spec.query(ExportFilters(), True).where(key == bindparam("key")),
    )
    return _text_rows(session, spec, statement, {"key": value})


def _text_rows(
    session: Session, spec: TableSpec, statement: Select, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    names = [column.name for column in spec.columns]
    return [
        {
            name: text_value(column, value)
            for name, column, value in zip(names, spec.columns, row, strict=True)
        }
        for batch in batches(
            session, statement, spec.columns, BATCH_ROWS, stream=False, params=params
        )
        for row in batch
    ]
