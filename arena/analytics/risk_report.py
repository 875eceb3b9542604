"""``risk``: risk and return of the portfolio per family or agent, as a JSON-serialisable dict.

The measures and their definitions are :mod:`arena.analytics.risk_measures`; this module takes
the snapshot data a researcher or an entry point has (:class:`Snapshots`, an export directory,
or a DataFrame of the export's snapshot columns), cuts it at ``as_of`` and states what every
report states (options, resampling, annualisation). The public function lives here, not in
``risk_measures``, so ``from arena.analytics import risk`` is always the function.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from arena.analytics.options import AnalysisOptions, clean, with_at
from arena.analytics.records import to_datetime, to_datetime64
from arena.analytics.risk_measures import (
    ANNUALISATION,
    MIN_WEEKS,
    Snapshots,
    risk_rows,
)
from arena.analytics.significance import INSUFFICIENT
from arena.analytics.snapshot_columns import (
    read_export_snapshots,
    snapshot_columns,
    value_column,
)
from arena.errors import ForecastsError

FIGURES = ("sharpe", "sortino", "max_drawdown_pct", "calmar")
NO_EXIT_VALUE = "no exit value: only mode book cohorts value a portfolio at exit (gamma: mark only)"
RISK_SAMPLE = (
    "complete weeks of the curve since its cohort's start; a family's weekly return is the "
    "mean of its agents' returns of that calendar week"
)


def as_snapshots(data: Any, value: str = "mark") -> Snapshots:
    """:class:`Snapshots` as is; an export directory read; a DataFrame (or mapping of columns)
    of the export's snapshots merged with its agents' ``starting_balance`` and cohorts'
    ``week_start`` converted."""
    value_column(value)
    if isinstance(data, Snapshots):
        return data
    if isinstance(data, str | Path):
        return read_export_snapshots(Path(data), value)
    return snapshot_columns(data, value=value)


def risk(
    snapshots: Any,
    options: AnalysisOptions | None = None,
    *,
    by: str | None = None,
    value: str = "mark",
    at: datetime | None = None,
) -> dict[str, Any]:
    """Weekly-return Sharpe, Sortino, maximum drawdown (% and $, duration, recovered) and
    Calmar per family (``by="family"``, the options' default) or agent, each with its
    block-bootstrap interval or ``"insufficient"``, from the snapshots known at ``at`` (the
    newest snapshot when not given). ``value="exit"`` values mode book portfolios at exit; an
    agent without exit values (a gamma cohort) is listed with the reason, never as NaN."""
    options = with_at(options, at)
    by = by or options.by
    if by not in ("family", "agent"):
        raise ValueError(f"by: {by!r} is not family or agent")
    data = as_snapshots(snapshots, value)
    known = np.isfinite(data.value)
    if options.as_of is not None:
        as_of = to_datetime64(options.as_of)
    elif len(data.taken_at):
        as_of = data.taken_at.max()
    else:
        raise ForecastsError("no snapshots to analyse")
    rows = risk_rows(data, as_of, by=by, resamples=options.bootstrap_resamples, seed=options.seed)
    seen = data.taken_at <= as_of
    valued = set(data.agent_id[seen & known].tolist())
    unvalued = sorted(set(data.agent_id[seen].tolist()) - valued)
    rows += _unvalued_rows(data, unvalued, by, value, {row["forecaster"] for row in rows})
    for row in rows:
        row.setdefault("agents", None)  # a family's agents; one shape for every row
    return clean(
        {
            "kind": "risk",
            "as_of": to_datetime(as_of),
            "by": by,
            "value": value,
            "options": options.to_dict(),
            "resampling": options.resampling(),
            "annualisation": ANNUALISATION,
            "min_weeks": MIN_WEEKS,
            "sample": RISK_SAMPLE,
            "rows": rows,
            "without_value": [{"agent_id": agent, "reason": _reason(value)} for agent in unvalued],
        }
    )


def _reason(value: str) -> str:
    return NO_EXIT_VALUE if value == "exit" else "no snapshot value"


def _unvalued_rows(
    data: Snapshots, agents: list[str], by: str, value: str, present: set[str]
) -> list[dict[str, Any]]:
    """A row of ``"insufficient"`` figures, with the reason, for each forecaster whose
    snapshots have no value (``--value exit`` on a gamma cohort), so it is listed, not lost."""
    family_of = dict(zip(data.agent_id.tolist(), data.family_id.tolist(), strict=True))
    names = agents if by == "agent" else sorted({family_of[a] for a in agents})
    members = {name: sum(1 for a in agents if family_of[a] == name) for name in names}
    return [
        {
            "forecaster": name,
            "family_id": family_of[name] if by == "agent" else name,
            "agents": None if by == "agent" else members[name],
            "weeks": 0,
            "mean_weekly_return": None,
            "annualised_return": None,
            "max_drawdown_usd": None,
            "drawdown_hours": None,
            "recovered": None,
            "insufficient_reason": _reason(value),
            "min_weeks": MIN_WEEKS,
            "annualisation": ANNUALISATION,
            **dict.fromkeys(FIGURES, INSUFFICIENT),
        }
        for name in names
        if name not in present
    ]
