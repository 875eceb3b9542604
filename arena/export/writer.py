"""Research exports (``arena export``): one file per table, plus ``manifest.json``.

Files (``docs/EXPORT_SCHEMA.md`` documents every column): ``families``, ``cohorts``,
``agents``, ``decisions``, ``attempts``, ``trades``, ``positions``, ``snapshots``,
``brier_scores``, ``markets``, ``market_prices``, ``forecasts``, ``universe_markets``,
``book_marks``, ``job_runs`` and ``system_log``, each as ``<name>.jsonl``,
``<name>.csv`` or ``<name>.parquet``. Every row carries the ids needed to join (``cohort_id``,
``agent_id``, ``family_id``, ``decision_id``, ``market_id``...).

Slices: ``cohorts`` and ``families`` restrict every table to the agents in them; ``since``
(inclusive) and ``until`` (exclusive) restrict each fact table on its natural time column
(decisions ``created_at``, attempts ``started_at``, trades ``executed_at``, positions
``opened_at``, snapshots ``taken_at``, brier_scores ``scored_at``, forecasts ``forecast_at``,
market_prices ``observed_at``). Dimension tables (families, cohorts, agents) follow the cohort
and family filters only; with any filter, markets (and their prices) are those the slice refers
to: traded, held, shown in a decision's frozen universe, scored or forecast.

Values, the same in every format: decimals exact (text in JSONL/CSV, ``decimal128(p, s)`` in
Parquet with the database column's precision and scale), timestamps UTC (ISO 8601 with ``Z`` in
text, ``timestamp[us, UTC]`` in Parquet), JSON documents (prompts, payloads, outcome lists) as
JSON text, null as JSON null / empty CSV cell / Parquet null.

Bounded memory: every table is streamed from one consistent read snapshot in batches
(``yield_per``), written row by row (JSONL, CSV) or one Parquet row group per batch, a batch
being closed early once it holds about :data:`~arena.export.values.BATCH_BYTES` of text
(prompts are large).
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sqlalchemy import Select, select
from sqlalchemy.orm import Session, sessionmaker

from arena import __version__
from arena.clock import Clock, SystemClock, ensure_utc, iso_utc
from arena.csv_safe import safe_cell
from arena.domain.states import Methodology
from arena.errors import UserError
from arena.export import FORMATS
from arena.export.directory import MANIFEST, check_target, publish, sha256_of, staging
from arena.export.spec import ExportColumn, ExportFilters, Kind, TableSpec
from arena.export.tables import TABLES
from arena.export.values import BATCH_ROWS, batches, converter, decimal_text, text_value
from arena.store.consistent_read import consistent_read
from arena.store.models import Agent, Cohort, Family

log = logging.getLogger(__name__)

# 2: executable prices (mode book columns); 3: job_runs, system_log; 4: forecasts carry pricing,
# fee_rate, fee_exponent, category and question_type (the optional analysis columns);
# 5: citations (web search), attempts gain search_cost_usd and search_note; 6: agents gain
# replicate
EXPORT_SCHEMA_VERSION = "6"


@dataclass(frozen=True)
class ExportedFile:
    """One written file: its table, name inside the export directory, rows, bytes, sha256."""

    table: str
    file: str
    rows: int
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` records about an export."""

    export_schema_version: str
    methodology_version: str
    arena_version: str
    format: str
    exported_at: datetime
    filters: dict[str, Any]
    cohort_methodology_versions: list[str]
    files: tuple[ExportedFile, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "export_schema_version": self.export_schema_version,
            "methodology_version": self.methodology_version,
            "arena_version": self.arena_version,
            "format": self.format,
            "exported_at": iso_utc(self.exported_at),
            "filters": self.filters,
            "cohort_methodology_versions": self.cohort_methodology_versions,
            "files": {
                f.table: {"file": f.file, "rows": f.rows, "bytes": f.bytes, "sha256": f.sha256}
                for f in self.files
            },
        }

    def rows(self, table: str) -> int:
        return next(f.rows for f in self.files if f.table == table)


@dataclass(frozen=True)
class ExportTarget:
    """Where an export goes: its directory, the format of its files, and whether an earlier
    export in that directory is replaced (else a non-empty directory is refused)."""

    directory: Path | str
    fmt: str = "jsonl"
    overwrite: bool = False


