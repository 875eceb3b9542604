"""Read the forecasts file of an export directory into :class:`Forecasts`.

An export directory holds one of ``forecasts.parquet``, ``forecasts.csv`` or
``forecasts.jsonl`` (looked for in that order) with the columns of
:data:`arena.analytics.records.COLUMNS`. Id columns are read as text whatever they look like
(``559651`` stays the string ``"559651"``), times as ISO 8601 text (or parquet timestamps).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pa_parquet

from arena.analytics.records import COLUMNS, FLOAT_COLUMNS, STRING_COLUMNS, Forecasts
from arena.errors import ForecastsError

FORECAST_FILES = ("forecasts.parquet", "forecasts.csv", "forecasts.jsonl")
FAMILY_FILES = ("families.parquet", "families.csv", "families.jsonl")


def find_forecasts_file(directory: Path) -> Path:
    """The forecasts file of an export directory (or the path itself if it is a file)."""
    if directory.is_file():
        return directory
    if not directory.is_dir():
        raise ForecastsError(f"export directory not found: {directory}")
    for name in FORECAST_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    raise ForecastsError(f"no {' / '.join(FORECAST_FILES)} in export directory {directory}")


def read_export(directory: Path) -> Forecasts:
    """Load the forecasts of an export directory (parquet, CSV or JSON lines)."""
    path = find_forecasts_file(directory)
    try:
        table = _read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ForecastsError(f"cannot read {path}: {exc}") from exc
    if isinstance(table, Forecasts):
        return table
    if table.num_rows == 0:
        return Forecasts.from_columns({name: [] for name in COLUMNS})
    columns = {name: table.column(name) for name in table.column_names if name in COLUMNS}
    del table  # the columns are then arrow's only hold on the data, freed as converted
    return Forecasts.from_arrow(columns)


def family_names(directory: Path) -> dict[str, str]:
    """Each family's display name by id, from the ``families`` file of an export directory
    (empty when it has none): the names tables show for the forecasters of an analysis."""
    for name in FAMILY_FILES:
        path = directory / name
        if not path.is_file():
            continue
        if path.suffix == ".jsonl":
            rows = list(_json_lines(path))
        else:
            table = pa_parquet.read_table(path) if path.suffix == ".parquet" else _read_csv(path)
            rows = table.select(["family_id", "display_name"]).to_pylist()
        return {str(r["family_id"]): str(r.get("display_name") or r["family_id"]) for r in rows}
    return {}


def agent_tracks(directory: Path) -> dict[str, str]:
    """Each agent's track by agent id (:func:`arena.domain.tracks.track_of` of its frozen
    kind and web search settings), from the ``agents`` file of an export directory (empty
    when it has none; an older export without ``web_search``: no agent searched)."""
    from arena.domain.tracks import track_of

    if not any(
        (directory / f"agents.{suffix}").is_file() for suffix in ("parquet", "csv", "jsonl")
    ):
        return {}
    table = read_export_table(directory, "agents", ("agent_id", "kind", "web_search"))
    columns = [table.column(name).cast(pa.string()).to_pylist() for name in table.column_names]
    return {
        str(agent): track_of(str(kind or ""), web_search)
        for agent, kind, web_search in zip(*columns, strict=True)
    }


def _read_table(path: Path) -> pa.Table | Forecasts:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pa_parquet.read_table(path)
    if suffix == ".csv":
        return _read_csv(path)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return _read_jsonl(path)
    raise ForecastsError(f"unknown forecasts file type: {path.name}")


def _read_csv(path: Path) -> pa.Table:
    types = {name: pa.string() for name in STRING_COLUMNS}
    types.update({name: pa.float64() for name in FLOAT_COLUMNS})
    types.update({name: pa.string() for name in COLUMNS if name not in types})
    options = pa_csv.ConvertOptions(
        column_types=types,
        strings_can_be_null=True,
        null_values=["", "null", "NULL", "None"],
    )
    return pa_csv.read_csv(path, convert_options=options)


def _read_jsonl(path: Path) -> pa.Table | Forecasts:
    """Fast path through arrow (types inferred, converted per column by ``from_columns``);
    plain ``json`` when a column's type varies between rows."""
    if path.stat().st_size == 0:
        return Forecasts.from_rows([])
    try:
        return pa_json.read_json(path)
    except pa.ArrowInvalid:
        return Forecasts.from_rows(_json_lines(path))


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ForecastsError(f"{path}: line {number} is not JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise ForecastsError(f"{path}: line {number} is not a JSON object")
            yield row


def read_export_table(
    directory: Path,
    name: str,
    columns: tuple[str, ...],
    types: dict[str, pa.DataType] | None = None,
) -> pa.Table:
    """The named ``columns`` of one export table (``name.parquet``, ``.csv`` or ``.jsonl``,
    looked for in that order); a column the file lacks comes back all null. CSV columns are
    read as ``types`` says (text by default), so ids stay text; JSON lines are typed by arrow
    and converted by the caller."""
    types = types or {}
    for suffix in ("parquet", "csv", "jsonl"):
        path = directory / f"{name}.{suffix}"
        if not path.is_file():
            continue
        try:
            if suffix == "parquet":
                present = set(pa_parquet.read_schema(path).names)
                table = pa_parquet.read_table(path, columns=[c for c in columns if c in present])
            elif suffix == "csv":
                convert = pa_csv.ConvertOptions(
                    column_types={c: types.get(c, pa.string()) for c in columns},
                    include_columns=list(columns),
                    include_missing_columns=True,
                    strings_can_be_null=True,
                )
                table = pa_csv.read_csv(path, convert_options=convert)
            elif path.stat().st_size == 0:
                table = pa.table({c: pa.array([], types.get(c, pa.string())) for c in columns})
            else:
                table = pa_json.read_json(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ForecastsError(f"cannot read {path}: {exc}") from exc
        for column in columns:
            if column not in table.column_names:
                table = table.append_column(
                    column, pa.nulls(table.num_rows, types.get(column, pa.string()))
                )
        return table.select(list(columns))
    raise ForecastsError(f"no {name}.parquet / .csv / .jsonl in export directory {directory}")
