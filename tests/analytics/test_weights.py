"""Question weights: event groups log2(N+1)/(N+1), repeats 1/k (seed 001)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.analytics.questions import index_questions
from arena.analytics.weights import (
    group_sizes,
    group_weight,
    question_weights,
    repeat_index,
    repeat_weight,
)
from tests.analytics.helpers import forecasts, row


def test_group_weights_match_the_seed() -> None:
    # seed 001: a group of 3 weighs 0.5 each (1.5 in all), of 2 about 0.53 each
    assert group_weight(3) == pytest.approx(0.5)
    assert group_weight(2) == pytest.approx(math.log2(3) / 3) == pytest.approx(0.528, abs=1e-3)
    # 6 related questions count 2.4 in all, 64 count "roughly six"
    assert 6 * group_weight(6) == pytest.approx(2.4, abs=0.01)
    assert 64 * group_weight(64) == pytest.approx(5.93, abs=0.01)
    assert group_weight(1) == 1.0  # a lone question is an independent question


@given(st.integers(min_value=1, max_value=10_000))
def test_group_weight_properties(n: int) -> None:
    each = float(group_weight(n))
    assert 0.0 < each <= 1.0
    # a bigger group never counts less in total, and never more than its size
    assert n * each <= n
    assert (n + 1) * float(group_weight(n + 1)) >= n * each - 1e-12


@given(st.integers(min_value=1, max_value=1000))
def test_repeat_weights(k: int) -> None:
    assert float(repeat_weight(k)) == pytest.approx(1.0 / k)


def test_question_weights_combine_groups_and_repeats() -> None:
    data = forecasts(
        # week 0: a negRisk event of three markets, a lone binary market, and a
        # multi-outcome market with two outcomes forecast
        row("a", "m1", 0.2, group="ev"),
        row("b", "m1", 0.3, group="ev"),
        row("a", "m2", 0.5, group="ev"),
        row("a", "m3", 0.3, group="ev"),
        row("a", "solo", 0.6),
        {**row("a", "multi", 0.6), "outcome": "Red"},
        {**row("a", "multi", 0.4), "outcome": "Blue"},
        # week 1: m1 and solo asked again, m1 now alone in its group that week
        row("a", "m1", 0.25, group="ev", week=1),
        row("a", "solo", 0.6, week=1),
        # week 2: solo a third time
        row("b", "solo", 0.7, week=2),
    )
    questions = index_questions(data)
    labels = [questions.label(i) for i in range(len(questions))]
    sizes = dict(zip(labels, group_sizes(questions), strict=True))
    repeats = dict(zip(labels, repeat_index(questions), strict=True))
    weights = dict(zip(labels, question_weights(questions), strict=True))
    assert sizes["m1@2025-01-05"] == 3
    assert sizes["m2@2025-01-05"] == 3
    assert sizes["solo@2025-01-05"] == 1
    assert sizes["multi:Red@2025-01-05"] == 2
    assert sizes["m1@2025-01-12"] == 1
    assert repeats["solo@2025-01-05"] == 1
    assert repeats["solo@2025-01-12"] == 2
    assert repeats["solo@2025-01-19"] == 3
    assert weights["m1@2025-01-05"] == pytest.approx(0.5)
    assert weights["m1@2025-01-12"] == pytest.approx(0.5)  # alone that week, second asking
    assert weights["solo@2025-01-19"] == pytest.approx(1 / 3)
    assert weights["multi:Blue@2025-01-05"] == pytest.approx(math.log2(3) / 3)
    only_groups = question_weights(questions, repeats=False)
    assert np.all(only_groups <= 1.0)
    assert np.all(question_weights(questions, groups=False, repeats=False) == 1.0)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["m1", "m2", "m3", "m4"]),
            st.integers(min_value=0, max_value=3),
            st.sampled_from(["ev1", "ev2", None]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_weights_do_not_depend_on_row_order(entries: list[tuple[str, int, str | None]]) -> None:
    # one group per market, so a market's group does not vary between rows
    groups = {"m1": "ev1", "m2": "ev1", "m3": "ev2", "m4": None}
    rows = [row("a", m, 0.5, week=w, group=groups[m]) for m, w, _ in entries]
    one = index_questions(forecasts(*rows))
    two = index_questions(forecasts(*reversed(rows)))
    w1 = dict(zip([one.label(i) for i in range(len(one))], question_weights(one), strict=True))
    w2 = dict(zip([two.label(i) for i in range(len(two))], question_weights(two), strict=True))
    assert w1.keys() == w2.keys()
    for key, value in w1.items():
        assert value == pytest.approx(w2[key])
        assert 0.0 < value <= 1.0
