"""The stored v2 analysis (issue 24, "no reader waits on a recomputation"), on SQLite and
PostgreSQL: the forecasts read column-wise are the exported ones; the stored result is the full
analysis ``arena analyze`` computes on an export of the same data; a write followed by the
analysis job updates it, and unchanged data is not computed again; migration 0008 up and down.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
from sqlalchemy import inspect

from arena.analytics.loading import read_export
from arena.analytics.report import configured_options, full_analysis
from arena.analytics.stored import V2, latest_analysis, refresh_analysis, stored_forecasts
from arena.config import Settings
from arena.export.writer import export_table, table_columns
from arena.jsonable import jsonable
from arena.store.db import upgrade
from arena.store.models import AnalysisResult
from tests.analytics.results_arena import build_arena
from tests.analytics.test_forecast_columns import add_forecast
from tests.analytics.test_records import assert_same
from tests.conftest import Database
from tests.store.test_migration_pricing import _downgrade

AT = datetime(2027, 1, 15, tzinfo=UTC)  # after the markets close
SETTINGS = Settings.model_validate({"analysis": {"resamples": 40, "seed": 3}})


def _direct(db: Database, tmp_path: Path, at: datetime) -> object:
    """What ``arena analyze report`` computes: the full analysis of the exported forecasts."""
    path = tmp_path / "forecasts.parquet"
    export_table(db.factory, "forecasts", path)
    options = configured_options(SETTINGS, as_of=at)
    return jsonable(full_analysis(read_export(path), options))


def test_forecasts_are_read_as_the_export_writes_them(db: Database, tmp_path: Path) -> None:
    build_arena(db.factory)
    path = tmp_path / "forecasts.parquet"
    export_table(db.factory, "forecasts", path)
    exported = pq.read_table(path)
    with db.factory() as session:
        columns = table_columns(session, "forecasts")
        forecasts = stored_forecasts(session)
    assert list(columns) == exported.column_names
    for name, values in columns.items():
        assert values.type == exported.schema.field(name).type, name
        assert values.to_pylist() == exported.column(name).to_pylist(), name
    assert len(forecasts) == exported.num_rows > 0
    assert_same(forecasts, read_export(path))  # converted and freed as it is read: the same


def test_the_stored_result_is_the_full_analysis_of_an_export(db: Database, tmp_path: Path) -> None:
    build_arena(db.factory)
    report = refresh_analysis(db.factory, SETTINGS, AT)
    assert report.computed and report.forecasts > 0
    with db.factory() as session:
        stored = latest_analysis(session, V2)
    assert stored is not None
    assert (stored.as_of, stored.resamples, stored.seed) == (AT, 40, 3)
    assert stored.body == _direct(db, tmp_path, AT)
    assert stored.body is not None and stored.body["ranking"]["rows"]


def test_a_write_then_the_job_updates_the_stored_result(db: Database, tmp_path: Path) -> None:
    build_arena(db.factory)
    first = refresh_analysis(db.factory, SETTINGS, AT)
    again = refresh_analysis(db.factory, SETTINGS, AT + timedelta(minutes=10))
    assert first.computed and not again.computed  # unchanged data: not computed again
    assert again.data_version == first.data_version
    with db.factory() as session:
        before = latest_analysis(session, V2)
    with db.factory.begin() as session:  # a write the analysis reads: a new forecast
        add_forecast(session)
    later = AT + timedelta(minutes=20)
    updated = refresh_analysis(db.factory, SETTINGS, later)
    assert updated.computed and updated.data_version != first.data_version
    with db.factory() as session:
        after = latest_analysis(session, V2)
        assert session.query(AnalysisResult).count() == 1  # the latest only
    assert before is not None and after is not None
    assert after.as_of == later and after.body != before.body
    assert after.body == _direct(db, tmp_path, later)


def test_an_old_result_is_computed_again_though_nothing_changed(db: Database) -> None:
    build_arena(db.factory)
    assert refresh_analysis(db.factory, SETTINGS, AT).computed
    assert refresh_analysis(db.factory, SETTINGS, AT + timedelta(hours=2)).computed


def test_no_forecast_stores_nothing_to_rank(db: Database) -> None:
    report = refresh_analysis(db.factory, SETTINGS, AT)
    assert report.computed and report.forecasts == 0
    with db.factory() as session:
        stored = latest_analysis(session, V2)
    assert stored is not None and stored.body is None


def test_migration_0008_adds_and_drops_the_table(db: Database) -> None:
    build_arena(db.factory)
    refresh_analysis(db.factory, SETTINGS, AT)
    _downgrade(db, "0007")
    with db.engine.connect() as connection:
        assert "analysis_results" not in inspect(connection).get_table_names()
    upgrade(db.engine)
    with db.engine.connect() as connection:
        columns = {c["name"] for c in inspect(connection).get_columns("analysis_results")}
    assert columns == {
        "name",
        "data_version",
        "as_of",
        "computed_at",
        "seconds",
        "resamples",
        "seed",
        "body",
    }
    assert refresh_analysis(db.factory, SETTINGS, AT).computed  # empty again: computed
    with db.factory() as session:
        stored = session.get(AnalysisResult, V2)
    assert stored is not None and json.loads(stored.body) is not None
