"""Research exports on both backends: the three formats hold the same rows, the manifest
matches the files, slices are exactly their slice, prompts can be left out, secrets never get
in, and every exported column is documented in docs/EXPORT_SCHEMA.md."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from sqlalchemy import insert, select, update

from arena import __version__
from arena.analytics.loading import read_export
from arena.analytics.records import Forecasts
from arena.clock import FixedClock
from arena.errors import UserError
from arena.export.spec import ExportFilters
from arena.export.writer import EXPORT_SCHEMA_VERSION, ExportTarget, export, table_columns
from arena.store.models import (
    Cohort,
    Forecast,
    JobRun,
    Market,
    MarketFee,
    SystemLog,
    UniverseMarket,
)
from tests.analytics.export_files import (
    FORMATS,
    TABLES,
    as_text,
    dec,
    header,
    num,
    read_rows,
    when,
)
from tests.analytics.results_arena import MARKETS, SETTLED_AT, ArenaFacts, build_arena
from tests.conftest import Database

D = Decimal
DOCS = Path(__file__).resolve().parents[1] / "docs" / "EXPORT_SCHEMA.md"
EXPORTED_AT = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)
ID_COLUMN = {
    "families": "family_id",
    "cohorts": "cohort_id",
    "agents": "agent_id",
    "decisions": "decision_id",
    "attempts": "attempt_id",
    "citations": "citation_id",
    "trades": "trade_id",
    "positions": "position_id",
    "snapshots": "snapshot_id",
    "brier_scores": "brier_id",
    "markets": "market_id",
    "market_prices": "price_id",
    "forecasts": "forecast_id",
    "book_marks": "token_id",
    "job_runs": "job_run_id",
    "system_log": "log_id",
}
TIME_COLUMN = {
    "decisions": "created_at",
    "attempts": "started_at",
    "trades": "executed_at",
    "positions": "opened_at",
    "snapshots": "taken_at",
    "brier_scores": "scored_at",
    "forecasts": "forecast_at",
    "market_prices": "observed_at",
    "job_runs": "slot",
    "system_log": "at",
}
FACT_TABLES = (
    "decisions",
    "attempts",
    "trades",
    "positions",
    "snapshots",
    "brier_scores",
    "forecasts",
)
PROMPT_COLUMNS = ("request_messages", "raw_response", "raw_body")


def key(table: str, row: dict[str, Any]) -> Any:
    """A row's identity: its id column, or (universe_id, market_id) for universe_markets."""
    if table == "universe_markets":
        return (row["universe_id"], row["market_id"])
    return row[ID_COLUMN[table]]


@pytest.fixture
def arena(db: Database) -> tuple[Database, ArenaFacts]:
    return db, build_arena(db.factory)


def _export(
    db: Database,
    out: Path,
    fmt: str = "jsonl",
    filters: ExportFilters | None = None,
    include_prompts: bool = True,
) -> Any:
    return export(
        db.factory,
        ExportTarget(out, fmt),
        filters,
        include_prompts=include_prompts,
        methodology="v2",
        clock=FixedClock(EXPORTED_AT),
    )


def test_three_formats_hold_the_same_rows(
    arena: tuple[Database, ArenaFacts], tmp_path: Path
) -> None:
    db, _ = arena
    manifests = {fmt: _export(db, tmp_path / fmt, fmt) for fmt in FORMATS}
    for table in TABLES:
        counts = {fmt: manifests[fmt].rows(table) for fmt in FORMATS}
        assert len(set(counts.values())) == 1, (table, counts)
        schema = pq.read_schema(tmp_path / "parquet" / f"{table}.parquet")
        parquet = read_rows(tmp_path / "parquet", table, "parquet")
        as_jsonl = [
            {name: as_text(v, schema.field(name).type, csv_cell=False) for name, v in r.items()}
            for r in parquet
        ]
        as_csv = [
            {name: as_text(v, schema.field(name).type, csv_cell=True) for name, v in r.items()}
            for r in parquet
        ]
        assert read_rows(tmp_path / "jsonl", table, "jsonl") == as_jsonl, table
        assert read_rows(tmp_path / "csv", table, "csv") == as_csv, table
        assert header(tmp_path / "csv", table, "csv") == list(schema.names)
    assert manifests["jsonl"].rows("trades") > 20
    assert manifests["jsonl"].rows("brier_scores") > 5


