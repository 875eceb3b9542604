"""Results commands: ``arena leaderboard`` and ``arena export`` (one call into analytics/export)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from arena.analytics.leaderboard import FamilyStanding, compute_leaderboard, to_json, write_csv
from arena.cli.common import FormatOption, console, parse_at, state
from arena.errors import UserError

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
        ),
    ] = None,
) -> None:
    """Standings per model family: value, P/L, Brier and skill, cost and reliability."""
    if fmt not in LEADERBOARD_FORMATS:
        raise UserError(f"--format: {fmt!r} is not one of {', '.join(LEADERBOARD_FORMATS)}")
    app_state = state(ctx)
    minimum = app_state.settings.benchmark.min_scored_bets
    standings = compute_leaderboard(app_state.reader(), cohort_id=cohort, min_scored_bets=minimum)
    if fmt == "json":
        typer.echo(json.dumps(to_json(standings), indent=2))
    elif fmt == "csv":
        write_csv(standings, sys.stdout)
    else:
        print_leaderboard(standings, cohort, minimum)


def print_leaderboard(standings: list[FamilyStanding], cohort: int | None, minimum: int) -> None:
    scope = f"cohort {cohort}" if cohort is not None else "all cohorts"
    if not standings:
        console.print(f"leaderboard ({scope}): no agents yet")
        return
    rows = [standing.to_json() for standing in standings]
    table = Table(title=f"Leaderboard ({scope})", title_justify="left")
    for header in (
        "#",
        "family",
        "cohorts",
        "total value",
        "P/L",
        "return",
        "Brier",
        "BSS vs 0.25",
        "BSS vs market",
        "scored bets",
        "win rate",
    ):
        table.add_column(header, justify="left" if header == "family" else "right")
    for rank, row in enumerate(rows, start=1):
        mark = " *" if row["provisional"] else ""
        table.add_row(
            str(rank),
            f"{row['display_name']}{mark}",
            str(row["cohorts"]),
            _dollars(row["total_value"]),
            _dollars(row["pnl"], signed=True),
            _with_band(_percent(row["return_pct"]), row["return_band"]),
            _with_band(_fixed(row["brier"]), row["brier_band"]),
            _fixed(row["bss_uniform"], signed=True),
            _fixed(row["bss_market"], signed=True),
            str(row["scored_bets"]),
            _percent(None if row["win_rate"] is None else row["win_rate"] * 100, signed=False),
        )
    console.print(table)
    costs = Table(title="Cost and reliability", title_justify="left")
    for header in (
        "family",
        "cost (USD)",
        "prompt tokens",
        "completion tokens",
        "decisions",
        "attempts",
        "malformed",
        "system HOLDs",
        "failed calls",
        "retries",
        "failed decisions",
    ):
        costs.add_column(header, justify="left" if header == "family" else "right")
    for row in rows:
        share = row["malformed_share"]
        costs.add_row(
            row["display_name"],
            f"{float(row['cost_usd']):,.4f}",
            f"{row['prompt_tokens']:,}",
            f"{row['completion_tokens']:,}",
            str(row["decisions"]),
            str(row["attempts"]),
            "-" if share is None else f"{share * 100:.1f}%",
            str(row["system_holds"]),
            str(row["failures"]),
            str(row["retries"]),
            str(row["failed_decisions"]),
        )
    console.print(costs)
    if any(row["provisional"] for row in rows):
        console.print(f"* provisional: fewer than {minimum} scored bets")


def _dollars(text: str, signed: bool = False) -> str:
    value = float(text)
    sign = "+" if signed and value > 0 else ("-" if value < 0 else "")
    return f"{sign}${abs(value):,.2f}"


def _percent(value: Any, signed: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}%" if signed else f"{value:.1f}%"


def _fixed(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.4f}"


def _with_band(text: str, band: str | None) -> str:
    return text if band is None else f"{text} ({band})"


def export_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the files into.")],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="File format: jsonl, csv or parquet.")
    ] = "jsonl",
    cohort: Annotated[
        list[int] | None,
        typer.Option("--cohort", help="Only this cohort (repeat for several).", show_default=False),
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
    from arena.export import export  # pyarrow loads only for this command

    app_state = state(ctx)
    manifest = export(
        app_state.reader(),
        out,
        fmt,
        cohorts=cohort or None,
        families=family or None,
        since=_time(since, "--since"),
        until=_time(until, "--until"),
        include_prompts=not no_prompts,
        methodology=app_state.settings.methodology,
        overwrite=overwrite,
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
