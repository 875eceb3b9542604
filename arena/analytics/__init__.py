"""Research statistics over forecasts: the Python API behind ``arena analyze``.

A researcher's session::

    from arena.analytics import AnalysisOptions, read_export, ranking, head_to_head

    forecasts = read_export(Path("export"))          # or a pandas DataFrame of its columns
    board = ranking(forecasts, at=datetime(2026, 11, 22, tzinfo=UTC))
    duel = head_to_head(forecasts, "gpt-5.1", "grok-4", AnalysisOptions(bootstrap_resamples=2000))
    curve = risk(Path("export"), by="agent", value="mark")  # the export's snapshots

Every analysis function takes the forecasts (:class:`Forecasts` or a DataFrame), optional
:class:`AnalysisOptions` and an ``at`` instant, sees only what was known at ``at``, and returns
a plain JSON-serialisable dict. The interval functions check their input and raise
:class:`ValueError` naming the argument and row. Names load lazily, so importing this package
costs nothing until one is used (``arena.cli`` stays fast).

Two words here are not synonyms of the rest of the code's: a *forecaster* is the unit being
scored, a family (``by="family"``, the default) or an agent (``by="agent"``); a *question* is one
market outcome in one week, ``(market_id, outcome, week_start)``, so one market is several
questions (see :mod:`arena.analytics.questions`). Where a name always means a family or a
market, it says family or market.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.analytics.calibration import Calibration, calibrate
    from arena.analytics.groups import breakdown
    from arena.analytics.loading import read_export
    from arena.analytics.options import AnalysisOptions
    from arena.analytics.records import Forecasts
    from arena.analytics.report import (
        against_market,
        calibration_report,
        difference,
        full_analysis,
        head_to_head,
        power,
        proxy_ranking,
        ranking,
        replicates,
    )
    from arena.analytics.risk_report import risk
    from arena.analytics.significance import (
        BootstrapInterval,
        SignTest,
        TInterval,
        sign_test,
        weighted_bootstrap_interval,
        weighted_t_interval,
    )
    from arena.analytics.trend_report import trend
    from arena.errors import ForecastsError

_HOMES = {
    "AnalysisOptions": "arena.analytics.options",
    "BootstrapInterval": "arena.analytics.significance",
    "Calibration": "arena.analytics.calibration",
    "Forecasts": "arena.analytics.records",
    "ForecastsError": "arena.errors",
    "SignTest": "arena.analytics.significance",
    "TInterval": "arena.analytics.significance",
    "against_market": "arena.analytics.report",
    "breakdown": "arena.analytics.groups",
    "calibrate": "arena.analytics.calibration",
    "calibration_report": "arena.analytics.report",
    "difference": "arena.analytics.report",
    "full_analysis": "arena.analytics.report",
    "head_to_head": "arena.analytics.report",
    "power": "arena.analytics.report",
    "proxy_ranking": "arena.analytics.report",
    "ranking": "arena.analytics.report",
    "read_export": "arena.analytics.loading",
    "replicates": "arena.analytics.report",
    "risk": "arena.analytics.risk_report",
    "sign_test": "arena.analytics.significance",
    "trend": "arena.analytics.trend_report",
    "weighted_bootstrap_interval": "arena.analytics.significance",
    "weighted_t_interval": "arena.analytics.significance",
}

__all__ = [
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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'arena.analytics' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
