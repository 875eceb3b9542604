"""The trend from the database equals the trend from an export of it, in every format, on
SQLite and PostgreSQL; lineage changes between cohorts are marked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arena.analytics import AnalysisOptions, trend
from arena.analytics.trend_inputs import read_export_trend_inputs, read_stored_trend_inputs
from arena.export import FORMATS
from arena.export.writer import ExportTarget, export
from tests.analytics.results_arena import build_arena
from tests.analytics.trend_world import AT, CHANGED, build_trend_arena
from tests.conftest import Database

OPTIONS = AnalysisOptions(bootstrap_resamples=10)


def test_database_and_export_give_the_same_trend(db: Database, tmp_path: Path) -> None:
    build_trend_arena(db.factory)
    with db.factory() as session:
        stored = read_stored_trend_inputs(session)
    from_db = trend(stored, OPTIONS, at=AT)
    assert from_db["rank_by"] == "adjusted"
    assert len(from_db["rows"]) == 3 * 9  # three families, nine complete weeks since Nov 1
    assert any(r["adjusted"] is not None and r["alpha"] is not None for r in from_db["rows"])
    marked = [r for r in from_db["rows"] if r["lineage_changed"]]
    assert [(r["family_id"], r["week_start"], *r["lineage"]) for r in marked] == [CHANGED]
    assert any(r["brier"] is not None for r in from_db["rows"])
    assert all(r["weekly_return"] is not None for r in from_db["rows"])
    for fmt in FORMATS:
        export(db.factory, ExportTarget(tmp_path / fmt, fmt), methodology="v2")
        from_export = trend(tmp_path / fmt, OPTIONS, at=AT)
        assert from_export == from_db, fmt
        _same_inputs(stored, read_export_trend_inputs(tmp_path / fmt))


def _same_inputs(a: object, b: object) -> None:
    """Equal snapshots and bets, row for row once sorted (the order of reading may differ)."""
    for part in ("snapshots", "bets"):
        left, right = getattr(a, part), getattr(b, part)
        names = list(vars(left))
        key_a = np.lexsort([np.asarray(getattr(left, n)).astype(str) for n in reversed(names)])
        key_b = np.lexsort([np.asarray(getattr(right, n)).astype(str) for n in reversed(names)])
        for name in names:
            assert np.array_equal(getattr(left, name)[key_a], getattr(right, name)[key_b]), name


def test_family_keeps_its_rows_and_an_unknown_family_is_an_error(sqlite_db: Database) -> None:
    build_arena(sqlite_db.factory)
    with sqlite_db.factory() as session:
        stored = read_stored_trend_inputs(session)
    everything = trend(stored, OPTIONS, at=AT)
    beta = trend(stored, OPTIONS, at=AT, family="beta-model")
    assert beta["rows"] == [r for r in everything["rows"] if r["family_id"] == "beta-model"]
    with pytest.raises(ValueError, match=r"nobody.*alpha-model"):
        trend(stored, OPTIONS, at=AT, family="nobody")
