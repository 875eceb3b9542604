"""Job commands: ``arena snapshot`` and ``arena resolve`` (one call into arena/jobs each)."""

from __future__ import annotations

from typing import Annotated

import typer

from arena.cli.common import AtOption, clock_for, console, err_console, state
from arena.errors import JobFailed
from arena.jobs.settle import resolve_markets
from arena.jobs.snapshots import take_snapshots
from arena.sources.gamma import GammaClient


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
    app_state = state(ctx)
    settings = app_state.settings
    factory = app_state.factory()
    if refresh:
        with GammaClient(settings.polymarket) as gamma:
            report = take_snapshots(factory, settings, clock_for(at), gamma)
    else:
        report = take_snapshots(factory, settings, clock_for(at))
    if report.refresh_error:
        err_console.print(
            f"warning: price refresh failed, valued at last marks: {report.refresh_error}"
        )
    refreshed = (
        ""
        if report.refreshed_markets is None
        else (f", {report.refreshed_markets} markets refreshed")
    )
    console.print(
        f"snapshot {report.taken_at.isoformat().replace('+00:00', 'Z')}: "
        f"{report.written} written, {report.agents - report.written} already there, "
        f"{report.positions} open positions{refreshed}"
    )


def resolve(ctx: typer.Context, at: AtOption = None) -> None:
    """Settle the positions of markets Gamma reports resolved (or refund overdue ones)."""
    app_state = state(ctx)
    settings = app_state.settings
    factory = app_state.factory()
    with GammaClient(settings.polymarket) as gamma:
        report = resolve_markets(factory, settings, clock_for(at), gamma)
    console.print(
        f"resolve: {report.checked} markets checked, {report.resolved} resolved, "
        f"{report.voided} void, {report.cancelled} cancelled, {report.waiting} waiting"
        f" ({len(report.gone)} gone from Gamma); {report.positions_settled} positions settled,"
        f" payout ${report.payout}, {report.brier_rows} Brier rows"
    )
    if report.failures:
        raise JobFailed(
            f"resolve: {len(report.failures)} market(s) failed to settle: "
            + "; ".join(report.failures[:5])
        )


def register(app: typer.Typer) -> None:
    app.command("snapshot")(snapshot)
    app.command("resolve")(resolve)
