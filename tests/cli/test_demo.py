"""`arena demo` end to end, offline, as a user runs it: it finishes, the ledger invariant holds,
and the leaderboard it stores equals a recomputation from the export it writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.analytics.recompute import assert_matches, recompute
from tests.helpers import cli_env, run_arena, write_config


def _close(a: object, b: object) -> bool:
    """Equal, but for float rounding (parquet decimals vs JSON-lines decimal text)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def test_demo_runs_offline_and_agrees_with_its_export(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.yaml", "sqlite:///unused.db")
    out = tmp_path / "demo"
    env = cli_env(
        OPENROUTER_API_KEY="", HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9"
    )
    result = run_arena(
        "--config",
        str(config),
        "demo",
        "--weeks",
        "2",
        "--markets",
        "80",
        "--methodology",
        "v2",
        "--out",
        str(out),
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ledger invariant holds for every agent" in result.stdout
    manifest = json.loads((out / "export" / "manifest.json").read_text())
    files = manifest["files"]
    assert {"decisions", "attempts", "trades", "snapshots", "forecasts"} <= set(files)
    assert files["forecasts"]["rows"] > 0 and files["trades"]["rows"] > 0
    board = run_arena(
        "--config",
        str(config),
        "leaderboard",
        "--format",
        "json",
        env=cli_env(ARENA_DATABASE_URL=f"sqlite:///{out / 'demo.db'}"),
        cwd=tmp_path,
    )
    assert board.returncode == 0, board.stderr
    assert_matches(json.loads(board.stdout), recompute(out / "export", "jsonl"))

    # the analytics read the same forecasts from the database as from the export
    def ranking(*source: str) -> object:
        result = run_arena(
            "--config",
            str(config),
            "analyze",
            "ranking",
            "--format",
            "json",
            "--at",
            "2026-11-14T00:00:00Z",
            "--bootstrap",
            "200",
            *source,
            env=cli_env(ARENA_DATABASE_URL=f"sqlite:///{out / 'demo.db'}"),
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    from_db = ranking()
    assert _close(from_db, ranking("--from-export", str(out / "export")))
    assert from_db["n_scored_questions"] > 0  # type: ignore[index]
