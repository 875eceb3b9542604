"""What every analysis shares: its options, its input as of an instant, and JSON cleaning.

:func:`prepare` is the single door to the data: it cuts the forecasts to what was known at
``as_of`` (:meth:`~arena.analytics.records.Forecasts.known_at`) *before* anything is counted,
so question weights (group sizes, repeat counts), dependence clusters, the scorable set and the
proxy's open questions all come from that data alone. An analysis at T on the full data equals
the same analysis on the data cut at T.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.proxy import MIN_VOTERS, MIN_WEEK_QUESTIONS
from arena.analytics.questions import (
    Panel,
    Questions,
    build_panel,
    default_as_of,
    index_questions,
    scorable,
)
from arena.analytics.records import Forecasts, to_datetime64
from arena.analytics.significance import (
    INSUFFICIENT,
    OK,
    BootstrapInterval,
    TInterval,
    check_confidence,
    check_resamples,
    weighted_bootstrap_interval,
    weighted_t_interval,
)
from arena.analytics.weights import cluster_labels, question_weights
from arena.clock import iso_utc
from arena.errors import ForecastsError

if TYPE_CHECKING:
    from arena.config import Settings

DEFAULT_RESAMPLES = 10_000  # the configured default (config key analysis.resamples)
MIN_CLUSTERS = 5  # independent clusters an interval needs (head-to-head, ranking, difference)
MIN_COMMON_QUESTIONS = 10  # common scored questions a head-to-head needs


@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analysis; defaults follow the methodology (see each module).

    ``bootstrap_resamples`` and ``seed`` are stated in every report that resamples.
    ``fit_exclude`` (forecaster ids, family or agent as ``by``) are scored and ranked but left
    out of the difficulty fit; ``fit_by_type`` fits each ``question_type`` on its own
    (:func:`arena.analytics.difficulty.difficulty_adjusted`).
    """

    as_of: datetime | None = None
    by: str = "family"
    sources: tuple[str, ...] = ("panel",)
    market_weight: float = 1.0
    fit_exclude: tuple[str, ...] = ()
    fit_by_type: bool = False
    group_weights: bool = True
    repeat_weights: bool = True
    min_days: float = 50.0
    min_questions: int = 30
    confidence: float = 0.95
    bootstrap_resamples: int = DEFAULT_RESAMPLES
    seed: int = 0
    n_bins: int = 10
    h2h_score: str = "log"
    proxy_include_baselines: bool = False
    proxy_include_resolved: bool = False
    min_clusters: int = MIN_CLUSTERS
    min_common_questions: int = MIN_COMMON_QUESTIONS
    proxy_min_voters: int = MIN_VOTERS
    proxy_min_week_questions: int = MIN_WEEK_QUESTIONS

    def __post_init__(self) -> None:
        check_confidence(self.confidence)
        check_resamples(self.bootstrap_resamples)
        if self.by not in ("family", "agent"):
            raise ValueError(f"by: {self.by!r} is not family or agent")
        if self.h2h_score not in ("log", "brier"):
            raise ValueError(f"h2h_score: {self.h2h_score!r} is not log or brier")
        if isinstance(self.fit_exclude, str):
            raise ValueError(f"fit_exclude: {self.fit_exclude!r} is not a list of forecaster ids")
        object.__setattr__(self, "fit_exclude", tuple(self.fit_exclude))
        if not 0.0 <= self.market_weight <= 1.0:
            raise ValueError(f"market_weight: {self.market_weight!r} is not in [0, 1]")
        for name, least in (
            ("min_clusters", 2),
            ("min_common_questions", 1),
            ("proxy_min_voters", 2),
            ("proxy_min_week_questions", 1),
        ):
            if getattr(self, name) < least:
                raise ValueError(f"{name}: {getattr(self, name)} must be at least {least}")

    def to_dict(self) -> dict[str, Any]:
        """The options as recorded in every report."""
        return clean(asdict(self))

    def resampling(self) -> dict[str, Any]:
        """The resample count and seed, as every report that bootstraps states them."""
        return {"resamples": self.bootstrap_resamples, "seed": self.seed}


def configured_options(
    settings: Settings,
    *,
    bootstrap_resamples: int | None = None,
    seed: int | None = None,
    market_weight: float | None = None,
    **choices: Any,
) -> AnalysisOptions:
    """The options of an entry point (``arena analyze``, the dashboard): ``choices`` over the
    methodology's defaults; the resample count and seed from the config's ``analysis`` section
    and the market's weight in question difficulty from ``v2.difficulty_weight`` unless given,
    so every entry point resamples and weighs alike."""
    analysis = settings.analysis
    if bootstrap_resamples is None:
        bootstrap_resamples = analysis.resamples
    return AnalysisOptions(
        bootstrap_resamples=bootstrap_resamples,
        seed=analysis.seed if seed is None else seed,
        market_weight=settings.v2.difficulty_weight if market_weight is None else market_weight,
        **choices,
    )


