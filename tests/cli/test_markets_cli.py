"""``arena markets sync`` in a subprocess against the fake Gamma served on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from tests.helpers import free_port, run_arena, write_config


def test_markets_sync_stores_the_universe_and_a_rerun_changes_nothing(tmp_path: Path) -> None:
    world = FakeGammaWorld(n_markets=1200, seed=5)
    with serve_fake_gamma(world) as base_url:
        config = write_config(
            tmp_path / "c.yaml",
            f"sqlite:///{tmp_path / 'arena.db'}",
            polymarket={"gamma_url": base_url, "timeout_seconds": 5},
        )
        first = run_arena(
            "--config", str(config), "markets", "sync", "--at", "2026-11-22T00:01:00Z"
        )
        again = run_arena(
            "--config", str(config), "markets", "sync", "--at", "2026-11-22T00:06:00Z"
        )
    assert first.returncode == 0, first.stderr
    assert "500/500 top markets in 6 pages" in first.stdout
    assert "500 new, 0 updated, 0 unchanged, 500 price changes" in first.stdout
    assert again.returncode == 0, again.stderr
    assert "0 new, 0 updated, 500 unchanged, 0 price changes" in again.stdout


def test_markets_sync_with_gamma_unreachable_fails_in_one_line(tmp_path: Path) -> None:
    port = free_port()  # closed again before use: connections are refused
    config = write_config(
        tmp_path / "c.yaml",
        f"sqlite:///{tmp_path / 'arena.db'}",
        polymarket={"gamma_url": f"http://127.0.0.1:{port}", "max_attempts": 1},
    )
    result = run_arena("--config", str(config), "markets", "sync")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("arena: failed: GET /markets/keyset: connection error")
    assert "Traceback" not in result.stderr


def test_markets_sync_has_help() -> None:
    result = run_arena("markets", "sync", "--help")
    assert result.returncode == 0
    assert "--at" in result.stdout
