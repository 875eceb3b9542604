"""Job commands: ``arena snapshot``, ``arena settle`` (alias ``arena resolve``) and
``arena record commit``: the daemon's jobs, run once."""

from __future__ import annotations

from typing import Annotated

import typer

from arena.cli.common import AtOption, clock_for, console, runtime
from arena.cli.style import command_group
from arena.jobs.report import raise_failure

record_app = command_group(help="The verifiable record: its chain and commitments.")


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


@record_app.command("commit")
def record_commit(ctx: typer.Context, at: AtOption = None) -> None:
    """Commit the record chain's head (signed with ARENA_SIGNING_KEY when set) if it moved, and
    send every commitment not yet delivered to the configured anchors (as the daemon does
    hourly and after each decision run). Exit 1 when an anchor failed; the commitment is
    kept and the delivery retried by the next run."""
    with runtime(ctx) as jobs:
        report = jobs.commitment(clock_for(at))
    console.print(report.summary(), markup=False)
    raise_failure(report)


def register(app: typer.Typer) -> None:
    app.add_typer(record_app, name="record")
    app.command("snapshot")(snapshot)
    app.command("settle")(settle)
    # The interface contract's name for `arena settle`: the same command, listed as its alias.
    app.command("resolve", help="Alias of `arena settle` (the interface contract's name).")(settle)
