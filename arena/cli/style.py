"""How every command looks: its help, and the one shape of its errors.

Help is click's plain help, not Typer's boxed Rich panels: paragraphs are rewrapped to the
terminal (up to :data:`HELP_MAX_WIDTH` columns), a paragraph that starts with ``\\b`` on its
own line (an example) is printed as written, flags show no type, and nothing is ever cut to an
ellipsis (Typer's panels kept the docstring's line breaks, typed flags ``<bool>`` and cut
long words).

Every error is one line on stderr, ``arena: error: ...`` (usage or configuration, exit 2) or
``arena: failed: ...`` (the job ran and failed, exit 1), optionally followed by one line
``arena: hint: ...`` saying what to do about it. Usage errors found by click (an unknown
option, a missing value) take the same shape as arena's own.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

HELP_MAX_WIDTH = 120
"""Help wraps to the terminal, but never wider than this (long lines are hard to read)."""

PROGRAM = "arena"


class ArenaGroup(TyperGroup):
    """A command group whose command list shows each command's first sentence whole,
    wrapped to the terminal (click cuts it to fit one line with "...")."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def command_group(**settings: Any) -> typer.Typer:
    """A typer app (the root or a command group) in the house style: plain click help."""
    return typer.Typer(
        cls=ArenaGroup,
        rich_markup_mode=None,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        context_settings={"max_content_width": HELP_MAX_WIDTH},
        **settings,
    )


def fail(message: str, *, exit_code: int, hint: str | None = None) -> NoReturn:
    """Print ``message`` (and ``hint``) in the one error shape and exit with ``exit_code``:
    2 for usage and configuration errors, 1 for a job that ran and failed."""
    kind = "error" if exit_code == 2 else "failed"
    lines = [f"{PROGRAM}: {kind}: {message}"]
    if hint:
        lines.append(f"{PROGRAM}: hint: {hint}")
    print("\n".join(lines), file=sys.stderr)
    sys.exit(exit_code)


def usage_hint(command_path: str) -> str:
    """The hint of every usage error: where the command's usage is shown."""
    return f"`{command_path} --help` shows the usage"


def fail_usage(exc: typer.TyperException) -> NoReturn:
    """A usage error click found (an unknown option, a missing or invalid value)."""
    ctx = getattr(exc, "ctx", None)
    message = " ".join(exc.format_message().split())
    fail(message, exit_code=exc.exit_code, hint=usage_hint(ctx.command_path if ctx else PROGRAM))


def command_path(root: Any, args: Sequence[str]) -> str:
    """``arena analyze ranking``: the (sub)command that ``args`` run, found by walking the
    command tree from ``root`` through the words of ``args`` that name a command."""
    words, command = [PROGRAM], root
    for word in args:
        subcommand = getattr(command, "commands", {}).get(word)
        if subcommand is not None:
            words.append(word)
            command = subcommand
    return " ".join(words)
