"""Core commands: database migrations, cohorts, families."""

from __future__ import annotations

import typer
from rich.table import Table

from arena.cli.common import AtOption, clock_for, console, state
from arena.config import openrouter_api_key
from arena.jobs.cohorts import start_cohort
from arena.store.db import current_revision, upgrade

db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
cohort_app = typer.Typer(help="Weekly cohorts.", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Apply database migrations up to the latest revision (safe to run concurrently)."""
    app_state = state(ctx)
    upgrade(app_state.engine)
    console.print(f"database at revision {current_revision(app_state.engine)}")


@cohort_app.command("start")
def cohort_start(ctx: typer.Context, at: AtOption = None) -> None:
    """Create this week's cohort with one agent per active family (no-op if it exists)."""
    app_state = state(ctx)
    report = start_cohort(app_state.factory(), app_state.settings, clock_for(at))
    verb = "created" if report.created else "already exists:"
    console.print(
        f"cohort {report.cohort_id} {verb} week starting "
        f"{report.week_start.isoformat().replace('+00:00', 'Z')}, {report.agents} agents"
    )


def families(ctx: typer.Context) -> None:
    """List the configured model families and whether they can run."""
    settings = state(ctx).settings
    has_key = openrouter_api_key() is not None
    table = Table("id", "kind", "display name", "model / strategy", "active", "ready")
    for family in settings.families:
        if family.kind == "baseline":
            target, ready = f"strategy {family.strategy}", "yes"
        else:
            target = family.openrouter_id
            ready = "yes" if has_key else "needs OPENROUTER_API_KEY"
        table.add_row(
            family.id,
            family.kind,
            family.display_name or family.id,
            target or "",
            "yes" if family.active else "no",
            ready if family.active else "-",
        )
    console.print(table)
    active = len(settings.active_families)
    console.print(f"{len(settings.families)} families configured, {active} active")


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
    app.add_typer(cohort_app, name="cohort")
    app.command("families")(families)
