"""The round trip of issue 26: the static copy opens in Chromium from ``file://``, every link
of every page resolves, the charts draw from their inline curves, and the browser fetches
nothing from a server (its Performance API lists only ``file://`` resources)."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

from tests.publish.conftest import StaticSite
from tests.web.browsing import DESKTOP, PHONE, console_errors, wait

RESOURCES = "return performance.getEntriesByType('resource').map((e) => e.name);"
LINKS = "return Array.from(document.querySelectorAll('a[href]')).map((a) => a.href);"
CHARTS_DRAWN = (
    "return Array.from(document.querySelectorAll('[data-chart]'))"
    ".every((c) => c.dataset.loaded === 'ALL:usd');"
)


def _visit(browser: Any, url: str) -> list[str]:
    """Load ``url``; check its title, console and resources; return the links it carries."""
    browser.get(url)
    wait(browser, lambda d: d.execute_script("return document.readyState") == "complete")
    title = browser.title
    assert title.endswith(" · arena") and len(title) > len(" · arena"), (url, title)
    wait(browser, lambda d: d.execute_script(CHARTS_DRAWN), f"{url}: a chart is not drawn")
    assert console_errors(browser) == [], url
    fetched = [browser.execute_script("return location.href"), *browser.execute_script(RESOURCES)]
    assert [r for r in fetched if not r.startswith("file://")] == [], url
    return [str(link) for link in browser.execute_script(LINKS)]


def test_the_static_copy_opens_from_file_and_every_link_resolves(
    static_site: StaticSite, browser: Any, shots: Path
) -> None:
    root = static_site.root.resolve()
    start = (root / "index.html").as_uri()
    queue = deque([start])
    seen = {start}
    while queue:
        url = queue.popleft()
        for link in _visit(browser, url):
            page, _fragment = urldefrag(link)
            assert page.startswith(root.as_uri() + "/"), (url, link)  # nothing from elsewhere
            assert Path(page.removeprefix("file://")).is_file(), (url, link)
            if page not in seen:
                seen.add(page)
                queue.append(page)
    assert len(seen) == static_site.report.pages  # every page is reached by clicking


def test_the_static_copy_looks_right_on_a_phone_and_a_desktop(
    static_site: StaticSite, browser: Any, shots: Path
) -> None:
    root = static_site.root.resolve()
    agent = (root / "cohorts" / "1" / "families" / "beta-model.html").as_uri()
    try:
        for name, size in (("phone", PHONE), ("desktop", DESKTOP)):
            browser.set_window_size(*size)
            for page, url in (("index", (root / "index.html").as_uri()), ("agent", agent)):
                _visit(browser, url)
                width, inner = browser.execute_script(
                    "const e = document.documentElement; return [e.scrollWidth, e.clientWidth];"
                )
                assert width <= inner, f"{page} on a {name} scrolls sideways ({width} > {inner})"
                browser.save_screenshot(str(shots / f"static-{page}-{name}.png"))
    finally:
        browser.set_window_size(*DESKTOP)
