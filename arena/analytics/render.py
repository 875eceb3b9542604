"""Terminal tables for the analysis dicts of :mod:`arena.analytics.report`.

Each table shows its essential columns by default, fitting 80 columns; ``wide`` shows all of
them, and ``--format json`` every field.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from arena import numbers
from arena.terminal import TerminalColumn, fitted_table


def _num(value: Any, digits: int = 4) -> str:
    return numbers.fixed(value, digits)


def _interval(low: Any, high: Any, digits: int = 4) -> str:
    if low is None or high is None:
        return "-"
    return f"{numbers.fixed(low, digits)}..{numbers.fixed(high, digits)}"


def _rank(rank: Any) -> str:
    return "-" if rank is None else str(rank)


def _name(row: dict[str, Any]) -> str:
    """The forecaster's display name (its id when it has none), ``*`` when provisional."""
    name = row.get("display_name") or row["forecaster"]
    return str(name) + (" *" if row.get("provisional") else "")


RANKING_COLUMNS = [
    TerminalColumn("#", lambda r: _rank(r["rank"])),
    TerminalColumn("forecaster", _name, numeric=False),
    TerminalColumn("adj. Brier", lambda r: _num(r["adjusted_brier"])),
    TerminalColumn("95% CI", lambda r: _interval(r["ci_low"], r["ci_high"], 3)),
    TerminalColumn("Brier", lambda r: _num(r["brier"])),
    TerminalColumn("peer", lambda r: _num(r["peer_score"], 1), essential=False),
    TerminalColumn(
        "n (weight)",
        lambda r: f"{numbers.count(r['n_questions'])} ({_num(r['weight_sum'], 1)})",
    ),
]


def ranking_table(report: dict[str, Any], wide: bool = False) -> Group:
    """Leaderboard: adjusted Brier (lower is better) with intervals and provisional flags."""
    options = report["options"]
    table = fitted_table(
        RANKING_COLUMNS,
        report["rows"],
        wide=wide,
        title="Difficulty-adjusted Brier (lower is better)",
        caption=(
            f"as of {report['as_of']}; market weight {options['market_weight']}; "
            f"{report['n_scored_questions']} scored questions; always-0.5 scores 0.25; "
            f"* provisional (< {options['min_days']:g} days or < {options['min_questions']} "
            "questions); # -: not ranked (fewer than "
            f"{options['min_clusters']} independent clusters); CI -: no interval (too few "
            "clusters, no spread, or the reference row); 95% CI: cluster-robust t, clipped to "
            f"[0, 1]; cluster bootstrap in --format json ({report['resampling']['resamples']} "
            f"resamples, seed {report['resampling']['seed']}); {report['sample']}"
        ),
        row_style=lambda r: "dim" if r["reference"] else None,
    )
    parts: list[Any] = [table]
    if report["dropped_questions"]:
        parts.append(
            Text(f"{report['dropped_questions']} questions dropped: {report['dropped_reason']}")
        )
    if report["n_components"] > 1:
        parts.append(
            Text(
                f"warning: forecasters fall into {report['n_components']} groups with no shared "
                "questions; scores are comparable only within a group (column 'component' in JSON)",
                style="yellow",
            )
        )
    return Group(*parts)


MEASURE_COLUMNS = [
    TerminalColumn("measure", lambda r: r[0], numeric=False),
    TerminalColumn("value", lambda r: r[1]),
]


def head_to_head_table(report: dict[str, Any], wide: bool = False) -> Group:
    """Head-to-head summary: mean score per question with t and bootstrap intervals."""
    unit = "100 x log-score difference" if report["score"] == "log" else "100 x Brier difference"
    t, boot = report["t_test"], report["bootstrap"]
    rows = [
        ("common questions", str(report["n_questions"])),
        ("weighted questions", _num(report["weight_sum"], 2)),
        ("mean score", _num(report["mean"], 2)),
        ("95% t interval", _interval(t["low"], t["high"], 2)),
        ("t statistic / p-value", f"{_num(t['t_stat'], 2)} / {_num(t['p_value'], 4)}"),
        ("independent clusters", str(report["n_clusters"])),
        ("95% cluster bootstrap", _interval(boot["low"], boot["high"], 2)),
        ("bootstrap share > 0", _num(boot["p_positive"], 3)),
        ("sign test p-value", _num(report["sign_test"]["p_value"], 4)),
    ]
    resampling = report["resampling"]
    caption = f"{resampling['resamples']} resamples, seed {resampling['seed']}"
    title = f"Head-to-head: {report['a']} vs {report['b']} ({unit}; > 0: A better)"
    table = fitted_table(MEASURE_COLUMNS, rows, wide=wide, title=title, caption=caption)
    return Group(table, Text(report["verdict"], style="bold"))


PROXY_COLUMNS = [
    TerminalColumn("#", lambda r: _rank(r["rank"])),
    TerminalColumn("forecaster", _name, numeric=False),
    TerminalColumn("mean z", lambda r: _num(r["mean_z"], 3)),
    TerminalColumn("weeks", lambda r: numbers.count(r["n_weeks"])),
    TerminalColumn("questions", lambda r: numbers.count(r["n_questions"])),
]


def proxy_table(report: dict[str, Any], wide: bool = False) -> Group:
    """Proxy ranking, labelled as such."""
    title = "PROXY ranking (unresolved questions; lower z is better)"
    table = fitted_table(PROXY_COLUMNS, report["rows"], wide=wide, title=title)
    return Group(Text(report["label"], style="yellow"), table)


CALIBRATION_COLUMNS = [
    TerminalColumn("forecaster", _name, numeric=False),
    TerminalColumn("n", lambda r: numbers.count(r["n"])),
    TerminalColumn("Brier", lambda r: _num(r["brier"])),
    TerminalColumn("binned", lambda r: _num(r["binned_brier"]), essential=False),
    TerminalColumn("REL", lambda r: _num(r["reliability"])),
    TerminalColumn("RES", lambda r: _num(r["resolution"])),
    TerminalColumn("UNC", lambda r: _num(r["uncertainty"])),
    TerminalColumn("ECE", lambda r: _num(r["ece"])),
]


def calibration_table(report: dict[str, Any], wide: bool = False) -> Table:
    """Calibration and Murphy decomposition per forecaster."""
    title = "Calibration (REL - RES + UNC = binned Brier)"
    caption = report["sample"]
    return fitted_table(
        CALIBRATION_COLUMNS, report["rows"], wide=wide, title=title, caption=caption
    )
