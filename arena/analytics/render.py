"""Terminal tables for the analysis dicts of :mod:`arena.analytics.report`.

Each table shows its essential columns by default, fitting 80 columns; ``wide`` shows all of
them, and ``--format json`` every field. ``--format csv`` writes one row per forecaster (per
pair for ``power``; :func:`write_csv`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from typing import IO, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from arena import numbers
from arena.analytics.market import in_skill_order
from arena.analytics.significance import INSUFFICIENT
from arena.csv_safe import csv_text
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
    TerminalColumn("Brier", lambda r: _num(r["brier"]), essential=False),
    TerminalColumn("P(#1)", lambda r: numbers.share(r.get("p_rank_1"))),
    TerminalColumn("rank 95%", lambda r: _rank_interval(r)),
    TerminalColumn("peer", lambda r: _num(r["peer_score"], 1), essential=False),
    TerminalColumn(
        "n (weight)",
        lambda r: f"{numbers.count(r['n_questions'])} ({_num(r['weight_sum'], 1)})",
    ),
]


def _rank_interval(row: dict[str, Any]) -> str:
    """The 95% rank interval ``low-high`` (one rank when both agree), "-" when unranked."""
    low, high = row.get("rank_low"), row.get("rank_high")
    if low is None or high is None:
        return "-"
    return str(low) if low == high else f"{low}-{high}"


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
            f"resamples, seed {report['resampling']['seed']}); {report['sample']}; "
            f"P(#1): share of resamples ranked first; rank 95%: 2.5%-97.5% of the resampled "
            f"ranks ({report.get('rank_sample', '')}); Brier (plain): --wide"
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


DEPTH_COLUMNS = [
    TerminalColumn("forecaster", _name, numeric=False),
    TerminalColumn("ECE", lambda r: _num(r["ece"])),
    TerminalColumn("MCE", lambda r: _num(r.get("mce"))),
    TerminalColumn("ACE", lambda r: _num(r.get("ace"))),
    TerminalColumn("log loss", lambda r: _num(r.get("log_loss"))),
    TerminalColumn("spherical", lambda r: _num(r.get("spherical"))),
    TerminalColumn("overconf.", lambda r: _num(r.get("overconfidence"), 3)),
]


def calibration_table(report: dict[str, Any], wide: bool = False) -> Group:
    """Calibration and Murphy decomposition per forecaster, then calibration in depth (MCE,
    ACE, log loss, spherical score, overconfidence) with the bin rule under it."""
    title = "Calibration (REL - RES + UNC = binned Brier)"
    caption = report["sample"]
    table = fitted_table(
        CALIBRATION_COLUMNS, report["rows"], wide=wide, title=title, caption=caption
    )
    depth = fitted_table(
        DEPTH_COLUMNS,
        report["rows"],
        wide=wide,
        title="Calibration in depth (lower is better, except spherical)",
        caption=(
            "MCE: largest |mean forecast - frequency| of a bin; ACE: ECE over equal-mass bins; "
            "log loss: -mean ln p(outcome), p clipped to [0.001, 0.999]; spherical: mean "
            "p(outcome) / |p|; overconfidence: mean confidence - hit rate (> 0: "
            f"overconfident); {report.get('bin_rule', '')}"
        ),
    )
    return Group(table, depth)


def _alpha(value: Any, digits: int = 3) -> str:
    """An interval object's estimate, signed; "-" for "insufficient"."""
    if isinstance(value, dict):
        return numbers.fixed(value.get("estimate"), digits, signed=True)
    return "-"


def _bounds(value: Any, digits: int = 3) -> str:
    """An interval object's ``low..high``, "-" without one."""
    if isinstance(value, dict):
        return _interval(value.get("low"), value.get("high"), digits)
    return "-"


MARKET_COLUMNS = [
    TerminalColumn("forecaster", _name, numeric=False),
    TerminalColumn("α Brier", lambda r: _alpha(r["alpha_brier"])),
    TerminalColumn("95% CI", lambda r: _bounds(r["alpha_brier"], 2)),
    TerminalColumn("α log", lambda r: _alpha(r["alpha_log"])),
    TerminalColumn("log 95% CI", lambda r: _bounds(r["alpha_log"], 2), essential=False),
    TerminalColumn(
        "corr.",
        lambda r: "-" if r["copy_correlation"] == INSUFFICIENT else _num(r["copy_correlation"], 3),
    ),
    TerminalColumn("dist.", lambda r: _num(r["copy_distance"], 3), essential=False),
    TerminalColumn("copy", lambda r: "yes" if r["follows_market"] else "no", numeric=False),
    TerminalColumn("ret/$1", lambda r: _alpha(r["return_per_dollar"], 2)),
    TerminalColumn("fee'd", lambda r: _alpha(r["return_per_dollar_after_fee"], 2)),
    TerminalColumn("n", lambda r: numbers.count(r["questions"]), essential=False),
    TerminalColumn("markets", lambda r: numbers.count(r["markets"]), essential=False),
]


