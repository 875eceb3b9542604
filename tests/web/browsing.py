"""What every browser test shares: the dashboard served over a copy of the demo database, one
headless Debian Chromium per test worker, a screenshot directory, and the waits.

The fixtures are registered for tests/web by ``conftest.py``. Outside CI they skip (with the
reason) when the browser cannot start; with ``CI=true`` they fail instead. Screenshots go to
``$ARENA_SCREENSHOTS`` (default: a temporary directory).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy.engine import make_url

from arena.config import load_settings
from arena.store.db import make_engine, session_factory
from arena.web.server import BackgroundServer, serve_in_background
from tests.helpers import free_port, write_config
from tests.web.hostile import UNBROKEN, UNBROKEN_ID, insert_hostile_market

if TYPE_CHECKING:
    from tests.web.conftest import Site

CHROMIUM = os.environ.get("ARENA_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ARENA_CHROMEDRIVER", "/usr/bin/chromedriver")
DOCS = Path(__file__).resolve().parents[2] / "docs"
WAIT_S = 30
DESKTOP = (1440, 900)
TABLET = (800, 1024)
PHONE = (390, 844)


def resize(driver: Any, size: tuple[int, int]) -> None:
    """Set the window to ``size`` and wait until the page sees its width: on a busy machine
    Chromium applies a resize a moment after WebDriver returns."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.set_window_size(*size)
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.execute_script("return window.innerWidth") == size[0],
        f"the window did not reach {size[0]} px",
    )


def no_browser(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI: the browser tests must run, but {reason}")
    pytest.skip(reason)


def serve(settings_path: Path) -> Iterator[str]:
    """The dashboard for the config at ``settings_path``, served by uvicorn on a free port."""
    port = free_port()
    server: BackgroundServer = serve_in_background(load_settings(settings_path), "127.0.0.1", port)
    try:
        for _ in range(200):
            if server.server.started:
                break
            server.thread.join(0.05)
        assert server.server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="session")
def base_url(demo_site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard over a copy of the demo database holding two hostile markets: one whose
    text is HTML (``HOSTILE``), one whose question and id have no place to break a line."""
    tmp = tmp_path_factory.mktemp("browser")
    source = make_url(demo_site.url).database
    assert source is not None
    copy = tmp / "arena.db"
    with sqlite3.connect(source) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    url = f"sqlite:///{copy}"
    engine = make_engine(url)
    insert_hostile_market(session_factory(engine))
    insert_hostile_market(session_factory(engine), UNBROKEN_ID, UNBROKEN)
    engine.dispose()
    yield from serve(write_config(tmp / "config.yaml", url, methodology="v2"))


@pytest.fixture(scope="session")
def postgres_base_url(
    postgres_site: Site, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The dashboard over the simulated arena on PostgreSQL (``postgres_site``)."""
    tmp = tmp_path_factory.mktemp("browser-pg")
    yield from serve(write_config(tmp / "config.yaml", postgres_site.url, methodology="v2"))


@pytest.fixture(
    scope="session", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def served(request: pytest.FixtureRequest) -> str:
    """The dashboard's base URL, once over the demo copy (SQLite) and once over PostgreSQL."""
    name = "base_url" if request.param == "sqlite" else "postgres_base_url"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


def pages(base: str) -> dict[str, str]:
    """One path of each kind of page, by name: the ids come from the JSON API at ``base``.

    The decision is a BET (with its attempts and trades); the market one that is held.
    """
    import httpx

    board = httpx.get(base + "/api/v1/leaderboard", timeout=WAIT_S).json()
    family = board[0]["family_id"]
    recent = httpx.get(base + f"/api/v1/families/{family}", timeout=WAIT_S).json()
    decision = next(d for d in recent["recent_decisions"]["items"] if d["action"] == "BET")
    held = httpx.get(base + "/api/v1/markets?held=true", timeout=WAIT_S).json()
    return {
        "leaderboard": "/",
        "family": f"/families/{family}",
        "cohorts": "/cohorts",
        "cohort": "/cohorts/1",
        "agent": f"/cohorts/1/families/{family}",
        "markets": "/markets",
        "market": f"/markets/{held['items'][0]['id']}",
        "decision": f"/decisions/{decision['id']}",
        "status": "/status",
        "methodology": "/methodology",
        "api-docs": "/api/docs",
        "not-found": "/markets/no-such-market",
    }


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium, at the desktop size; tests that resize put it back."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.common.exceptions import WebDriverException

    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        no_browser(
            f"{CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
    except WebDriverException as exc:
        no_browser(f"Chromium did not start: {exc.msg}")
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = os.environ.get("ARENA_SCREENSHOTS")
    path = Path(directory) if directory else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def wait(driver: Any, condition: Callable[[Any], Any], message: str = "") -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S).until(condition, message)


def chart_loaded(driver: Any, expected: str) -> bool:
    from selenium.webdriver.common.by import By

    chart = driver.find_element(By.CSS_SELECTOR, "[data-chart]")
    return chart.get_attribute("data-loaded") == expected  # type: ignore[no-any-return]


def console_errors(driver: Any) -> list[dict[str, object]]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
