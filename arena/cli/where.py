"""``--category``, ``--horizon`` and ``--track``: the options that restrict a result to the
markets of one category or one horizon bucket, or to the forecasters of one track (``arena
leaderboard`` and every ``arena analyze`` command)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arena.cli.common import console, state

if TYPE_CHECKING:
    from datetime import datetime

    from arena.analytics.ledger_breakdown import Scope
    from arena.analytics.records import Forecasts

CategoryOption = Annotated[
    str | None,
    typer.Option(
        "--category",
        metavar="NAME",
        help='Only markets of this category ("other": markets with none).',
        show_default=False,
    ),
]
HorizonOption = Annotated[
    str | None,
    typer.Option(
        "--horizon",
        metavar="le7|8to30|gt30",
        help="Only decisions this far from their market's resolution (days; unresolved: "
        "its scheduled end).",
        show_default=False,
    ),
]

TrackOption = Annotated[
    str | None,
    typer.Option(
        "--track",
        metavar="TRACK",
        help="Only forecasters of this track (compared separately): model (language models "
        "without tools), web (with web search), agent (outside agents) or baseline.",
        show_default=False,
    ),
]


@dataclass(frozen=True)
class WhereFlags:
    """``--category``, ``--horizon`` and ``--track`` as one value (``arena leaderboard``)."""

    category: CategoryOption = None
    horizon: HorizonOption = None
    track: TrackOption = None


def ledger_scope(ctx: typer.Context, category: str | None, horizon: str | None) -> Scope:
    """The checked scope on the configured database (an unknown category: a usage error
    listing the known ones)."""
    from arena.analytics.ledger_breakdown import checked_scope

    with state(ctx).reader()() as session:
        return checked_scope(session, category, horizon)


def scoped_forecasts(
    forecasts: Forecasts,
    category: str | None,
    horizon: str | None,
    as_of: datetime | None,
    checked: bool = False,
) -> Forecasts:
    """The forecasts in the category and horizon bucket (each None: all); ``checked``: the
    category was checked against the markets already."""
    if category is None and horizon is None:
        return forecasts
    from arena.analytics.groups import restrict

    return restrict(forecasts, category=category, horizon=horizon, as_of=as_of, checked=checked)


def say_scope(scope: Any) -> None:
    """One line saying what a restricted leaderboard counts."""
    if scope:
        parts = [f"category {scope.category}" if scope.category else "", scope.horizon or ""]
        console.print(
            f"restricted to {', '.join(p for p in parts if p)}: money and scores of the "
            "matching positions and bets (starting balance = their cost)",
            markup=False,
        )
