"""Job commands: ``arena snapshot`` and ``arena resolve``: the daemon's jobs, run once."""

from __future__ import annotations

from typing import Annotated

import typer

from arena.cli.common import AtOption, clock_for, console, runtime
from arena.errors import JobFailed


def snapshot(
    ctx: typer.Context,
    at: AtOption = None,
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh/--no-refresh",
            help="Refresh held markets' prices from Gamma first (default) or value at the "
            "stored marks.",
        ),
    ] = True,
) -> None:
    """Value every agent of every unfinished cohort and store one snapshot for this slot."""
    with runtime(ctx) as jobs:
        report = jobs.take_snapshots(clock_for(at), refresh)
    console.print(report.summary())


def resolve(ctx: typer.Context, at: AtOption = None) -> None:
    """Settle the positions of markets Gamma reports resolved (or refund overdue ones), then
    complete the cohorts that have nothing left to do (as the daemon's resolution job does)."""
    with runtime(ctx) as jobs:
        report = jobs.settle(clock_for(at))
    console.print(report.summary())
    if report.failures:
        raise JobFailed(
            f"resolve: {len(report.failures)} market(s) failed to settle: "
            + "; ".join(report.failures[:5])
        )


def register(app: typer.Typer) -> None:
    app.command("snapshot")(snapshot)
    app.command("resolve")(resolve)
