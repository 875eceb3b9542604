"""The soak of tests/test_soak.py on PostgreSQL, in a module of its own so that the suite's
workers (``--dist loadscope`` schedules by module) run it beside the SQLite one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Database
from tests.test_soak import eight_weeks


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(900)
def test_eight_weeks_with_kills_outages_and_hostile_rows_on_postgres(
    postgres_db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eight_weeks(postgres_db, tmp_path, monkeypatch)
