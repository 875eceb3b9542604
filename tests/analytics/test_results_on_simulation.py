"""On data produced by the daemon's own jobs (three simulated weeks against the fake Gamma and
fake OpenRouter, methodology v2), the leaderboard equals an independent recomputation from the
exported files in every format, and the forecasts load into the analytics."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from arena.analytics.leaderboard import compute_leaderboard, to_json
from arena.analytics.loading import read_export
from arena.config import load_settings
from arena.demo_world import Simulation, WorldPlan
from arena.export.writer import ExportTarget, export
from arena.store.db import make_engine, session_factory, upgrade
from tests.analytics.export_files import FORMATS, read_rows
from tests.analytics.recompute import assert_matches, recompute
from tests.conftest import Database
from tests.helpers import write_config

START = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
DAYS = 21
FAMILIES = [
    {"id": "sim-sharp", "display_name": "Sharp", "openrouter_id": "sim/sharp"},
    {"id": "sim-noisy", "display_name": "Noisy", "openrouter_id": "sim/noisy"},
    {"id": "market-follower", "kind": "baseline", "strategy": "market-follower"},
    {"id": "random-bettor", "kind": "baseline", "strategy": "random", "seed": 5},
]

# the simulated weeks take minutes alone: the hang guard leaves a busy machine room
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Database, Path]]:
    """Three weeks of the real jobs on an hourly tick; exported once in every format."""
    tmp = tmp_path_factory.mktemp("simulated")
    url = f"sqlite:///{tmp / 'arena.db'}"
    config = write_config(
        tmp / "config.yaml",
        url,
        families=FAMILIES,
        methodology="v2",
        schedule={"market_sync_minutes": 60, "resolution_minutes": 60, "snapshot_minutes": 60},
        benchmark={"decision_cohort_limit": 2},
    )
    settings = load_settings(config)
    engine = make_engine(url)
    upgrade(engine)
    factory = session_factory(engine)
    sim = Simulation(
        settings,
        factory,
        WorldPlan(START, DAYS, n_markets=60, seed=11),
        skills={"sim-sharp": 0.7, "sim-noisy": 0.1},
    )
    try:
        sim.run(START + timedelta(days=DAYS, hours=-1), timedelta(hours=1))
    finally:
        sim.close()
    for fmt in FORMATS:
        export(factory, ExportTarget(tmp / fmt, fmt), methodology="v2")
    yield Database(url, engine, factory), tmp
    engine.dispose()


@pytest.mark.parametrize("fmt", FORMATS)
def test_leaderboard_equals_recomputation_from_the_export(
    simulated: tuple[Database, Path], fmt: str
) -> None:
    db, tmp = simulated
    board = to_json(compute_leaderboard(db.factory))
    assert len(board) == len(FAMILIES)
    assert sum(row["scored_bets"] for row in board) > 0
    assert any(row["cost_usd"] != "0.00" for row in board)
    assert_matches(board, recompute(tmp / fmt, fmt))
    cohorts = [int(row["cohort_id"]) for row in read_rows(tmp / fmt, "cohorts", fmt)]
    assert len(cohorts) == 3
    for cohort_id in cohorts:
        per_cohort = to_json(compute_leaderboard(db.factory, cohort_id=cohort_id))
        assert_matches(per_cohort, recompute(tmp / fmt, fmt, cohort=cohort_id))


def test_simulated_forecasts_load_into_the_analytics(simulated: tuple[Database, Path]) -> None:
    _, tmp = simulated
    sizes = {fmt: len(read_export(tmp / fmt)) for fmt in FORMATS}
    assert len(set(sizes.values())) == 1
    assert sizes["parquet"] > 0