def export(
    session_factory: sessionmaker[Session],
    target: ExportTarget,
    filters: ExportFilters | None = None,
    *,
    include_prompts: bool = True,
    methodology: Methodology = Methodology.V1,
    clock: Clock | None = None,
) -> Manifest:
    """Write every table of the slice into the target directory in its format and return
    the manifest.

    Empty or None ``cohorts``/``families`` mean "all"; ``since`` is inclusive and ``until``
    exclusive. ``include_prompts=False`` writes null instead of each attempt's request
    messages, raw response and raw body. A non-empty directory is refused unless the target
    says ``overwrite``, which replaces the whole earlier export; the files are written beside
    it, ``manifest.json`` last, and moved into place in one step (:mod:`arena.export.directory`).
    """
    fmt = target.fmt
    if fmt not in FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    filters = _normalised(filters or ExportFilters())
    directory = Path(target.directory)
    check_target(directory, target.overwrite, (f"{t.name}.{f}" for t in TABLES for f in FORMATS))
    exported_at = (clock or SystemClock()).now()
    with consistent_read(session_factory) as session:
        _check_known(session, filters)
        versions = _methodology_versions(session, filters)
        with staging(directory) as staged:
            written = write_tables(session, staged, fmt, filters, include_prompts=include_prompts)
            manifest = _manifest(methodology, fmt, exported_at, filters, include_prompts)
            manifest = replace(manifest, cohort_methodology_versions=versions, files=tuple(written))
            (staged / MANIFEST).write_text(
                json.dumps(manifest.to_dict(), indent=2) + "\n", encoding="utf-8"
            )
            publish(staged, directory)
    log.info("export of %d rows written to %s", sum(f.rows for f in written), directory)
    return manifest


def write_tables(
    session: Session,
    directory: Path,
    fmt: str,
    filters: ExportFilters | None = None,
    *,
    include_prompts: bool = True,
) -> list[ExportedFile]:
    """Write every table of the slice as ``<directory>/<table>.<fmt>``, all from ``session``
    (one consistent read: :func:`arena.store.consistent_read.consistent_read`)."""
    return [
        ExportedFile(table, path.name, rows, path.stat().st_size, sha256_of(path))
        for table, path, rows in write_table_files(
            session, directory, (fmt,), filters, include_prompts=include_prompts
        )
    ]


def write_table_files(
    session: Session,
    directory: Path,
    formats: tuple[str, ...],
    filters: ExportFilters | None = None,
    *,
    include_prompts: bool = True,
) -> list[tuple[str, Path, int]]:
    """Write every table of the slice as ``<directory>/<table>.<format>`` in each format, each
    table read once for all of them; ``(table, path, rows)`` of each file written."""
    written: list[tuple[str, Path, int]] = []
    for spec in TABLES:
        targets = [(directory / f"{spec.name}.{fmt}", fmt) for fmt in formats]
        rows = _write_table(session, spec, filters or ExportFilters(), include_prompts, targets)
        written += [(spec.name, path, rows) for path, _fmt in targets]
        log.debug("exported %s: %d rows", spec.name, rows)
    return written


def _normalised(filters: ExportFilters) -> ExportFilters:
    """The slice with its instants in UTC and its cohorts and families sorted, once each
    (empty ones mean "all"); a ``since`` not before ``until`` is a :class:`UserError`."""
    since = ensure_utc(filters.since) if filters.since is not None else None
    until = ensure_utc(filters.until) if filters.until is not None else None
    if since is not None and until is not None and since >= until:
        raise UserError("--since must be earlier than --until")
    cohorts, families = filters.cohorts, filters.families
    return ExportFilters(
        cohorts=tuple(sorted(set(cohorts))) if cohorts else None,
        families=tuple(sorted(set(families))) if families else None,
        since=since,
        until=until,
    )


def _manifest(
    methodology: Methodology,
    fmt: str,
    exported_at: datetime,
    filters: ExportFilters,
    include_prompts: bool,
) -> Manifest:
    since, until = filters.since, filters.until
    return Manifest(
        export_schema_version=EXPORT_SCHEMA_VERSION,
        methodology_version=methodology,
        arena_version=__version__,
        format=fmt,
        exported_at=exported_at,
        filters={
            "cohorts": list(filters.cohorts) if filters.cohorts else None,
            "families": list(filters.families) if filters.families else None,
            "since": iso_utc(since) if since else None,
            "until": iso_utc(until) if until else None,
            "include_prompts": include_prompts,
        },
        cohort_methodology_versions=[],
    )


def export_table(
    session_factory: sessionmaker[Session], table: str, path: Path, fmt: str = "parquet"
) -> int:
    """Write one whole table (e.g. ``forecasts`` for ``arena analyze``) to ``path``; its rows."""
    spec = next((spec for spec in TABLES if spec.name == table), None)
    if spec is None:
        raise UserError(f"no exported table named {table!r}")
    with consistent_read(session_factory) as session:
        return _write_table(session, spec, ExportFilters(), True, [(path, fmt)])


