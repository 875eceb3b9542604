"""The frozen decision universe: one per run slot, immutable, and only what Gamma listed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from arena.config import load_settings
from arena.jobs.universe import freeze_universe, load_universe
from tests.conftest import Database
from tests.helpers import write_config
from tests.jobs.decide_world import DECIDE_AT, add_markets


def test_listed_markets_only_and_one_universe_per_slot(db: Database, tmp_path: Path) -> None:
    settings = load_settings(write_config(tmp_path / "c.yaml", db.url))
    add_markets(db)  # 1001..1004 stored as open; Gamma now lists only 1002 and 1003
    first = freeze_universe(db.factory, settings, DECIDE_AT, [], listed=["1003", "1002"])
    again = freeze_universe(db.factory, settings, DECIDE_AT + timedelta(hours=5), [])
    assert first == again  # same week: the same frozen universe, whatever is passed later
    with db.factory() as session:
        universe = load_universe(session, first)
    assert [m.id for m in universe.ranked] == ["1002", "1003"]  # by volume
    assert universe.by_id["1003"].prices is not None
    next_week = freeze_universe(db.factory, settings, DECIDE_AT + timedelta(days=7), [])
    with db.factory() as session:
        unlisted = load_universe(session, next_week)
    assert [m.id for m in unlisted.ranked] == ["1001", "1002", "1003", "1004"]
