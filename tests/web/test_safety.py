"""No secret appears in any answer or log line of the dashboard, and every request is logged as
one structured line without its query string, whatever its path holds."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from arena.config import load_settings
from arena.logs import StructlogFormatter
from arena.web.app import create_app
from tests.conftest import Database
from tests.helpers import free_port, start_arena, write_config
from tests.web.conftest import Site
from tests.web.test_pages import apis, pages

API_KEY = "sk-or-v1-dashboard-secret-3b8a61"
ADMIN_TOKEN = "admin-dashboard-secret-c0ffee"
DB_PASSWORD = "s3cretpw-dashboard"
EXTRA_PATHS = [
    "/healthz",
    "/readyz",
    "/metrics",
    "/api/v1/status",
    "/no/such/page",
    "/api/v1/decisions/999999",
    "/decisions/abc",
    "/api/v1/markets?page=0",
]


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API key and the admin token set, as a deployment sets them."""
    monkeypatch.setenv("OPENROUTER_API_KEY", API_KEY)
    monkeypatch.setenv("ARENA_ADMIN_TOKEN", ADMIN_TOKEN)


def _with_password(url: str) -> str:
    return make_url(url).set(password=DB_PASSWORD).render_as_string(hide_password=False)


def _everything(client: TestClient, paths: list[str]) -> list[str]:
    """Status, headers and body of every path."""
    seen = []
    for path in paths:
        response = client.get(path)
        assert "Traceback" not in response.text, path
        seen.append(f"{path} {response.status_code} {response.headers} {response.text}")
    return seen


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every captured record, rendered and with all its attributes (extra= fields too)."""
    return caplog.text + "\n".join(repr(vars(record)) for record in caplog.records)


def test_no_secret_appears_anywhere(
    site: Site,
    secret_env: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API key and admin token in the environment, a database password in the URL (on
    PostgreSQL, whose trust authentication accepts any): every page, API route and operations
    endpoint, and every log record the app writes, holds none of them."""
    secrets = [API_KEY, ADMIN_TOKEN]
    url = site.url
    if site.backend == "postgresql":
        url = _with_password(site.url)
        secrets.append(DB_PASSWORD)
    monkeypatch.setenv("ARENA_DATABASE_URL", url)
    settings = load_settings(site.config)
    assert settings.database_url == url
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        seen = _everything(client, [*pages(site), *apis(site), *EXTRA_PATHS])
        assert client.get("/readyz").status_code == 200
    logged = _logged(caplog)
    assert "arena.web.access" in logged
    for secret in secrets:
        assert all(secret not in answer for answer in seen), secret
        assert secret not in logged, secret


def test_no_secret_appears_when_the_database_is_down(
    tmp_path: Path,
    secret_env: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An unreachable PostgreSQL whose URL holds a password: /readyz's reason, the 503 pages
    and the error log lines name the failure, never the password."""
    url = _with_password(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/arena")
    settings = load_settings(write_config(tmp_path / "config.yaml", url))
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        assert client.get("/readyz").status_code == 503
        seen = _everything(client, ["/", "/status", "/api/v1/leaderboard", *EXTRA_PATHS])
    logged = _logged(caplog)
    for secret in (API_KEY, ADMIN_TOKEN, DB_PASSWORD):
        assert all(secret not in answer for answer in seen), secret
        assert secret not in logged, secret


def test_each_request_is_one_structured_log_line(
    demo_site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    """One ``arena.web.access`` record per request with method, path, status and duration as
    fields (keys of the JSON line with ``--json-logs``); the query string, which may carry a
    token, is never logged."""
    caplog.set_level(logging.INFO, logger="arena.web.access")
    with demo_site.client() as client:
        caplog.clear()
        client.get(f"/markets?q=will&token={ADMIN_TOKEN}")
        client.get("/api/v1/families/no-such-family")
        client.get("/api/v1/markets?page=0")
    records = [r for r in caplog.records if r.name == "arena.web.access"]
    assert [(r.method, r.path, r.route, r.status) for r in records] == [  # type: ignore[attr-defined]
        ("GET", "/markets", "/markets", 200),
        ("GET", "/api/v1/families/no-such-family", "/api/v1/families/{family_id}", 404),
        ("GET", "/api/v1/markets", "/api/v1/markets", 422),
    ]
    for record in records:
        assert record.duration_ms >= 0  # type: ignore[attr-defined]
        assert ADMIN_TOKEN not in repr(vars(record)) and "?" not in record.getMessage()
        line = StructlogFormatter(json_logs=True).format(record)
        assert "\n" not in line
        fields = json.loads(line)
        assert fields["logger"] == "arena.web.access" and fields["level"] == "info"
        assert {k: fields[k] for k in ("method", "path", "status")} == {
            "method": record.method,  # type: ignore[attr-defined]
            "path": record.path,  # type: ignore[attr-defined]
            "status": record.status,  # type: ignore[attr-defined]
        }
        assert isinstance(fields["duration_ms"], float) and fields["request_id"]


@pytest.mark.parametrize("json_logs", [False, True], ids=["text", "json"])
def test_a_request_path_cannot_forge_a_log_line(
    db: Database, tmp_path: Path, json_logs: bool
) -> None:
    """`arena serve` as a process, asked for ``/%0Aforged%20line`` and ``/%1B[31mred``: its
    log has exactly one line for each request, the newline and ESC written as ``\\n`` and
    ``\\x1b``, and no raw control character at all (text lines and JSON lines alike)."""
    config = write_config(tmp_path / "config.yaml", db.url)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_arena(
        "--config",
        str(config),
        "--json-logs" if json_logs else "--text-logs",
        "serve",
        "--port",
        str(port),
    )
    try:
        _wait_until_serving(process, f"{base}/healthz")
        assert httpx.get(f"{base}/%0Aforged%20line", timeout=30).status_code == 404
        assert httpx.get(f"{base}/%1B[31mred", timeout=30).status_code == 404
    finally:
        process.terminate()
        _, log = process.communicate(timeout=60)
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", log), log
    lines = log.splitlines()  # str.splitlines also breaks at \x1c-\x1e, \x85, \u2028, \u2029
    forged = [line for line in lines if "forged" in line]
    red = [line for line in lines if "31mred" in line]
    assert len(forged) == 1 and len(red) == 1, log
    if json_logs:
        assert json.loads(forged[0])["path"] == "/\\nforged line"
        assert json.loads(red[0])["path"] == "/\\x1b[31mred"
    else:
        assert "GET /\\nforged line 404" in forged[0]
        assert "GET /\\x1b[31mred 404" in red[0]


def _wait_until_serving(process: subprocess.Popen[str], url: str) -> None:
    """Poll ``url`` until it answers (generous deadline: a busy machine only makes it later)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")