def table_columns(session: Session, table: str) -> dict[str, pa.Array]:
    """One whole table in memory as arrow arrays, column by column, holding exactly the values
    :func:`export_table` writes to Parquet (the analyses read ``forecasts`` so: the daemon's
    stored v2 analysis and ``arena publish`` equal ``arena analyze`` on the same database).

    One query, streamed in batches of :data:`COLUMN_BATCH_ROWS`, each value as the driver
    reads it and each batch turned into arrow arrays at arrow's speed (a derived column is
    computed once per distinct value): 364,000 forecasts in well under a second. A value that
    needs the export's own rounding (a decimal stored with more places than its column's scale)
    sends the whole table through the export's per-value conversion instead."""
    spec = next((spec for spec in TABLES if spec.name == table), None)
    if spec is None:
        raise UserError(f"no exported table named {table!r}")
    try:
        return _arrow_columns(session, spec)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        log.info("%s: read value by value (%s)", table, exc)
    types = [arrow_type(column) for column in spec.columns]
    data: list[list[Any]] = [[] for _ in spec.columns]
    for batch in batches(session, spec.query(ExportFilters(), True), spec.columns, BATCH_ROWS):
        for values, column in zip(data, zip(*batch, strict=True), strict=True):
            values.extend(column)
    return {
        column.name: pa.array(values, type=kind)
        for column, values, kind in zip(spec.columns, data, types, strict=True)
    }


COLUMN_BATCH_ROWS = 50_000
"""Rows :func:`table_columns` converts at a time (their Python values take ~20 MB)."""


def _arrow_columns(session: Session, spec: TableSpec) -> dict[str, pa.Array]:
    return arrow_columns(session, spec.columns, spec.query(ExportFilters(), True, raw=True))


def arrow_columns(
    session: Session, columns: Sequence[ExportColumn], statement: Select
) -> dict[str, pa.Array]:
    """The rows of ``statement``, which selects ``columns`` raw
    (:func:`arena.export.spec.raw_value`) in their order, as one arrow array per column holding
    its export values. Raises arrow's error when a value needs the export's per-value
    conversion (see :func:`table_columns`)."""
    types = [arrow_type(column) for column in columns]
    chunks: list[list[pa.Array]] = [[] for _ in columns]
    result = session.connection().execute(statement.execution_options(yield_per=COLUMN_BATCH_ROWS))
    for partition in result.partitions():
        for index, values in enumerate(zip(*partition, strict=True)):
            chunks[index].append(_arrow_column(columns[index], list(values), types[index]))
    return {
        column.name: pa.concat_arrays(parts) if parts else pa.array([], type=kind)
        for column, parts, kind in zip(columns, chunks, types, strict=True)
    }


def _arrow_column(column: ExportColumn, values: list[Any], kind: pa.DataType) -> pa.Array:
    """One batch of one column's raw driver values as the arrow array of its export values
    (:mod:`arena.export.values`); arrow casts refuse what would lose a digit."""
    if column.kind is Kind.JSON or (column.derive is not None and column.kind is Kind.TEXT):
        convert = converter(column)
        assert convert is not None
        done = {value: convert(value) for value in set(values) if value is not None}
        return pa.array([None if value is None else done[value] for value in values], kind)
    if column.kind is Kind.TIME and values and isinstance(values[0], datetime):
        array = pa.array(values, type=kind)  # aware datetimes (PostgreSQL): converted to UTC
    else:  # text (SQLite: times are naive UTC), numbers, Decimal
        array = pa.array(values)
        if column.kind is Kind.TIME and pa.types.is_string(array.type):
            array = pc.cast(array, pa.timestamp("us"))
        array = pc.cast(array, kind)
    if column.derive is not None:  # a derived time: once per distinct value
        convert = converter(column)
        assert convert is not None
        distinct = pc.unique(array)
        derived = pa.array(
            [None if v is None else convert(v) for v in distinct.to_pylist()], type=kind
        )
        array = pc.take(derived, pc.index_in(array, distinct))
    return array


def _check_known(session: Session, filters: ExportFilters) -> None:
    """Unknown cohort or family ids are a usage error, not an empty export."""
    if filters.cohorts:
        found = set(session.scalars(select(Cohort.id).where(Cohort.id.in_(filters.cohorts))))
        missing = [str(c) for c in filters.cohorts if c not in found]
        if missing:
            raise UserError(f"--cohort: no cohort {', '.join(missing)}")
    if filters.families:
        known = select(Family.id).where(Family.id.in_(filters.families))
        found_families = set(session.scalars(known))
        unknown = [f for f in filters.families if f not in found_families]
        if unknown:
            raise UserError(f"--family: no family {', '.join(unknown)}")


