"""The trend rows by definition (methodology, "Where and when": Trend)."""

from __future__ import annotations

import numpy as np
import pytest

from arena.analytics import AnalysisOptions
from arena.analytics.options import prepare
from arena.analytics.trend_measures import WeekScores, trend_rows, v2_week_scores
from tests.analytics.helpers import WEEK0, forecasts, row

W0 = np.datetime64("2026-01-04T00:00:00", "us")
WEEK = np.timedelta64(7 * 86_400 * 1_000_000, "us")


def _lineage(family: str, week: int, model: str, prompt: str = "v2.0") -> dict:
    return {
        "family_id": family,
        "week_start": W0 + WEEK * week,
        "openrouter_id": model,
        "prompt_version": prompt,
        "methodology_version": "v1",
    }


def test_returns_rank_by_week_and_cumulatively_and_lineage_marks_changes() -> None:
    returns = {
        "a": {W0 + WEEK: 0.10, W0 + WEEK * 2: -0.05},
        "b": {W0 + WEEK: 0.02, W0 + WEEK * 2: 0.01},
    }
    brier = {("a", W0): [0.1, 0.3], ("b", W0 + WEEK): [0.2]}
    lineage = [
        _lineage("a", 0, "m/a"),
        _lineage("a", 1, "m/a-2"),
        _lineage("b", 0, "m/b"),
        _lineage("b", 1, "m/b"),
    ]
    rows = {
        (r["family_id"], int((r["week_start"] - W0) // WEEK)): r
        for r in trend_rows(returns, brier, {}, lineage)
    }
    assert rows[("a", 0)]["rank_week"] == 1 and rows[("b", 0)]["rank_week"] == 2
    assert rows[("a", 1)]["rank_week"] == 2 and rows[("b", 1)]["rank_week"] == 1
    # cumulative: a 1.10 * 0.95 = 1.045, b 1.02 * 1.01 = 1.0302
    assert rows[("a", 1)]["rank_cumulative"] == 1 and rows[("b", 1)]["rank_cumulative"] == 2
    assert rows[("a", 0)]["brier"] == pytest.approx(0.2)
    assert rows[("a", 1)]["lineage_changed"] and not rows[("b", 1)]["lineage_changed"]
    assert rows[("a", 1)]["lineage"] == ["openrouter_id: m/a -> m/a-2"]
    assert rows[("a", 0)]["rank_by"] == "return"


def test_v2_scores_rank_by_adjusted_score_lower_is_better() -> None:
    scores = {
        ("a", W0): WeekScores(0.30, 0.01, 2.0, 2.0),
        ("b", W0): WeekScores(0.50, -0.04, 2.0, 1.0),
    }
    rows = {r["family_id"]: r for r in trend_rows({}, {}, scores, [])}
    assert rows["a"]["adjusted"] == pytest.approx(0.15) and rows["a"]["rank_week"] == 1
    assert rows["b"]["alpha"] == pytest.approx(-0.04) and rows["b"]["rank_by"] == "adjusted"


def test_v2_week_scores_group_cells_by_question_week() -> None:
    data = []
    for week in range(2):
        for k in range(6):
            outcome = float(k % 2)
            for family, p in (("sharp", 0.9 if outcome else 0.1), ("dull", 0.5)):
                data.append(
                    {
                        **row(family, f"m{week}{k}", p, week=week, resolved=outcome),
                        "market_probability": 0.6,
                    }
                )
    options = AnalysisOptions(bootstrap_resamples=10)
    found = v2_week_scores(prepare(forecasts(*data), options), options)
    week0 = np.datetime64(WEEK0.replace(tzinfo=None), "us")
    sharp, dull = found[("sharp", week0)], found[("dull", week0)]
    assert sharp.weight == pytest.approx(6.0) and dull.weight == pytest.approx(6.0)
    assert sharp.adjusted_sum / sharp.weight < dull.adjusted_sum / dull.weight
    assert sharp.alpha_sum / sharp.alpha_weight > 0
    assert len(found) == 4
