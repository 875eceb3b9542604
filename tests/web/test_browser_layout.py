"""Every page at phone, tablet and desktop width in a real headless Chromium: none scrolls
sideways (wide tables scroll inside their own box), the leaderboard's first columns (rank,
family, value, P/L, return) are on a phone's first screen, and axe-core finds no serious or
critical accessibility violation.

Each page is loaded once per width (the module-scoped ``survey``); the tests read what it
measured. ``axe-selenium-python`` injects axe-core with Selenium's ``execute_script``, which the
page's Content-Security-Policy does not govern; the axe-core it runs is the one vendored in
``tests/web/vendor/axe-core`` (see its README: the package bundles a 2018 axe-core).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.web.browsing import DESKTOP, PHONE, TABLET, WAIT_S, pages, resize, wait
from tests.web.hostile import UNBROKEN_ID

webdriver = pytest.importorskip("selenium.webdriver")
axe_selenium_python = pytest.importorskip("axe_selenium_python")
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = pytest.mark.slow

FIRST_COLUMNS = ("rank", "family", "total_value", "pnl", "return_pct")
"""The leaderboard's columns a phone shows without scrolling the table."""

SEVERE = ("serious", "critical")
AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
AXE_VERSION = "4.14.1"

# The right edge of each of the leaderboard's first columns, in the first row.
LEADERBOARD_EDGES = """
const row = document.querySelector('#leaderboard tbody tr');
const cells = {rank: row.cells[0], family: row.cells[1]};
for (const name of ['total_value', 'pnl', 'return_pct']) {
  cells[name] = row.querySelector('td[data-field="' + name + '"]');
}
const edges = {};
for (const [name, cell] of Object.entries(cells)) {
  edges[name] = cell ? cell.getBoundingClientRect().right : null;
}
return edges;
"""


@dataclass
class Visit:
    """What one page measured at one width."""

    path: str
    scroll_width: int
    client_width: int
    violations: list[dict[str, Any]] = field(default_factory=list)
    edges: dict[str, float | None] = field(default_factory=dict)


def _visit(driver: Any, url: str, path: str) -> Visit:
    driver.get(url)
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "h1").text, f"h1 on {path}")
    widths = driver.execute_script(
        "const e = document.documentElement; return [e.scrollWidth, e.clientWidth];"
    )
    axe = axe_selenium_python.Axe(driver, str(AXE))
    axe.inject()
    assert driver.execute_script("return axe.version") == AXE_VERSION
    found = axe.run()["violations"]
    visit = Visit(path, int(widths[0]), int(widths[1]))
    visit.violations = [v for v in found if v["impact"] in SEVERE]
    if driver.find_elements(By.ID, "leaderboard"):
        visit.edges = driver.execute_script(LEADERBOARD_EDGES)
    return visit


@pytest.fixture(scope="module", params=[PHONE, TABLET, DESKTOP], ids=["phone", "tablet", "desktop"])
def survey(
    request: pytest.FixtureRequest, browser: Any, base_url: str
) -> Iterator[dict[str, Visit]]:
    """Every page at one window size, each loaded once: name -> what it measured."""
    driver = browser
    driver.set_script_timeout(WAIT_S)
    try:
        resize(driver, request.param)
        paths = pages(base_url) | {
            "unbroken-market": f"/markets/{UNBROKEN_ID}",  # a question with no line break
            "unbroken-search": "/markets?q=xxxxxxxxxx",
        }
        yield {name: _visit(driver, base_url + path, path) for name, path in paths.items()}
    finally:
        resize(driver, DESKTOP)
        driver.get_log("browser")  # the 404 page's console error stays here


def test_no_page_scrolls_sideways(survey: dict[str, Visit]) -> None:
    """The page is never wider than the window: wide tables scroll inside their own box."""
    wide = {v.path: v.scroll_width for v in survey.values() if v.scroll_width > v.client_width}
    assert wide == {}, f"pages wider than the window ({next(iter(survey.values())).client_width})"


def test_the_leaderboards_first_columns_fit_the_first_screen(survey: dict[str, Visit]) -> None:
    visit = survey["leaderboard"]
    assert set(visit.edges) == set(FIRST_COLUMNS)
    outside = {
        name: edge
        for name, edge in visit.edges.items()
        if edge is None or edge > visit.client_width
    }
    assert outside == {}, f"columns past the window's {visit.client_width} px"


def test_axe_finds_no_serious_violation(survey: dict[str, Visit]) -> None:
    found = {
        visit.path: [
            (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in visit.violations
        ]
        for visit in survey.values()
        if visit.violations
    }
    assert found == {}


def test_the_content_security_policy_holds_with_axe(browser: Any, base_url: str) -> None:
    """axe runs through the WebDriver, which the CSP does not govern; the page's own scripts
    stay bound by it: an inline script added to the page does not run."""
    import httpx

    policy = httpx.get(base_url + "/", timeout=WAIT_S).headers["content-security-policy"]
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    driver = browser
    driver.get(base_url + "/")
    driver.execute_script(
        "const s = document.createElement('script');"
        "s.textContent = 'window.__inline = true';"
        "document.body.appendChild(s);"
    )
    assert driver.execute_script("return window.__inline === undefined") is True
