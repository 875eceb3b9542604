"""User errors end as one line on stderr with exit code 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cli_env, run_arena, write_config


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///missing-dir/arena.db", "does not exist"),
        ("postgresql+psycopg://nobody@127.0.0.1:1/arena", "cannot connect"),
    ],
)
def test_database_errors_are_one_line(tmp_path: Path, url: str, expected: str) -> None:
    config = write_config(tmp_path / "c.yaml", url)
    result = run_arena("--config", str(config), "cohort", "start", cwd=tmp_path)
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_config_file_is_one_line(tmp_path: Path) -> None:
    result = run_arena("--config", str(tmp_path / "nope.yaml"), "families", cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot read" in result.stderr and "Traceback" not in result.stderr


def test_bad_timestamp_is_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'a.db'}")
    result = run_arena("--config", str(config), "snapshot", "--at", "yesterday", cwd=tmp_path)
    assert result.returncode == 2
    assert "--at" in result.stderr and "Traceback" not in result.stderr


def test_openrouter_family_without_key_is_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'a.db'}")
    at = "2026-11-22T00:05:00Z"
    assert (
        run_arena("--config", str(config), "cohort", "start", "--at", at, cwd=tmp_path).returncode
        == 0
    )
    result = run_arena("--config", str(config), "decide", "--at", at, env=cli_env(), cwd=tmp_path)
    assert result.returncode == 2
    assert "OPENROUTER_API_KEY" in result.stderr and "Traceback" not in result.stderr
    from sqlalchemy import create_engine, func, select

    from arena.store.models import Decision

    engine = create_engine(f"sqlite:///{tmp_path / 'a.db'}")
    with engine.connect() as conn:  # failed before claiming anything
        assert conn.scalar(select(func.count()).select_from(Decision)) == 0
