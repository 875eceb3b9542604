"""Market commands: ``arena markets sync``, the daemon's market sync run once."""

from __future__ import annotations

import typer

from arena.cli.common import AtOption, clock_for, console, err_console, runtime
from arena.cli.style import command_group
from arena.jobs.report import raise_failure

markets_app = command_group(help="Polymarket markets.")


@markets_app.command("sync")
def sync(ctx: typer.Context, at: AtOption = None) -> None:
    """Pull the top-N Gamma universe and refresh prices of markets with open positions."""
    with runtime(ctx) as jobs:
        report = jobs.market_sync(clock_for(at))
    console.print(report.summary(), soft_wrap=True, markup=False)
    if not report.complete:
        err_console.print(
            f"warning: only {report.listed} of {report.universe_size} universe markets listed",
            soft_wrap=True,
            markup=False,
        )
    for market_id, reason in report.parse_errors[:10]:
        err_console.print(
            f"warning: skipped unparseable market {market_id}: {reason}",
            soft_wrap=True,
            markup=False,
        )
    raise_failure(report)


def register(app: typer.Typer) -> None:
    app.add_typer(markets_app, name="markets")
