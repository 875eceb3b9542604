"""Skill against the market, rank probabilities and weeks to separate, by their definitions
(methodology, "Skill against the market" and "How sure the ordering is"); the comparisons with
outside libraries are in the test_outside_* files."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest

from arena.analytics import AnalysisOptions, against_market, power, ranking
from arena.analytics.ordering import rank_probabilities, weeks_to_separate
from arena.errors import ForecastsError
from tests.analytics.helpers import forecasts, row

OPTIONS = AnalysisOptions(bootstrap_resamples=300, seed=5)


def _rows(n_weeks: int = 4, per_week: int = 12, seed: int = 3) -> list[dict]:
    """A sharp forecaster, a market copier and a noisy one on the same questions."""
    rng = np.random.default_rng(seed)
    rows = []
    for week in range(n_weeks):
        for k in range(per_week):
            m = float(rng.uniform(0.1, 0.9))
            o = float(rng.random() < m)
            market = f"m{week}-{k}"
            for family, p in (
                ("sharp", 0.8 * o + 0.2 * m),
                ("copier", m),
                ("noisy", float(np.clip(m + rng.normal(0, 0.25), 0.02, 0.98))),
            ):
                rows.append(
                    {
                        **row(family, market, p, week=week, resolved=o),
                        "market_probability": m,
                        "pricing": "book",
                        "fee_rate": 0.04,
                        "fee_exponent": 1.0,
                    }
                )
    return rows


def _by_name(report: dict) -> dict[str, dict]:
    return {r["forecaster"]: r for r in report["rows"]}


def test_alpha_is_positive_for_the_sharp_forecaster_and_the_copier_follows() -> None:
    rows = _by_name(against_market(forecasts(*_rows()), OPTIONS))
    sharp, copier, noisy = rows["sharp"], rows["copier"], rows["noisy"]
    assert sharp["alpha_brier"]["low"] > 0 and sharp["alpha_log"]["low"] > 0
    assert noisy["alpha_brier"]["estimate"] < 0
    assert copier["follows_market"] and copier["copy_correlation"] == pytest.approx(1.0)
    assert copier["copy_distance"] == 0.0
    # zero variance gives "insufficient", never an interval that looks certain
    assert copier["alpha_brier"] == "insufficient"
    assert not sharp["follows_market"] and not noisy["follows_market"]
    assert sharp["questions"] == 48 and sharp["markets"] == 48


def test_alpha_by_hand_on_three_questions() -> None:
    data = [
        {**row("a", "x", 0.9, resolved=1.0), "market_probability": 0.6},
        {**row("a", "y", 0.2, resolved=0.0), "market_probability": 0.5},
        {**row("a", "z", 0.7, resolved=0.0), "market_probability": 0.4},
    ]
    options = AnalysisOptions(bootstrap_resamples=50, min_clusters=2)
    found = _by_name(against_market(forecasts(*data), options))["a"]
    d = [(0.6 - 1) ** 2 - (0.9 - 1) ** 2, 0.5**2 - 0.2**2, 0.4**2 - 0.7**2]
    assert found["alpha_brier"]["estimate"] == pytest.approx(np.mean(d), abs=1e-15)
    logs = [math.log(0.9) - math.log(0.6), math.log(0.8) - math.log(0.5)]
    logs.append(math.log(0.3) - math.log(0.6))
    assert found["alpha_log"]["estimate"] == pytest.approx(np.mean(logs), abs=1e-15)
    # p > m buys the event at m; p < m buys the other side at 1 - m
    returns = [1 / 0.6 - 1, 1 / 0.5 - 1, 0 / 0.4 - 1]
    assert found["return_per_dollar"]["estimate"] == pytest.approx(np.mean(returns), abs=1e-15)


def test_the_fee_lowers_the_return_and_gamma_pays_none() -> None:
    book = _by_name(against_market(forecasts(*_rows()), OPTIONS))["sharp"]
    before = book["return_per_dollar"]["estimate"]
    assert book["return_per_dollar_after_fee"]["estimate"] < before
    gamma_rows = [{**r, "pricing": "gamma"} for r in _rows()]
    gamma = _by_name(against_market(forecasts(*gamma_rows), OPTIONS))["sharp"]
    assert gamma["return_per_dollar_after_fee"]["estimate"] == pytest.approx(before, abs=1e-15)


def test_a_book_forecast_without_a_fee_schedule_is_counted_not_charged_nothing() -> None:
    rows = [{**r, "fee_rate": None} if r["market_id"] == "m0-0" else r for r in _rows()]
    found = _by_name(against_market(forecasts(*rows), OPTIONS))
    assert found["sharp"]["fee_unknown"] == 1
    complete = _by_name(against_market(forecasts(*_rows()), OPTIONS))
    assert complete["sharp"]["fee_unknown"] == 0


def test_a_price_of_zero_where_a_return_is_needed_names_the_forecast() -> None:
    rows = _rows(n_weeks=1)
    rows[0] = {**rows[0], "market_probability": 0.0, "forecast_id": "f-17", "probability": 0.3}
    with pytest.raises(ForecastsError, match="forecast f-17: market_probability is 0"):
        against_market(forecasts(*rows), OPTIONS)


def test_one_cluster_gives_insufficient() -> None:
    rows = [{**r, "event_group": "one"} for r in _rows(n_weeks=1)]
    found = _by_name(against_market(forecasts(*rows), OPTIONS))
    assert found["sharp"]["alpha_brier"] == "insufficient"
    assert found["sharp"]["return_per_dollar"] == "insufficient"


def test_rank_probabilities_agree_with_the_bootstrap_intervals() -> None:
    report = ranking(forecasts(*_rows()), OPTIONS)
    rows = _by_name(report)
    sharp = rows["sharp"]
    assert sharp["rank"] == 1 and sharp["p_rank_1"] == 1.0 and sharp["p_top_3"] == 1.0
    assert (sharp["rank_low"], sharp["rank_high"]) == (1, 1)
    assert rows["(market)"]["p_rank_1"] is None
    total = sum(r["p_rank_1"] for r in report["rows"] if r["p_rank_1"] is not None)
    assert total >= 1.0  # ties share the better rank
    assert "same cluster-bootstrap resamples" in report["rank_sample"]


def test_rank_probabilities_share_ties_and_put_missing_last() -> None:
    means = np.array([[0.1, 0.1, 0.3], [0.2, 0.1, np.nan], [0.3, 0.2, 0.1]])
    found = rank_probabilities(means)
    assert [f["p_rank_1"] for f in found] == pytest.approx([1 / 3, 2 / 3, 1 / 3])
    assert found[2]["rank_high"] == 3  # not drawn in resample 2: ranked last


def test_weeks_to_separate_follows_the_formula() -> None:
    found = weeks_to_separate(0.02, 0.015, 10, separated=False)
    expected = 10 * ((1.959963984540054 + 0.8416212335729143) * 0.015 / 0.02) ** 2
    assert found["more_weeks"] == math.ceil(expected - 10)
    assert weeks_to_separate(0.02, 0.015, 10, separated=True)["more_weeks"] == 0
    far = weeks_to_separate(0.0001, 0.05, 10, separated=False)
    assert far["more_weeks"] is None and far["verdict"] == "not separable at this gap"
    assert weeks_to_separate(0.0, 0.05, 10, separated=False)["more_weeks"] is None


def test_power_states_its_assumptions_and_pairs_the_ranking() -> None:
    data = forecasts(*_rows())
    report = power(data, OPTIONS)
    assert "same panel size" in report["assumptions"]
    order = [r["forecaster"] for r in ranking(data, OPTIONS)["rows"] if r["rank"] is not None]
    order = [name for name in order if name != "(market)"]
    assert [(r["a"], r["b"]) for r in report["rows"]] == list(pairwise(order))
    first = report["rows"][0]
    assert first["weeks_seen"] == 4 and first["separated"] and first["more_weeks"] == 0
