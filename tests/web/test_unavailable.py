"""``arena serve`` without a reachable database names the URL it tried (password masked) and
how to set it: on every page, in ``/readyz`` and in a log line at start-up (issue 23: every
page said "database unavailable · try again shortly", naming nothing)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from arena.config import load_settings
from arena.web.app import create_app
from tests.helpers import cli_env, free_port, start_arena, write_config

HOW = "ARENA_DATABASE_URL"


def _urls(tmp_path: Path) -> list[tuple[str, str]]:
    """(database URL, what must be shown of it): PostgreSQL on a port nothing listens on,
    with a password, and SQLite in a directory that does not exist."""
    port = free_port()
    return [
        (
            f"postgresql+psycopg://arena:s3cret@127.0.0.1:{port}/arena",
            f"postgresql+psycopg://arena:***@127.0.0.1:{port}/arena",
        ),
        (f"sqlite:///{tmp_path / 'missing' / 'arena.db'}", str(tmp_path / "missing" / "arena.db")),
    ]


@pytest.mark.parametrize("which", [0, 1], ids=["postgres-bad-port", "sqlite-missing-dir"])
def test_every_page_names_the_database_it_tried(tmp_path: Path, which: int) -> None:
    url, shown = _urls(tmp_path)[which]
    settings = load_settings(write_config(tmp_path / "c.yaml", url))
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for path in ("/", "/markets", "/status"):
            page = client.get(path)
            assert page.status_code == 503, (path, page.text[:300])
            assert "database unavailable" in page.text
            assert shown in page.text and HOW in page.text and "--config" in page.text
            assert "s3cret" not in page.text
        api = client.get("/api/v1/leaderboard")
        assert api.status_code == 503
        assert shown in api.json()["detail"] and "s3cret" not in api.text
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.text.startswith("not ready: ")
        assert shown in ready.text and HOW in ready.text and "s3cret" not in ready.text


def test_serve_logs_the_database_it_tried_at_start_up(tmp_path: Path) -> None:
    url, shown = _urls(tmp_path)[0]
    config = write_config(tmp_path / "c.yaml", url)
    port = free_port()
    process = start_arena(
        "--config", str(config), "serve", "--port", str(port), env=cli_env(), cwd=tmp_path
    )
    try:
        deadline = time.monotonic() + 120  # generous: a busy machine only makes it later
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10).status_code == 503:
                    break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=60)
    (line,) = [line for line in err.splitlines() if "database is not ready" in line]
    assert shown in line and HOW in line and "s3cret" not in err
