"""Rich tables for the analysis dicts of :mod:`arena.analytics.report`."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _interval(low: Any, high: Any, digits: int = 4) -> str:
    if low is None or high is None:
        return "-"
    return f"{low:.{digits}f}..{high:.{digits}f}"


def _rank(rank: Any) -> str:
    return "-" if rank is None else str(rank)


def ranking_table(report: dict[str, Any]) -> Group:
    """Leaderboard: adjusted Brier (lower is better) with intervals and provisional flags."""
    options = report["options"]
    table = Table(
        title="Difficulty-adjusted Brier (lower is better)",
        caption=(
            f"as of {report['as_of']}; market weight {options['market_weight']}; "
            f"{report['n_scored_questions']} scored questions; always-0.5 scores 0.25; "
            f"* provisional (< {options['min_days']:g} days or < {options['min_questions']} "
            "questions); - not ranked: too few independent clusters; 95% CI: cluster-robust t; "
            f"cluster bootstrap in --format json ({report['resampling']['resamples']} resamples, "
            f"seed {report['resampling']['seed']})"
        ),
    )
    table.add_column("#", justify="right")
    table.add_column("forecaster", no_wrap=True)
    for name in ("adj. Brier", "95% CI", "Brier", "peer", "n (weight)"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in report["rows"]:
        name = row["forecaster"] + (" *" if row["provisional"] else "")
        table.add_row(
            _rank(row["rank"]),
            name,
            _num(row["adjusted_brier"]),
            _interval(row["ci_low"], row["ci_high"], 3),
            _num(row["brier"]),
            _num(row["peer_score"], 1),
            f"{row['n_questions']} ({_num(row['weight_sum'], 1)})",
            style="dim" if row["reference"] else None,
        )
    parts: list[Any] = [table]
    if report["n_components"] > 1:
        parts.append(
            Text(
                f"warning: forecasters fall into {report['n_components']} groups with no shared "
                "questions; scores are comparable only within a group (column 'component' in JSON)",
                style="yellow",
            )
        )
    return Group(*parts)


def head_to_head_table(report: dict[str, Any]) -> Group:
    """Head-to-head summary: mean score per question with t and bootstrap intervals."""
    unit = "100 x log-score difference" if report["score"] == "log" else "100 x Brier difference"
    table = Table(title=f"Head-to-head: {report['a']} vs {report['b']} ({unit}; > 0: A better)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    t = report["t_test"]
    table.add_row("common questions", str(report["n_questions"]))
    table.add_row("weighted questions", _num(report["weight_sum"], 2))
    table.add_row("mean score", _num(report["mean"], 2))
    table.add_row("95% t interval", _interval(t["low"], t["high"], 2))
    table.add_row("t statistic / p-value", f"{_num(t['t_stat'], 2)} / {_num(t['p_value'], 4)}")
    table.add_row("independent clusters", str(report["n_clusters"]))
    boot = report["bootstrap"]
    table.add_row("95% cluster bootstrap", _interval(boot["low"], boot["high"], 2))
    table.add_row("bootstrap share > 0", _num(boot["p_positive"], 3))
    table.add_row("sign test p-value", _num(report["sign_test"]["p_value"], 4))
    resampling = report["resampling"]
    caption = f"{resampling['resamples']} resamples, seed {resampling['seed']}"
    return Group(table, Text(caption), Text(report["verdict"], style="bold"))


def proxy_table(report: dict[str, Any]) -> Group:
    """Proxy ranking, labelled as such."""
    table = Table(title="PROXY ranking (unresolved questions; lower z is better)")
    for name in ("#", "forecaster", "mean z", "weeks", "questions"):
        table.add_column(name, justify="left" if name == "forecaster" else "right")
    for row in report["rows"]:
        table.add_row(
            _rank(row["rank"]),
            row["forecaster"],
            _num(row["mean_z"], 3),
            str(row["n_weeks"]),
            str(row["n_questions"]),
        )
    return Group(Text(report["label"], style="yellow"), table)


def calibration_table(report: dict[str, Any]) -> Table:
    """Calibration and Murphy decomposition per forecaster."""
    table = Table(title="Calibration (REL - RES + UNC = binned Brier)")
    for name in ("forecaster", "n", "Brier", "binned", "REL", "RES", "UNC", "ECE"):
        table.add_column(name, justify="left" if name == "forecaster" else "right")
    for row in report["rows"]:
        table.add_row(
            row["forecaster"],
            str(row["n"]),
            _num(row["brier"]),
            _num(row["binned_brier"]),
            _num(row["reliability"]),
            _num(row["resolution"]),
            _num(row["uncertainty"]),
            _num(row["ece"]),
        )
    return table
