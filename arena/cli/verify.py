"""``arena verify DIR``: check a published dataset, with no database (one call into publish)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arena.cli.common import VIEW_FORMATS, ViewFormatOption, WideOption, console, one_of
from arena.errors import UserError
from arena.numbers import count
from arena.terminal import TerminalColumn, fitted_table, show, text_column

if TYPE_CHECKING:
    from arena.publish.findings import Verification

FAILURE_COLUMNS = [
    text_column("check", "check"),
    text_column("table", "table"),
    text_column("row", "row"),
    text_column("detail", "detail"),
]


def verify(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The dataset `arena publish` wrote.")
    ],
    fmt: ViewFormatOption = "table",
    wide: WideOption = False,
) -> None:
    """Check a published dataset: files, records, chain, commitments, timing, leaderboard.

    Needs no database. Exits 0 when everything holds, 1 otherwise, naming each failing
    check, table and row.
    """
    one_of("--format", fmt, VIEW_FORMATS)
    from arena.publish.layout import MANIFEST
    from arena.publish.verify import verify_dataset

    if not (directory / MANIFEST).is_file():
        raise UserError(f"{directory}: no {MANIFEST} (not a dataset `arena publish` wrote)")

    result = verify_dataset(directory)
    if fmt == "json":
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        print_verification(result, directory, wide)
    raise typer.Exit(0 if result.ok else 1)


def print_verification(result: Verification, directory: Path, wide: bool) -> None:
    counts = [{"what": name.replace("_", " "), "n": n} for name, n in sorted(result.counts.items())]
    columns = [text_column("counted", "what"), TerminalColumn("n", lambda r: count(r["n"]))]
    show(console, fitted_table(columns, counts, wide=wide, title=f"Verified {directory}"), wide)
    for note in result.notes:
        console.print(note, markup=False, soft_wrap=True)
    if result.ok:
        console.print("everything holds", markup=False)
        return
    rows = [failure.to_json() for failure in result.failures]
    title = f"{count(len(rows))} failures"
    show(console, fitted_table(FAILURE_COLUMNS, rows, wide=wide, title=title), wide)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify)
