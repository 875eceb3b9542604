"""Results commands: ``arena leaderboard`` and ``arena export`` (one call into analytics/export)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arena.analytics.leaderboard_columns import (
    COST_COLUMN,
    EXECUTION_COLUMNS,
    LEADERBOARD_COLUMNS,
    RELIABILITY_COLUMNS,
    LeaderboardColumn,
)
from arena.cli.common import (
    FormatOption,
    WideOption,
    console,
    ids_in_range,
    one_of,
    parse_at,
    state,
)
from arena.cli.composed import with_options
from arena.cli.where import WhereFlags, ledger_scope, say_scope
from arena.export import FORMATS
from arena.terminal import TerminalColumn, fitted_table, show, text_column

if TYPE_CHECKING:
    from arena.analytics.leaderboard import FamilyStanding

LEADERBOARD_FORMATS = ("table", "json", "csv")


@with_options(WhereFlags, "fmt", "cohort", "wide", "category", "horizon", "track")
def leaderboard(
    ctx: typer.Context,
    where: WhereFlags,
    fmt: FormatOption = "table",
    cohort: Annotated[
        int | None,
        typer.Option(
            "--cohort",
            metavar="N",
            help="Standings within one cohort (default: across cohorts).",
            show_default=False,
            callback=ids_in_range("--cohort"),
        ),
    ] = None,
    wide: WideOption = False,
) -> None:
    """Standings per model family: track, value, P/L, Brier and skill, cost and reliability."""
    one_of("--format", fmt, LEADERBOARD_FORMATS)
    from arena.analytics.leaderboard import compute_leaderboard, to_json, write_csv
    from arena.domain.tracks import check_track

    check_track(where.track)
    app_state = state(ctx)
    minimum = app_state.settings.benchmark.min_scored_bets
    scope = ledger_scope(ctx, where.category, where.horizon)
    standings = compute_leaderboard(
        app_state.reader(),
        cohort_id=cohort,
        min_scored_bets=minimum,
        scope=scope,
        track=where.track,
    )
    if fmt == "table":
        say_scope(scope)
    if fmt == "json":
        typer.echo(json.dumps(to_json(standings), indent=2))
    elif fmt == "csv":
        write_csv(standings, sys.stdout)
    else:
        print_leaderboard(standings, cohort, minimum, wide)


def _stat(column: LeaderboardColumn, wide: bool) -> TerminalColumn:
    """A terminal column of the one leaderboard table (the full header with ``--wide``)."""
    header = column.header if wide else column.short_header
    return TerminalColumn(header, lambda row: column.text(row[column.field]), column.essential)


def standing_columns(wide: bool) -> list[TerminalColumn]:
    """Rank and family, then the standings' statistics; the bands with ``--wide``."""
    return [
        TerminalColumn("#", lambda r: str(r["rank"])),
        TerminalColumn(
            "family", lambda r: r["family_id"] + (" *" if r["provisional"] else ""), numeric=False
        ),
        text_column("display name", "display_name", essential=False),
        text_column("track", "track", essential=False),
        TerminalColumn("cohorts", lambda r: str(r["cohorts"]), essential=False),
        *(_stat(column, wide) for column in LEADERBOARD_COLUMNS if column is not COST_COLUMN),
        text_column("return band", "return_band", essential=False),
        text_column("Brier band", "brier_band", essential=False),
    ]


def cost_columns(wide: bool) -> list[TerminalColumn]:
    """Family, spend, then the reliability statistics."""
    family = TerminalColumn("family", lambda r: r["family_id"], numeric=False)
    spend = replace(_stat(COST_COLUMN, wide), essential=True)
    return [family, spend, *(_stat(column, wide) for column in RELIABILITY_COLUMNS)]


def execution_columns(wide: bool) -> list[TerminalColumn]:
    """Family, then how its orders filled against the order book."""
    family = TerminalColumn("family", lambda r: r["family_id"], numeric=False)
    return [family, *(_stat(column, wide) for column in EXECUTION_COLUMNS)]


