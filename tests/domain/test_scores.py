"""Scores: Brier, skill, bands (with their edges), P/L, marks, and the streaming tally's tests
against scipy on the same data."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from arena.domain.scores import (
    ScoreTally,
    brier,
    brier_band,
    pnl,
    return_band,
    return_pct,
    skill_score,
    t_test,
)

D = Decimal


@pytest.mark.parametrize(
    ("forecast", "won", "expected"),
    [
        ("0.80", True, "0.04"),  # the seed's examples
        ("0.80", False, "0.64"),
        ("0.02", True, "0.9604"),  # a small winning $50 bet reads as 2% confident
        ("1", True, "0"),
        ("0.5", False, "0.25"),
    ],
)
def test_brier(forecast: str, won: bool, expected: str) -> None:
    assert brier(D(forecast), won) == D(expected)


def test_skill_score() -> None:
    assert skill_score(D("0.15"), D("0.25")) == D("0.4")  # the seed's example
    assert skill_score(D("0.25"), D("0.25")) == 0
    assert skill_score(D("0.30"), D("0.25")) < 0
    assert skill_score(D("0.1"), D(0)) is None


@pytest.mark.parametrize(
    ("score", "band"),
    [
        ("0", "excellent"),
        ("0.10", "excellent"),
        ("0.1000001", "good"),
        ("0.20", "good"),
        ("0.2000001", "fair"),
        ("0.25", "fair"),
        ("0.2500001", "poor"),
        ("0.40", "poor"),
        ("0.4000001", "very poor"),
        ("1", "very poor"),
    ],
)
def test_brier_bands(score: str, band: str) -> None:
    assert brier_band(D(score)) == band


@pytest.mark.parametrize(
    ("value", "band"),
    [
        ("50.01", "exceptional"),
        ("50", "excellent"),
        ("20", "excellent"),
        ("19.99", "good"),
        ("5", "good"),
        ("4.99", "neutral"),
        ("0", "neutral"),
        ("-4.99", "neutral"),
        ("-5", "poor"),
        ("-20", "poor"),
        ("-20.01", "very poor"),
        ("-100", "very poor"),
    ],
)
def test_return_bands(value: str, band: str) -> None:
    assert return_band(D(value)) == band


def test_pnl_and_return() -> None:
    assert pnl(D("10700.00"), D(10000)) == D("700.00")  # the seed's portfolio example
    assert return_pct(D("700.00"), D(10000)) == D(7)
    assert return_pct(D(1), D(0)) is None


scores = st.decimals(min_value=0, max_value=1, places=6)
bets = st.lists(st.tuples(scores, scores, st.booleans()), min_size=0, max_size=40)


@given(bets, st.integers(min_value=0, max_value=40))
def test_tally_merge_equals_one_pass(rows: list[tuple[Decimal, Decimal, bool]], cut: int) -> None:
    whole, left, right = ScoreTally(), ScoreTally(), ScoreTally()
    for index, (b, m, won) in enumerate(rows):
        whole.add(b, m, won)
        (left if index < cut else right).add(b, m, won)
    left.merge(right)
    assert left == whole
    summary = whole.summary()
    assert summary.scored_bets == len(rows)
    if rows:
        assert summary.brier == sum((b for b, _, _ in rows), D(0)) / len(rows)
        assert summary.win_rate == D(sum(won for _, _, won in rows)) / len(rows)
        assert summary.losses == len(rows) - summary.wins
    else:
        assert summary.brier is None
        assert summary.win_rate is None


def test_tally_tests_agree_with_scipy() -> None:
    briers = [D("0.04"), D("0.64"), D("0.09"), D("0.16"), D("0.01"), D("0.36")]
    markets = [D("0.16"), D("0.49"), D("0.25"), D("0.09"), D("0.04"), D("0.25")]
    tally = ScoreTally()
    for b, m in zip(briers, markets, strict=True):
        tally.add(b, m, won=b < D("0.25"))
    summary = tally.summary()
    floats = [float(b) for b in briers]
    one_sample = stats.ttest_1samp(floats, 0.25)
    paired = stats.ttest_rel(floats, [float(m) for m in markets])
    assert summary.p_vs_uniform == pytest.approx(one_sample.pvalue, rel=1e-9)
    assert summary.p_vs_market == pytest.approx(paired.pvalue, rel=1e-9)
    assert summary.bss_uniform == 1 - summary.brier / D("0.25")  # type: ignore[operator]
    assert summary.bss_market == 1 - summary.brier / summary.market_brier  # type: ignore[operator]


def test_t_test_needs_two_values_and_some_variance() -> None:
    assert t_test(1, D("0.3"), D("0.09")) is None
    assert t_test(3, D("0.6"), D("0.12")) is None  # three equal values: no variance
    result = t_test(2, D("0.3"), D("0.05"))
    assert result is not None
    assert result.df == 1
