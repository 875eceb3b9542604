"""The ranking's interval bounds stay in a Brier score's range, [0, 1]."""

from __future__ import annotations

import pytest

from arena.analytics.report import brier_bound


@pytest.mark.parametrize(
    ("bound", "score", "kept"),
    [
        (-0.093, 0.002, 0.0),  # a symmetric interval near 0 reaches below it
        (0.098, 0.002, 0.098),
        (1.2, 0.9, 1.0),
        (-0.2, -0.05, -0.05),  # an adjusted score below 0 keeps itself inside its interval
        (1.3, 1.1, 1.1),
    ],
)
def test_interval_bounds_are_clipped_to_the_range_of_a_brier_score(
    bound: float, score: float, kept: float
) -> None:
    assert brier_bound(bound, score) == pytest.approx(kept)
