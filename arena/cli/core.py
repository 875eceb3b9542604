"""Core commands: database migrations, cohorts, families."""

from __future__ import annotations

import json
from typing import NoReturn

import typer

from arena.cli.common import (
    VIEW_FORMATS,
    AtOption,
    ViewFormatOption,
    WideOption,
    clock_for,
    console,
    one_of,
    runtime,
    state,
)
from arena.cli.style import command_group
from arena.domain.states import FamilyKind
from arena.errors import ConfigError
from arena.jobs.report import raise_failure
from arena.masking import mask_url
from arena.terminal import TerminalColumn, fitted_table, show

db_app = command_group(help="Database maintenance.")
cohort_app = command_group(help="Weekly cohorts.")


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Apply database migrations up to the latest revision (safe to run concurrently), then
    chain what is stored and not yet in the record chain (marked "chained after the fact")."""
    from arena.store.db import current_revision, upgrade

    app_state = state(ctx)
    upgrade(app_state.engine)
    console.print(f"database at revision {current_revision(app_state.engine)}")
    from arena.clock import SystemClock
    from arena.record.chain import chain_backlog

    chained = chain_backlog(app_state.factory(migrate=False), SystemClock().now())
    if chained:
        console.print(
            f"record chain: {chained} records stored before the chain existed were chained "
            "after the fact"
        )


@cohort_app.command("start")
def cohort_start(ctx: typer.Context, at: AtOption = None) -> None:
    """Create this week's cohort with one agent per active family (no-op if it exists)."""
    with runtime(ctx) as jobs:
        report = jobs.cohort_start(clock_for(at))
    console.print(report.summary())
    raise_failure(report)


NEEDS_KEY = "needs OPENROUTER_API_KEY"
"""A model family's readiness without the key (as ``--format json`` says it)."""
NO_KEY = "no key"
"""The same in the table, with the key named below it: a cell that short leaves the model
ids room to stay whole at 80 columns."""
NEEDS_SECRET = "needs {}"
"""An outside agent's readiness while the variable its ``secret_env`` names is unset."""
NO_SECRET = "no secret"
"""The same in the table (the variables named below it)."""


def _ready_cell(family: dict[str, object]) -> str:
    ready = str(family["ready"])
    if ready == NEEDS_KEY:
        return NO_KEY
    return NO_SECRET if ready.startswith("needs ") else ready


FAMILY_COLUMNS = [
    TerminalColumn("id", lambda f: f["id"], numeric=False),
    TerminalColumn("kind", lambda f: f["kind"], numeric=False),
    TerminalColumn("display name", lambda f: f["display_name"], essential=False, numeric=False),
    TerminalColumn("model / strategy", lambda f: f["target"], numeric=False),
    TerminalColumn("active", lambda f: "yes" if f["active"] else "no", numeric=False),
    TerminalColumn("ready", _ready_cell, numeric=False),
]


def families(ctx: typer.Context, fmt: ViewFormatOption = "table", wide: WideOption = False) -> None:
    """List the configured model families and whether they can run."""
    one_of("--format", fmt, VIEW_FORMATS)
    from arena.config import openrouter_api_key

    settings = state(ctx).settings
    if not settings.families:
        _no_families(state(ctx).config_path)
    has_key = openrouter_api_key() is not None
    rows = []
    for family in settings.families:
        if family.kind == FamilyKind.BASELINE:
            target, ready = f"strategy {family.strategy}", "yes"
        elif family.kind == FamilyKind.AGENT:
            target = mask_url(str(family.endpoint))
            ready = "yes" if family.secret() is not None else NEEDS_SECRET.format(family.secret_env)
        else:
            target = family.openrouter_id or ""
            ready = "yes" if has_key else NEEDS_KEY
        rows.append(
            {
                "id": family.id,
                "kind": family.kind,
                "display_name": family.display_name or family.id,
                "target": target,
                "active": family.active,
                "ready": ready if family.active else "-",
            }
        )
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    show(console, fitted_table(FAMILY_COLUMNS, rows, wide=wide), wide)
    active = len(settings.active_families)
    console.print(f"{len(settings.families)} families configured, {active} active")
    if any(row["ready"] == NEEDS_KEY for row in rows):
        console.print(f"{NO_KEY}: set OPENROUTER_API_KEY in the environment to run them")
    unset = [
        str(row["ready"]).removeprefix("needs ") for row in rows if _ready_cell(row) == NO_SECRET
    ]
    if unset:
        names = ", ".join(sorted(set(unset)))
        console.print(f"{NO_SECRET}: set {names} in the environment to run those outside agents")


def _no_families(explicit: str | None) -> NoReturn:
    """No family configured: say which config file was read (or that none was)."""
    from arena.config import NO_CONFIG_FILE, resolve_config_path

    path = resolve_config_path(explicit)
    read = f"{path} lists none" if path is not None else f"no config file ({NO_CONFIG_FILE})"
    raise ConfigError(
        f"families: no family configured: {read}",
        hint="list them under `families:` in config.yaml (the repository's config.yaml has "
        "the reference lineup); --config FILE or ARENA_CONFIG chooses the file",
    )


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
    app.add_typer(cohort_app, name="cohort")
    app.command("families")(families)