def market_table(report: dict[str, Any], wide: bool = False) -> Table:
    """Skill against the market: alpha (Brier, log), market-copy index, return against the
    odds before and after the fee; the highest alpha first."""
    resampling = report["resampling"]
    caption = (
        f"as of {report['as_of']}; α Brier: mean (m-o)^2 - (p-o)^2, α log: mean ln p(o) - "
        "ln m(o) (> 0: beat the price shown), 95% CI cluster-robust t (cluster bootstrap in "
        f"--format json, {resampling['resamples']} resamples, seed {resampling['seed']}); "
        "corr./dist.: correlation and mean |p - m| with the price shown (dist.: --wide); "
        "copy: follows the market (corr. >= 0.98 and dist. <= 0.02); ret/$1: return of "
        "betting $1 against the odds, fee'd: after the taker fee; -: insufficient (too few "
        f"clusters or questions, or no spread); {report['sample']}"
    )
    return fitted_table(
        MARKET_COLUMNS,
        in_skill_order(report["rows"]),
        wide=wide,
        title="Against the market (alpha > 0: better than the price shown)",
        caption=caption,
    )


def _pair_name(row: dict[str, Any], key: str) -> str:
    return str(row.get(f"{key}_name") or row[key])


POWER_COLUMNS = [
    TerminalColumn("A", lambda r: _pair_name(r, "a"), numeric=False),
    TerminalColumn("B", lambda r: _pair_name(r, "b"), numeric=False),
    TerminalColumn("delta", lambda r: _num(r["delta"])),
    TerminalColumn("se", lambda r: _num(r["se"])),
    TerminalColumn("weeks", lambda r: numbers.count(r["weeks_seen"])),
    TerminalColumn("verdict", lambda r: str(r["verdict"]), numeric=False),
]


def power_table(report: dict[str, Any], wide: bool = False) -> Table:
    """Weeks to separate each adjacent pair of the ranking, with its assumptions."""
    caption = (
        f"as of {report['as_of']}; delta: mean Brier of A minus B on their common scored "
        "questions (< 0: A better), se: its cluster-robust standard error over the weeks seen; "
        f"assumptions: {report['assumptions']}"
    )
    return fitted_table(
        POWER_COLUMNS,
        report["rows"],
        wide=wide,
        title="Weeks to separate adjacent forecasters",
        caption=caption,
    )


REPLICATE_COLUMNS = [
    TerminalColumn("family", _name, numeric=False),
    TerminalColumn("agents", lambda r: numbers.count(r["replicates"])),
    TerminalColumn("mean Brier", lambda r: _num(r["mean_brier"])),
    TerminalColumn("sd", lambda r: _num(r["sd_brier"])),
    TerminalColumn("Brier", lambda r: _num(r["brier"]), essential=False),
    TerminalColumn("95% CI", lambda r: _interval(r["ci_low"], r["ci_high"], 3)),
    TerminalColumn("vs next", lambda r: "close" if r.get("close_to_next") else "", numeric=False),
]


def replicates_table(report: dict[str, Any], wide: bool = False) -> Table:
    """Each family's replicates: their mean raw Brier and its spread, the family's Brier over
    the questions with its interval, and whether it is too close to the next to order; the
    variance split and the intraclass correlation in the caption."""
    close = {pair["upper"] for pair in report["close_orderings"]}
    rows = [{**row, "close_to_next": row["forecaster"] in close} for row in report["rows"]]
    caption = (
        f"as of {report['as_of']}; icc {_num(report['icc'], 3)} (variance between families "
        f"{_num(report['between_variance'], 6)}, within {_num(report['within_variance'], 6)}); "
        f"{report['rule']}"
    )
    return fitted_table(
        REPLICATE_COLUMNS,
        rows,
        wide=wide,
        title="Replicates: skill or the luck of a run",
        caption=caption,
    )


