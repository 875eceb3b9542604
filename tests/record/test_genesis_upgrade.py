"""The genesis pass (issue 26, item 1): a database that held data before the record chain
existed gets, from `arena db upgrade`, every cohort, completed decision and settled position
chained in id order and marked "chained after the fact"; a second upgrade adds nothing."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from arena.store.models import Decision
from tests.analytics.results_arena import build_arena
from tests.conftest import Database
from tests.helpers import cli_env, run_arena, write_config
from tests.record.chain_checks import assert_linear
from tests.store.test_migration_pricing import _downgrade


def test_db_upgrade_chains_what_was_stored_before(db: Database, tmp_path: Path) -> None:
    build_arena(db.factory)  # written through the ORM: nothing chained
    _downgrade(db, "0006")  # back before the chain: no records table
    config = write_config(tmp_path / "config.yaml", db.url)
    first = run_arena("--config", str(config), "db", "upgrade", env=cli_env(), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    records = assert_linear(db)
    assert f"record chain: {len(records)} records" in first.stdout
    assert records and all(r.after_the_fact for r in records)
    with db.factory() as session:
        completed = session.scalar(
            select(func.count()).select_from(Decision).where(Decision.status == "completed")
        )
    assert sum(r.kind == "decision" for r in records) == completed
    again = run_arena("--config", str(config), "db", "upgrade", env=cli_env(), cwd=tmp_path)
    assert again.returncode == 0 and "record chain" not in again.stdout
    assert len(assert_linear(db)) == len(records)
