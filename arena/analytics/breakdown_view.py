"""``arena analyze breakdown`` and ``/api/v1/breakdown``: the ledger side (positions, P/L,
cost, scored bets, Brier) and the forecast side (forecasts, scored questions, adjusted Brier
with its interval) of every family per category or horizon bucket, as one report, its table
and its CSV."""

from __future__ import annotations

import csv
from typing import IO, Any

from rich.console import Group
from sqlalchemy.orm import Session

from arena import numbers
from arena.analytics.groups import BY, breakdown
from arena.analytics.leaderboard import family_tracks
from arena.analytics.ledger_breakdown import HORIZON_RULE, Scope, ledger_rows
from arena.analytics.options import AnalysisOptions
from arena.csv_safe import safe_cell
from arena.errors import OptionError
from arena.terminal import TerminalColumn, fitted_table, text_column

CSV_FIELDS = (
    "side",
    "group",
    "family_id",
    "positions",
    "open_positions",
    "pnl",
    "cost",
    "scored_bets",
    "brier",
    "forecasts",
    "questions",
    "adjusted",
    "adjusted_low",
    "adjusted_high",
    "provisional",
)


def breakdown_report(
    session: Session,
    forecasts: Any,
    by: str,
    options: AnalysisOptions,
    *,
    scope: Scope | None = None,
    track: str | None = None,
) -> dict[str, Any]:
    """The whole breakdown: ``ledger`` rows from the database (positions and scored bets as
    they stand; with ``track``, of the families on it) and ``forecasts``
    (:func:`arena.analytics.groups.breakdown` of ``forecasts`` at ``options.as_of``, which
    the caller restricted to the track; null without forecasts)."""
    if by not in BY:
        raise OptionError(f"--by: {by!r} is not one of {', '.join(BY)}")
    ledger = ledger_rows(session, by, scope=scope)
    if track is not None:
        tracks = family_tracks(session)
        ledger = [row for row in ledger if tracks.get(row["family_id"]) == track]
    return {
        "by": by,
        "horizon_rule": HORIZON_RULE,
        "ledger": ledger,
        "forecasts": None if forecasts is None else breakdown(forecasts, options, by=by),
    }


def _fixed(value: Any, digits: int = 4) -> str:
    return numbers.fixed(value, digits)


def _adjusted(row: dict[str, Any]) -> str:
    interval = row["adjusted"]
    if not isinstance(interval, dict):
        return str(interval)
    low, high = _fixed(interval["low"], 3), _fixed(interval["high"], 3)
    return f"{_fixed(interval['estimate'])} ({low}..{high})"


def _flagged(key: str) -> Any:
    return lambda row: str(row[key]) + (" *" if row["provisional"] else "")


LEDGER_COLUMNS = [
    text_column("group", "group"),
    TerminalColumn("family", _flagged("family_id"), numeric=False),
    TerminalColumn("pos.", lambda r: numbers.count(r["positions"])),
    TerminalColumn("open", lambda r: numbers.count(r["open_positions"]), essential=False),
    TerminalColumn("P/L $", lambda r: r["pnl"]),
    TerminalColumn("cost $", lambda r: r["cost"]),
    TerminalColumn("bets", lambda r: numbers.count(r["scored_bets"])),
    TerminalColumn("Brier", lambda r: _fixed(r["brier"])),
]
FORECAST_COLUMNS = [
    text_column("group", "group"),
    TerminalColumn("forecaster", _flagged("forecaster"), numeric=False),
    TerminalColumn("fcsts", lambda r: numbers.count(r["forecasts"])),
    TerminalColumn("qs", lambda r: numbers.count(r["questions"])),
    TerminalColumn("Brier", lambda r: _fixed(r["brier"]), essential=False),
    TerminalColumn("adj. Brier (95% CI)", _adjusted),
]


def breakdown_table(report: dict[str, Any], wide: bool = False) -> Group:
    """The two tables (ledger, forecasts), each fitting 80 columns."""
    by = report["by"]
    parts: list[Any] = [
        fitted_table(
            LEDGER_COLUMNS,
            report["ledger"],
            wide=wide,
            title=f"Positions and scored bets by {by}",
            caption="* provisional: fewer than 30 scored bets in the group; "
            + (report["horizon_rule"] if by == "horizon" else 'no category: "other"'),
        )
    ]
    v2 = report["forecasts"]
    if v2 is not None:
        parts.append(
            fitted_table(
                FORECAST_COLUMNS,
                v2["rows"],
                wide=wide,
                title=f"Forecasts by {by} (difficulty-adjusted Brier, lower is better)",
                caption=f"as of {v2['as_of']}; * provisional: fewer than 30 scored questions "
                "in the group; CI: cluster-robust t",
            )
        )
    return Group(*parts)


def write_breakdown_csv(report: dict[str, Any], out: IO[str]) -> None:
    """Both sides as one CSV (``side`` is ``ledger`` or ``forecasts``; a side's cells that
    the other has are empty)."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    rows = [{"side": "ledger", **row} for row in report["ledger"]]
    for row in (report["forecasts"] or {}).get("rows", []):
        interval = row["adjusted"]
        bounds = interval if isinstance(interval, dict) else {}
        rows.append(
            {
                "side": "forecasts",
                **row,
                "family_id": row["forecaster"],
                "adjusted": bounds.get("estimate", interval),
                "adjusted_low": bounds.get("low"),
                "adjusted_high": bounds.get("high"),
            }
        )
    for row in rows:
        writer.writerow([_cell(row.get(name)) for name in CSV_FIELDS])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return safe_cell(value) if isinstance(value, str) else str(value)
