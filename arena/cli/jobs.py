"""Job commands: ``arena snapshot`` and ``arena settle`` (alias ``arena resolve``): the
daemon's jobs, run once."""

from __future__ import annotations

from typing import Annotated

import typer

from arena.cli.common import AtOption, clock_for, console, runtime
from arena.jobs.report import raise_failure


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
        report = jobs.snapshot(clock_for(at), refresh)
    console.print(report.summary())
    raise_failure(report)


def settle(ctx: typer.Context, at: AtOption = None) -> None:
    """Settle the positions of markets Gamma reports resolved (or refund overdue ones), then
    complete the cohorts that have nothing left to do (as the daemon's settlement job does).
    Exit 1 when a market failed to settle."""
    with runtime(ctx) as jobs:
        report = jobs.settlement(clock_for(at))
    console.print(report.summary())
    raise_failure(report)


def register(app: typer.Typer) -> None:
    app.command("snapshot")(snapshot)
    app.command("settle")(settle)
    # The interface contract's name for `arena settle`: the same command, listed as its alias.
    app.command("resolve", help="Alias of `arena settle` (the interface contract's name).")(settle)
