"""``arena decide``: this week's decisions for every agent in the decision window."""

from __future__ import annotations

import typer
from rich.progress import Progress
from rich.table import Table

from arena.cli.common import AtOption, clock_for, console, state
from arena.errors import JobFailed
from arena.jobs.budget import Budget
from arena.jobs.decide import AgentResult, DecideReport, DecisionRun
from arena.jobs.universe import freeze_universe
from arena.sources.registry import ProviderRegistry


def decide(ctx: typer.Context, at: AtOption = None) -> None:
    """Run this week's decisions for every agent of the cohorts in the decision window."""
    app_state = state(ctx)
    settings = app_state.settings
    factory = app_state.factory()
    clock = clock_for(at)
    registry = ProviderRegistry(settings)
    budget = Budget(
        settings.budget, registry.worst_case, rounds=settings.benchmark.malformed_retries + 1
    )
    try:
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("deciding", total=None)

            def on_progress(result: AgentResult) -> None:
                progress.advance(task)
                progress.update(task, description=f"{result.family_id}: {result.status}")

            run = DecisionRun(
                factory,
                settings,
                clock,
                registry.for_agent,
                lambda cohort_ids: freeze_universe(factory, settings, clock.now(), cohort_ids),
                budget=budget,
                on_progress=on_progress,
            )
            report = run.run()
    finally:
        registry.close()
    print_report(report)
    if report.failed:
        raise JobFailed(report.aborted or "one or more agents ended in a failure state")


def print_report(report: DecideReport) -> None:
    table = Table("cohort", "family", "action", "trades", "cost (USD)", "attempts", "status")
    for r in report.results:
        action = (r.action or "-") + (" (system)" if r.system_hold else "")
        table.add_row(
            str(r.cohort_id),
            r.family_id,
            action,
            str(r.trades),
            f"{r.cost_usd:.6f}",
            str(r.attempts),
            r.status + (f": {r.error[:60]}" if r.error else ""),
        )
    console.print(table)
    done = sum(1 for r in report.results if r.status == "completed")
    console.print(
        f"{done} decided, {len(report.results) - done} not (universe {report.universe_id})"
    )
    if report.aborted:
        console.print(f"[red]run aborted[/red]: {report.aborted}")


def register(app: typer.Typer) -> None:
    app.command("decide")(decide)
