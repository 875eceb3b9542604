"""``arena decide``: this week's decisions for every agent in the decision window.

Exactly what the daemon does at its decision-run slot (:meth:`arena.runtime.Runtime.decide`):
sync the markets from Gamma, freeze a fresh universe, decide agent after agent. Exit 0 only
when every decision is final when it exits; otherwise each unfinished one is listed with its
reason or holder, and the exit code is 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from arena.cli.common import AtOption, WideOption, clock_for, console, runtime
from arena.domain.states import DecisionStatus
from arena.errors import JobFailed
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

        report = jobs.decide(clock_for(at), on_progress)
    print_report(report, wide)
    if report.failed:
        raise JobFailed(report.aborted or f"{len(report.unfinished)} decision(s) not final")


RESULT_COLUMNS = [
    TerminalColumn("cohort", lambda r: str(r.cohort_id)),
    TerminalColumn("family", lambda r: r.family_id, numeric=False),
    TerminalColumn(
        "action", lambda r: (r.action or "-") + (" (system)" if r.system_hold else ""), True, False
    ),
    TerminalColumn("trades", lambda r: str(r.trades)),
    TerminalColumn("cost USD", lambda r: f"{r.cost_usd:.6f}", essential=False),
    TerminalColumn("attempts", lambda r: str(r.attempts), essential=False),
    TerminalColumn("status", lambda r: r.describe(), numeric=False),
]


def print_report(report: DecideReport, wide: bool = False) -> None:
    show(console, fitted_table(RESULT_COLUMNS, report.results, wide=wide), wide)
    done = sum(1 for r in report.results if r.status == DecisionStatus.COMPLETED)
    final = sum(1 for r in report.results if r.final) - done
    console.print(
        f"{done} completed, {final} already final, {len(report.unfinished)} unfinished "
        f"(universe {report.universe_id})"
    )
    for r in report.unfinished:
        console.print(f"  unfinished: {r.family_id} (agent {r.agent_id}): {r.describe()}")
    if report.aborted:
        console.print(f"[red]run refused[/red]: {report.aborted}")


def register(app: typer.Typer) -> None:
    app.command("decide")(decide)
