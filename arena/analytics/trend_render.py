"""The terminal table of :func:`arena.analytics.trend_report.trend` (80 columns): one line per
family and week, a ``*`` on the family where its lineage changed, and a footnote per marker
saying what changed."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from arena import numbers
from arena.terminal import TerminalColumn, fitted_table


def _family(row: dict[str, Any]) -> str:
    name = row.get("display_name") or row["family_id"]
    return f"{name} *" if row["lineage_changed"] else str(name)


def _return(value: Any) -> str:
    return numbers.percent(None if value is None else value * 100)


def _rank(value: Any) -> str:
    return "-" if value is None else str(value)


TREND_COLUMNS = [
    TerminalColumn("week", lambda r: str(r["week_start"])[:10], numeric=False),
    TerminalColumn("family", _family, numeric=False),
    TerminalColumn("return", lambda r: _return(r["weekly_return"])),
    TerminalColumn("Brier", lambda r: numbers.fixed(r["brier"], 3)),
    TerminalColumn("adj.", lambda r: numbers.fixed(r["adjusted"], 3)),
    TerminalColumn("alpha", lambda r: numbers.fixed(r["alpha"], 3, signed=True)),
    TerminalColumn("# wk", lambda r: _rank(r["rank_week"])),
    TerminalColumn("# cum", lambda r: _rank(r["rank_cumulative"])),
]


def trend_table(report: dict[str, Any], wide: bool = False) -> Group:
    """Per family and week: return, Brier, adjusted score, alpha and ranks; lineage markers
    explained below the table."""
    by = (
        "adjusted score (lower is better; cumulative: mean to date)"
        if report["rank_by"] == "adjusted"
        else "return (cumulative: compounded to date)"
    )
    table = fitted_table(
        TREND_COLUMNS,
        report["rows"],
        wide=wide,
        title="Trend by cohort week",
        caption=f"as of {report['as_of']}; ranks by {by}; - : no value that week",
    )
    notes = [
        f"* {r.get('display_name') or r['family_id']} from {str(r['week_start'])[:10]}: "
        + "; ".join(r["lineage"])
        for r in report["rows"]
        if r["lineage_changed"]
    ]
    return Group(table, *(Text(note) for note in notes))
