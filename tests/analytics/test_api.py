"""The public Python API of ``arena.analytics``: pinned names, lazy loading, DataFrames, at."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

import arena.analytics as api
from tests.analytics.helpers import WEEK0, row
from tests.analytics.test_cli_analyze import _write_export

PUBLIC = [
    "AnalysisOptions",
    "BootstrapInterval",
    "Calibration",
    "Forecasts",
    "ForecastsError",
    "SignTest",
    "TInterval",
    "against_market",
    "breakdown",
    "calibrate",
    "calibration_report",
    "difference",
    "full_analysis",
    "head_to_head",
    "power",
    "proxy_ranking",
    "ranking",
    "read_export",
    "replicates",
    "risk",
    "sign_test",
    "trend",
    "weighted_bootstrap_interval",
    "weighted_t_interval",
]


def test_all_is_pinned_and_every_name_resolves() -> None:
    assert api.__all__ == PUBLIC
    for name in PUBLIC:
        assert getattr(api, name) is not None
    with pytest.raises(AttributeError):
        api.nonexistent  # noqa: B018


def test_importing_the_package_loads_no_numpy() -> None:
    code = "import sys, arena.analytics; print('numpy' in sys.modules, 'scipy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["False", "False"], result.stderr


def test_the_readme_example_works(tmp_path: Path) -> None:
    forecasts = api.read_export(_write_export(tmp_path))
    at = WEEK0 + timedelta(weeks=10)
    board = api.ranking(forecasts, at=at)
    assert board["as_of"].startswith(str(at.date()))
    duel = api.head_to_head(forecasts, "alpha", "gamma", api.AnalysisOptions(seed=3), at=at)
    assert duel["resampling"]["seed"] == 3 and duel["n_questions"] == 12
    assert api.proxy_ranking(forecasts, at=at)["kind"] == "proxy"
    assert api.calibration_report(forecasts, at=at)["rows"]
    assert api.difference(forecasts, "alpha", "beta", at=at)["n_questions"] == 12
    assert set(api.full_analysis(forecasts, at=at)) >= {"ranking", "proxy", "calibration"}


class _Frame:
    """The part of a pandas DataFrame the API uses (pandas is not a dependency)."""

    def __init__(self, rows: list[dict]) -> None:
        self.columns = list(rows[0])
        self._rows = rows

    def __getitem__(self, name: str) -> list:
        return [r[name] for r in self._rows]


def test_a_dataframe_is_accepted_like_forecasts() -> None:
    rows = [
        {**row(f, f"m{q}", p, resolved=float(q % 2)), "market_probability": 0.5}
        for q in range(12)
        for f, p in (("a", 0.6), ("b", 0.4))
    ]
    from_frame = api.ranking(_Frame(rows), api.AnalysisOptions(bootstrap_resamples=50))
    from_rows = api.ranking(
        api.Forecasts.from_rows(rows), api.AnalysisOptions(bootstrap_resamples=50)
    )
    assert from_frame == from_rows
    with pytest.raises(TypeError, match="forecasts"):
        api.ranking(42)


def test_a_real_pandas_dataframe_with_unresolved_rows_is_accepted() -> None:
    """pandas turns a missing timestamp into NaT and a missing number into NaN; both are
    missing values, as None is in rows."""
    pd = pytest.importorskip("pandas")
    rows = [
        {**row(f, f"m{q}", p, resolved=float(q % 2) if q < 12 else None), "market_probability": 0.5}
        for q in range(16)
        for f, p in (("a", 0.6), ("b", 0.4))
    ]
    frame = pd.DataFrame(rows)
    assert frame["resolved_at"].isna().any()  # NaT, as pandas builds it
    options = api.AnalysisOptions(bootstrap_resamples=50)
    at = WEEK0 + timedelta(weeks=2)
    assert api.ranking(frame, options, at=at) == api.ranking(
        api.Forecasts.from_rows(rows), options, at=at
    )
    assert api.full_analysis(frame, options, at=at) == api.full_analysis(
        api.Forecasts.from_rows(rows), options, at=at
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [({"probability": 1.5}, "row 2: probability"), ({"probability": float("nan")}, "row 2")],
)
def test_every_analysis_refuses_a_probability_outside_the_unit_interval(
    bad: dict, message: str
) -> None:
    rows = [row("a", "m1", 0.6, resolved=1.0), {**row("b", "m1", 0.4, resolved=1.0), **bad}]
    for analysis in (api.ranking, api.proxy_ranking, api.calibration_report, api.full_analysis):
        with pytest.raises(ValueError, match=message):
            analysis(_Frame(rows))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": 0.0}, "confidence"),
        ({"bootstrap_resamples": 0}, "resamples"),
        ({"min_clusters": 1}, "min_clusters"),
        ({"proxy_min_voters": 1}, "proxy_min_voters"),
    ],
)
def test_analysis_options_are_checked(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        api.AnalysisOptions(**options)
