"""Risk and return of the portfolio curve against empyrical-reloaded and by definition
(methodology, "Risk and return of the portfolio")."""

from __future__ import annotations

import json
import math

import empyrical
import numpy as np
import pytest

from arena.analytics.risk_measures import (
    Curve,
    Drawdown,
    Snapshots,
    annualised_return,
    block_resamples,
    calmar,
    drawdown,
    index_drawdown,
    risk_figures,
    risk_rows,
    sharpe,
    sortino,
    weekly_returns,
)

START = np.datetime64("2026-01-04T00:00:00", "us")  # a Sunday
TEN_MINUTES = np.timedelta64(10 * 60 * 1_000_000, "us")
WEEK = np.timedelta64(7 * 86_400 * 1_000_000, "us")


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("periods", [52, 52 * 7 * 144])  # weekly, and the 10-minute series
def test_ratios_agree_with_empyrical(seed: int, periods: int) -> None:
    """empyrical with its annualisation set to the series' periods per year. arena annualises
    weekly returns by sqrt(52): on the 10-minute series only the periods differ, so both are
    compared at the same annualisation. Calmar: empyrical's annual return is the compound
    growth (as arena's) and its drawdown is that of the compounded returns (as arena's
    index_drawdown); arena's own Calmar uses the 10-minute curve's drawdown, compared below."""
    returns = np.random.default_rng(seed).normal(0.002, 0.03, 200)
    scale = math.sqrt(periods / 52)
    assert float(sharpe(returns)) * scale == pytest.approx(
        empyrical.sharpe_ratio(returns, annualization=periods), abs=1e-10
    )
    assert float(sortino(returns)) * scale == pytest.approx(
        empyrical.sortino_ratio(returns, annualization=periods), abs=1e-10
    )
    assert float(index_drawdown(returns)) == pytest.approx(
        -empyrical.max_drawdown(returns), abs=1e-10
    )
    if periods == 52:
        assert float(annualised_return(returns)) == pytest.approx(
            empyrical.annual_return(returns, annualization=52), abs=1e-10
        )
        assert float(calmar(returns, index_drawdown(returns))) == pytest.approx(
            empyrical.calmar_ratio(returns, annualization=52), abs=1e-10
        )


def test_curve_drawdown_agrees_with_empyrical_on_the_ten_minute_returns() -> None:
    rng = np.random.default_rng(4)
    values = 10_000 * np.cumprod(1 + rng.normal(0, 0.002, 3_000))
    times = np.arange(len(values), dtype=np.int64) * 600_000_000
    found = drawdown(times, values)
    steps = values[1:] / values[:-1] - 1
    assert found.fraction == pytest.approx(-empyrical.max_drawdown(steps), abs=1e-10)


def test_drawdown_duration_runs_from_peak_to_recovery_or_to_the_end() -> None:
    hour = 3_600_000_000
    times = np.arange(6, dtype=np.int64) * hour
    recovered = drawdown(times, np.array([100.0, 120, 90, 100, 125, 110]))
    assert recovered.fraction == pytest.approx(0.25) and recovered.dollars == pytest.approx(30)
    assert recovered.hours == pytest.approx(3.0) and recovered.recovered
    open_ = drawdown(times[:4], np.array([100.0, 120, 90, 100]))
    assert open_.hours == pytest.approx(2.0) and not open_.recovered


def test_weekly_returns_take_the_last_point_at_or_before_each_week_end() -> None:
    times = np.array([START + TEN_MINUTES, START + WEEK - TEN_MINUTES, START + WEEK * 2])
    curve = Curve(times, np.array([10_000.0, 11_000, 9_900]), START, 10_000.0)
    ends, returns = weekly_returns(curve, START + WEEK * 2 + TEN_MINUTES)
    assert list(ends) == [START + WEEK, START + WEEK * 2]
    assert returns == pytest.approx([0.1, -0.1])


def test_block_bootstrap_matches_a_brute_force_loop() -> None:
    returns = np.random.default_rng(5).normal(0, 0.02, 27)
    drawn = block_resamples(returns, 200, seed=9)
    block = math.ceil(27 ** (1 / 3))  # 3
    blocks = math.ceil(27 / block)
    rng = np.random.default_rng(9)
    starts = rng.integers(0, 27 - block + 1, size=(200, blocks))
    for row, first in zip(drawn, starts, strict=True):
        expected = []
        for start in first:
            expected.extend(returns[start : start + block])
        assert np.array_equal(row, np.array(expected[:27]))


