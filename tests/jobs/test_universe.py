"""The frozen decision universe: immutable, only what Gamma listed, shared while its prices are
fresh, replaced once they are older than ``max_price_age_minutes`` (issue 10, finding 3), and
refused when too small (finding 1)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from arena.config import load_settings
from arena.errors import UniverseUnavailable
from arena.jobs.universe import freeze_universe, load_universe
from arena.store.models import DecisionUniverse
from tests.conftest import Database
from tests.helpers import write_config
from tests.jobs.decide_world import DECIDE_AT, add_markets


def _settings(db: Database, tmp_path: Path, **benchmark: object):  # type: ignore[no-untyped-def]
    benchmark.setdefault("min_universe_markets", 1)
    return load_settings(write_config(tmp_path / "c.yaml", db.url, benchmark=benchmark))


def test_listed_markets_only_shared_while_fresh(db: Database, tmp_path: Path) -> None:
    settings = _settings(db, tmp_path)
    add_markets(db)  # 1001..1004 stored as open; Gamma now lists only 1002 and 1003
    first = freeze_universe(db.factory, settings, DECIDE_AT, [], listed=["1003", "1002"])
    again = freeze_universe(db.factory, settings, DECIDE_AT + timedelta(hours=5), [])
    assert first == again  # within max_price_age_minutes (360): the same frozen universe
    with db.factory() as session:
        universe = load_universe(session, first)
    assert [m.id for m in universe.ranked] == ["1002", "1003"]  # by volume
    assert universe.by_id["1003"].prices is not None
    assert universe.frozen_at == DECIDE_AT
    next_week = freeze_universe(db.factory, settings, DECIDE_AT + timedelta(days=7), [])
    with db.factory() as session:
        unlisted = load_universe(session, next_week)
    assert [m.id for m in unlisted.ranked] == ["1001", "1002", "1003", "1004"]


def test_a_later_decision_gets_a_fresh_universe(db: Database, tmp_path: Path) -> None:
    """A retry on Thursday never sees Sunday's prices."""
    settings = _settings(db, tmp_path)
    add_markets(db)
    sunday = freeze_universe(db.factory, settings, DECIDE_AT, [])
    thursday_at = DECIDE_AT + timedelta(days=4)
    thursday = freeze_universe(db.factory, settings, thursday_at, [])
    assert thursday != sunday
    with db.factory() as session:
        assert load_universe(session, thursday).frozen_at == thursday_at
        assert load_universe(session, thursday).stale(thursday_at, 360) is False
        assert load_universe(session, sunday).stale(thursday_at, 360) is True
    # Just past the price age, too: six hours and a minute later.
    later = freeze_universe(db.factory, settings, DECIDE_AT + timedelta(minutes=361), [])
    assert later not in (sunday, thursday)


def test_too_few_tradable_markets_freeze_nothing(db: Database, tmp_path: Path) -> None:
    settings = _settings(db, tmp_path, min_universe_markets=None, universe_size=20)
    add_markets(db)  # 4 markets, fewer than half of 20
    with pytest.raises(UniverseUnavailable, match="only 4 tradable markets"):
        freeze_universe(db.factory, settings, DECIDE_AT, [])
    with db.factory() as session:
        assert session.scalar(select(func.count()).select_from(DecisionUniverse)) == 0
