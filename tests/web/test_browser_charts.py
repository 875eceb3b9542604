"""The charts and the home page's live parts in headless Chromium: the tooltip (every series
at the cursor's time, sorted, formatted as the table, equal to it at the latest point), the
legend (hover highlights, click or Enter isolates, again restores), every range drawing a line
over exactly its window, labelled break-even and decision lines, the countdown to the next
decision run, and the auto-refresh toggle (remembered; off under prefers-reduced-motion).

Fixtures and waits are in ``tests/web/browsing.py``; the server holds the demo's database.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.browsing import DESKTOP, chart_loaded, console_errors, resize, wait

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

pytestmark = pytest.mark.slow

MONEY = re.compile(r"^-?\$\d{1,3}(,\d{3})*\.\d{2}$")
PERCENT = re.compile(r"^[+-]?\d+\.\d{2}%$")
RANGES = {"10M": 600, "1H": 3600, "1D": 86400, "1W": 7 * 86400, "1M": 30 * 86400, "ALL": None}
STORE = "arena.autorefresh"

# What the drawn chart holds, read from uPlot itself: its x scale, and per series whether it
# is shown, its focus, and its non-null points.
PLOT = """
const box = document.querySelector('[data-chart]'); const u = box._plot;
return {min: u.scales.x.min, max: u.scales.x.max, xs: u.data[0],
  series: u.series.slice(1).map((s, i) => ({label: s.label, show: s.show, focus: s._focus,
    points: u.data[i + 1].filter(v => v != null).length}))};
