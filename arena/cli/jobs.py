"""Job commands: ``arena snapshot`` and ``arena resolve`` (one call into arena/jobs each)."""

from __future__ import annotations

from typing import Annotated

import typer

from arena.cli.common import AtOption, clock_for, console, state
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
    from arena.jobs.snapshots import take_snapshots
    from arena.sources.gamma import GammaClient

    app_state = state(ctx)
    settings = app_state.settings
    factory = app_state.factory()
    if refresh:
        with GammaClient(settings.polymarket) as gamma:
            report = take_snapshots(factory, settings, clock_for(at), gamma)
    else:
        report = take_snapshots(factory, settings, clock_for(at))
    console.print(report.summary())


def resolve(ctx: typer.Context, at: AtOption = None) -> None:
    """Settle the positions of markets Gamma reports resolved (or refund overdue ones)."""
    from arena.jobs.settle import resolve_markets
    from arena.sources.gamma import GammaClient

    app_state = state(ctx)
    settings = app_state.settings
    factory = app_state.factory()
    with GammaClient(settings.polymarket) as gamma:
        report = resolve_markets(factory, settings, clock_for(at), gamma)
    console.print(report.summary())
    if report.failures:
        raise JobFailed(
            f"resolve: {len(report.failures)} market(s) failed to settle: "
            + "; ".join(report.failures[:5])
        )


def register(app: typer.Typer) -> None:
    app.command("snapshot")(snapshot)
    app.command("resolve")(resolve)
