"""``arena decide``: this week's decisions for every agent in the decision window.

Exactly what the daemon does at its decision-run slot (:meth:`arena.runtime.Runtime.decide`):
sync the markets from Gamma, freeze a fresh universe, decide agent after agent. Exit 1 when the
report says the run failed (:meth:`arena.jobs.decide_report.DecideReport.failure`): a decision
not final when it exits (each listed with its reason or holder), every model call failed, or the
run refused; nothing to decide is exit 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from arena import numbers
from arena.cli.common import AtOption, WideOption, clock_for, console, runtime
from arena.jobs.report import raise_failure
from arena.terminal import TerminalColumn, fitted_table, show

if TYPE_CHECKING:
    from arena.jobs.decide_report import AgentResult, DecideReport


def decide(ctx: typer.Context, at: AtOption = None, wide: WideOption = False) -> None:
    """Run this week's decisions for every agent of the cohorts in the decision window."""
    from rich.progress import Progress

    with runtime(ctx) as jobs, Progress(console=console, transient=True) as progress:
        task = progress.add_task("deciding", total=None)

        def on_progress(result: AgentResult) -> None:
            progress.advance(task)
            progress.update(task, description=f"{result.family_id}: {result.status}")

        report = jobs.decision_run(clock_for(at), on_progress)
    print_report(report, wide)
    raise_failure(report)


RESULT_COLUMNS = [
    TerminalColumn("cohort", lambda r: str(r.cohort_id)),
    TerminalColumn("family", lambda r: r.family_id, numeric=False),
    TerminalColumn(
        "action", lambda r: (r.action or "-") + (" (system)" if r.system_hold else ""), True, False
    ),
    TerminalColumn("trades", lambda r: str(r.trades)),
    TerminalColumn("cost", lambda r: numbers.cost(r.cost_usd), essential=False),
    TerminalColumn("attempts", lambda r: str(r.attempts), essential=False),
    TerminalColumn("status", lambda r: r.describe(), numeric=False),
]


def print_report(report: DecideReport, wide: bool = False) -> None:
    show(console, fitted_table(RESULT_COLUMNS, report.results, wide=wide), wide)
    console.print(report.summary(), markup=False)


def register(app: typer.Typer) -> None:
    app.command("decide")(decide)
