"""A command that only reads never creates a database (issue 23: ``arena status`` in a
directory without config.yaml silently created ./arena.db and said nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cli_env, run_arena, write_config

READ_ONLY = [
    ["status"],
    ["leaderboard"],
    ["analyze", "ranking"],
    ["export", "--out", "exported"],
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_a_read_only_command_without_a_database_says_where_it_looked(
    tmp_path: Path, command: list[str]
) -> None:
    result = run_arena(*command, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    error, hint = result.stderr.strip().splitlines()
    assert error == (
        f"arena: error: no database at {tmp_path.resolve() / 'arena.db'} "
        "(database_url by default: no --config, ARENA_CONFIG or ./config.yaml)"
    )
    assert hint.startswith("arena: hint: set database_url in a config file (--config FILE, ")
    assert "ARENA_DATABASE_URL" in hint and "`arena db upgrade`" in hint
    assert list(tmp_path.iterdir()) == []  # nothing created, not even the export directory


def test_the_message_names_the_config_file_or_variable_it_came_from(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'nope.db'}")
    result = run_arena("--config", str(config), "status", cwd=tmp_path)
    assert result.returncode == 2
    assert f"no database at {tmp_path / 'nope.db'} (database_url from {config})" in result.stderr
    env = cli_env(ARENA_DATABASE_URL=f"sqlite:///{tmp_path / 'env.db'}")
    result = run_arena("leaderboard", env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert "(database_url from ARENA_DATABASE_URL)" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_families_without_a_config_says_so(tmp_path: Path) -> None:
    result = run_arena("families", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "arena: error: families: no family configured: no config file "
        "(no --config, ARENA_CONFIG or ./config.yaml)\narena: hint: "
    )


def test_a_command_that_creates_the_database_says_where(tmp_path: Path) -> None:
    result = run_arena("db", "upgrade", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"new database {tmp_path.resolve() / 'arena.db'} ")
    assert result.stderr == ""
    assert (tmp_path / "arena.db").is_file()
    assert run_arena("status", cwd=tmp_path).returncode == 0  # and now it is there to read
