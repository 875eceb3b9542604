"""Migration 0006 (one vocabulary) on a database with claims and job runs in it, on SQLite and
PostgreSQL: the lease columns are renamed with their values in place, the settlement job's
runs stored as ``resolution`` become ``settlement``, and the downgrade gives all of it back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import inspect, text

from arena.store.db import upgrade
from tests.conftest import Database
from tests.store.test_migration_pricing import AT, _downgrade, _history

LEASE = AT + timedelta(minutes=5)
HOLDER = "host:42:1700000000"
RUNS = (  # job, slot (hours after AT)
    ("resolution", 0),
    ("resolution", 1),
    ("settlement", 1),  # a slot already run under the new name keeps both rows apart
    ("market_sync", 0),
)


def _columns(db: Database, table: str) -> set[str]:
    with db.engine.connect() as connection:
        return {column["name"] for column in inspect(connection).get_columns(table)}


def _stamp(db: Database, moment: datetime) -> datetime:
    return moment.replace(tzinfo=None) if db.backend == "sqlite" else moment


def _claims_and_runs(db: Database) -> None:
    """A claimed decision and four job runs, written against the 0005 schema in plain SQL."""
    with db.engine.begin() as connection:
        connection.execute(
            text(
                "UPDATE decisions SET status = 'claimed', claimed_by = :holder, "
                "lease_expires_at = :lease WHERE id = 1"
            ),
            {"holder": HOLDER, "lease": _stamp(db, LEASE)},
        )
        for job, hours in RUNS:
            slot = _stamp(db, AT + timedelta(hours=hours))
            connection.execute(
                text(
                    "INSERT INTO job_runs (job, slot, holder, status, started_at, "
                    "lease_expires_at) VALUES (:job, :slot, :holder, 'running', :slot, :lease)"
                ),
                {"job": job, "slot": slot, "holder": HOLDER, "lease": _stamp(db, LEASE)},
            )


def _runs(db: Database, lease_column: str) -> list[tuple[str, datetime, str, datetime]]:
    with db.engine.connect() as connection:
        rows = connection.execute(
            text(f"SELECT job, slot, holder, {lease_column} FROM job_runs ORDER BY slot, job")
        ).all()
    return [(job, _utc(slot), holder, _utc(lease)) for job, slot, holder, lease in rows]


def _utc(moment: datetime | str) -> datetime:
    """A stored timestamp as an aware datetime (SQLite hands plain SQL back as text)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def test_lease_columns_renamed_and_settlement_runs_renamed_with_data_in_place(
    db: Database,
) -> None:
    _downgrade(db, "0005")
    try:
        _history(db)
        _claims_and_runs(db)
        upgrade(db.engine)

        assert {"holder", "lease_until"} <= _columns(db, "decisions")
        assert not {"claimed_by", "lease_expires_at"} & _columns(db, "decisions")
        assert "lease_until" in _columns(db, "job_runs")
        assert "lease_expires_at" not in _columns(db, "job_runs")
        with db.engine.connect() as connection:
            claim = connection.execute(
                text("SELECT status, holder, lease_until FROM decisions WHERE id = 1")
            ).one()
        assert (claim.status, claim.holder, _utc(claim.lease_until)) == ("claimed", HOLDER, LEASE)
        slot0, slot1 = AT, AT + timedelta(hours=1)
        assert _runs(db, "lease_until") == [
            ("market_sync", slot0, HOLDER, LEASE),
            ("settlement", slot0, HOLDER, LEASE),
            ("resolution", slot1, HOLDER, LEASE),  # its slot had a settlement run already
            ("settlement", slot1, HOLDER, LEASE),
        ]

        _downgrade(db, "0005")
        assert {"claimed_by", "lease_expires_at"} <= _columns(db, "decisions")
        assert not {"holder", "lease_until"} & _columns(db, "decisions")
        assert "lease_expires_at" in _columns(db, "job_runs")
        with db.engine.connect() as connection:
            claim = connection.execute(
                text("SELECT claimed_by, lease_expires_at FROM decisions WHERE id = 1")
            ).one()
        assert (claim.claimed_by, _utc(claim.lease_expires_at)) == (HOLDER, LEASE)
        assert _runs(db, "lease_expires_at") == [
            ("market_sync", slot0, HOLDER, LEASE),
            ("resolution", slot0, HOLDER, LEASE),
            ("resolution", slot1, HOLDER, LEASE),
            ("settlement", slot1, HOLDER, LEASE),
        ]
    finally:
        upgrade(db.engine)  # the fixture's database goes back to head whatever happened
