"""Terminal tables that fit an 80-column terminal.

A table is a list of :class:`TerminalColumn` over rows. The default view keeps the essential
columns, chosen so that a typical table fits 80 columns; ``--wide`` shows every column and
``--format json`` every field. A cell that still does not fit folds onto a second line: no
cell is ever cut to an ellipsis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table


@dataclass(frozen=True)
class TerminalColumn:
    """One column of a terminal table: its header and how a row's cell is written."""

    header: str
    cell: Callable[[Any], str]
    essential: bool = True
    numeric: bool = True  # right-aligned


def fitted_table(
    columns: Sequence[TerminalColumn],
    rows: Iterable[Any],
    *,
    wide: bool = False,
    title: str | None = None,
    caption: str | None = None,
    row_style: Callable[[Any], str | None] | None = None,
) -> Table:
    """A rich table of ``rows``: the essential columns, or all of them when ``wide``."""
    shown = [c for c in columns if wide or c.essential]
    table = Table(
        title=title,
        caption=caption,
        title_justify="left",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for column in shown:
        table.add_column(
            column.header, justify="right" if column.numeric else "left", overflow="fold"
        )
    for row in rows:
        table.add_row(
            *(column.cell(row) for column in shown),
            style=row_style(row) if row_style else None,
        )
    return table


def show(console: Console, table: Table, wide: bool = False) -> None:
    """Print ``table``; a ``--wide`` table is printed at its natural width, however wide, so
    its rows never fold (use a wide terminal, or ``less -S``)."""
    if not wide:
        console.print(table)
        return
    natural = Measurement.get(console, console.options.update_width(10_000), table).maximum
    saved = console.width
    console.width = max(saved, natural)
    try:
        console.print(table)
    finally:
        console.width = saved


def text_column(header: str, key: str, essential: bool = True) -> TerminalColumn:
    """A left-aligned column showing ``row[key]`` ("-" when missing)."""
    return TerminalColumn(
        header, lambda row: "-" if row[key] is None else str(row[key]), essential, False
    )
