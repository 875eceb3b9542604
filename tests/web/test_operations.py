"""Operations endpoints, read-only access, curves, fixed query counts, and the commands that
serve the app."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import event, text
from sqlalchemy.engine import make_url

from arena.config import load_settings
from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.store.db import make_engine
from arena.web.app import create_app
from arena.web.curves import MAX_POINTS, downsample
from tests.helpers import cli_env, free_port, run_arena, start_arena, write_config
from tests.web.conftest import Site
from tests.web.test_pages import apis, pages

REQUIRED_METRICS = {
    "arena_job_runs",
    "arena_job_last_success_timestamp_seconds",
    "arena_job_last_duration_seconds",
    "arena_decisions",
    "arena_model_call_attempts",
    "arena_cost_usd",
    "arena_open_positions",
    "arena_newest_snapshot_age_seconds",
    "arena_http_requests",
}


def test_healthz_and_readyz(client: TestClient) -> None:
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.text.startswith("ready")


def test_metrics_parse_as_prometheus_text(client: TestClient) -> None:
    client.get("/")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    assert set(families) >= REQUIRED_METRICS
    assert all(name.startswith("arena_") for name in families)
    runs = {s.labels["job"] for s in families["arena_job_runs"].samples}
    assert "decision_run" in runs
    statuses = {s.labels["status"]: s.value for s in families["arena_decisions"].samples}
    assert statuses.get("completed", 0) > 0
    assert families["arena_open_positions"].samples[0].value >= 0
    assert any(s.value > 0 for s in families["arena_cost_usd"].samples)
    assert families["arena_newest_snapshot_age_seconds"].samples


def _unreachable_postgres() -> str:
    """A PostgreSQL URL on a local port nobody listens on."""
    return f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/arena"


@pytest.mark.parametrize("kind", ["bad-port", "missing-file", "not-migrated"])
def test_readyz_is_503_when_the_database_is_not_ready(tmp_path: Path, kind: str) -> None:
    if kind == "bad-port":
        url = _unreachable_postgres()
    elif kind == "missing-file":
        url = f"sqlite:///{tmp_path / 'absent.db'}"
    else:
        url = f"sqlite:///{tmp_path / 'empty.db'}"
        engine = make_engine(url)
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
        engine.dispose()
    settings = load_settings(write_config(tmp_path / "config.yaml", url))
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        response = client.get("/readyz")
        assert response.status_code == 503, response.text
        assert response.text.startswith("not ready")
        assert client.get("/healthz").status_code == 200
        page = client.get("/")
        assert page.status_code in (500, 503) and "Traceback" not in page.text
        assert client.get("/api/v1/leaderboard").json()["error"]
    assert not (tmp_path / "absent.db").exists()  # the read-only app created nothing


def test_readyz_is_503_when_the_pool_is_closed(site: Site) -> None:
    with site.client() as client:
        assert client.get("/readyz").status_code == 200
        engine = client.app.state.ctx.engine  # type: ignore[attr-defined]
        engine.dispose()
        engine.pool = engine.pool.__class__(  # a pool whose connections always fail
            lambda: (_ for _ in ()).throw(ConnectionError("pool closed"))
        )
        assert client.get("/readyz").status_code == 503


def test_the_app_cannot_write(site: Site) -> None:
    with site.client() as client:
        engine = client.app.state.ctx.engine  # type: ignore[attr-defined]
        with pytest.raises(Exception, match=r"(?i)read.?only|readonly"), engine.begin() as conn:
            conn.execute(text("UPDATE agents SET cash = cash"))


def test_curves_are_downsampled(client: TestClient) -> None:
    seen = {}
    for name in ("10M", "1H", "1D", "1W", "1M", "ALL"):
        response = client.get(f"/api/v1/curves?range={name}")
        assert response.status_code == 200
        assert len(response.content) < 200_000
        body = response.json()
        assert body["range"] == name
        for series in body["series"]:
            assert series["points"] == len(series["t"]) == len(series["value"]) <= MAX_POINTS
            assert series["t"] == sorted(series["t"])
        seen[name] = sum(s["points"] for s in body["series"])
    assert seen["ALL"] > seen["1D"] > 0
    one = client.get("/api/v1/curves?range=ALL").json()
    # two cohorts: the sum of two agents, or of six for the demo's replicated families; the
    # payload's break-even is the highest
    bases = {s["base"][-1] for s in one["series"]}
    assert 20000.0 in bases and bases <= {20000.0, 60000.0}
    assert one["break_even"] == pytest.approx(max(bases))
    assert one["decision_markers"]
    family = one["series"][0]["family_id"]
    only = client.get(f"/api/v1/curves?range=ALL&family={family}&cohort=1").json()
    assert [s["family_id"] for s in only["series"]] == [family]


def test_downsample_keeps_first_last_min_and_max() -> None:
    points = [(t, float((t * 7919) % 1000), 0.0) for t in range(10_000)]
    kept = list(downsample(points, 250))
    assert len(kept) <= 1000
    assert kept[0] == points[0] and kept[-1] == points[-1]
    assert min(p[1] for p in kept) == 0.0 and max(p[1] for p in kept) == 999.0
    assert [p[0] for p in kept] == sorted({p[0] for p in kept})
    assert list(downsample(points[:10], 250)) == points[:10]


def _queries(client: TestClient, path: str) -> int:
    engine = client.app.state.ctx.engine  # type: ignore[attr-defined]
    statements: list[str] = []

    def count(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", count)
    try:
        assert client.get(path).status_code == 200, path
    finally:
        event.remove(engine, "before_cursor_execute", count)
    return len(statements)


def test_pages_run_a_fixed_number_of_queries(site: Site) -> None:
    """The same page for a small and a large entity runs the same number of queries (no N+1),
    and no page runs more than a small constant."""
    with site.client() as client:
        board = client.get("/api/v1/leaderboard").json()
        decisions = client.get("/api/v1/cohorts/1?per_page=200").json()["decisions"]["items"]
        markets = client.get("/api/v1/markets?per_page=200").json()["items"]
    small, large = board[-1]["family_id"], board[0]["family_id"]
    pairs = [
        (f"/families/{small}", f"/families/{large}"),
        (f"/cohorts/1/families/{small}", f"/cohorts/1/families/{large}"),
        (f"/decisions/{decisions[-1]['id']}", f"/decisions/{decisions[0]['id']}"),
        (f"/markets/{markets[-1]['id']}", f"/markets/{markets[0]['id']}"),
        ("/cohorts/1", "/cohorts/2"),
    ]
    for a, b in pairs:
        with site.client() as fresh_a, site.client() as fresh_b:
            assert _queries(fresh_a, a) == _queries(fresh_b, b), (a, b)
    for path in pages(site) + apis(site):
        with site.client() as fresh:
            assert _queries(fresh, path) <= 40, path


def _wait_for(url: str, process: subprocess.Popen[str]) -> httpx.Response:
    for _ in range(300):
        if process.poll() is not None:
            raise AssertionError(process.stderr.read() if process.stderr else "exited")
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


def test_arena_serve_serves_the_demo(demo_site: Site) -> None:
    port = free_port()
    process = start_arena(
        "--config",
        str(demo_site.config),
        "serve",
        "--port",
        str(port),
        env=cli_env(ARENA_DATABASE_URL=demo_site.url),
    )
    try:
        assert _wait_for(f"http://127.0.0.1:{port}/healthz", process).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/").status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_demo_prints_the_serve_command(demo_site: Site) -> None:
    database = make_url(demo_site.url).database
    assert database is not None
    assert f"ARENA_DATABASE_URL=sqlite:///{Path(database).resolve()} arena serve" in (
        demo_site.demo_stdout.replace("\n", "")
    )


def test_run_http_rejects_a_bad_address(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.yaml", f"sqlite:///{tmp_path / 'a.db'}")
    for bad in ("nonsense", "127.0.0.1:99999", ":80"):
        result = run_arena("--config", str(config), "run", "--http", bad)
        assert result.returncode == 2 and "--http" in result.stderr
        assert "Traceback" not in result.stderr


DAEMON_KEY = "sk-or-v1-daemon-secret-7d1e0c"
DAEMON_TOKEN = "admin-daemon-secret-42f9"


def test_run_http_serves_the_dashboard_beside_the_daemon(tmp_path: Path) -> None:
    """`arena run --http` on a fresh SQLite database, every outside service faked or closed:
    the daemon migrates, serves /healthz, /readyz and the pages from its thread, logs each
    request as a JSON line, shows no secret, and stops cleanly on SIGTERM."""
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens: no call leaves the machine
    with serve_fake_gamma(FakeGammaWorld(n_markets=20, seed=3)) as gamma_url:
        config = write_config(
            tmp_path / "config.yaml",
            f"sqlite:///{tmp_path / 'arena.db'}",
            polymarket={"gamma_url": gamma_url, "clob_url": closed},
            openrouter={"base_url": f"{closed}/api/v1", "max_attempts": 1},
        )
        env = cli_env(
            OPENROUTER_API_KEY=DAEMON_KEY,
            ARENA_ADMIN_TOKEN=DAEMON_TOKEN,
            ARENA_LOGGING__JSON_LOGS="true",
            HTTPS_PROXY="http://127.0.0.1:9",
            HTTP_PROXY="http://127.0.0.1:9",
            NO_PROXY="127.0.0.1,localhost",
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        log_path = tmp_path / "daemon.log"
        with log_path.open("w") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", "arena", "--config", str(config), "run", "--http",
                 f"127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                text=True,
                env=env,
                cwd=tmp_path,
            )  # fmt: skip
            try:
                bodies = _answers_while_running(process, base, log_path)
                process.send_signal(signal.SIGTERM)
                code = process.wait(timeout=90)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait(timeout=30)
    log = log_path.read_text()
    assert code == 0, log[-3000:]
    assert f"dashboard on http://127.0.0.1:{port}/" in log and "scheduler stopped" in log
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    requests = [r for r in lines if r.get("logger") == "arena.web.access"]
    assert {(r["method"], r["path"], r["status"]) for r in requests} >= {
        ("GET", "/healthz", 200),
        ("GET", "/readyz", 200),
        ("GET", "/", 200),
    }
    for secret in (DAEMON_KEY, DAEMON_TOKEN):
        assert secret not in log
        assert all(secret not in body for body in bodies)
    with pytest.raises(httpx.TransportError):  # the dashboard stopped with the daemon
        httpx.get(f"{base}/healthz", timeout=2)


def _answers_while_running(process: subprocess.Popen[str], base: str, log_path: Path) -> list[str]:
    """Poll /healthz (generous deadline: a busy machine only makes it later), then read the
    operations endpoints and the pages; every body, for the secrets check."""
    deadline = time.monotonic() + 180
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the daemon exited: {log_path.read_text()[-3000:]}")
        try:
            health = httpx.get(f"{base}/healthz", timeout=2)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise AssertionError(f"no dashboard: {log_path.read_text()[-3000:]}") from None
            time.sleep(0.1)
    assert health.status_code == 200
    bodies = [health.text]
    for path in ("/readyz", "/", "/status", "/api/v1/status", "/metrics", "/api/v1/leaderboard"):
        response = httpx.get(f"{base}{path}", timeout=30)
        assert response.status_code == 200, (path, response.text[:500])
        bodies.append(response.text + str(response.headers))
    assert bodies[1].startswith("ready")
    return bodies


def test_importing_the_cli_does_not_load_the_web_stack() -> None:
    code = (
        "import sys, arena.cli; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('fastapi', 'uvicorn', 'starlette', 'prometheus_client') or m.startswith('arena.web.')"
        " and m != 'arena.web.bind'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=cli_env()
    )
    assert out.stdout.strip() == "[]"
