"""How an exported table is described: its columns (name, kind, the SQL that reads them), the
query that selects them, and the slice (:class:`ExportFilters`) it is restricted by."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Integer,
    Select,
    String,
    Text,
    cast,
    null,
    select,
    type_coerce,
)
from sqlalchemy.types import NullType

from arena.store.types import ExactDecimal, UTCDateTime


class Kind(enum.Enum):
    INT = "integer"
    TEXT = "string"
    BOOL = "boolean"
    DECIMAL = "decimal"
    TIME = "timestamp"
    JSON = "json"


@dataclass(frozen=True)
class ExportFilters:
    """A slice: None means "all"; ``since`` inclusive, ``until`` exclusive."""

    cohorts: tuple[int, ...] | None = None
    families: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None

    @property
    def any(self) -> bool:
        return bool(self.cohorts or self.families or self.since or self.until)


@dataclass(frozen=True)
class ExportColumn:
    """One exported column: its name, kind, and the SQL expression that reads it."""

    name: str
    kind: Kind
    sql: Any
    precision: int = 0
    scale: int = 0
    prompt: bool = False  # left out (null) when prompts are not exported
    derive: Callable[[Any], Any] | None = None  # applied to the value read (derived columns)


def col(
    name: str,
    expr: Any,
    *,
    prompt: bool = False,
    derive: Callable[[Any], Any] | None = None,
) -> ExportColumn:
    """A column named ``name`` reading ``expr``, its kind taken from the expression's type."""
    kind_of = expr.type
    if isinstance(kind_of, ExactDecimal):
        return ExportColumn(name, Kind.DECIMAL, expr, kind_of.precision, kind_of.scale, prompt)
    if isinstance(kind_of, UTCDateTime):
        return ExportColumn(name, Kind.TIME, expr, prompt=prompt, derive=derive)
    if isinstance(kind_of, JSON):
        return ExportColumn(name, Kind.JSON, cast(expr, Text), prompt=prompt, derive=derive)
    if isinstance(kind_of, Boolean):
        return ExportColumn(name, Kind.BOOL, expr, prompt=prompt)
    if isinstance(kind_of, Integer):
        return ExportColumn(name, Kind.INT, expr, prompt=prompt)
    if isinstance(kind_of, String | Text):
        return ExportColumn(name, Kind.TEXT, expr, prompt=prompt, derive=derive)
    raise TypeError(f"export column {name}: unsupported type {kind_of!r}")


Restrict = Callable[[Select, ExportFilters], Select]


@dataclass(frozen=True)
class TableSpec:
    name: str
    columns: tuple[ExportColumn, ...]
    source: Callable[[Select], Select]  # FROM and joins
    order_by: Any
    restrict: Restrict
    batch_rows: int | None = None

    def query(self, filters: ExportFilters, include_prompts: bool, *, raw: bool = False) -> Select:
        """The slice's rows in order; ``raw``: each value as the database driver gives it
        (no result processing: text for decimals and times on SQLite)."""
        selected = [
            null().label(c.name)
            if c.prompt and not include_prompts
            else (raw_value(c) if raw else c.sql.label(c.name))
            for c in self.columns
        ]
        statement = self.source(select(*selected))
        order = self.order_by if isinstance(self.order_by, tuple) else (self.order_by,)
        return self.restrict(statement, filters).order_by(*order)


def raw_value(column: ExportColumn) -> Any:
    """``column``'s SQL, labelled with its name, read as the database driver gives it (no
    result processing: text for decimals and times on SQLite)."""
    return type_coerce(column.sql, NullType()).label(column.name)


def from_table(table: Any) -> Callable[[Select], Select]:
    return lambda statement: statement.select_from(table)
