"""The forecasts read from stored columns (:mod:`arena.export.forecast_columns`), on SQLite and
PostgreSQL: through every write arena makes (new forecasts, settlement, a market's category or
resolution time changing), the stored row and what changed since equal the row-by-row read of
the export's ``forecasts`` table; what the stored row cannot account for (a forecast removed,
or committed under an id already held) reads them all again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete, func, inspect, select, update
from sqlalchemy.orm import Session

from arena.analytics.stored import refresh_analysis
from arena.config import Settings
from arena.export.forecast_columns import NAME, forecast_columns, read_forecast_columns
from arena.export.writer import table_columns
from arena.store import stored_columns
from arena.store.db import transaction, upgrade
from arena.store.models import Forecast, ForecastColumnsRow, Market
from tests.analytics.results_arena import build_arena
from tests.conftest import Database
from tests.store.test_migration_pricing import _downgrade

AT = datetime(2027, 1, 15, tzinfo=UTC)
SETTINGS = Settings.model_validate({"analysis": {"resamples": 40, "seed": 3}})


def add_forecast(session: Session) -> Forecast:
    """A new panel forecast, as a decision run writes one: the first decision's, on a market it
    has not forecast yet."""
    first = session.scalars(select(Forecast).order_by(Forecast.id).limit(1)).one()
    used = select(Forecast.market_id).where(Forecast.decision_id == first.decision_id)
    market = session.scalars(select(Market.id).where(Market.id.not_in(used)).limit(1)).one()
    forecast = Forecast(
        decision_id=first.decision_id,
        agent_id=first.agent_id,
        cohort_id=first.cohort_id,
        family_id=first.family_id,
        market_id=market,
        outcome=first.outcome,
        probability=first.probability,
        market_probability=first.market_probability,
        source=first.source,
        forecast_at=first.forecast_at,
    )
    session.add(forecast)
    session.flush()
    return forecast


def _assert_as_exported(db: Database) -> None:
    with db.factory() as session:
        expected = table_columns(session, NAME)
        got = forecast_columns(session)
    assert list(got) == list(expected)
    for name, values in expected.items():
        assert got[name].type == values.type, name
        assert got[name].to_pylist() == values.to_pylist(), name


def _store(db: Database, at: datetime = AT) -> datetime | None:
    """The analysis job's read; when the stored row was written."""
    with transaction(db.factory) as session:
        read_forecast_columns(session, store_at=at)
    with db.factory() as session:
        row = session.get(ForecastColumnsRow, NAME)
        assert row is not None
        if row.written_at == at:  # written now: it holds every forecast
            assert row.rows == session.scalar(select(func.count(Forecast.id)))
            assert row.through_id == session.scalar(select(func.max(Forecast.id)))
        return row.written_at


def _written(db: Database) -> datetime | None:
    with db.factory() as session:
        return session.scalar(
            select(ForecastColumnsRow.written_at).where(ForecastColumnsRow.name == NAME)
        )


def test_every_write_arena_makes_reads_as_exported(db: Database) -> None:
    build_arena(db.factory)
    with db.factory.begin() as session:  # two markets still open: their forecasts unresolved
        markets = session.scalars(select(Market.id).order_by(Market.id).limit(2)).all()
        resolved = dict(
            session.execute(
                select(Forecast.id, Forecast.resolved_value).where(Forecast.market_id.in_(markets))
            ).all()
        )
        session.execute(
            update(Forecast).where(Forecast.id.in_(resolved)).values(resolved_value=None)
        )
    _store(db)
    _assert_as_exported(db)

    with db.factory.begin() as session:  # a decision run writes forecasts
        add_forecast(session)
        add_forecast(session)
    _assert_as_exported(db)
    with db.factory.begin() as session:  # settlement resolves the open markets' forecasts
        for forecast_id, value in resolved.items():
            session.execute(
                update(Forecast).where(Forecast.id == forecast_id).values(resolved_value=value)
            )
    _assert_as_exported(db)
    with db.factory.begin() as session:  # the market sync recategorises, settlement resolves
        session.execute(
            update(Market).where(Market.id == markets[0]).values(category="Sports", resolved_at=AT)
        )
    _assert_as_exported(db)
    assert _store(db, AT + timedelta(hours=1)) == AT  # a few changes: not stored again


def test_a_removed_forecast_reads_everything_again(db: Database) -> None:
    build_arena(db.factory)
    _store(db)
    with db.factory.begin() as session:
        last = select(func.max(Forecast.id)).scalar_subquery()
        session.execute(delete(Forecast).where(Forecast.id == last))
    _assert_as_exported(db)
    later = AT + timedelta(hours=1)
    assert _store(db, later) == later  # read anew: stored again


def test_a_forecast_committed_under_a_held_id_reads_everything_again(db: Database) -> None:
    """PostgreSQL hands out ids before commit: a transaction that took id n can commit after
    one that took n + 1 was read."""
    build_arena(db.factory)
    with db.factory.begin() as session:
        gap = session.scalars(select(Forecast).order_by(Forecast.id).limit(1)).one()
        late = {c.key: getattr(gap, c.key) for c in Forecast.__table__.columns}
        session.delete(gap)
    _store(db)
    with db.factory.begin() as session:
        session.add(Forecast(**late))
    _assert_as_exported(db)


def test_without_a_stored_row_everything_is_read(db: Database) -> None:
    build_arena(db.factory)
    _assert_as_exported(db)
    assert _written(db) is None  # only the analysis job stores them


def test_the_analysis_job_stores_them_and_writes_again_only_when_far_behind(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_arena(db.factory)
    refresh_analysis(db.factory, SETTINGS, AT)
    with db.factory() as session:
        first = session.get(ForecastColumnsRow, NAME)
        assert first is not None
        written, rows = first.written_at, first.rows
    with db.factory.begin() as session:
        add_forecast(session)
    refresh_analysis(db.factory, SETTINGS, AT.replace(hour=1))
    with db.factory() as session:
        row = session.get(ForecastColumnsRow, NAME)
        assert row is not None and (row.written_at, row.rows) == (written, rows)  # close enough
    monkeypatch.setattr(stored_columns, "STORE_LAG", 1)
    refresh_analysis(db.factory, SETTINGS, AT.replace(hour=2))
    with db.factory() as session:
        row = session.get(ForecastColumnsRow, NAME)
        assert row is not None and row.rows == rows + 1
    _assert_as_exported(db)


def test_migration_0012_adds_and_drops_the_table(db: Database) -> None:
    build_arena(db.factory)
    refresh_analysis(db.factory, SETTINGS, AT)
    _downgrade(db, "0011")
    with db.engine.connect() as connection:
        assert "forecast_columns" not in inspect(connection).get_table_names()
    upgrade(db.engine)
    _assert_as_exported(db)  # no stored row: read row by row
    refresh_analysis(db.factory, SETTINGS, AT)
    assert _written(db) == AT