def test_manifest_matches_the_files(arena: tuple[Database, ArenaFacts], tmp_path: Path) -> None:
    db, facts = arena
    since = facts.week_starts[1]
    tmp_path = tmp_path / "export"
    manifest = _export(
        db, tmp_path, "csv", ExportFilters(cohorts=(facts.cohort_ids[0],), since=since)
    )
    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk == manifest.to_dict()
    assert on_disk["export_schema_version"] == EXPORT_SCHEMA_VERSION
    assert on_disk["methodology_version"] == "v2"
    assert on_disk["arena_version"] == __version__
    assert on_disk["exported_at"] == "2026-11-22T09:30:00Z"
    assert on_disk["cohort_methodology_versions"] == ["v2"]
    assert on_disk["filters"] == {
        "cohorts": [facts.cohort_ids[0]],
        "families": None,
        "since": "2026-11-08T00:00:00Z",
        "until": None,
        "include_prompts": True,
    }
    assert set(on_disk["files"]) == set(TABLES)
    for table, entry in on_disk["files"].items():
        path = tmp_path / entry["file"]
        assert entry["file"] == f"{table}.csv"
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert entry["bytes"] == path.stat().st_size
        assert entry["rows"] == len(read_rows(tmp_path, table, "csv"))


def _expected_slice(
    full: dict[str, list[dict[str, Any]]],
    db: Database,
    cohorts: set[int] | None = None,
    families: set[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> dict[str, set[Any]]:
    """Ids each table must hold for a slice, picked from a full export by the documented rules."""

    def keep(table: str, row: dict[str, Any]) -> bool:
        if cohorts is not None and "cohort_id" in row and num(row["cohort_id"]) not in cohorts:
            return False
        if families is not None and "family_id" in row and row["family_id"] not in families:
            return False
        column = TIME_COLUMN.get(table)
        moment = when(row[column]) if column else None
        if moment is not None and since is not None and moment < since:
            return False
        return not (moment is not None and until is not None and moment >= until)

    ids: dict[str, set[Any]] = {}
    for table in (*FACT_TABLES, "agents", "job_runs", "system_log"):  # runs: time only
        ids[table] = {key(table, r) for r in full[table] if keep(table, r)}
    agents = [r for r in full["agents"] if r["agent_id"] in ids["agents"]]
    ids["cohorts"] = {r["cohort_id"] for r in agents}
    ids["families"] = {r["family_id"] for r in agents}
    universes = {
        num(r["universe_id"]) for r in full["decisions"] if r["decision_id"] in ids["decisions"]
    }
    with db.factory() as session:
        shown = set(
            session.scalars(
                select(UniverseMarket.market_id).where(UniverseMarket.universe_id.in_(universes))
            )
        )
    markets = set(shown)
    for table in ("trades", "positions", "brier_scores", "forecasts"):
        markets |= {r["market_id"] for r in full[table] if key(table, r) in ids[table]}
    ids["markets"] = markets
    ids["universe_markets"] = {
        key("universe_markets", r)
        for r in full["universe_markets"]
        if num(r["universe_id"]) in universes
    }
    ids["book_marks"] = {r["token_id"] for r in full["book_marks"] if r["market_id"] in markets}
    ids["citations"] = {  # as their attempts
        r["citation_id"] for r in full["citations"] if num(r["attempt_id"]) in ids["attempts"]
    }
    ids["market_prices"] = {
        r["price_id"]
        for r in full["market_prices"]
        if r["market_id"] in markets and keep("market_prices", r)
    }
    return ids


def _slice_ids(directory: Path) -> dict[str, set[Any]]:
    return {
        table: {key(table, r) for r in read_rows(directory, table, "jsonl")} for table in TABLES
    }


SLICES = {
    "one cohort": lambda f: {"cohorts": [f.cohort_ids[1]]},
    "one family": lambda f: {"families": ["beta-model"]},
    "one week": lambda f: {"since": f.week_starts[1], "until": f.week_starts[2]},
    "last week, two families": lambda f: {
        "since": f.week_starts[2],
        "until": f.week_starts[2] + timedelta(days=7),
        "families": ["alpha-model", "market-follower"],
    },
    "cohort and family": lambda f: {"cohorts": [f.cohort_ids[0]], "families": ["alpha-model"]},
}


@pytest.mark.parametrize("name", list(SLICES))
def test_a_slice_is_exactly_that_slice(
    arena: tuple[Database, ArenaFacts], tmp_path: Path, name: str
) -> None:
    db, facts = arena
    _export(db, tmp_path / "full")
    full = {table: read_rows(tmp_path / "full", table, "jsonl") for table in TABLES}
    options = SLICES[name](facts)
    _export(db, tmp_path / "slice", filters=ExportFilters(**options))
    expected = _expected_slice(
        full,
        db,
        cohorts=set(options["cohorts"]) if "cohorts" in options else None,
        families=set(options["families"]) if "families" in options else None,
        since=options.get("since"),
        until=options.get("until"),
    )
    got = _slice_ids(tmp_path / "slice")
    for table in TABLES:
        assert got[table] == expected[table], table
    # Rows of the slice are the full export's rows, unchanged.
    for table in TABLES:
        by_id = {key(table, r): r for r in full[table]}
        for row in read_rows(tmp_path / "slice", table, "jsonl"):
            assert row == by_id[key(table, row)]
    assert sum(len(ids) for ids in got.values()) < sum(len(rows) for rows in full.values())


def test_week_slice_drops_markets_nobody_saw_that_week(
    arena: tuple[Database, ArenaFacts], tmp_path: Path
) -> None:
    db, facts = arena
    tmp_path = tmp_path / "export"
    _export(db, tmp_path, filters=ExportFilters(since=facts.week_starts[2]))
    markets = {r["market_id"] for r in read_rows(tmp_path, "markets", "jsonl")}
    assert "109" not in markets  # shown only in the first week's universe, never traded
    assert {r["scored_at"] for r in read_rows(tmp_path, "brier_scores", "jsonl")} == {
        SETTLED_AT.isoformat().replace("+00:00", "Z")
    }


def test_prompts_can_be_left_out(arena: tuple[Database, ArenaFacts], tmp_path: Path) -> None:
    db, _ = arena
    _export(db, tmp_path / "with", "parquet")
    manifest = _export(db, tmp_path / "without", "parquet", include_prompts=False)
    with_prompts = read_rows(tmp_path / "with", "attempts", "parquet")
    without = read_rows(tmp_path / "without", "attempts", "parquet")
    assert len(with_prompts) == len(without) > 0
    assert all(r["request_messages"] for r in with_prompts)
    assert json.loads(with_prompts[0]["request_messages"])[0]["role"] == "system"
    for full_row, bare in zip(with_prompts, without, strict=True):
        for column in PROMPT_COLUMNS:
            assert bare[column] is None
        assert {k: v for k, v in bare.items() if k not in PROMPT_COLUMNS} == {
            k: v for k, v in full_row.items() if k not in PROMPT_COLUMNS
        }
    assert manifest.to_dict()["filters"]["include_prompts"] is False


def test_no_secret_ever_reaches_an_export(
    arena: tuple[Database, ArenaFacts], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-or-v1-" + secrets.token_hex(24)
    monkeypatch.setenv("OPENROUTER_API_KEY", key)
    db, _ = arena
    for fmt in FORMATS:
        _export(db, tmp_path / fmt, fmt)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    for table in TABLES:  # parquet is compressed: look at the decoded values too
        for row in read_rows(tmp_path / "parquet", table, "parquet"):
            assert not any(isinstance(v, str) and key in v for v in row.values()), table


DOC_TYPES = {
    "integer": "int64",
    "string": "string",
    "boolean": "bool",
    "timestamp": "timestamp[us, tz=UTC]",
    "json": "string",
}


def _documented_columns() -> dict[str, list[tuple[str, str]]]:
    """``### `table` `` sections of docs/EXPORT_SCHEMA.md: (column, arrow type) of each row."""
    tables: dict[str, list[tuple[str, str]]] = {}
    current: str | None = None
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^###\s+`([a-z_]+)`", line)
        if heading:
            current = heading.group(1)
            tables[current] = []
            continue
        if line.startswith("## "):
            current = None
        row = re.match(r"^\|\s*`([a-z_0-9]+)`\s*\|\s*([a-z]+(?:\(\d+,\d+\))?)\s*\|", line)
        if current is not None and row:
            kind = row.group(2)
            decimal = re.fullmatch(r"decimal\((\d+),(\d+)\)", kind)
            arrow = f"decimal128({decimal[1]}, {decimal[2]})" if decimal else DOC_TYPES[kind]
            tables[current].append((row.group(1), arrow))
    return tables


def test_every_exported_column_is_documented(sqlite_db: Database, tmp_path: Path) -> None:
    build_arena(sqlite_db.factory)
    with sqlite_db.factory() as session, session.begin():  # a job run and an outage: headers
        at = EXPORTED_AT
        session.add(
            JobRun(
                job="snapshot",
                slot=at,
                holder="h:1:0",
                status="succeeded",
                started_at=at,
                finished_at=at,
                lease_until=at,
                counts={"agents": 9},
            )
        )
        session.add(
            SystemLog(
                at=at,
                level="ERROR",
                source="snapshot",
                event="clob_unavailable",
                message="Polymarket CLOB unavailable: timeout",
            )
        )
    for fmt in FORMATS:
        _export(sqlite_db, tmp_path / fmt, fmt)
    documented = _documented_columns()
    assert set(documented) == set(TABLES)
    for table in TABLES:
        names = [name for name, _ in documented[table]]
        for fmt in FORMATS:
            assert header(tmp_path / fmt, table, fmt) == names, (table, fmt)
        schema = pq.read_schema(tmp_path / "parquet" / f"{table}.parquet")
        types = [(field.name, str(field.type)) for field in schema]
        assert types == documented[table], table


def test_forecasts_load_into_the_analytics_in_every_format(
    arena: tuple[Database, ArenaFacts], tmp_path: Path
) -> None:
    db, _ = arena
    loaded = {}
    for fmt in FORMATS:
        manifest = _export(db, tmp_path / fmt, fmt)
        loaded[fmt] = read_export(tmp_path / fmt)
        assert len(loaded[fmt]) == manifest.rows("forecasts") > 0
    for fmt in ("csv", "parquet"):
        # decimal128 -> float64 in Arrow may land one ulp away from parsing the text
        assert np.allclose(loaded[fmt].probability, loaded["jsonl"].probability, rtol=0, atol=1e-12)
        assert list(loaded[fmt].market_id) == list(loaded["jsonl"].market_id)
        assert (loaded[fmt].week_start == loaded["jsonl"].week_start).all()
    resolved = [v for v in loaded["jsonl"].resolved_value if v == v]
    assert resolved
    assert set(resolved) <= {0.0, 1.0}


def test_forecasts_carry_pricing_fee_schedule_and_category(
    arena: tuple[Database, ArenaFacts], tmp_path: Path
) -> None:
    """Issue 24: each forecast row carries its cohort's pricing mode, its market's taker fee
    schedule (``market_fees`` joined on the condition id: null when never fetched) and its
    category; ``question_type`` is null (arena has none). The dashboard's and the publish's
    path (``table_columns``) gives the analyses the same input as the export."""
    db, facts = arena
    cids = {market_id: "0x" + market_id * 21 + "0" for market_id, *_ in MARKETS}
    with db.factory() as session:
        forecast = sorted(set(session.scalars(select(Forecast.market_id))))
    assert len(forecast) >= 3  # a fee, no fee, a schedule never fetched
    fees = {forecast[0]: (D("0.04"), D(1)), forecast[1]: (D(0), D(1))}
    with db.factory() as session, session.begin():
        session.execute(
            update(Cohort).where(Cohort.id == facts.cohort_ids[1]).values(pricing="book")
        )
        for market_id, cid in cids.items():
            session.execute(update(Market).where(Market.id == market_id).values(condition_id=cid))
        session.execute(
            insert(MarketFee),
            [
                {"condition_id": cids[m], "rate": r, "exponent": e, "fetched_at": EXPORTED_AT}
                for m, (r, e) in fees.items()
            ],
        )
        expected = {
            forecast_id: (pricing, fees.get(market_id, (None, None)), category)
            for forecast_id, pricing, market_id, category in session.execute(
                select(Forecast.id, Cohort.pricing, Forecast.market_id, Market.category)
                .join(Cohort, Cohort.id == Forecast.cohort_id)
                .join(Market, Market.id == Forecast.market_id)
            )
        }
    assert {pricing for pricing, _fee, _category in expected.values()} == {"book", "gamma"}
    _export(db, tmp_path / "jsonl", "jsonl")
    rows = read_rows(tmp_path / "jsonl", "forecasts", "jsonl")
    exported = {
        row["forecast_id"]: (
            row["pricing"],
            (dec(row["fee_rate"]), dec(row["fee_exponent"])),
            row["category"],
        )
        for row in rows
    }
    assert exported == expected
    assert all(row["question_type"] is None for row in rows)
    _export(db, tmp_path / "parquet", "parquet")
    loaded = read_export(tmp_path / "parquet")
    with db.factory() as session:
        from_db = Forecasts.from_columns(table_columns(session, "forecasts"))
    assert list(loaded.forecast_id) == list(from_db.forecast_id)
    for name in ("pricing", "category", "question_type"):
        assert list(getattr(loaded, name)) == list(getattr(from_db, name)), name
    for name in ("fee_rate", "fee_exponent", "market_probability"):
        assert np.array_equal(getattr(loaded, name), getattr(from_db, name), equal_nan=True), name
    # the analysis input: floats, NaN where the schedule is unknown; no question type
    schedules = dict(
        zip(loaded.forecast_id, zip(loaded.fee_rate, loaded.fee_exponent, strict=True), strict=True)
    )
    for forecast_id, (_pricing, fee, _category) in expected.items():
        got = schedules[str(forecast_id)]
        want = (np.nan, np.nan) if fee[0] is None else (float(fee[0]), float(fee[1]))
        assert np.array_equal(got, want, equal_nan=True), forecast_id
    assert all(value is None for value in loaded.question_type)


def test_small_batches_give_the_same_files(
    arena: tuple[Database, ArenaFacts], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _ = arena
    reference = _export(db, tmp_path / "one", "parquet")
    monkeypatch.setattr("arena.export.writer.BATCH_ROWS", 3)
    monkeypatch.setattr("arena.export.values.BATCH_BYTES", 1)
    batched = _export(db, tmp_path / "many", "parquet")
    assert pq.ParquetFile(tmp_path / "many" / "trades.parquet").num_row_groups > 1
    assert pq.ParquetFile(tmp_path / "many" / "attempts.parquet").num_row_groups > 1
    for table in TABLES:
        assert reference.rows(table) == batched.rows(table)
        assert read_rows(tmp_path / "one", table, "parquet") == read_rows(
            tmp_path / "many", table, "parquet"
        )


def test_bad_arguments_are_user_errors(sqlite_db: Database, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="format"):
        export(sqlite_db.factory, ExportTarget(tmp_path, "xlsx"))
    with pytest.raises(UserError, match="--since"):
        export(
            sqlite_db.factory,
            ExportTarget(tmp_path, "csv"),
            ExportFilters(since=EXPORTED_AT, until=EXPORTED_AT),
        )


def test_an_empty_database_exports_empty_files(sqlite_db: Database, tmp_path: Path) -> None:
    for fmt in FORMATS:
        manifest = _export(sqlite_db, tmp_path / fmt, fmt)
        assert all(f.rows == 0 for f in manifest.files)
    assert header(tmp_path / "csv", "trades", "csv")[0] == "trade_id"
    assert pq.read_table(tmp_path / "parquet" / "trades.parquet").num_rows == 0
