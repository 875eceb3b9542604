"""The dashboard in a real headless Chromium (Debian's chromium and chromium-driver) driven by
Selenium: navigation by clicks, the chart's range and unit controls, hostile market text that
runs nothing, a console without errors, and a screenshot of every page.

Outside CI the tests skip (with the reason) when the browser cannot start; with ``CI=true``
they fail instead. Screenshots go to ``$ARENA_SCREENSHOTS`` (default: a temporary directory);
with ``ARENA_DOCS_SCREENSHOT=1`` the leaderboard's also replaces ``docs/leaderboard.png``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from arena.config import load_settings
from arena.store.db import make_engine, session_factory
from arena.web.server import BackgroundServer, serve_in_background
from tests.helpers import free_port, write_config
from tests.web.conftest import Site
from tests.web.hostile import HOSTILE, insert_hostile_market

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import NoAlertPresentException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = os.environ.get("ARENA_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ARENA_CHROMEDRIVER", "/usr/bin/chromedriver")
DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "leaderboard.png"
WAIT_S = 30

pytestmark = pytest.mark.slow


def _no_browser(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI: the browser tests must run, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def base_url(demo_site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard over a copy of the demo database holding one hostile market, served by
    uvicorn on a free port."""
    tmp = tmp_path_factory.mktemp("browser")
    source = make_url(demo_site.url).database
    assert source is not None
    copy = tmp / "arena.db"
    with sqlite3.connect(source) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    url = f"sqlite:///{copy}"
    engine = make_engine(url)
    insert_hostile_market(session_factory(engine))
    engine.dispose()
    settings = load_settings(write_config(tmp / "config.yaml", url, methodology="v2"))
    port = free_port()
    server: BackgroundServer = serve_in_background(settings, "127.0.0.1", port)
    try:
        for _ in range(200):
            if server.server.started:
                break
            server.thread.join(0.05)
        assert server.server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        _no_browser(
            f"{CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
    except WebDriverException as exc:
        _no_browser(f"Chromium did not start: {exc.msg}")
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = os.environ.get("ARENA_SCREENSHOTS")
    path = Path(directory) if directory else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def wait(driver, condition, message: str = ""):  # type: ignore[no-untyped-def]
    return WebDriverWait(driver, WAIT_S).until(condition, message)


def chart_loaded(driver, expected: str) -> bool:  # type: ignore[no-untyped-def]
    chart = driver.find_element(By.CSS_SELECTOR, "[data-chart]")
    return chart.get_attribute("data-loaded") == expected


def console_errors(driver) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def test_click_from_the_leaderboard_to_a_market(browser, base_url: str) -> None:  # type: ignore[no-untyped-def]
    driver = browser
    driver.get(base_url + "/")
    first = driver.find_element(By.CSS_SELECTOR, "#leaderboard tbody tr td.family a")
    name = first.text
    first.click()
    wait(driver, lambda d: "/families/" in d.current_url, "family page")
    assert name in driver.find_element(By.TAG_NAME, "h1").text
    bets = driver.find_elements(
        By.XPATH, "//tr[td[normalize-space()='BET']]//a[contains(@href, '/decisions/')]"
    )
    assert bets, "the family made no BET decision"
    bets[0].click()
    wait(driver, lambda d: "/decisions/" in d.current_url, "decision page")
    assert "Decision #" in driver.find_element(By.TAG_NAME, "h1").text
    assert driver.find_elements(By.CSS_SELECTOR, "section.attempt")
    market = driver.find_element(By.CSS_SELECTOR, "main table a[href^='/markets/']")
    question = market.text
    market.click()
    wait(driver, lambda d: "/markets/" in d.current_url, "market page")
    assert driver.find_element(By.ID, "question").text == question
    assert console_errors(driver) == []


def test_chart_range_and_unit_change_the_series(browser, base_url: str) -> None:  # type: ignore[no-untyped-def]
    driver = browser
    driver.get(base_url + "/")
    wait(driver, lambda d: chart_loaded(d, "ALL:usd"), "chart ALL")
    chart = driver.find_element(By.CSS_SELECTOR, "[data-chart]")
    assert chart.find_elements(By.TAG_NAME, "canvas"), "uPlot drew nothing"
    everything = (chart.get_attribute("data-points"), chart.get_attribute("data-first"))
    assert int(everything[0] or 0) > 0
    driver.find_element(By.CSS_SELECTOR, "button[data-range='1D']").click()
    wait(driver, lambda d: chart_loaded(d, "1D:usd"), "chart 1D")
    one_day = (chart.get_attribute("data-points"), chart.get_attribute("data-first"))
    assert one_day != everything
    assert int(one_day[0] or 0) < int(everything[0] or 0)
    assert int(one_day[1] or 0) > int(everything[1] or 0)  # the day starts later
    driver.find_element(By.CSS_SELECTOR, "button[data-unit='pct']").click()
    wait(driver, lambda d: chart_loaded(d, "1D:pct"), "chart in percent")
    assert console_errors(driver) == []


def test_hostile_market_text_runs_nothing(browser, base_url: str) -> None:  # type: ignore[no-untyped-def]
    driver = browser
    for path in ("/markets/666", "/markets?q=script"):
        driver.get(base_url + path)
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert  # noqa: B018 - raises when no alert is open
        assert driver.execute_script("return window.__pwned === undefined") is True
        assert not driver.find_elements(By.CSS_SELECTOR, "main img, main svg[onload]")
    driver.get(base_url + "/markets/666")
    assert driver.find_element(By.ID, "question").text == HOSTILE


def test_every_page_without_console_errors_and_screenshots(  # type: ignore[no-untyped-def]
    browser, base_url: str, shots: Path
) -> None:
    import httpx

    driver = browser
    board = httpx.get(base_url + "/api/v1/leaderboard").json()
    family = board[0]["family_id"]
    decision = httpx.get(base_url + f"/api/v1/families/{family}").json()["recent_decisions"]
    market = httpx.get(base_url + "/api/v1/markets?held=true").json()["items"][0]["id"]
    pages = {
        "leaderboard": "/",
        "family": f"/families/{family}",
        "cohorts": "/cohorts",
        "cohort": "/cohorts/1",
        "agent": f"/cohorts/1/families/{family}",
        "markets": "/markets",
        "market": f"/markets/{market}",
        "decision": f"/decisions/{decision['items'][0]['id']}",
        "status": "/status",
        "methodology": "/methodology",
        "api-docs": "/api/docs",
    }
    driver.get_log("browser")  # drop what earlier tests left
    for name, path in pages.items():
        driver.set_window_size(1400, 1400 if name == "leaderboard" else 1000)
        driver.get(base_url + path)
        if driver.find_elements(By.CSS_SELECTOR, "[data-chart]"):
            wait(driver, lambda d: chart_loaded(d, "ALL:usd"), f"chart on {path}")
        assert driver.find_element(By.TAG_NAME, "h1").text
        errors = console_errors(driver)
        assert errors == [], (path, errors)
        assert driver.save_screenshot(str(shots / f"{name}.png"))
    assert (shots / "leaderboard.png").stat().st_size > 10_000
    if os.environ.get("ARENA_DOCS_SCREENSHOT") == "1":
        shutil.copyfile(shots / "leaderboard.png", DOCS_SCREENSHOT)