def print_leaderboard(
    standings: list[FamilyStanding], cohort: int | None, minimum: int, wide: bool = False
) -> None:
    scope = f"cohort {cohort}" if cohort is not None else "all cohorts"
    if not standings:
        console.print(f"leaderboard ({scope}): no agents yet")
        return
    rows = [{**s.to_json(), "rank": rank} for rank, s in enumerate(standings, start=1)]
    title = f"Leaderboard ({scope})"
    show(console, fitted_table(standing_columns(wide), rows, wide=wide, title=title), wide)
    costs = fitted_table(cost_columns(wide), rows, wide=wide, title="Cost and reliability")
    show(console, costs, wide)
    booked = [row for row in rows if row["fill_ratio"] is not None]
    if booked:  # mode book: how the family's orders filled against the order book
        title = "Execution (order book; slippage vs the mid)"
        execution = fitted_table(execution_columns(wide), booked, wide=wide, title=title)
        show(console, execution, wide)
    if any(row["provisional"] for row in rows):
        console.print(f"* provisional: fewer than {minimum} scored bets")
    if not wide:
        console.print("(--wide: every column; --format json: every field)")


@dataclass(frozen=True)
class ExportOptions:
    """The options of ``arena export``."""

    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="DIR", help="Directory to write the files into.")
    ]
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-f", metavar="FORMAT", help="File format: jsonl, csv or parquet."
        ),
    ] = "jsonl"
    cohort: Annotated[
        list[int] | None,
        typer.Option(
            "--cohort",
            metavar="N",
            help="Only this cohort (repeat for several).",
            show_default=False,
            callback=ids_in_range("--cohort"),
        ),
    ] = None
    family: Annotated[
        list[str] | None,
        typer.Option(
            "--family",
            metavar="ID",
            help="Only this family id (repeat for several).",
            show_default=False,
        ),
    ] = None
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="TIMESTAMP",
            help="Rows at or after this time (ISO 8601, UTC).",
            show_default=False,
        ),
    ] = None
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TIMESTAMP",
            help="Rows before this time (ISO 8601, UTC).",
            show_default=False,
        ),
    ] = None
    no_prompts: Annotated[
        bool,
        typer.Option("--no-prompts", help="Leave out the attempts' prompts and raw responses."),
    ] = False
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite", help="Replace the whole export already in --out (default: refuse)."
        ),
    ] = False


@with_options(ExportOptions)
def export_command(ctx: typer.Context, options: ExportOptions) -> None:
    """Research export: one file per table plus manifest.json (see docs/EXPORT_SCHEMA.md).

    \b
    Example (one cohort as Parquet, into a new directory):
      arena export --out exports/cohort-12 --format parquet --cohort 12
    """
    fmt = one_of("--format", options.fmt, FORMATS)
    from arena.export.spec import ExportFilters
    from arena.export.writer import ExportTarget, export  # pyarrow loads only for this command

    app_state = state(ctx)
    manifest = export(
        app_state.reader(),
        ExportTarget(options.out, fmt, overwrite=options.overwrite),
        ExportFilters(
            cohorts=tuple(options.cohort) if options.cohort else None,
            families=tuple(options.family) if options.family else None,
            since=_time(options.since, "--since"),
            until=_time(options.until, "--until"),
        ),
        include_prompts=not options.no_prompts,
        methodology=app_state.settings.methodology,
    )
    counts = ", ".join(f"{f.table} {f.rows}" for f in manifest.files)
    total = sum(f.rows for f in manifest.files)
    console.print(f"exported {total} rows in {len(manifest.files)} {fmt} files to {options.out}")
    console.print(counts, soft_wrap=True)


def _time(text: str | None, option: str) -> Any:
    if text is None:
        return None
    return parse_at(text, option)


def register(app: typer.Typer) -> None:
    app.command("leaderboard")(leaderboard)
    app.command("export")(export_command)