def label_pairs(report: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """``report`` (:func:`arena.analytics.report.power`) with ``a_name`` and ``b_name`` on each
    row whose forecasters ``labels`` names."""
    for row in report.get("rows", []):
        for key in ("a", "b"):
            if row[key] in labels:
                row[f"{key}_name"] = labels[row[key]]
    return report


# -- CSV ------------------------------------------------------------------------------------------

INTERVAL_FIELDS = frozenset(
    {"alpha_brier", "alpha_log", "return_per_dollar", "return_per_dollar_after_fee"}
    | {"sharpe", "sortino", "max_drawdown_pct", "calmar"}  # risk and return
)
"""The fields holding an interval object (or "insufficient"), written as three CSV columns."""
INTERVAL_PARTS = ("estimate", "low", "high")


def flat_row(row: dict[str, Any]) -> dict[str, Any]:
    """One report row as CSV cells: an interval field as ``_estimate``, ``_low`` and ``_high``
    (the estimate "insufficient", the bounds empty, below the minimum sample); lists (the
    calibration bins) left out (``--format json`` has them)."""
    flat: dict[str, Any] = {}
    for key, value in row.items():
        if key in INTERVAL_FIELDS:
            found = value if isinstance(value, dict) else {"estimate": value}
            for part in INTERVAL_PARTS:
                flat[f"{key}_{part}"] = found.get(part)
        elif isinstance(value, list):
            continue
        elif isinstance(value, dict):
            flat[key] = json.dumps(value, sort_keys=True)
        else:
            flat[key] = value
    return flat


def write_csv(rows: Iterable[dict[str, Any]], out: IO[str], first: Sequence[str] = ()) -> None:
    """``rows`` flattened (:func:`flat_row`) as CSV with the JSON field names as header, in the
    order first seen (``first`` leading); null is an empty cell, booleans ``true``/``false``,
    text spreadsheet-safe (:func:`arena.csv_safe.csv_text`)."""
    flat = [flat_row(r) for r in rows]
    header: list[str] = list(first)
    for row in flat:
        header += [key for key in row if key not in header]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in flat:
        writer.writerow([csv_text(row.get(key)) for key in header])


def _figure(value: Any, digits: int = 2) -> str:
    """An interval's estimate, or ``insuff.`` below the minimum (see the caption)."""
    return _num(value["estimate"], digits) if isinstance(value, dict) else "insuff."


def _figure_interval(value: Any, digits: int = 2) -> str:
    return _interval(value["low"], value["high"], digits) if isinstance(value, dict) else "-"


def _recovered(row: dict[str, Any]) -> str:
    return "-" if row["recovered"] is None else ("yes" if row["recovered"] else "no")


RISK_COLUMNS = [
    TerminalColumn("forecaster", _name, numeric=False),
    TerminalColumn("weeks", lambda r: numbers.count(r["weeks"])),
    TerminalColumn("Sharpe", lambda r: _figure(r["sharpe"])),
    TerminalColumn("Sharpe CI", lambda r: _figure_interval(r["sharpe"]), essential=False),
    TerminalColumn("Sortino", lambda r: _figure(r["sortino"])),
    TerminalColumn("Sortino CI", lambda r: _figure_interval(r["sortino"]), essential=False),
    TerminalColumn("max DD %", lambda r: _figure(r["max_drawdown_pct"], 1)),
    TerminalColumn(
        "DD % CI", lambda r: _figure_interval(r["max_drawdown_pct"], 1), essential=False
    ),
    TerminalColumn("max DD $", lambda r: _num(r["max_drawdown_usd"], 0)),
    TerminalColumn("DD hours", lambda r: _num(r["drawdown_hours"], 0), essential=False),
    TerminalColumn("rec.", _recovered, numeric=False),
    TerminalColumn("Calmar", lambda r: _figure(r["calmar"])),
    TerminalColumn("Calmar CI", lambda r: _figure_interval(r["calmar"]), essential=False),
]


def risk_table(report: dict[str, Any], wide: bool = False) -> Table:
    """Risk and return per forecaster: estimates (intervals with ``--wide``), the annualisation
    and the minimum number of weeks in the caption."""
    value = "the mark" if report["value"] == "mark" else "exit (mode book)"
    resampling = report["resampling"]
    caption = (
        f"as of {report['as_of']}; valued at {value}; {report['annualisation']}; "
        f"insuff.: fewer than {report['min_weeks']} complete weeks, or no defined value "
        "(no spread, no losing week, no drawdown, a curve that reached 0; reason in --format "
        "json); max DD: largest fall from a running peak (% and $), rec.: back at the peak; "
        f"CI (--wide): 95% moving-block bootstrap of the weekly returns "
        f"({resampling['resamples']} resamples, seed {resampling['seed']})"
    )
    if report["without_value"]:
        missing = report["without_value"]
        caption += f"; {len(missing)} agent(s) listed without figures: {missing[0]['reason']}"
    return fitted_table(
        RISK_COLUMNS,
        report["rows"],
        wide=wide,
        title="Risk and return of the portfolio (weekly returns)",
        caption=caption,
    )
