"""``arena analyze trend``: JSON, CSV and an 80-column table, from the database and from an
export, equal to the Python API on the same data."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from arena.analytics import trend
from arena.analytics.trend_inputs import read_stored_trend_inputs
from arena.cli import main
from arena.export.writer import ExportTarget, export
from arena.store.db import make_engine, session_factory, upgrade
from tests.analytics.trend_world import AT, CHANGED, build_trend_arena
from tests.cli.test_fit import assert_fits
from tests.helpers import cli_env, run_arena, write_config

AT_TEXT = AT.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class World:
    config: Path
    export: Path
    expected: dict


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    directory = tmp_path_factory.mktemp("trend")
    url = f"sqlite:///{directory / 'arena.db'}"
    engine = make_engine(url)
    upgrade(engine)
    factory = session_factory(engine)
    build_trend_arena(factory)
    export(factory, ExportTarget(directory / "export", "csv"), methodology="v2")
    with factory() as session:
        expected = trend(read_stored_trend_inputs(session), at=AT)
    engine.dispose()
    return World(write_config(directory / "config.yaml", url), directory / "export", expected)


def _run(capsys: pytest.CaptureFixture[str], world: World, *args: str) -> tuple[int, str, str]:
    try:
        main(["--config", str(world.config), "analyze", "trend", "--at", AT_TEXT, *args])
        code: object = 0
    except SystemExit as stopped:
        code = stopped.code
    out = capsys.readouterr()
    return (code if isinstance(code, int) else 0), out.out, out.err


def test_json_from_the_database_and_the_export_is_the_python_api(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, world, "--format", "json")
    assert code == 0, err
    assert json.loads(out) == world.expected
    code, out, err = _run(capsys, world, "-f", "json", "--from-export", str(world.export))
    assert code == 0, err
    assert json.loads(out) == world.expected
    fields = {"family_id", "week_start", "weekly_return", "brier", "adjusted", "alpha"}
    fields |= {"rank_week", "rank_cumulative", "lineage_changed"}
    assert all(fields <= set(row) for row in world.expected["rows"])


def test_csv_holds_the_json_rows(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, world, "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(world.expected["rows"])
    for got, want in zip(rows, world.expected["rows"], strict=True):
        assert got["family_id"] == want["family_id"] and got["week_start"] == want["week_start"]
        assert got["rank_week"] == ("" if want["rank_week"] is None else str(want["rank_week"]))
        assert got["lineage_changed"] == ("true" if want["lineage_changed"] else "false")
        assert got["lineage"] == "; ".join(want["lineage"])
        if want["weekly_return"] is not None:
            assert float(got["weekly_return"]) == want["weekly_return"]


def test_one_family_and_an_unknown_one(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, world, "-f", "json", "--family", "alpha-model")
    assert code == 0, err
    wanted = [r for r in world.expected["rows"] if r["family_id"] == "alpha-model"]
    assert json.loads(out)["rows"] == wanted
    code, out, err = _run(capsys, world, "--family", "nobody")
    assert code == 2
    assert "nobody" in err and "alpha-model" in err


def test_the_table_fits_80_columns_and_marks_the_lineage_change(world: World) -> None:
    done = run_arena(
        "--config", str(world.config), "analyze", "trend", "--at", AT_TEXT,
        env=cli_env(COLUMNS="80", LINES="50"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_fits(done.stdout)
    _family, week, change = CHANGED
    assert "Alpha Model *" in done.stdout
    assert f"* Alpha Model from {week[:10]}: {change}" in done.stdout
