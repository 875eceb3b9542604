"""Every form of every page, submitted in a real headless Chromium as a person would: first at
its defaults, then with each option of each select, each checkbox ticked and a search text typed.
Every page a submission leads to answers 200, on SQLite (the demo copy) and on PostgreSQL.

The forms are found on the pages (``form`` elements), not listed here, so a new form is covered
when it appears. ``tests/web/test_forms.py`` covers the same query strings without a browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.web.browsing import WAIT_S, pages, wait

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

pytestmark = pytest.mark.slow

SEARCH_TEXT = "will"


@dataclass(frozen=True)
class Change:
    """One way to fill a form before submitting it: ``kind`` is "defaults", "select", "check"
    or "type"; ``name`` the control's name and ``value`` the option or text."""

    kind: str
    name: str = ""
    value: str = ""

    def apply(self, form: Any) -> None:
        if self.kind == "defaults":
            return
        control = form.find_element(By.NAME, self.name)
        if self.kind == "select":
            Select(control).select_by_value(self.value)
        elif self.kind == "check":
            if not control.is_selected():
                control.click()
        else:
            control.clear()
            control.send_keys(self.value)


def changes(form: Any) -> list[Change]:
    """The defaults, then one change per select option, checkbox and text field of ``form``."""
    found = [Change("defaults")]
    for select in form.find_elements(By.TAG_NAME, "select"):
        name = select.get_attribute("name")
        found += [
            Change("select", name, option.get_attribute("value"))
            for option in select.find_elements(By.TAG_NAME, "option")
        ]
    for field in form.find_elements(By.TAG_NAME, "input"):
        kind = field.get_attribute("type")
        if kind == "checkbox":
            found.append(Change("check", field.get_attribute("name")))
        elif kind in ("search", "text"):
            found.append(Change("type", field.get_attribute("name"), SEARCH_TEXT))
    return found


def answered(driver: Any) -> bool:
    """The page that replaced the submitted one has loaded (False while it is on its way)."""
    try:
        return driver.execute_script(  # type: ignore[no-any-return]
            "return window.__submitted === undefined && document.readyState === 'complete'"
        )
    except WebDriverException:  # between two documents
        return False


def submit(driver: Any, form: Any) -> None:
    """Press the form's submit button (or submit it when it has none) and wait for the answer."""
    driver.execute_script("window.__submitted = true")
    buttons = form.find_elements(By.CSS_SELECTOR, "button:not([type=button]), input[type=submit]")
    if buttons:
        buttons[0].click()
    else:
        form.submit()
    wait(driver, answered, "the page the form leads to")


def test_every_form_answers_200_at_its_defaults_and_with_each_option(  # type: ignore[no-untyped-def]
    browser, served: str
) -> None:
    import httpx

    driver = browser
    submitted: dict[str, int] = {}
    with_forms = set()
    paths = {name: path for name, path in pages(served).items() if name != "not-found"}
    for name, path in paths.items():
        driver.get(served + path)
        count = len(driver.find_elements(By.TAG_NAME, "form"))
        for index in range(count):
            with_forms.add(name)
            form = driver.find_elements(By.TAG_NAME, "form")[index]
            for change in changes(form):
                driver.get(served + path)
                form = driver.find_elements(By.TAG_NAME, "form")[index]
                change.apply(form)
                submit(driver, form)
                url = driver.current_url
                assert url.startswith(served), url
                submitted[f"{path} {change} -> {url}"] = httpx.get(url, timeout=WAIT_S).status_code
    assert {"leaderboard", "markets"} <= with_forms
    assert len(submitted) > 8, submitted  # each option of the cohort and market forms
    assert {k: v for k, v in submitted.items() if v != 200} == {}