def _methodology_versions(session: Session, filters: ExportFilters) -> list[str]:
    statement = select(Agent.methodology_version).distinct()
    if filters.cohorts:
        statement = statement.where(Agent.cohort_id.in_(filters.cohorts))
    if filters.families:
        statement = statement.where(Agent.family_id.in_(filters.families))
    return sorted(str(version) for version in session.scalars(statement))


def _write_table(
    session: Session,
    spec: TableSpec,
    filters: ExportFilters,
    include_prompts: bool,
    targets: list[tuple[Path, str]],
) -> int:
    """Write one table into each ``(path, format)`` of ``targets`` from one read; its rows."""
    statement = spec.query(filters, include_prompts)
    batch_rows = spec.batch_rows or BATCH_ROWS
    writers = [_WRITERS[fmt](path, spec.columns) for path, fmt in targets]
    count = 0
    try:
        for batch in batches(session, statement, spec.columns, batch_rows):
            for writer in writers:
                writer.write(batch)
            count += len(batch)
    finally:
        for writer in writers:
            writer.close()
    return count


# -- writers ---------------------------------------------------------------------------------


class _JsonlWriter:
    def __init__(self, path: Path, columns: tuple[ExportColumn, ...]) -> None:
        self.columns = columns
        self.handle: IO[str] = path.open("w", encoding="utf-8", newline="\n")

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        for row in rows:
            record = {c.name: text_value(c, v) for c, v in zip(self.columns, row, strict=True)}
            self.handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    def close(self) -> None:
        self.handle.close()


class _CsvWriter:
    def __init__(self, path: Path, columns: tuple[ExportColumn, ...]) -> None:
        self.cells = [csv_cell(column) for column in columns]
        self.handle: IO[str] = path.open("w", encoding="utf-8", newline="")
        # RFC 4180 line ends: the writer then quotes a cell holding a carriage return, which
        # with "\n" alone it writes bare, splitting the row for every reader.
        self.writer = csv.writer(self.handle, lineterminator="\r\n")
        self.writer.writerow([column.name for column in columns])

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        cells = self.cells
        self.writer.writerows(
            [[cell(v) for cell, v in zip(cells, row, strict=True)] for row in rows]
        )

    def close(self) -> None:
        self.handle.close()


def csv_cell(column: ExportColumn) -> Callable[[Any], Any]:
    """The CSV cell of an export value of ``column``: its JSON-lines value
    (:func:`~arena.export.values.text_value`), null as an empty cell, booleans as
    ``true``/``false``, text spreadsheet-safe (:func:`arena.csv_safe.safe_cell`). One function
    per column, chosen once: a table's millions of cells each pay one call."""
    kind = column.kind
    if kind is Kind.BOOL:
        return lambda v: "" if v is None else ("true" if v else "false")
    if kind is Kind.DECIMAL:
        scale = column.scale
        return lambda v: "" if v is None else decimal_text(v, scale)
    if kind is Kind.TIME:
        return lambda v: "" if v is None else iso_utc(v)
    if kind in (Kind.TEXT, Kind.JSON):
        return lambda v: "" if v is None else (safe_cell(v) if isinstance(v, str) else v)
    return lambda v: "" if v is None else v


class _ParquetWriter:
    def __init__(self, path: Path, columns: tuple[ExportColumn, ...]) -> None:
        self.schema = arrow_schema(columns)
        # Dictionary pages pay off for repeated values (ids, statuses), not for prompts; and
        # min/max statistics of prompts would only grow the footer kept until the file closes.
        small = [c.name for c in columns if not c.prompt]
        self.writer = pq.ParquetWriter(
            path, self.schema, compression="zstd", use_dictionary=small, write_statistics=small
        )

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        arrays = [
            pa.array([row[i] for row in rows], type=self.schema.field(i).type)
            for i in range(len(self.schema))
        ]
        self.writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))

    def close(self) -> None:
        self.writer.close()


def arrow_type(column: ExportColumn) -> pa.DataType:
    """The Parquet (Arrow) type of an export column."""
    if column.kind is Kind.INT:
        return pa.int64()
    if column.kind is Kind.BOOL:
        return pa.bool_()
    if column.kind is Kind.DECIMAL:
        return pa.decimal128(column.precision, column.scale)
    if column.kind is Kind.TIME:
        return pa.timestamp("us", tz="UTC")
    return pa.string()


def arrow_schema(columns: tuple[ExportColumn, ...]) -> pa.Schema:
    return pa.schema([pa.field(column.name, arrow_type(column)) for column in columns])


_WRITERS: dict[str, Callable[[Path, tuple[ExportColumn, ...]], Any]] = {
    "jsonl": _JsonlWriter,
    "csv": _CsvWriter,
    "parquet": _ParquetWriter,
}
