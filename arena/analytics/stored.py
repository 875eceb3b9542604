"""The stored v2 analysis: computed by the daemon after a write, read by the dashboard, so no
request ever waits on a recomputation.

:func:`refresh_analysis` (the ``analysis`` job) reads the forecasts (:func:`stored_forecasts`),
and when they (or the options) changed since the stored result, or that result is older than
:data:`MAX_AGE` (questions become scorable and forecasters leave their provisional period with
time alone), computes :func:`arena.analytics.report.full_analysis` as of ``now`` and replaces
the stored row of ``analysis_results`` named :data:`V2`. Its whole dict is stored, whatever
parts it has, as JSON text. Nothing to rank yet (no panel forecast) is stored as ``null``. It
also keeps the snapshots' stored columns current, so risk reads them without reading every row.

The daemon runs it as the ``analysis`` job every ``schedule.analysis_minutes`` and right after
each decision run and settlement (:meth:`arena.runtime.Runtime.run_job`); it is a job of its
own, so its failure is recorded on its ``job_runs`` row and retried at the next slot, never the
failure of the job before it, and the previous result stays served meanwhile.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from arena import __version__
from arena.clock import iso_utc
from arena.config import Settings
from arena.errors import ForecastsError
from arena.jsonable import jsonable
from arena.store.db import transaction
from arena.store.models import AnalysisResult

if TYPE_CHECKING:  # numpy, pyarrow and scipy load when an analysis is read or computed
    from arena.analytics.options import AnalysisOptions
    from arena.analytics.records import Forecasts

log = logging.getLogger(__name__)

V2 = "v2"
"""The name of the stored methodology v2 analysis."""
MAX_AGE = timedelta(hours=1)
"""A stored result older than this is computed again even when the data did not change."""


@dataclass
class AnalysisReport:
    """One run of the analysis job: whether it computed (and in how long) or found the stored
    result current."""

    computed: bool
    data_version: str
    forecasts: int
    seconds: float = 0.0
    as_of: datetime | None = None

    def counts(self) -> dict[str, Any]:
        return {
            "computed": self.computed,
            "forecasts": self.forecasts,
            "seconds": round(self.seconds, 3),
        }

    def failure(self) -> str | None:
        return None

    def summary(self) -> str:
        return self.describe()

    def describe(self) -> str:
        if not self.computed:
            return f"analysis current ({self.forecasts} forecasts unchanged)"
        at = iso_utc(self.as_of) if self.as_of else "?"
        return f"analysis of {self.forecasts} forecasts as of {at} in {self.seconds:.1f} s"


def refresh_analysis(
    factory: sessionmaker[Session], settings: Settings, now: datetime
) -> AnalysisReport:
    """Compute and store the v2 analysis as of ``now`` unless the stored one is current; keep
    the stored forecast columns (:mod:`arena.export.forecast_columns`) and snapshot columns
    (:mod:`arena.analytics.snapshot_columns`, which risk reads) up to date."""
    from arena.analytics.records import Forecasts
    from arena.analytics.report import configured_options
    from arena.analytics.snapshot_columns import store_snapshot_rows
    from arena.export.forecast_columns import read_forecast_columns

    options = configured_options(settings, as_of=now)
    with transaction(factory) as session:
        read = read_forecast_columns(session, store_at=now)
        stored = session.execute(
            select(AnalysisResult.data_version, AnalysisResult.as_of).where(
                AnalysisResult.name == V2
            )
        ).one_or_none()
    with transaction(factory) as session:  # a transaction of its own: each holds locks briefly
        store_snapshot_rows(session, now)
    settings_used = [options.bootstrap_resamples, options.seed, options.market_weight]
    # a new release analyses anew; an unknown data version (read row by row) always
    known = read.version is not None
    version = _digest([__version__, *settings_used, read.version])
    forecasts = Forecasts.from_arrow(read.columns)
    del read
    if known and stored is not None and stored[0] == version and now - stored[1] < MAX_AGE:
        return AnalysisReport(False, version, len(forecasts))
    result = analyse(forecasts, options, now)
    with transaction(factory) as session:
        session.execute(delete(AnalysisResult).where(AnalysisResult.name == V2))
        session.add(
            AnalysisResult(
                name=V2,
                data_version=version,
                as_of=result.as_of,
                computed_at=result.computed_at,
                seconds=result.seconds,
                resamples=result.resamples,
                seed=result.seed,
                body=json.dumps(result.body),
            )
        )
    report = AnalysisReport(True, version, len(forecasts), result.seconds, now)
    log.info("%s", report.describe())
    return report


def stored_forecasts(session: Session) -> Forecasts:
    """The stored forecasts as the analyses take them: the export's ``forecasts`` table
    (:func:`arena.export.forecast_columns.forecast_columns`, which reads only what changed since
    the analysis job stored them), so equal to ``arena analyze`` on an export."""
    from arena.analytics.records import Forecasts
    from arena.export.forecast_columns import forecast_columns

    return Forecasts.from_arrow(forecast_columns(session))


@dataclass(frozen=True)
class StoredAnalysis:
    """The latest stored analysis: its body (the
    :func:`arena.analytics.report.full_analysis` dict; None when there
    was nothing to rank), the instant it is as of, when it was computed and in how long."""

    body: dict[str, Any] | None
    as_of: datetime
    computed_at: datetime
    seconds: float
    resamples: int
    seed: int

    def meta(self) -> dict[str, Any]:
        """What a page shows beside a stored result."""
        return {
            "as_of": iso_utc(self.as_of),
            "computed_at": iso_utc(self.computed_at),
            "resamples": self.resamples,
        }


def latest_analysis(session: Session, name: str = V2) -> StoredAnalysis | None:
    """The stored analysis named ``name``, or None when none is stored yet."""
    row = session.get(AnalysisResult, name)
    if row is None:
        return None
    return StoredAnalysis(
        json.loads(row.body), row.as_of, row.computed_at, row.seconds, row.resamples, row.seed
    )


def _digest(values: list[Any]) -> str:
    return hashlib.sha256(json.dumps(values).encode()).hexdigest()


def analyse(forecasts: Forecasts, options: AnalysisOptions, as_of: datetime) -> StoredAnalysis:
    """The full analysis of ``forecasts`` as of ``as_of``, as it is stored (timed)."""
    from arena.analytics.options import with_at

    start = time.perf_counter()
    body = compute_v2(forecasts, with_at(options, as_of))
    return StoredAnalysis(
        body,
        as_of,
        datetime.now(UTC),
        time.perf_counter() - start,
        options.bootstrap_resamples,
        options.seed,
    )


def compute_v2(forecasts: Forecasts, options: AnalysisOptions) -> dict[str, Any] | None:
    """The full analysis, JSON-ready; None when there is nothing to rank yet."""
    from arena.analytics.report import full_analysis

    if not len(forecasts):
        return None
    try:
        return jsonable(full_analysis(forecasts, options))
    except ForecastsError as exc:  # e.g. no panel forecast at as_of
        log.info("v2 analysis: %s", exc)
        return None
