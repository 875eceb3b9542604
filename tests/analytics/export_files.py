"""Reading an export directory back in tests, with nothing but csv, json and pyarrow.

Deliberately independent of :mod:`arena.export`: values are turned into Python types from the
documented conventions (decimal text, ISO 8601 ``Z`` timestamps, ``true``/``false``).
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TABLES = (
    "families",
    "cohorts",
    "agents",
    "decisions",
    "attempts",
    "citations",
    "trades",
    "positions",
    "snapshots",
    "brier_scores",
    "markets",
    "market_prices",
    "forecasts",
    "universe_markets",
    "book_marks",
    "job_runs",
    "system_log",
)
FORMATS = ("jsonl", "csv", "parquet")


def read_rows(directory: Path, table: str, fmt: str) -> list[dict[str, Any]]:
    """The rows of one exported file as dicts of what the format itself holds."""
    path = directory / f"{table}.{fmt}"
    if fmt == "jsonl":
        with path.open(encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    if fmt == "csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    return pq.read_table(path).to_pylist()


def header(directory: Path, table: str, fmt: str) -> list[str]:
    path = directory / f"{table}.{fmt}"
    if fmt == "csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return next(csv.reader(handle))
    if fmt == "parquet":
        return list(pq.read_schema(path).names)
    rows = read_rows(directory, table, fmt)
    return list(rows[0]) if rows else []


def dec(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, Decimal) else Decimal(str(value))


def num(value: Any) -> int | None:
    if value is None or value == "":
        return None
    return int(value)


def flag(value: Any) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}[value]


def text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def when(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    assert value.endswith("Z"), value
    return datetime.fromisoformat(value[:-1] + "+00:00")


def cents(value: Decimal) -> str:
    return format(value.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN), "f")


def as_text(value: Any, kind: pa.DataType, csv_cell: bool) -> Any:
    """A Parquet value written the documented JSON-lines (or CSV) way."""
    if value is None:
        return "" if csv_cell else None
    if pa.types.is_decimal(kind):
        plain = format(value, "f")
        if kind.scale != 2 and "." in plain:
            plain = plain.rstrip("0").rstrip(".")
        return plain
    if pa.types.is_timestamp(kind):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if csv_cell and isinstance(value, bool):
        return "true" if value else "false"
    if csv_cell and isinstance(value, int):
        return str(value)
    if csv_cell and value == "":
        return ""
    return value
