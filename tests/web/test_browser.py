"""The dashboard in a real headless Chromium (Debian's chromium and chromium-driver) driven by
Selenium: navigation by clicks, the chart's range and unit controls, hostile market text that
runs nothing, a console without errors, and a screenshot of every page.

The fixtures are in ``tests/web/browsing.py``. With ``ARENA_DOCS_SCREENSHOT=1`` the
leaderboard's screenshots, at desktop and at phone width, also replace ``docs/leaderboard.png``
and ``docs/leaderboard-phone.png`` (shown in the README).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.request import urlopen

import pytest

from tests.web.browsing import (
    DESKTOP,
    DOCS,
    PHONE,
    chart_loaded,
    console_errors,
    pages,
    resize,
    wait,
)
from tests.web.hostile import HOSTILE

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

DOCS_SCREENSHOTS = {
    "leaderboard": DOCS / "leaderboard.png",
    "leaderboard-phone": DOCS / "leaderboard-phone.png",
}

pytestmark = pytest.mark.slow


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
    driver = browser
    driver.get_log("browser")  # drop what earlier tests left
    for name, path in pages(base_url).items():
        if name == "not-found":  # its 404 is a console error by design
            continue
        resize(driver, (DESKTOP[0], 1400 if name == "leaderboard" else DESKTOP[1]))
        driver.get(base_url + path)
        if driver.find_elements(By.CSS_SELECTOR, "[data-chart]"):
            wait(driver, lambda d: chart_loaded(d, "ALL:usd"), f"chart on {path}")
        assert driver.find_element(By.TAG_NAME, "h1").text
        errors = console_errors(driver)
        assert errors == [], (path, errors)
        assert driver.save_screenshot(str(shots / f"{name}.png"))
    resize(driver, PHONE)
    try:
        driver.get(base_url + "/")
        wait(driver, lambda d: chart_loaded(d, "ALL:usd"), "chart on the phone")
        assert driver.save_screenshot(str(shots / "leaderboard-phone.png"))
    finally:
        resize(driver, DESKTOP)
    for name in ("leaderboard", "leaderboard-phone"):
        assert (shots / f"{name}.png").stat().st_size > 10_000
    if os.environ.get("ARENA_DOCS_SCREENSHOT") == "1":
        for name, target in DOCS_SCREENSHOTS.items():
            shutil.copyfile(shots / f"{name}.png", target)


def test_the_chart_shades_each_series_drawdown(browser, base_url: str) -> None:  # type: ignore[no-untyped-def]
    """Every shown series with a drawdown in /api/v1/curves is shaded; one series alone is
    labelled with its size (issue 25)."""
    driver = browser
    driver.get(base_url + "/")
    wait(driver, lambda d: chart_loaded(d, "ALL:usd"), "chart ALL")
    curves = json.loads(urlopen(base_url + "/api/v1/curves?range=ALL").read())
    falling = [s for s in curves["series"] if s["drawdown"]]
    chart = driver.find_element(By.CSS_SELECTOR, "[data-chart]")
    assert chart.get_attribute("data-drawdowns") == str(len(falling))
    if falling:
        family = falling[0]["family_id"]
        legend = f"[data-legend] button[data-family='{family}']"
        driver.find_element(By.CSS_SELECTOR, legend).click()
        wait(driver, lambda d: chart.get_attribute("data-drawdowns") == "1", "one shaded")
        label = driver.find_element(By.CSS_SELECTOR, ".chart-mark.drawdown").text
        assert f"{falling[0]['drawdown']['pct']:.1f}%" in label
    assert console_errors(driver) == []