def _json_safe(figures: dict) -> None:
    json.dumps(figures, allow_nan=False)  # raises on NaN or infinity


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ([10_000.0], "complete weeks"),  # one snapshot
        ([10_000.0] * 10, None),  # a flat curve: ratios insufficient, no NaN
        ([9_000.0, 5_000, 0.0, 0.0, 0, 0, 0, 0, 0, 0], "reached 0"),
    ],
)
def test_degenerate_curves_give_insufficient_never_nan(values: list[float], reason: str) -> None:
    times = START + WEEK * np.arange(1, len(values) + 1) - TEN_MINUTES
    curve = Curve(times, np.array(values), START, 10_000.0)
    _ends, returns = weekly_returns(curve, START + WEEK * len(values))
    stamps = np.r_[START, times].astype(np.int64)
    figures = risk_figures(
        returns, drawdown(stamps, np.r_[10_000.0, values]), resamples=200, seed=0
    )
    _json_safe(figures)
    assert figures["sharpe"] == "insufficient" and figures["sortino"] == "insufficient"
    if reason is not None:
        assert reason in figures["insufficient_reason"]


def test_risk_rows_per_agent_and_family() -> None:
    rng = np.random.default_rng(6)
    agent_ids, family_ids, taken, value = [], [], [], []
    for agent, family in (("a1", "f"), ("a2", "f"), ("b1", "g")):
        level = 10_000.0
        for step in range(12 * 7 * 24):  # 12 weeks of hourly points
            level *= 1 + rng.normal(0.0002, 0.004)
            agent_ids.append(agent)
            family_ids.append(family)
            taken.append(START + np.timedelta64(step * 3_600_000_000 + 1, "us"))
            value.append(level)
    n = len(value)
    snapshots = Snapshots(
        np.array(agent_ids, dtype=object),
        np.array(family_ids, dtype=object),
        np.full(n, START),
        np.full(n, 10_000.0),
        np.array(taken, dtype="datetime64[us]"),
        np.array(value),
    )
    as_of = START + WEEK * 12
    agents = {r["forecaster"]: r for r in risk_rows(snapshots, as_of, by="agent", resamples=100)}
    families = {r["forecaster"]: r for r in risk_rows(snapshots, as_of, resamples=100)}
    assert agents["a1"]["weeks"] == 12 and families["f"]["agents"] == 2
    for row in (*agents.values(), *families.values()):
        _json_safe(row)
        assert isinstance(row["sharpe"], dict)
    # a family of one agent has that agent's weekly returns and ratios
    assert families["g"]["sharpe"]["estimate"] == pytest.approx(agents["b1"]["sharpe"]["estimate"])


def test_series_of_mixed_lengths_come_back_in_their_order_with_their_own_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The agents' figures are computed in order of length (to share the drawn weeks) and on
    threads; each comes back in its place, equal to computing it alone."""
    from arena.analytics import risk_measures

    rng = np.random.default_rng(11)
    series = [
        (rng.normal(0.002, 0.03, weeks), Drawdown(0.1, 1_000.0, 5.0, False))
        for weeks in (30, 9, 30, 17, 9, 44, 17)
    ]
    alone = [risk_figures(r, d, resamples=300, seed=4) for r, d in series]
    for workers in (1, 3):
        monkeypatch.setattr(risk_measures, "WORKERS", workers)
        assert risk_measures._each_series(series, 300, 4) == alone


def test_the_bootstraps_sharpe_and_sortino_equal_numpys_own_formulas() -> None:
    """The bootstrap takes each row's mean once for both ratios; the figures are those of
    ``np.std(ddof=1)`` and the downside deviation written out, row by row."""
    returns = np.random.default_rng(12).normal(0.001, 0.02, 40)
    drawn = block_resamples(returns, 500, seed=3)
    rows = np.array(drawn)  # each resample contiguous, as a reader would hold it
    expected_sharpe = rows.mean(axis=1) / rows.std(axis=1, ddof=1) * math.sqrt(52)
    downside = np.sqrt(np.mean(np.minimum(rows, 0.0) ** 2, axis=1))
    np.testing.assert_allclose(sharpe(drawn), expected_sharpe, rtol=1e-12, atol=0)
    np.testing.assert_allclose(
        sortino(drawn), rows.mean(axis=1) / downside * math.sqrt(52), rtol=1e-12, atol=0
    )
    growth = np.prod(1.0 + rows, axis=1)
    np.testing.assert_allclose(
        annualised_return(drawn), growth ** (52 / 40) - 1.0, rtol=1e-12, atol=0
    )
