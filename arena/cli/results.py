"""Results commands: ``arena leaderboard`` and ``arena export`` (one call into analytics/export)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arena.cli.common import (
    FormatOption,
    WideOption,
    console,
    ids_in_range,
    parse_at,
    state,
)
from arena.errors import UserError
from arena.terminal import Column, dollars, fitted_table, fixed, percent, show, text_column

if TYPE_CHECKING:
    from arena.analytics.leaderboard import FamilyStanding

LEADERBOARD_FORMATS = ("table", "json", "csv")
EXPORT_FORMATS = ("jsonl", "csv", "parquet")


def leaderboard(
    ctx: typer.Context,
    fmt: FormatOption = "table",
    cohort: Annotated[
        int | None,
        typer.Option(
            "--cohort",
            help="Standings within one cohort (default: across cohorts).",
            show_default=False,
            callback=ids_in_range("--cohort"),
        ),
    ] = None,
    wide: WideOption = False,
) -> None:
    """Standings per model family: value, P/L, Brier and skill, cost and reliability."""
    if fmt not in LEADERBOARD_FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(LEADERBOARD_FORMATS)}")
    from arena.analytics.leaderboard import compute_leaderboard, to_json, write_csv

    app_state = state(ctx)
    minimum = app_state.settings.benchmark.min_scored_bets
    standings = compute_leaderboard(app_state.reader(), cohort_id=cohort, min_scored_bets=minimum)
    if fmt == "json":
        typer.echo(json.dumps(to_json(standings), indent=2))
    elif fmt == "csv":
        write_csv(standings, sys.stdout)
    else:
        print_leaderboard(standings, cohort, minimum, wide)


def _scaled(share: float | None) -> float | None:
    return None if share is None else share * 100


STANDING_COLUMNS = [
    Column("#", lambda r: str(r["rank"])),
    Column("family", lambda r: r["family_id"] + (" *" if r["provisional"] else ""), numeric=False),
    text_column("display name", "display_name", essential=False),
    Column("cohorts", lambda r: str(r["cohorts"]), essential=False),
    Column("value", lambda r: dollars(r["total_value"])),
    Column("P/L", lambda r: dollars(r["pnl"], signed=True)),
    Column("return", lambda r: percent(r["return_pct"])),
    text_column("return band", "return_band", essential=False),
    Column("Brier", lambda r: fixed(r["brier"])),
    text_column("Brier band", "brier_band", essential=False),
    Column("BSS vs 0.25", lambda r: fixed(r["bss_uniform"], 3, signed=True), essential=False),
    Column("BSS vs mkt", lambda r: fixed(r["bss_market"], 3, signed=True), essential=False),
    Column("bets", lambda r: str(r["scored_bets"])),
    Column("win rate", lambda r: percent(_scaled(r["win_rate"]), signed=False, digits=0), False),
]

COST_COLUMNS = [
    Column("family", lambda r: r["family_id"], numeric=False),
    Column("cost USD", lambda r: f"{float(r['cost_usd']):,.4f}"),
    Column("prompt tok", lambda r: f"{r['prompt_tokens']:,}", essential=False),
    Column("compl. tok", lambda r: f"{r['completion_tokens']:,}", essential=False),
    Column("decisions", lambda r: str(r["decisions"])),
    Column("attempts", lambda r: str(r["attempts"]), essential=False),
    Column("malformed", lambda r: percent(_scaled(r["malformed_share"]), signed=False, digits=1)),
    Column("sys HOLD", lambda r: str(r["system_holds"])),
    Column("failed calls", lambda r: str(r["failures"])),
    Column("retries", lambda r: str(r["retries"]), essential=False),
    Column("failed dec.", lambda r: str(r["failed_decisions"]), essential=False),
]

EXECUTION_COLUMNS = [
    Column("family", lambda r: r["family_id"], numeric=False),
    Column("P/L at exit", lambda r: "-" if r["exit_pnl"] is None else dollars(r["exit_pnl"], True)),
    Column("slip bps", lambda r: fixed(r["slippage_mid_bps"], 1)),
    Column("fees USD", lambda r: f"{float(r['fees_usd']):,.2f}"),
    Column("fill", lambda r: percent(_scaled(r["fill_ratio"]), signed=False, digits=0)),
    Column("refused", lambda r: str(r["liquidity_refusals"])),
]


def print_leaderboard(
    standings: list[FamilyStanding], cohort: int | None, minimum: int, wide: bool = False
) -> None:
    scope = f"cohort {cohort}" if cohort is not None else "all cohorts"
    if not standings:
        console.print(f"leaderboard ({scope}): no agents yet")
        return
    rows = [{**s.to_json(), "rank": rank} for rank, s in enumerate(standings, start=1)]
    title = f"Leaderboard ({scope})"
    show(console, fitted_table(STANDING_COLUMNS, rows, wide=wide, title=title), wide)
    show(console, fitted_table(COST_COLUMNS, rows, wide=wide, title="Cost and reliability"), wide)
    booked = [row for row in rows if row["fill_ratio"] is not None]
    if booked:  # mode book: how the family's orders filled against the order book
        title = "Execution (order book; slippage vs the mid)"
        show(console, fitted_table(EXECUTION_COLUMNS, booked, wide=wide, title=title), wide)
    if any(row["provisional"] for row in rows):
        console.print(f"* provisional: fewer than {minimum} scored bets")
    if not wide:
        console.print("(--wide: every column; --format json: every field)")


def export_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the files into.")],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="File format: jsonl, csv or parquet.")
    ] = "jsonl",
    cohort: Annotated[
        list[int] | None,
        typer.Option(
            "--cohort",
            help="Only this cohort (repeat for several).",
            show_default=False,
            callback=ids_in_range("--cohort"),
        ),
    ] = None,
    family: Annotated[
        list[str] | None,
        typer.Option(
            "--family", help="Only this family id (repeat for several).", show_default=False
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Rows at or after this time (ISO 8601, UTC).", show_default=False
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", help="Rows before this time (ISO 8601, UTC).", show_default=False),
    ] = None,
    no_prompts: Annotated[
        bool,
        typer.Option("--no-prompts", help="Leave out the attempts' prompts and raw responses."),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite", help="Replace the whole export already in --out (default: refuse)."
        ),
    ] = False,
) -> None:
    """Research export: one file per table plus manifest.json (see docs/EXPORT_SCHEMA.md)."""
    if fmt not in EXPORT_FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    from arena.export.spec import ExportFilters
    from arena.export.writer import ExportTarget, export  # pyarrow loads only for this command

    app_state = state(ctx)
    manifest = export(
        app_state.reader(),
        ExportTarget(out, fmt, overwrite=overwrite),
        ExportFilters(
            cohorts=tuple(cohort) if cohort else None,
            families=tuple(family) if family else None,
            since=_time(since, "--since"),
            until=_time(until, "--until"),
        ),
        include_prompts=not no_prompts,
        methodology=app_state.settings.methodology,
    )
    counts = ", ".join(f"{f.table} {f.rows}" for f in manifest.files)
    total = sum(f.rows for f in manifest.files)
    console.print(f"exported {total} rows in {len(manifest.files)} {fmt} files to {out}")
    console.print(counts, soft_wrap=True)


def _time(text: str | None, option: str) -> Any:
    if text is None:
        return None
    return parse_at(text, option)


def register(app: typer.Typer) -> None:
    app.command("leaderboard")(leaderboard)
    app.command("export")(export_command)
