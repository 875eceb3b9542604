"""Risk and return of a portfolio curve (methodology, "Risk and return of the portfolio").

An agent's *curve* is its 10-minute snapshots' value (``total_value`` at the mark; in pricing
mode ``book`` also ``exit_value``, the cash plus what selling every position into the bids would
bring), starting at its starting balance at its cohort's start.

* **Weekly returns** ``r_w = V_w / V_{w-1} - 1``, ``V_w`` the last point at or before the end of
  week ``w`` (the cohort's start plus ``w`` weeks; only weeks ended by ``as_of`` count) and
  ``V_0`` the starting balance. A family's weekly return is the mean of its agents' returns of
  that calendar week.
* **Sharpe** ``mean(r) / sd(r) * sqrt(52)`` (sd with ddof 1, risk-free rate 0); **Sortino**
  ``mean(r) / sqrt(mean(min(r, 0)^2)) * sqrt(52)``; both annualised by ``sqrt(52)``.
* **Maximum drawdown**: the largest fall from a running peak of the curve, as a fraction of the
  peak (the ``%`` figure is that times 100), with its size in dollars; its duration runs from
  the peak to the first point back at the peak, or to the last point when it has not
  recovered. A family has no 10-minute curve of its own: its drawdown is that of its weekly
  index ``prod(1 + r_w)`` (weekly resolution), in dollars of its agents' mean starting
  balance.
* **Annualised return** ``(V_W / V_0)^(52 / W) - 1`` (compound), and **Calmar** = annualised
  return / maximum drawdown (as a fraction).
* **Intervals**: a moving-block bootstrap over the weekly returns, block length
  ``ceil(W^(1/3))``: each resample concatenates blocks of consecutive weeks, starting at
  ``numpy.random.default_rng(seed).integers(0, W - b + 1, size=(resamples, ceil(W / b)))``,
  and keeps the first ``W`` returns; each statistic's interval is the 2.5 and 97.5 percentiles
  of its resampled values (a resampled drawdown is that of the resampled weekly index). Below
  :data:`MIN_WEEKS` weeks, or where a ratio has no defined value (no spread, no losing week, no
  drawdown, a curve that reached 0), a figure is ``"insufficient"`` with the reason, never NaN
  or infinity.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.significance import INSUFFICIENT

MIN_WEEKS = 8
PERIODS_PER_YEAR = 52
WEEK_US = 7 * 86_400 * 1_000_000
HOUR_US = 3_600 * 1_000_000
ANNUALISATION = "weekly returns, annualised by sqrt(52) (ratios) and ^(52/W) (return)"


@dataclass(frozen=True, eq=False)
class Curve:
    """One agent's value over time: ``times`` (``datetime64[us]``, ascending) and ``values``,
    with its cohort's ``start`` and its ``balance`` at the start."""

    times: NDArray[np.datetime64]
    values: NDArray[np.float64]
    start: np.datetime64
    balance: float


@dataclass(frozen=True)
class Drawdown:
    """The largest fall of a curve from a running peak."""

    fraction: float  # of the peak, in [0, 1]
    dollars: float
    hours: float
    recovered: bool


