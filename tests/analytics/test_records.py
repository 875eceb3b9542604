"""Forecasts records: building from rows, validation, and reading export files."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena.analytics.loading import read_export
from arena.analytics.records import (
    COLUMNS,
    FLOAT_COLUMNS,
    STRING_COLUMNS,
    Forecasts,
    factorize,
    to_datetime,
)
from arena.errors import ForecastsError

ROWS = [
    {
        "forecast_id": 1,
        "family_id": "claude",
        "family_kind": "openrouter",
        "agent_id": "a1",
        "cohort_id": "c1",
        "decision_id": "d1",
        "market_id": 559651,
        "outcome": "Yes",
        "probability": Decimal("0.7"),
        "market_probability": Decimal("0.65"),
        "forecast_at": datetime(2025, 1, 8, 12, 0, tzinfo=UTC),
        "event_group": "neg-1",
        "scheduled_close_at": "2025-02-01T00:00:00Z",
        "resolved_at": None,
        "resolved_value": None,
    },
    {
        "forecast_id": "2",
        "family_id": "gpt",
        "market_id": "559651",
        "outcome": "No",
        "probability": 0.4,
        "market_probability": 0.35,
        "forecast_at": "2025-01-08T12:00:00+00:00",
        "week_start": "2025-01-05",
        "resolved_value": 0,
        "resolved_at": "2025-02-02T00:00:00Z",
    },
    {
        "family_id": "gpt",
        "market_id": "777",
        "outcome": "Trump",
        "probability": "0.25",
        "forecast_at": "2025-01-12T00:05:00Z",
    },
]


def test_from_rows_normalises_types_and_outcomes() -> None:
    f = Forecasts.from_rows(ROWS)
    assert len(f) == 3
    assert list(f.market_id) == ["559651", "559651", "777"]
    assert list(f.forecast_id) == ["1", "2", None]
    assert list(f.outcome) == ["", "", "Trump"]
    # the "No" row becomes the YES event: p, market price and result flipped
    np.testing.assert_allclose(f.probability, [0.7, 0.6, 0.25])
    np.testing.assert_allclose(f.market_probability[:2], [0.65, 0.65])
    assert np.isnan(f.market_probability[2])
    assert np.isnan(f.resolved_value[0])
    assert f.resolved_value[1] == 1.0
    # week start is the Sunday at or before the forecast (2025-01-05 and 2025-01-12)
    assert [to_datetime(w) for w in f.week_start] == [
        datetime(2025, 1, 5, tzinfo=UTC),
        datetime(2025, 1, 5, tzinfo=UTC),
        datetime(2025, 1, 12, tzinfo=UTC),
    ]
    assert to_datetime(f.resolved_at[1]) == datetime(2025, 2, 2, tzinfo=UTC)
    assert f.families() == ["claude", "gpt"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"probability": 1.2}, "probability is missing or outside"),
        ({"probability": None}, "probability is missing or outside"),
        ({"market_probability": -0.1}, "market_probability is outside"),
        ({"resolved_value": 0.5}, "resolved_value is not 0, 1 or null"),
        ({"family_id": " "}, "family_id is missing"),
        ({"forecast_at": None}, "forecast_at is missing"),
    ],
)
def test_invalid_rows_name_the_row(change: dict[str, object], message: str) -> None:
    rows = [dict(ROWS[2]), {**ROWS[2], "forecast_id": "f-9", **change}]
    with pytest.raises(ForecastsError, match=f"forecast f-9: {message}"):
        Forecasts.from_rows(rows)


def test_missing_required_column() -> None:
    with pytest.raises(ForecastsError, match="required column"):
        Forecasts.from_columns({"family_id": ["a"], "probability": [0.5]})


def test_unparseable_values() -> None:
    with pytest.raises(ForecastsError, match="row 1: probability is not a number"):
        Forecasts.from_rows([{**ROWS[2], "probability": "high"}])
    with pytest.raises(ForecastsError, match="row 1: forecast_at is not a timestamp"):
        Forecasts.from_rows([{**ROWS[2], "forecast_at": "yesterday"}])


def _exported(name: str, value: object) -> object:
    """A value as the export writes it: ids as text, numbers as floats, times as ISO text."""
    if value is None:
        return None
    if name in FLOAT_COLUMNS:
        return float(value)  # type: ignore[arg-type]
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _write_all_formats(directory: Path) -> dict[str, Path]:
    rows = [{name: _exported(name, r.get(name)) for name in COLUMNS} for r in ROWS]
    paths = {}
    jsonl = directory / "jsonl"
    jsonl.mkdir()
    with (jsonl / "forecasts.jsonl").open("w") as handle:
        for r in rows:
            handle.write(json.dumps(r) + "\n")
    paths["jsonl"] = jsonl
    csv_dir = directory / "csv"
    csv_dir.mkdir()
    with (csv_dir / "forecasts.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: "" if v is None else v for k, v in r.items()})
    paths["csv"] = csv_dir
    parquet = directory / "parquet"
    parquet.mkdir()
    table = pa.table(
        {
            name: pa.array(
                [r[name] for r in rows],
                type=pa.float64() if name in FLOAT_COLUMNS else pa.string(),
            )
            for name in COLUMNS
        }
    )
    table = table.set_column(
        table.schema.get_field_index("forecast_at"),
        "forecast_at",
        pa.array(
            [datetime.fromisoformat(str(r["forecast_at"]).replace("Z", "+00:00")) for r in rows],
            type=pa.timestamp("us", tz="UTC"),
        ),
    )
    pq.write_table(table, parquet / "forecasts.parquet")
    paths["parquet"] = parquet
    return paths


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_every_export_format_reads_the_same(tmp_path: Path, kind: str) -> None:
    expected = Forecasts.from_rows(ROWS)
    loaded = read_export(_write_all_formats(tmp_path)[kind])
    for name in ("family_id", "market_id", "outcome", "forecast_id", "event_group"):
        assert list(getattr(loaded, name)) == list(getattr(expected, name)), name
    for name in ("probability", "market_probability", "resolved_value"):
        np.testing.assert_allclose(getattr(loaded, name), getattr(expected, name))
    for name in ("forecast_at", "week_start", "scheduled_close_at", "resolved_at"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(expected, name))


def test_parquet_decimals_read_as_their_nearest_float(tmp_path: Path) -> None:
    """``arena export`` writes probabilities as decimal128; each reads as float(its text), as
    from CSV or JSONL (arrow's own cast gives 0.959 as 0.9590000000000001)."""
    texts = ["0.9590000000", "0.4180000000", "0.1000000000"]
    table = pa.table(
        {
            "family_id": ["a", "a", "b"],
            "market_id": ["1", "2", "1"],
            "probability": pa.array([Decimal(t) for t in texts], pa.decimal128(14, 10)),
            "market_probability": pa.array(
                [Decimal("0.4790000000"), None, None], pa.decimal128(14, 10)
            ),
            "forecast_at": ["2025-01-05T00:05:00Z"] * 3,
        }
    )
    pq.write_table(table, tmp_path / "forecasts.parquet")
    loaded = read_export(tmp_path)
    assert loaded.probability.tolist() == [float(t) for t in texts]
    assert loaded.market_probability[0] == 0.479 and np.isnan(loaded.market_probability[1:]).all()


def test_jsonl_with_mixed_types_falls_back(tmp_path: Path) -> None:
    lines = [
        {
            "family_id": "a",
            "market_id": 1,
            "probability": 0.5,
            "forecast_at": "2025-01-05T00:05:00Z",
        },
        {
            "family_id": "b",
            "market_id": "1",
            "probability": "0.5",
            "forecast_at": "2025-01-05T00:05:00Z",
        },
    ]
    (tmp_path / "forecasts.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    loaded = read_export(tmp_path)
    assert list(loaded.market_id) == ["1", "1"]


def test_export_errors(tmp_path: Path) -> None:
    with pytest.raises(ForecastsError, match="not found"):
        read_export(tmp_path / "missing")
    with pytest.raises(ForecastsError, match=r"no forecasts\.parquet"):
        read_export(tmp_path)
    (tmp_path / "forecasts.jsonl").write_text('{"family_id": "a"}\nnot json\n')
    with pytest.raises(ForecastsError, match="line 2 is not JSON"):
        read_export(tmp_path)


def test_jsonl_as_the_database_export_writes_it(tmp_path: Path) -> None:
    """Integer ids, decimals as strings, a date-only week start, offsets and Z times."""
    lines = [
        {
            "forecast_id": 1,
            "agent_id": 7,
            "family_id": "claude",
            "market_id": "559651",
            "outcome": "YES",
            "probability": "0.700000",
            "market_probability": "0.650000",
            "forecast_at": "2025-01-05T02:05:00+02:00",
            "week_start": "2025-01-05",
            "resolved_at": None,
            "resolved_value": None,
            "source": "panel",
        },
        {
            "forecast_id": 2,
            "agent_id": 8,
            "family_id": "gpt",
            "market_id": "559651",
            "outcome": "NO",
            "probability": "0.25",
            "market_probability": None,
            "forecast_at": "2025-01-05T00:05:00.5Z",
            "week_start": "2025-01-05",
            "resolved_at": "2025-01-09T00:00:00Z",
            "resolved_value": 1,
            "source": "bet",
        },
    ]
    (tmp_path / "forecasts.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    loaded = read_export(tmp_path)
    assert list(loaded.forecast_id) == ["1", "2"]
    assert list(loaded.agent_id) == ["7", "8"]
    np.testing.assert_allclose(loaded.probability, [0.7, 0.75])
    assert loaded.resolved_value[1] == 0.0  # the NO side resolved 1: the YES event did not
    assert to_datetime(loaded.forecast_at[0]) == datetime(2025, 1, 5, 0, 5, tzinfo=UTC)
    assert to_datetime(loaded.forecast_at[1]) == datetime(2025, 1, 5, 0, 5, 0, 500000, tzinfo=UTC)
    assert to_datetime(loaded.resolved_at[1]) == datetime(2025, 1, 9, tzinfo=UTC)
    assert list(loaded.source) == ["panel", "bet"]
    assert len(loaded.from_sources(("panel",))) == 1
    assert len(loaded.from_sources(("panel", "bet"))) == 2


def test_missing_source_counts_as_panel() -> None:
    f = Forecasts.from_rows(ROWS)
    assert len(f.from_sources(("panel",))) == 3
    assert len(f.from_sources(("bet",))) == 0


def assert_same(got: Forecasts, expected: Forecasts) -> None:
    """Every column equal, value for value (NaN and NaT where the other has them)."""
    for name in COLUMNS:
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype, name
        if a.dtype == object:
            assert a.tolist() == b.tolist(), name
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_from_arrow_converts_as_from_columns_and_empties_its_input() -> None:
    """The database's and an export's tables are converted by ``from_arrow``, which drops each
    arrow array once converted: the same forecasts, and nothing left holding arrow memory."""
    rows = [{name: _exported(name, r.get(name)) for name in COLUMNS} for r in ROWS]
    table = pa.table({name: pa.array([r[name] for r in rows]) for name in COLUMNS})
    expected = Forecasts.from_columns({name: table.column(name) for name in COLUMNS})
    columns = {name: table.column(name) for name in COLUMNS}
    del table
    assert_same(Forecasts.from_arrow(columns), expected)
    assert columns == {}


def test_known_at_copies_nothing_when_nothing_is_cut() -> None:
    """At or after the latest forecast (the analysis job's "now"), the data as it stood is the
    data itself, not a copy of every column; outcomes learnt later are still blanked."""
    f = Forecasts.from_rows(ROWS)
    latest = f.forecast_at.max()
    assert f.known_at(latest + np.timedelta64(30, "D")) is f
    before_result = f.known_at(latest)  # row 2's outcome is learnt on 2025-02-02
    assert before_result is not f
    assert np.isnan(before_result.resolved_value).all()
    for name in COLUMNS:
        if name not in ("resolved_value", "resolved_at"):
            assert before_result.coded[name] is f.coded[name], name
    earlier = f.known_at(np.datetime64("2025-01-10T00:00:00", "us"))  # row 3 made after it
    assert earlier.forecast_id.tolist() == ["1", "2"]
    np.testing.assert_array_equal(earlier.probability, f.probability[:2])


def _old_strings(values: list[object]) -> list[object]:
    """The text columns as they were held before :class:`Text`: each value trimmed and written
    as text, empty text and missing values None."""
    out: list[object] = []
    for value in values:
        text = None if value is None else str(value).strip()
        out.append(text if text else None)
    return out


def test_text_columns_read_as_the_object_arrays_they_replaced() -> None:
    """Text columns are held dictionary-encoded, in the narrowest integer codes (and integer ids
    all distinct as the integers); read, each is the object array it was before, from arrow
    (text, integer ids all distinct, repeated, or with nulls) and from Python values, and stays
    so through ``select``, ``known_at`` and ``from_sources``."""
    n = 300
    ids = list(range(10_000, 10_000 + n))
    raw: dict[str, list[object]] = {
        "forecast_id": ids,
        "decision_id": [i // 3 for i in ids],
        "agent_id": [None if i % 7 == 0 else i % 5 for i in range(n)],
        "family_id": [f" fam-{i % 4} " for i in range(n)],
        "market_id": [f"m{i % 200}" for i in range(n)],
        "event_group": [None if i % 3 else "" if i % 2 else f"g{i % 9}" for i in range(n)],
        "source": ["bet" if i % 10 == 0 else None for i in range(n)],
        "outcome": [("Yes", "No", "Trump", None, "yes")[i % 5] for i in range(n)],
    }
    columns: dict[str, object] = {name: pa.array(values) for name, values in raw.items()}
    columns["probability"] = pa.array([(i % 97) / 100 for i in range(n)])
    columns["forecast_at"] = pa.array(
        [
            datetime(2025, 1, 1, tzinfo=UTC)
            + (i % 40) * (datetime(2025, 1, 2) - datetime(2025, 1, 1))
            for i in range(n)
        ]
    )
    for data in (
        Forecasts.from_arrow(dict(columns)),  # type: ignore[arg-type]
        Forecasts.from_columns(
            {name: list(values) for name, values in raw.items()}
            | {
                "probability": columns["probability"].to_pylist(),  # type: ignore[attr-defined]
                "forecast_at": columns["forecast_at"].to_pylist(),  # type: ignore[attr-defined]
            }
        ),
    ):
        for name, values in raw.items():
            expected = _old_strings(values)
            if name == "outcome":
                expected = ["" if v in (None, "Yes", "No", "yes") else v for v in expected]
            got = getattr(data, name)
            assert got.dtype == object, name
            assert got.tolist() == expected, name
        assert data.coded["family_id"].codes.dtype == np.int8  # type: ignore[union-attr]
        assert data.coded["market_id"].codes.dtype == np.int16  # type: ignore[union-attr]
        rows = np.flatnonzero(np.arange(n) % 3 != 1)
        picked = data.select(rows)
        cut = data.known_at(np.datetime64("2025-01-20T00:00:00", "us"))
        made = data.forecast_at <= np.datetime64("2025-01-20T00:00:00", "us")
        panel = data.from_sources(("panel",))
        for name in STRING_COLUMNS:
            whole = getattr(data, name)
            assert getattr(picked, name).tolist() == whole[rows].tolist(), name
            assert getattr(cut, name).tolist() == whole[made].tolist(), name
            assert getattr(panel, name).tolist() == whole[np.arange(n) % 10 != 0].tolist(), name
    held = Forecasts.from_arrow(dict(columns)).coded["forecast_id"]  # type: ignore[arg-type]
    assert held.codes is None and held.labels.dtype == np.int32
    wide = {**columns, "forecast_id": pa.array([2**40 + i for i in range(n)])}
    ids = Forecasts.from_arrow(wide).forecast_id  # type: ignore[arg-type]
    assert ids.tolist() == [str(2**40 + i) for i in range(n)]


def _arrow_factorize(values: np.ndarray) -> tuple[list[int], list[str]]:
    """Codes and texts as ``factorize`` gave them before it worked on held columns (arrow's
    dictionary encoding)."""
    texts = [value if value is not None else "" for value in values]
    encoded = pa.array(texts, type=pa.string()).dictionary_encode()
    return encoded.indices.to_pylist(), [str(v) for v in encoded.dictionary.to_pylist()]


def test_factorize_of_held_columns_equals_the_arrow_encoding_it_replaced() -> None:
    """``factorize`` of a held text column (labels that repeat a text, labels no row has after
    a cut, missing values, integer ids) and of its object array both give the codes and texts,
    in first-seen order, that arrow's dictionary encoding gave."""
    n = 200
    columns = {
        "forecast_id": pa.array(list(range(n, 0, -1))),
        "agent_id": pa.array([(i * 7) % 13 for i in range(n)]),
        "family_id": pa.array([f"f{(i * 3) % 5}" for i in range(n)]),
        "event_group": pa.array([None if i % 11 == 0 else f"g{i % 4}" for i in range(n)]),
        "market_id": pa.array([f"m{(n - i) % 17}" for i in range(n)]),
        "outcome": pa.array([("No", "Yes", None, "A", "yes", "")[i % 6] for i in range(n)]),
        "probability": pa.array([0.5] * n),
        "forecast_at": pa.array([datetime(2025, 1, 1 + i % 20, tzinfo=UTC) for i in range(n)]),
    }
    data = Forecasts.from_arrow(columns)  # type: ignore[arg-type]
    for f in (data, data.select(np.arange(n) % 4 == 3), data.select(np.arange(n)[::-1])):
        for name in ("forecast_id", "agent_id", "family_id", "event_group", "market_id", "outcome"):
            expected = _arrow_factorize(getattr(f, name))
            for values in (f.coded[name], getattr(f, name)):
                codes, texts = factorize(values)
                assert codes.dtype == np.int64
                assert (codes.tolist(), texts) == expected, name


def test_float_and_time_columns_read_back_bit_for_bit() -> None:
    """Floats and times held dictionary-encoded read back bit for bit (``-0.0``, NaN, NaT),
    through the ``No`` side's ``1 - p`` and ``known_at``'s blanking of later results; a column
    of mostly distinct values is held as it is."""
    n = 400
    probability = [(-0.0, 0.25, 1.0, 0.1 + 0.2, None)[i % 5] for i in range(n)]
    resolved_at = [None if i % 3 else datetime(2025, 2, 1 + i % 9, tzinfo=UTC) for i in range(n)]
    columns = {
        "family_id": pa.array(["f"] * n),
        "market_id": pa.array([f"m{i % 40}" for i in range(n)]),
        "outcome": pa.array(["No" if i % 7 == 0 else "Yes" for i in range(n)]),
        "probability": pa.array([0.5 if p is None else p for p in probability]),
        "market_probability": pa.array(probability),
        "resolved_value": pa.array([None if i % 3 else i % 2 for i in range(n)]),
        "fee_rate": pa.array([i / 1000 for i in range(n)]),  # all distinct: held as it is
        "forecast_at": pa.array([datetime(2025, 1, 1 + i % 28, tzinfo=UTC) for i in range(n)]),
        "resolved_at": pa.array(resolved_at),
    }
    plain = {name: values.to_pylist() for name, values in columns.items()}
    data = Forecasts.from_arrow(dict(columns))  # type: ignore[arg-type]
    reference = Forecasts.from_rows([{k: v[i] for k, v in plain.items()} for i in range(n)])
    assert data.coded["market_probability"].codes is not None
    assert data.coded["fee_rate"].codes is None
    assert reference.coded["market_probability"].codes is None  # from Python values: as is
    moment = np.datetime64("2025-02-04", "us")
    for f, g in ((data, reference), (data.known_at(moment), reference.known_at(moment))):
        for name in (*FLOAT_COLUMNS, "forecast_at", "week_start", "resolved_at"):
            a, b = getattr(f, name), getattr(g, name)
            assert a.dtype == b.dtype, name
            assert a.view(np.int64).tolist() == b.view(np.int64).tolist(), name
