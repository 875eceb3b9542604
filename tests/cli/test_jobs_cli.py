"""The job commands run once: ``arena snapshot`` and ``arena settle`` (alias ``arena resolve``)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import cli_env, run_arena, write_config


def test_snapshot_and_settle_commands(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'arena.db'}")
    env = cli_env()
    started = run_arena(
        "--config", str(config), "cohort", "start", "--at", "2026-11-22T03:00:00Z", env=env
    )
    assert started.returncode == 0, started.stderr

    snap = run_arena(
        "--config", str(config), "snapshot", "--no-refresh", "--at", "2026-11-22T03:17:00Z", env=env
    )
    assert snap.returncode == 0, snap.stderr
    assert "snapshot 2026-11-22T03:10:00Z: 7 written, 0 already there" in snap.stdout

    again = run_arena(
        "--config", str(config), "snapshot", "--no-refresh", "--at", "2026-11-22T03:19:59Z", env=env
    )
    assert "0 written, 7 already there" in again.stdout

    # nothing is held, so Gamma is never asked (no network in tests); `arena resolve` is the
    # contract's name of `arena settle`, and does the same
    outputs = []
    for command in ("settle", "resolve"):
        settled = run_arena(
            "--config", str(config), command, "--at", "2026-11-22T03:20:00Z", env=env
        )
        assert settled.returncode == 0, settled.stderr
        assert "settlement: 0 markets checked" in settled.stdout
        outputs.append(settled.stdout)
    assert outputs[0] == outputs[1]


def test_job_commands_have_help() -> None:
    for command in ("snapshot", "settle", "resolve"):
        result = run_arena(command, "--help")
        assert result.returncode == 0
        assert "--at" in result.stdout
    listed = [line.strip("│ ").split(" ")[0] for line in run_arena("--help").stdout.splitlines()]
    assert "settle" in listed and "resolve" in listed  # the contract's name, listed as the alias
