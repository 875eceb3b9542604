"""Issue 15, finding 5: the proxy ranks only what it can tell apart, on comparable questions."""

from __future__ import annotations

import numpy as np

from arena.analytics.report import AnalysisOptions, proxy_ranking
from tests.analytics.helpers import forecasts, row


def _week(week: int, rng: np.random.Generator) -> list[dict]:
    """Five hard questions (the crowd splits) and five easy ones (everyone near 0.95).

    ``weak`` answers only the easy ones and is always the furthest from the crowd there.
    """
    rows = []
    for q in range(5):
        centre = float(rng.uniform(0.35, 0.65))
        for family, offset in (("sharp", 0.02), ("steady", -0.08), ("loose", 0.15)):
            rows.append(row(family, f"hard{week}-{q}", centre + offset, week=week))
    for q in range(5):
        for family, p in (("sharp", 0.95), ("steady", 0.94), ("loose", 0.96), ("weak", 0.88)):
            rows.append(row(family, f"easy{week}-{q}", p, week=week))
    return rows


def test_a_family_gains_nothing_by_answering_only_easy_questions() -> None:
    rng = np.random.default_rng(4)
    rows = [r for week in range(3) for r in _week(week, rng)]
    report = proxy_ranking(forecasts(*rows), AnalysisOptions())
    ranked = [r["forecaster"] for r in report["rows"]]
    # weak is the furthest from the crowd on every question it answered: it ranks last, where
    # mean raw proxy scores (small on easy questions) had put it first
    assert ranked[-1] == "weak"
    weak = next(r for r in report["rows"] if r["forecaster"] == "weak")
    assert weak["mean_z"] > 1.0
    assert all(r["status"] == "ok" for r in report["rows"])


def test_two_voting_families_are_not_ranked() -> None:
    # with two voters every z is +1 or -1 whatever the gap (0.020971 against 0.021026 gave +-1)
    rows = [
        row(family, f"m{q}", p + 0.001 * q)
        for q in range(10)
        for family, p in (("a", 0.40), ("b", 0.41))
    ]
    report = proxy_ranking(forecasts(*rows), AnalysisOptions())
    assert [r["rank"] for r in report["rows"]] == [None, None]
    assert {r["status"] for r in report["rows"]} == {"insufficient"}


def test_a_single_question_is_not_a_ranking() -> None:
    rows = [row(family, "only", p) for family, p in (("a", 0.3), ("b", 0.5), ("c", 0.8))]
    report = proxy_ranking(forecasts(*rows), AnalysisOptions())
    assert all(r["rank"] is None for r in report["rows"])
    assert {w["status"] for w in report["weeks"]} == {"insufficient"}
