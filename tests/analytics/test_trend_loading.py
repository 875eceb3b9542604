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


def test_a_curve_that_reaches_zero_gives_null_never_nan() -> None:
    import json
    from datetime import UTC, datetime

    from arena.analytics.risk_measures import Snapshots
    from arena.analytics.trend_inputs import Bets, TrendInputs

    start = np.datetime64("2026-11-01T00:00:00", "us")
    day = np.timedelta64(86_400_000_000, "us")
    times = start + day * np.array([3, 10, 17])
    none = np.array([], dtype=object)
    inputs = TrendInputs(
        Snapshots(
            np.array(["1", "1", "1"], dtype=object),
            np.array(["busted"] * 3, dtype=object),
            np.array([start] * 3),
            np.array([100.0] * 3),
            times,
            np.array([50.0, 0.0, 0.0]),
        ),
        Bets(
            none, np.array([], "datetime64[us]"), np.array([], "datetime64[us]"), np.array([]), none
        ),
        [{"family_id": "busted", "week_start": start, "openrouter_id": "m"} | _versions()],
    )
    report = trend(inputs, at=datetime(2026, 11, 22, tzinfo=UTC))
    assert [r["weekly_return"] for r in report["rows"]] == [-0.5, -1.0, None]
    assert "NaN" not in json.dumps(report, allow_nan=False)


def _versions() -> dict[str, str]:
    return {"prompt_version": "v2", "methodology_version": "v2"}