def weekly_returns(curve: Curve, as_of: np.datetime64) -> tuple[NDArray[np.datetime64], Any]:
    """The ends of the curve's complete weeks by ``as_of`` and the weekly returns (NaN after
    the curve reached 0)."""
    start = curve.start.astype("datetime64[us]").astype(np.int64)
    last = as_of.astype("datetime64[us]").astype(np.int64)
    n_weeks = max(0, int((last - start) // WEEK_US))
    ends = start + WEEK_US * np.arange(1, n_weeks + 1, dtype=np.int64)
    stamps = curve.times.astype("datetime64[us]").astype(np.int64)
    at = np.searchsorted(stamps, ends, side="right") - 1
    values = np.where(at >= 0, curve.values[np.maximum(at, 0)], curve.balance)
    levels = np.r_[curve.balance, values]
    with np.errstate(invalid="ignore", divide="ignore"):
        returns = np.where(levels[:-1] > 0, levels[1:] / levels[:-1] - 1.0, np.nan)
    return ends.astype("datetime64[us]"), returns


@dataclass(frozen=True)
class DrawdownSpan:
    """Where the maximum drawdown of a series lies: the positions of its peak, its trough and
    its end (the first point back at the peak, or the last point when it has not recovered)."""

    fraction: float  # of the peak, in (0, 1]
    peak: int
    trough: int
    end: int
    recovered: bool


def drawdown_span(values: NDArray[np.float64]) -> DrawdownSpan | None:
    """The maximum drawdown of ``values`` and where it lies; None when the series never falls
    below a running peak."""
    if len(values) == 0:
        return None
    peaks = np.maximum.accumulate(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        falls = np.where(peaks > 0, 1.0 - values / peaks, 0.0)
    trough = int(np.argmax(falls))
    fraction = float(falls[trough])
    if fraction <= 0.0:
        return None
    peak = peaks[trough]
    peak_at = int(np.flatnonzero(values[: trough + 1] == peak)[-1])
    back = np.flatnonzero(values[trough:] >= peak)
    recovered = len(back) > 0
    end = trough + int(back[0]) if recovered else len(values) - 1
    return DrawdownSpan(fraction, peak_at, trough, end, recovered)


def drawdown(times: NDArray[np.int64], values: NDArray[np.float64]) -> Drawdown:
    """The maximum drawdown of the points ``values`` at integer ``times`` (microseconds)."""
    span = drawdown_span(values)
    if span is None:
        return Drawdown(0.0, 0.0, 0.0, True)
    hours = float(times[span.end] - times[span.peak]) / HOUR_US
    dollars = float(values[span.peak] - values[span.trough])
    return Drawdown(span.fraction, dollars, hours, span.recovered)


def sharpe(returns: NDArray[np.float64]) -> NDArray[np.float64]:
    """Annualised Sharpe of each row of ``returns`` (NaN without spread)."""
    return _sharpe(returns, np.mean(returns, axis=-1))


def sortino(returns: NDArray[np.float64]) -> NDArray[np.float64]:
    """Annualised Sortino of each row of ``returns`` (NaN without a losing week)."""
    return _sortino(returns, np.mean(returns, axis=-1))


def _sharpe(returns: NDArray[np.float64], mean: Any) -> NDArray[np.float64]:
    """:func:`sharpe` given each row's mean (the bootstrap takes it once for both ratios); the
    sample deviation as :func:`numpy.std` (``ddof=1``) takes it, in one buffer."""
    squares = returns - np.expand_dims(mean, -1)
    np.multiply(squares, squares, out=squares)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.sum(squares, axis=-1) / (returns.shape[-1] - 1))
        return np.where(sd > 0, mean / sd, np.nan) * math.sqrt(PERIODS_PER_YEAR)


def _sortino(returns: NDArray[np.float64], mean: Any) -> NDArray[np.float64]:
    """:func:`sortino` given each row's mean: the downside deviation ``sqrt(mean(min(r, 0)^2))``
    in one buffer."""
    losses = np.minimum(returns, 0.0)
    np.multiply(losses, losses, out=losses)
    downside = np.sqrt(np.mean(losses, axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(downside > 0, mean / downside, np.nan) * math.sqrt(PERIODS_PER_YEAR)


def annualised_return(returns: NDArray[np.float64]) -> NDArray[np.float64]:
    """``prod(1 + r)^(52 / W) - 1`` of each row."""
    return _annualised(np.prod(1.0 + returns, axis=-1), returns.shape[-1])


def _annualised(growth: NDArray[np.float64], weeks: int) -> NDArray[np.float64]:
    """:func:`annualised_return` of the growth ``prod(1 + r)`` over ``weeks`` weeks."""
    with np.errstate(invalid="ignore"):
        return np.where(growth > 0, growth ** (PERIODS_PER_YEAR / weeks) - 1.0, -1.0)


def index_drawdown(returns: NDArray[np.float64]) -> NDArray[np.float64]:
    """The maximum drawdown (fraction) of each row's weekly index ``prod(1 + r)``, from 1."""
    return _index_path(returns)[0]


def _index_path(returns: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`index_drawdown` and the index's last level (the growth ``prod(1 + r)``), in one
    pass over the weeks."""
    # week by week over all rows at once: numpy's cumulative ufuncs along the short last axis
    # of a (resamples, weeks) array are several times slower than this loop over the weeks
    growths = np.moveaxis(returns, -1, 0) + 1.0
    level, peak = np.ones(growths.shape[1:]), np.ones(growths.shape[1:])
    lowest, fall = np.ones(growths.shape[1:]), np.empty(growths.shape[1:])
    for growth in growths:  # the lowest level over its running peak, then 1 minus it
        level *= growth
        np.maximum(peak, level, out=peak)
        np.divide(level, peak, out=fall)
        np.minimum(lowest, fall, out=lowest)
    return 1.0 - lowest, level


def calmar(returns: NDArray[np.float64], fraction: NDArray[np.float64]) -> NDArray[np.float64]:
    """Annualised return over the maximum drawdown (NaN without a drawdown)."""
    return _calmar(annualised_return(returns), fraction)


def _calmar(annual: NDArray[np.float64], fraction: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(fraction > 0, annual / fraction, np.nan)


def block_resamples(returns: NDArray[np.float64], resamples: int, seed: int) -> NDArray[np.float64]:
    """Moving-block bootstrap resamples of a weekly series (module docstring): one per row, as
    a view of an array laid out week by week, so that every pass over the weeks (the index's
    drawdown, the means and deviations) runs over contiguous resamples."""
    return returns[_block_index(len(returns), resamples, seed)].T


@functools.lru_cache(maxsize=2)
def _block_index(weeks: int, resamples: int, seed: int) -> NDArray[np.intp]:
    """The weeks each resample draws, one column per resample: the same for every series of
    ``weeks`` weeks (agents of one cohort, read one after the other, share it), so it is drawn
    once per length."""
    block = math.ceil(weeks ** (1.0 / 3.0))
    blocks = math.ceil(weeks / block)
    starts = np.random.default_rng(seed).integers(0, weeks - block + 1, size=(resamples, blocks))
    index = (starts[:, :, None] + np.arange(block)).reshape(resamples, blocks * block)[:, :weeks]
    index = np.ascontiguousarray(index.T, dtype=np.intp)
    index.setflags(write=False)  # shared between calls: nobody may change it
    return index


def risk_figures(
    returns: NDArray[np.float64],
    curve_drawdown: Drawdown,
    *,
    resamples: int,
    seed: int,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Every figure of one weekly return series (and the drawdown of its curve), with its
    block-bootstrap interval or ``"insufficient"`` (module docstring)."""
    weeks = len(returns)
    reason = _insufficient(returns)
    figures: dict[str, Any] = {
        "weeks": weeks,
        "mean_weekly_return": float(np.mean(returns)) if weeks and reason is None else None,
        "annualised_return": float(annualised_return(returns))
        if weeks and reason is None
        else None,
        "max_drawdown_usd": curve_drawdown.dollars,
        "drawdown_hours": curve_drawdown.hours,
        "recovered": curve_drawdown.recovered,
        "insufficient_reason": reason,
        "min_weeks": MIN_WEEKS,
        "annualisation": ANNUALISATION,
    }
    statistics: dict[str, tuple[float, Callable[[], NDArray[np.float64]]]] = {}
    if reason is None:
        drawn = block_resamples(returns, resamples, seed)
        drawn_drawdown, drawn_growth = _index_path(drawn)  # one pass: drawdown and Calmar
        drawn_mean = np.mean(drawn, axis=-1)  # one pass, for both ratios
        statistics = {
            "sharpe": (float(sharpe(returns)), lambda: _sharpe(drawn, drawn_mean)),
            "sortino": (float(sortino(returns)), lambda: _sortino(drawn, drawn_mean)),
            "calmar": (
                float(calmar(returns, np.asarray(curve_drawdown.fraction))),
                lambda: _calmar(_annualised(drawn_growth, weeks), drawn_drawdown),
            ),
            "max_drawdown_pct": (
                100.0 * curve_drawdown.fraction,
                lambda: 100.0 * drawn_drawdown,
            ),
        }
    tail = (1.0 - confidence) / 2.0
    for name in ("sharpe", "sortino", "max_drawdown_pct", "calmar"):
        if name not in statistics or not math.isfinite(statistics[name][0]):
            figures[name] = INSUFFICIENT
            continue
        estimate, statistic = statistics[name]
        values = statistic()
        values = values[np.isfinite(values)]
        if len(values) < 2:
            figures[name] = INSUFFICIENT
            continue
        low, high = np.quantile(values, [tail, 1.0 - tail])
        figures[name] = {"estimate": estimate, "low": float(low), "high": float(high)}
    return figures


def _insufficient(returns: NDArray[np.float64]) -> str | None:
    if len(returns) < MIN_WEEKS:
        return f"{len(returns)} complete weeks, fewer than {MIN_WEEKS}"
    if not np.isfinite(returns).all():
        return "the curve reached 0: no return after it"
    return None


@dataclass(frozen=True, eq=False)
class Snapshots:
    """Snapshot rows of many agents as parallel columns: the agent, its family, its cohort's
    start and its starting balance, the snapshot's time and value (``total_value`` or
    ``exit_value``, NaN where unknown)."""

    agent_id: NDArray[np.object_]
    family_id: NDArray[np.object_]
    start: NDArray[np.datetime64]
    balance: NDArray[np.float64]
    taken_at: NDArray[np.datetime64]
    value: NDArray[np.float64]


def risk_rows(
    snapshots: Snapshots,
    as_of: np.datetime64,
    *,
    by: str = "family",
    resamples: int = 2_000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Risk and return per agent (``by="agent"``) or family, in one pass over the snapshots
    sorted by agent and time; snapshots after ``as_of`` and unknown values are left out."""
    per_agent = agent_curves(snapshots, as_of)
    if by == "agent":
        figures = _each_series(
            [(returns, points) for _agent, _family, _ends, returns, points in per_agent],
            resamples,
            seed,
        )
        return [
            {"forecaster": agent, "family_id": family, **figure}
            for (agent, family, *_rest), figure in zip(per_agent, figures, strict=True)
        ]
    return _family_rows(per_agent, snapshots, resamples, seed)


WORKERS = max(1, min(4, os.cpu_count() or 1))
"""Threads :func:`risk_rows` computes the agents' figures on (each series is independent and
numpy releases the GIL in its loops: the same figures, sooner on more than one core)."""


def _each_series(
    series: list[tuple[Any, Drawdown]], resamples: int, seed: int
) -> list[dict[str, Any]]:
    """Each series' :func:`risk_figures`, in the order given; computed in order of length, so
    that series of one length follow each other and share their drawn weeks
    (:func:`_block_index` keeps the last two lengths)."""

    def one(at: int) -> dict[str, Any]:
        returns, points = series[at]
        return risk_figures(returns, points, resamples=resamples, seed=seed)

    by_length = sorted(range(len(series)), key=lambda at: len(series[at][0]))
    if WORKERS == 1 or len(series) < 2:
        figures = [one(at) for at in by_length]
    else:
        with ThreadPoolExecutor(WORKERS) as pool:
            figures = list(pool.map(one, by_length))
    placed: list[dict[str, Any]] = [{}] * len(series)
    for at, figure in zip(by_length, figures, strict=True):
        placed[at] = figure
    return placed


def agent_curves(
    snapshots: Snapshots, as_of: np.datetime64
) -> list[tuple[str, str, NDArray[np.datetime64], Any, Drawdown]]:
    """One pass over the snapshots sorted by agent and time: per agent its id, family, week
    ends, weekly returns and curve drawdown (snapshots after ``as_of`` and unknown values left
    out)."""
    keep = (snapshots.taken_at <= as_of) & np.isfinite(snapshots.value)
    order = np.flatnonzero(keep)
    order = order[np.lexsort((snapshots.taken_at[order], snapshots.agent_id[order].astype(str)))]
    agents = snapshots.agent_id[order]
    bounds: list[int] = []
    if len(order):
        bounds = np.flatnonzero(np.r_[True, agents[1:] != agents[:-1], True]).tolist()
    per_agent: list[tuple[str, str, NDArray[np.datetime64], Any, Drawdown]] = []
    for first, stop in pairwise(bounds):
        rows = order[first:stop]
        head = rows[0]
        curve = Curve(
            snapshots.taken_at[rows],
            snapshots.value[rows],
            snapshots.start[head],
            snapshots.balance[head],
        )
        ends, returns = weekly_returns(curve, as_of)
        times = np.r_[curve.start, curve.times].astype("datetime64[us]").astype(np.int64)
        points = drawdown(times, np.r_[curve.balance, curve.values])
        per_agent.append(
            (str(snapshots.agent_id[head]), str(snapshots.family_id[head]), ends, returns, points)
        )
    return per_agent


def family_weekly_returns(
    per_agent: list[tuple[str, str, NDArray[np.datetime64], Any, Drawdown]],
) -> dict[str, dict[np.datetime64, float]]:
    """Each family's weekly return by week end: the mean of its agents' returns that week."""
    collected: dict[str, dict[np.datetime64, list[float]]] = {}
    for _agent, family, ends, returns, _points in per_agent:
        weeks = collected.setdefault(family, {})
        for end, value in zip(ends, returns, strict=True):
            weeks.setdefault(end, []).append(float(value))
    return {
        family: {end: float(np.mean(values)) for end, values in sorted(weeks.items())}
        for family, weeks in collected.items()
    }


def _family_rows(
    per_agent: list[tuple[str, str, NDArray[np.datetime64], Any, Drawdown]],
    snapshots: Snapshots,
    resamples: int,
    seed: int,
) -> list[dict[str, Any]]:
    """A family's weekly returns (:func:`family_weekly_returns`) and the drawdown of its weekly
    index, in dollars of its agents' mean starting balance."""
    families = family_weekly_returns(per_agent)
    rows = []
    for family in sorted(families):
        balance = np.mean(snapshots.balance[snapshots.family_id == family])
        weeks = families[family]
        returns = np.array(list(weeks.values()))
        index = np.r_[1.0, np.cumprod(1.0 + returns)]
        stamps = np.array(list(weeks), dtype="datetime64[us]").astype(np.int64)
        times = np.r_[stamps[0] - WEEK_US if len(stamps) else 0, stamps]
        points = drawdown(times, index * balance)
        rows.append(
            {
                "forecaster": family,
                "family_id": family,
                "agents": sum(1 for item in per_agent if item[1] == family),
                **risk_figures(returns, points, resamples=resamples, seed=seed),
            }
        )
    return rows
