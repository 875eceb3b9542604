"""Bad input to issue 24's measures: a probability or price that is not a number in [0, 1] is
refused with the row named; a price of 0 or 1 is clipped where a log needs it and refused
where a return needs it; zero variance, one cluster and too few weeks give "insufficient",
never a number that looks certain."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from arena.analytics.report import AnalysisOptions, against_market, power
from arena.errors import ForecastsError
from tests.analytics.helpers import forecasts, row

OPTIONS = AnalysisOptions(bootstrap_resamples=50, min_questions=1)


def _priced(family: str, q: int, p: float, m: float, resolved: float, **extra: Any) -> dict:
    return {**row(family, f"m{q}", p, resolved=resolved, **extra), "market_probability": m}


def _panel(n: int = 24, weeks: int = 4, seed: int = 2) -> list[dict]:
    """Three forecasters on ``n`` questions over ``weeks`` weeks, every question priced."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n):
        truth = float(rng.random() < 0.5)
        m = float(np.clip(0.5 + (truth - 0.5) * 0.4 + rng.normal(0, 0.15), 0.05, 0.95))
        for family, noise in (("a", 0.05), ("b", 0.25), ("c", 0.15)):
            p = float(np.clip(0.5 + (truth - 0.5) * 0.6 + rng.normal(0, noise), 0.02, 0.98))
            rows.append(_priced(family, q, p, m, truth, week=q % weeks))
    return rows


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("probability", math.nan, "probability is missing or outside [0, 1]"),
        ("probability", math.inf, "probability is missing or outside [0, 1]"),
        ("probability", 1.2, "probability is missing or outside [0, 1]"),
        ("market_probability", math.inf, "market_probability is outside [0, 1]"),
        ("market_probability", -0.1, "market_probability is outside [0, 1]"),
    ],
)
def test_a_value_that_is_not_a_probability_is_refused_with_its_row(
    column: str, value: float, message: str
) -> None:
    rows = _panel()
    rows[7] = {**rows[7], column: value}
    with pytest.raises(ForecastsError, match="^row 8: " + re.escape(message)):
        against_market(forecasts(*rows), OPTIONS)


@pytest.mark.parametrize("price", [0.0, 1.0])
def test_a_price_of_0_or_1_is_refused_where_a_return_needs_it(price: float) -> None:
    rows = _panel()
    rows[4] = {**rows[4], "market_probability": price, "probability": 0.5}
    with pytest.raises(ForecastsError, match=rf"^row 5: market_probability is {price:g}; a ret"):
        against_market(forecasts(*rows), OPTIONS)


@pytest.mark.parametrize("price", [0.0, 1.0])
def test_a_price_of_0_or_1_is_clipped_where_only_a_log_needs_it(price: float) -> None:
    """A forecast equal to its price makes no bet, so nothing needs a return there; the log
    alpha clips both to [0.001, 0.999] (methodology) and stays finite."""
    rows = _panel()
    rows[4] = {**rows[4], "market_probability": price, "probability": price}
    report = against_market(forecasts(*rows), OPTIONS)
    alpha = next(r for r in report["rows"] if r["forecaster"] == rows[4]["family_id"])
    assert isinstance(alpha["alpha_log"], dict) and math.isfinite(alpha["alpha_log"]["estimate"])


def test_a_copier_without_variance_is_insufficient_not_certain() -> None:
    """A forecaster that forecasts exactly the price has d = 0 on every question: no spread,
    so its alpha is "insufficient", never 0 with a zero-width interval or p = 0."""
    rows = [r for r in _panel() if r["family_id"] == "a"]
    rows += [{**r, "family_id": "copier", "probability": r["market_probability"]} for r in rows]
    report = against_market(forecasts(*rows), OPTIONS)
    copier = next(r for r in report["rows"] if r["forecaster"] == "copier")
    assert copier["alpha_brier"] == "insufficient" and copier["alpha_log"] == "insufficient"
    assert copier["return_per_dollar"] == "insufficient"  # no bet at all
    assert copier["follows_market"] and copier["copy_distance"] == 0.0


def test_one_cluster_gives_insufficient_alpha() -> None:
    rows = [{**r, "event_group": "one"} for r in _panel()]
    report = against_market(forecasts(*rows), OPTIONS)
    for r in report["rows"]:
        assert r["clusters"] == 1
        assert r["alpha_brier"] == "insufficient" and r["alpha_log"] == "insufficient"


def test_a_copy_index_needs_three_questions_and_spread() -> None:
    rows = [r for r in _panel() if r["family_id"] == "a"][:2]
    flat = [{**r, "family_id": "flat", "probability": 0.5} for r in _panel()[:9]]
    report = against_market(forecasts(*rows, *flat), OPTIONS)
    by = {r["forecaster"]: r for r in report["rows"]}
    assert by["a"]["copy_correlation"] == "insufficient" and not by["a"]["follows_market"]
    assert by["flat"]["copy_correlation"] == "insufficient" and not by["flat"]["follows_market"]


def test_weeks_to_separate_from_a_single_week_is_insufficient() -> None:
    """One week seen says nothing about how the difference's variance falls with weeks: the
    pair gets "insufficient", not a number of weeks extrapolated from one."""
    rows = _panel(n=40, weeks=1)
    report = power(forecasts(*rows), OPTIONS)
    assert report["rows"], "the ranking has neighbours"
    assert any(not r["separated"] for r in report["rows"])
    for r in report["rows"]:
        assert r["weeks_seen"] == 1
        if not r["separated"]:  # a separated pair is separated whatever the weeks
            assert r["verdict"] == "insufficient" and r["more_weeks"] is None
    two = power(forecasts(*_panel(n=40, weeks=2)), OPTIONS)
    assert all(r["verdict"] != "insufficient" for r in two["rows"])
