"""The ranking's estimator choices: the fit sample, fitting per question type, and questions
left without a difficulty (dropped and counted)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from arena.analytics.questions import index_questions
from arena.analytics.render import ranking_table
from arena.analytics.report import AnalysisOptions, ranking
from arena.errors import ForecastsError
from tests.analytics.helpers import forecasts, row

PLAIN = {"group_weights": False, "repeat_weights": False, "bootstrap_resamples": 50}


def _p(family: str, q: int) -> float:
    """A spread of probabilities that differs by forecaster and question."""
    return round(0.05 + 0.9 * ((q * 7 + len(family) * 3 + ord(family[0])) % 17) / 16, 3)


def _rows(families: dict[str, range], **extra: Any) -> list[dict[str, Any]]:
    return [
        {**row(f, f"m{q}", _p(f, q), week=q // 4, resolved=float(q % 2)), **extra}
        for f, questions in families.items()
        for q in questions
    ]


def _scores(report: dict[str, Any]) -> dict[str, Any]:
    return {r["forecaster"]: r["adjusted_brier"] for r in report["rows"] if not r["reference"]}


def test_left_out_forecasters_are_scored_against_the_others_fit() -> None:
    members = {"alpha": range(12), "beta": range(0, 12, 2), "gamma": range(1, 12)}
    rows = _rows(members)
    base = _rows({"base": range(3, 12)})
    without = ranking(forecasts(*rows), AnalysisOptions(**PLAIN))
    left_out = ranking(forecasts(*rows, *base), AnalysisOptions(fit_exclude=("base",), **PLAIN))
    fitted = ranking(forecasts(*rows, *base), AnalysisOptions(**PLAIN))
    # the fit on the others' cells is the fit without "base": their scores do not move
    for name, score in _scores(without).items():
        assert _scores(left_out)[name] == pytest.approx(score, abs=1e-12)
    # in the fit, "base" moves the difficulties (alpha, on every question, keeps its Brier)
    for name in ("beta", "gamma"):
        assert _scores(fitted)[name] != pytest.approx(_scores(without)[name], abs=1e-6)
    base_row = next(r for r in left_out["rows"] if r["forecaster"] == "base")
    assert base_row["rank"] is not None and base_row["n_questions"] == 9
    assert left_out["options"]["fit_exclude"] == ["base"]
    assert left_out["dropped_questions"] == 0 and left_out["dropped_reason"] is None


def test_questions_answered_only_outside_the_fit_are_dropped_and_counted() -> None:
    rows = _rows({"alpha": range(10), "beta": range(10)})
    solo = _rows({"base": range(8, 12)})  # m10 and m11: nobody in the fit, no price
    data = forecasts(*rows, *solo)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = ranking(data, AnalysisOptions(fit_exclude=("base",), **PLAIN))
    assert report["dropped_questions"] == 2
    assert "fit_exclude" in report["dropped_reason"]
    assert report["n_scored_questions"] == 10
    base_row = next(r for r in report["rows"] if r["forecaster"] == "base")
    assert base_row["n_questions"] == 2  # m8 and m9 only
    console = Console(width=80, record=True)
    console.print(ranking_table(report))
    assert "2 questions dropped: answered only by forecasters left out" in " ".join(
        console.export_text().split()
    )
    # with a price, market weight 1 sets their difficulty: nothing dropped
    priced = forecasts(*rows, *({**r, "market_probability": 0.4} for r in solo))
    report = ranking(priced, AnalysisOptions(fit_exclude=("base",), **PLAIN))
    assert report["dropped_questions"] == 0
    assert next(r for r in report["rows"] if r["forecaster"] == "base")["n_questions"] == 4


def test_nothing_left_is_insufficient_without_a_warning() -> None:
    data = forecasts(*_rows({"alpha": range(12), "beta": range(12)}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = ranking(data, AnalysisOptions(fit_exclude=("alpha", "beta"), **PLAIN))
    assert report["dropped_questions"] == 12
    assert report["n_scored_questions"] == 0
    assert report["shift"] is None
    for r in report["rows"]:
        assert r["status"] == "insufficient" and r["rank"] is None
        assert r["adjusted_brier"] is None and r["n_questions"] == 0


def test_an_unknown_left_out_forecaster_is_an_error_naming_the_known() -> None:
    data = forecasts(*_rows({"alpha": range(6), "beta": range(6)}))
    with pytest.raises(ForecastsError, match=r"'nobody'; known: alpha, beta"):
        ranking(data, AnalysisOptions(fit_exclude=("nobody",), **PLAIN))


def test_a_question_takes_the_first_type_its_rows_carry() -> None:
    data = forecasts(
        {**row("a", "m0", 0.5), "question_type": None},
        {**row("b", "m0", 0.5), "question_type": "numeric"},
        row("a", "m1", 0.5),
    )
    assert index_questions(data).question_type.tolist() == ["numeric", None]


def test_fit_by_type_fits_each_type_on_its_own() -> None:
    """alpha and delta answer both types, beta only X and gamma only Y: each type's grid is
    complete, so its least-squares difficulties are the question means of its own forecasters;
    one fit over both types (alpha - delta seen in both) gives other ones."""
    rows = _rows({"alpha": range(12), "beta": range(6), "gamma": range(6, 12), "delta": range(12)})
    kinds = ["X" if int(r["market_id"][1:]) < 6 else "Y" for r in rows]
    typed = [{**r, "question_type": k} for r, k in zip(rows, kinds, strict=True)]
    typed[0]["question_type"] = None  # alpha's m0: the question takes beta's "X"
    names = ["alpha", "beta", "gamma", "delta"]
    brier = np.zeros((4, 12))
    for r in rows:
        i = names.index(r["family_id"])
        q = int(r["market_id"][1:])
        brier[i, q] = (r["probability"] - r["resolved_value"]) ** 2
    answered = np.zeros((4, 12), dtype=bool)
    answered[0] = answered[1, :6] = answered[2, 6:] = answered[3] = True
    gamma = np.array([brier[answered[:, q], q].mean() for q in range(12)])
    expected = {
        name: np.mean(brier[i, answered[i]] - gamma[answered[i]]) + gamma.mean()
        for i, name in enumerate(names)
    }
    by_type = ranking(forecasts(*typed), AnalysisOptions(fit_by_type=True, **PLAIN))
    one_fit = ranking(forecasts(*typed), AnalysisOptions(**PLAIN))
    for name, score in expected.items():
        assert _scores(by_type)[name] == pytest.approx(score, abs=1e-12)
    for name in ("beta", "gamma"):  # alpha and delta, on every question, keep their Brier
        assert _scores(one_fit)[name] != pytest.approx(expected[name], abs=1e-6)
    assert by_type["n_components"] == 2 and one_fit["n_components"] == 1
    assert by_type["options"]["fit_by_type"] is True
