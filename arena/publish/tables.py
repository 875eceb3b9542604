"""Reading a published dataset's Parquet tables back as export rows, with no database.

A row comes back as ``arena export --format jsonl`` writes it (decimals and instants as text,
JSON documents as JSON text): each Parquet value goes through
:func:`arena.export.values.text_value` with its table's :class:`~arena.export.spec.ExportColumn`,
so the record builders (:mod:`arena.record.records`) rebuild from a dataset exactly the bytes
the chain writer built from the database. Tables are read one row group batch at a time and
only the columns asked for, so memory stays flat whatever their size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from arena.export.spec import ExportColumn, Kind
from arena.export.tables import TABLES
from arena.export.values import text_value

TABLES_DIR = "tables"

_COLUMNS: dict[str, dict[str, ExportColumn]] = {
    spec.name: {column.name: column for column in spec.columns} for spec in TABLES
}


def table_path(directory: Path, table: str) -> Path:
    return directory / TABLES_DIR / f"{table}.parquet"


def has_table(directory: Path, table: str) -> bool:
    return table_path(directory, table).is_file()


def table_rows(
    directory: Path, table: str, columns: Sequence[str] | None = None
) -> Iterator[dict[str, Any]]:
    """The rows of ``tables/<table>.parquet`` (only ``columns`` when given) as JSON-lines
    values; nothing when the file is absent (the manifest check names a missing file)."""
    path = table_path(directory, table)
    if not path.is_file():
        return
    known = _COLUMNS.get(table, {})
    parquet = pq.ParquetFile(path)
    present = set(parquet.schema_arrow.names)
    names = list(columns or parquet.schema_arrow.names)
    wanted = [name for name in names if name in present]
    for group in range(parquet.metadata.num_row_groups):
        # one row group at a time (the writer bounds them: ~4 MB of text), one thread:
        # ``iter_batches`` reads ahead and its memory grows with the file
        batch = parquet.read_row_group(group, columns=wanted, use_threads=False)
        data = batch.to_pydict()
        lists = [
            _texts(known.get(name), data[name]) if name in data else [None] * batch.num_rows
            for name in names
        ]
        for values in zip(*lists, strict=True):
            yield dict(zip(names, values, strict=True))


def _texts(column: ExportColumn | None, values: list[Any]) -> list[Any]:
    """A column's values as JSON-lines values (only decimals and instants change)."""
    if column is None or column.kind not in (Kind.DECIMAL, Kind.TIME):
        return values
    return [text_value(column, value) for value in values]
