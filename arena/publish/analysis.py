"""``leaderboard.json`` and ``analysis/report.json`` of a published dataset.

* ``leaderboard.json``: exactly what ``arena leaderboard --format json`` prints
  (:func:`arena.analytics.leaderboard.standings`), read in the snapshot the tables come from.
* ``analysis/report.json``: what ``arena analyze report --format json`` prints (ranking, proxy
  ranking, skill against the market, weeks to separate, calibration:
  :func:`arena.analytics.report.full_analysis`) over the published
  ``forecasts`` table, with the config's resample count and seed, as of the latest time in the
  data (the latest forecast or resolution: the analytics' own default for an export), never
  the time of publishing; so the same database gives the same bytes. With no forecast (a
  methodology v1 arena) it holds a ``note`` saying so.

Cost: the analysis bootstraps ``analysis.resamples`` times over every forecast; numpy holds
the ``forecasts`` table in memory (a few hundred bytes a row).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.config import Settings
from arena.errors import ForecastsError
from arena.export.forecast_columns import forecast_columns
from arena.publish.dataset import Part
from arena.publish.layout import LEADERBOARD, REPORT
from arena.store.models import Forecast


def leaderboard_part(settings: Settings) -> Part:
    """The part writing ``leaderboard.json``."""
    from arena.analytics.leaderboard import standings, to_json

    def write(session: Session, staged: Path) -> list[str]:
        board = standings(session, min_scored_bets=settings.benchmark.min_scored_bets)
        # typer.echo(json.dumps(...)) in `arena leaderboard --format json`: the same text.
        (staged / LEADERBOARD).write_text(
            json.dumps(to_json(board), indent=2) + "\n", encoding="utf-8"
        )
        return [LEADERBOARD]

    return write


def analysis_report(session: Session, settings: Settings) -> dict[str, Any]:
    """The full analysis of the stored forecasts, or a note when there is nothing to analyse."""
    if not session.scalar(select(func.count(Forecast.id))):  # scipy loads only when needed
        return {"note": "no forecasts stored yet (methodology v2 records them)"}
    from arena.analytics.records import Forecasts
    from arena.analytics.report import configured_options, full_analysis

    forecasts = Forecasts.from_arrow(forecast_columns(session))
    try:
        return full_analysis(forecasts, configured_options(settings))
    except ForecastsError as exc:  # e.g. no panel forecast: nothing to rank
        return {"note": str(exc)}


def analysis_part(settings: Settings) -> Part:
    """The part writing ``analysis/report.json``."""

    def write(session: Session, staged: Path) -> list[str]:
        report = analysis_report(session, settings)
        (staged / REPORT).parent.mkdir(parents=True, exist_ok=True)
        (staged / REPORT).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        return [REPORT]

    return write