@dataclass(frozen=True, eq=False)
class Prepared:
    """Questions, panel, weights, clusters and the scorable mask shared by every analysis."""

    forecasts: Forecasts
    questions: Questions
    panel: Panel
    weights: NDArray[np.float64]
    clusters: NDArray[np.object_]
    scorable: NDArray[np.bool_]
    as_of: np.datetime64


def as_forecasts(data: Any) -> Forecasts:
    """:class:`Forecasts` as is; a pandas DataFrame (or any mapping of columns) converted."""
    if isinstance(data, Forecasts):
        return data
    columns = getattr(data, "columns", None)
    if columns is not None:
        return Forecasts.from_columns({str(name): list(data[name]) for name in columns})
    if isinstance(data, dict):
        return Forecasts.from_columns(data)
    raise TypeError(f"forecasts: expected Forecasts or a DataFrame, got {type(data).__name__}")


def with_at(options: AnalysisOptions | None, at: datetime | None) -> AnalysisOptions:
    """``options`` (default ones if None) with ``as_of`` set to ``at`` when given."""
    options = options or AnalysisOptions()
    return options if at is None else replace(options, as_of=at)


def prepare(forecasts: Any, options: AnalysisOptions) -> Prepared:
    """Cut the data to ``as_of``, index questions, build the panel, weigh and cluster them."""
    data = as_forecasts(forecasts).from_sources(options.sources)
    if len(data) == 0:
        raise ForecastsError(f"no forecasts to analyse (sources: {', '.join(options.sources)})")
    as_of = to_datetime64(options.as_of) if options.as_of else default_as_of(data)
    data = data.known_at(as_of)
    if len(data) == 0:
        raise ForecastsError(f"no forecasts made at or before {as_of}")
    questions = index_questions(data)
    panel = build_panel(data, questions, by=options.by)
    weights = question_weights(
        questions, groups=options.group_weights, repeats=options.repeat_weights
    )
    return Prepared(
        data,
        questions,
        panel,
        weights,
        cluster_labels(questions),
        scorable(questions, as_of),
        as_of,
    )


def cluster_t(
    values: NDArray[np.float64],
    weights: NDArray[np.float64],
    clusters: NDArray[np.object_],
    options: AnalysisOptions,
) -> tuple[TInterval, str, str | None]:
    """The cluster-robust t interval, and whether the sample meets the minimum."""
    t = weighted_t_interval(values, weights, options.confidence, clusters=clusters)
    if t.status != OK:
        return t, INSUFFICIENT, t.reason
    if t.n_clusters < options.min_clusters:
        return t, INSUFFICIENT, f"fewer than {options.min_clusters} independent clusters"
    return t, OK, None


def cluster_intervals(
    values: NDArray[np.float64],
    weights: NDArray[np.float64],
    clusters: NDArray[np.object_],
    options: AnalysisOptions,
) -> tuple[TInterval, BootstrapInterval, str, str | None]:
    """Cluster-robust t and cluster bootstrap, and whether the sample meets the minimum."""
    t, status, reason = cluster_t(values, weights, clusters, options)
    boot = weighted_bootstrap_interval(
        values,
        weights,
        confidence=options.confidence,
        resamples=options.bootstrap_resamples,
        seed=options.seed,
        clusters=clusters,
    )
    return t, boot, status, reason


def interval_object(
    intervals: tuple[TInterval, BootstrapInterval, str, str | None],
) -> dict[str, Any] | str:
    """An interval as JSON shows it (interface.md): ``{"estimate", "low", "high"}`` from the
    cluster-robust t, with the cluster bootstrap's bounds, the p-value of "the mean is 0" and
    the clusters beside them; the string ``"insufficient"`` below the minimum sample
    (``intervals`` is what :func:`cluster_intervals` returns)."""
    t, boot, status, _reason = intervals
    if status != OK:
        return INSUFFICIENT
    return {
        "estimate": t.mean,
        "low": t.low,
        "high": t.high,
        "bootstrap_low": boot.low,
        "bootstrap_high": boot.high,
        "p_value": t.p_value,
        "n_clusters": t.n_clusters,
    }


def slices(labels: NDArray[np.int64], n: int) -> list[NDArray[np.int64]]:
    """For each label 0..n-1, the positions holding it (one sort instead of n scans)."""
    order = np.argsort(labels, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(labels, minlength=n))]
    return [order[bounds[i] : bounds[i + 1]] for i in range(n)]


def is_nan(value: Any) -> bool:
    """None or a float NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def sort_value(value: Any) -> float:
    """A sortable float (missing values sort as 0; pair with :func:`is_nan` first)."""
    return 0.0 if is_nan(value) else float(value)


def clean(value: Any) -> Any:
    """Numpy scalars to Python, NaN/inf to None, datetimes to ISO strings, recursively."""
    if isinstance(value, dict):
        return {key: clean(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clean(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime):
        return iso_utc(value)
    return value