"""


@pytest.fixture
def home(browser: Any, base_url: str) -> Iterator[Any]:
    """The leaderboard with its chart drawn (ALL, $), auto-refresh switched off so nothing
    changes under the test; the stored choice and media emulation are cleared after."""
    driver = browser
    resize(driver, DESKTOP)
    driver.get(base_url + "/")
    driver.execute_script(f"localStorage.setItem('{STORE}', 'off')")
    driver.get(base_url + "/")
    driver.get_log("browser")
    wait(driver, lambda d: chart_loaded(d, "ALL:usd"), "chart ALL")
    yield driver
    driver.execute_script(f"localStorage.removeItem('{STORE}')")
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def _hover_time(driver: Any, t: int) -> None:
    """Move the mouse over the plot at time ``t`` (Unix seconds), mid-height."""
    over = driver.find_element(By.CSS_SELECTOR, "[data-chart] .u-over")
    x = driver.execute_script(
        "return document.querySelector('[data-chart]')._plot.valToPos(arguments[0], 'x')", t
    )
    offset = round(x - over.size["width"] / 2)
    ActionChains(driver).move_to_element_with_offset(over, offset, 0).perform()


def _tooltip(driver: Any) -> list[dict[str, str]]:
    tip = wait(
        driver,
        lambda d: next(
            (e for e in d.find_elements(By.CSS_SELECTOR, ".chart-tooltip") if e.is_displayed()),
            None,
        ),
        "tooltip shown",
    )
    rows = tip.find_elements(By.CSS_SELECTOR, ".row")
    return [
        {
            "family": row.get_attribute("data-family"),
            "name": row.find_element(By.CSS_SELECTOR, ".name").text,
            "usd": row.find_element(By.CSS_SELECTOR, ".usd").text,
            "pct": row.find_element(By.CSS_SELECTOR, ".pct").text,
        }
        for row in rows
    ]


def _number(text: str) -> float:
    return float(text.replace("$", "").replace(",", "").replace("%", ""))


def test_the_tooltip_lists_every_series_sorted_as_the_table_writes_it(home: Any) -> None:
    driver = home
    plot = driver.execute_script(PLOT)
    _hover_time(driver, plot["xs"][-1])
    rows = _tooltip(driver)
    assert (
        len(rows)
        == len(plot["series"])
        == len(driver.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr"))
    )
    values = [_number(r["usd"]) for r in rows]
    assert values == sorted(values, reverse=True)
    for row in rows:
        assert MONEY.match(row["usd"]) and PERCENT.match(row["pct"]), row
        table = driver.find_element(
            By.CSS_SELECTOR, f"#leaderboard tr[data-family='{row['family']}']"
        )
        # at the latest point the chart says what the table says, written the same way
        assert (
            row["usd"] == table.find_element(By.CSS_SELECTOR, "td[data-field='total_value']").text
        )
        assert row["pct"] == table.find_element(By.CSS_SELECTOR, "td[data-field='return_pct']").text
        assert row["name"].count("(baseline)") <= 1
    when = driver.find_element(By.CSS_SELECTOR, ".chart-tooltip .when").text
    assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\dZ$", when)
    # earlier in time, the tooltip follows the cursor to that time's values
    _hover_time(driver, plot["xs"][len(plot["xs"]) // 3])
    wait(
        driver,
        lambda d: d.find_element(By.CSS_SELECTOR, ".chart-tooltip .when").text != when,
        "moved",
    )
    earlier = _tooltip(driver)
    values = [_number(r["usd"]) for r in earlier]
    assert values == sorted(values, reverse=True) and len(earlier) == len(rows)
    assert console_errors(driver) == []


def test_the_legend_highlights_on_hover_and_isolates_on_click(home: Any) -> None:
    driver = home
    buttons = driver.find_elements(By.CSS_SELECTOR, "[data-legend] button")
    labels = [s["label"] for s in driver.execute_script(PLOT)["series"]]
    assert sorted(b.find_element(By.CSS_SELECTOR, ".name").text for b in buttons) == sorted(labels)
    assert all(label.count("(baseline)") <= 1 for label in labels)
    target = buttons[1]
    name = target.find_element(By.CSS_SELECTOR, ".name").text
    ActionChains(driver).move_to_element(target).perform()
    focus = {s["label"]: s["focus"] for s in driver.execute_script(PLOT)["series"]}
    assert focus[name] is True and not any(v for k, v in focus.items() if k != name)
    target.click()
    wait(
        driver,
        lambda d: d.find_element(By.CSS_SELECTOR, "[data-chart]").get_attribute("data-isolated"),
        "isolated",
    )
    shown = {s["label"]: s["show"] for s in driver.execute_script(PLOT)["series"]}
    assert shown == {label: label == name for label in labels}
    assert [b.get_attribute("aria-pressed") for b in buttons] == [
        "true" if b is target else "false" for b in buttons
    ]
    _hover_time(driver, driver.execute_script(PLOT)["xs"][-1])
    assert [r["name"] for r in _tooltip(driver)] == [name]  # hidden series leave the tooltip
    target.click()  # again: every series comes back
    assert all(s["show"] for s in driver.execute_script(PLOT)["series"])
    assert all(b.get_attribute("aria-pressed") == "true" for b in buttons)
    # from the keyboard: the legend entries are buttons
    driver.execute_script("arguments[0].focus()", buttons[0])
    buttons[0].send_keys(Keys.ENTER)
    first = buttons[0].find_element(By.CSS_SELECTOR, ".name").text
    assert [s["label"] for s in driver.execute_script(PLOT)["series"] if s["show"]] == [first]
    buttons[0].send_keys(Keys.SPACE)
    assert all(s["show"] for s in driver.execute_script(PLOT)["series"])
    assert console_errors(driver) == []


def test_every_range_draws_a_line_over_its_window(home: Any) -> None:
    driver = home
    chart = driver.find_element(By.CSS_SELECTOR, "[data-chart]")
    for name, span in RANGES.items():
        for unit in ("usd", "pct"):
            driver.find_element(By.CSS_SELECTOR, f"button[data-range='{name}']").click()
            driver.find_element(By.CSS_SELECTOR, f"button[data-unit='{unit}']").click()
            wait(
                driver,
                lambda d, n=name, u=unit: chart_loaded(d, f"{n}:{u}"),
                f"chart {name} {unit}",
            )
            plot = driver.execute_script(PLOT)
            start, end = (
                int(chart.get_attribute("data-start")),
                int(chart.get_attribute("data-end")),
            )
            assert (plot["min"], plot["max"]) == (start, end), name  # the window, not 2027..2029
            if span is not None:  # the span, or less when it reaches back before the data
                assert end - start == span or (end - start < span and start == plot["xs"][0])
            for series in plot["series"]:
                assert series["points"] >= 2, (name, series)  # a line, not a dot
            inside = [t for t in plot["xs"] if start <= t <= end]
            assert inside and plot["xs"][0] <= start  # the line enters from the left edge
            marks = [
                m.text for m in driver.find_elements(By.CSS_SELECTOR, ".chart-mark.break-even")
            ]
            # in dollars, a break-even per starting total: two cohorts of one agent, and of
            # three (the demo's replicated families)
            dollars = ["break-even $20,000", "break-even $60,000"]
            assert sorted(marks) == (["break-even 0%"] if unit == "pct" else dollars)
    driver.find_element(By.CSS_SELECTOR, "button[data-range='ALL']").click()
    wait(driver, lambda d: chart_loaded(d, "ALL:pct"), "chart ALL")
    decisions = [m.text for m in driver.find_elements(By.CSS_SELECTOR, ".chart-mark.decision")]
    assert decisions and all(re.match(r"^decision run \d{4}-\d\d-\d\d$", d) for d in decisions)
    assert console_errors(driver) == []


def test_the_countdown_to_the_next_decision_run_counts(home: Any) -> None:
    driver = home
    time = driver.find_element(By.CSS_SELECTOR, "time[data-countdown]")
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$", time.get_attribute("datetime"))
    assert time.text == time.get_attribute("datetime")[:16].replace("T", " ") + "Z"
    left = driver.find_element(By.CSS_SELECTOR, "[data-countdown-left]")
    assert re.match(r"^\(in (\d+d )?\d\d:\d\d:\d\d\)$", left.text), left.text
    seconds = int(left.get_attribute("data-seconds"))
    assert 0 < seconds <= 7 * 86400
    wait(
        driver, lambda d: int(left.get_attribute("data-seconds")) < seconds, "the countdown counts"
    )
    assert console_errors(driver) == []


def _toggle(driver: Any) -> Any:
    return driver.find_element(By.CSS_SELECTOR, "input[data-autorefresh]")


def test_auto_refresh_can_be_switched_off_and_is_off_under_reduced_motion(home: Any) -> None:
    driver = home
    root = "return document.documentElement.dataset"
    assert _toggle(driver).is_displayed() and not _toggle(driver).is_selected()  # stored: off
    assert driver.execute_script(root + ".autorefresh") == "off"
    driver.execute_script(f"localStorage.removeItem('{STORE}')")
    driver.refresh()
    assert _toggle(driver).is_selected()  # on by default
    assert driver.execute_script(root + ".autorefresh") == "on"
    # a refresh (made quick for the test) swaps in the page's tables and redraws the chart
    driver.execute_script("arguments[0].dataset.seconds = '1'", _toggle(driver))
    _toggle(driver).click()
    _toggle(driver).click()
    wait(driver, lambda d: d.execute_script(root + ".refreshed"), "a refresh")
    assert driver.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr")
    assert driver.execute_script(f"return localStorage.getItem('{STORE}')") == "on"
    _toggle(driver).click()  # off, and remembered
    assert driver.execute_script(root + ".autorefresh") == "off"
    driver.refresh()
    assert not _toggle(driver).is_selected()
    # under prefers-reduced-motion it starts off
    driver.execute_script(f"localStorage.removeItem('{STORE}')")
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]},
    )
    driver.refresh()
    assert driver.execute_script("return matchMedia('(prefers-reduced-motion: reduce)').matches")
    assert not _toggle(driver).is_selected()
    assert driver.execute_script(root + ".autorefresh") == "off"
    assert console_errors(driver) == []


@pytest.mark.parametrize("width", [320, 390])
def test_every_chart_label_stays_inside_the_chart_on_a_phone(
    browser: Any, base_url: str, width: int
) -> None:
    """No chart label leaves its chart and no chart widens the page on a phone. Two ways it
    did: the charts were at least 300 px wide (a 320 px phone scrolled sideways), and a
    decision-run label near the right end of the range started at its line and ran past the
    chart (seen on a four-week demo at 390 px); such a label now ends at its line, or is left
    out when that would cover the label before it."""
    driver = browser
    resize(driver, (width, 900))
    try:
        driver.get(base_url + "/")
        wait(driver, lambda d: chart_loaded(d, "ALL:usd"), "chart ALL")
        outside = driver.execute_script(
            """
            const out = [];
            for (const layer of document.querySelectorAll('.chart-marks')) {
              const edge = layer.getBoundingClientRect();
              for (const label of layer.querySelectorAll('.chart-mark')) {
                const r = label.getBoundingClientRect();
                if (r.left < edge.left - 1 || r.right > edge.right + 1) out.push(label.textContent);
              }
            }
            const e = document.documentElement;
            return [out, e.scrollWidth, e.clientWidth];"""
        )
        labels, scroll_width, client_width = outside
        assert labels == [] and scroll_width <= client_width, outside
    finally:
        resize(driver, DESKTOP)
