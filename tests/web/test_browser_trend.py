"""The trend charts in headless Chromium, over an arena where a model's OpenRouter id changes
between cohorts: the family page's chart labels the change where the table marks it, ``/``
draws every family's rank over weeks, at the desktop and the phone width, with no console
error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.store.db import make_engine, session_factory, upgrade
from tests.analytics.trend_world import CHANGED, build_trend_arena
from tests.helpers import write_config
from tests.web.browsing import DESKTOP, PHONE, resize, serve, wait


@pytest.fixture(scope="module")
def trend_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory: Path = tmp_path_factory.mktemp("trend-browser")
    url = f"sqlite:///{directory / 'arena.db'}"
    engine = make_engine(url)
    upgrade(engine)
    build_trend_arena(session_factory(engine))
    engine.dispose()
    yield from serve(write_config(directory / "config.yaml", url, methodology="v2"))


def _drawn(driver: Any, kind: str) -> bool:
    return bool(
        driver.execute_script(
            f"var b = document.querySelector('[data-trend-chart=\"{kind}\"]');"
            "return b && b.dataset.loaded === '1' && !!b.querySelector('canvas');"
        )
    )


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_trend_charts_label_the_lineage_change(
    browser: Any, trend_url: str, size: tuple[int, int], shots: Path
) -> None:
    family, week, change = CHANGED
    driver = browser
    resize(driver, size)
    try:
        driver.get(f"{trend_url}/families/{family}")
        wait(driver, lambda d: _drawn(d, "family"), "trend chart")
        labels = driver.execute_script(
            "return Array.from(document.querySelectorAll('.chart-mark.lineage'))"
            ".map(function (m) { return m.title; });"
        )
        assert labels == [f"lineage changed {week[:10]}: {change}"]
        driver.save_screenshot(str(shots / f"trend-family-{size[0]}.png"))
        driver.get(trend_url + "/")
        wait(driver, lambda d: _drawn(d, "ranks"), "rank chart")
        series = driver.execute_script(
            "return document.querySelectorAll('[data-trend-chart=\"ranks\"] .u-legend .u-series')"
            ".length;"
        )
        assert series == 1 + 3  # the time and three families
        driver.save_screenshot(str(shots / f"trend-ranks-{size[0]}.png"))
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        resize(driver, DESKTOP)
