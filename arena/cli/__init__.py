"""The ``arena`` command line (typer). Thin: one command = one call into jobs/ or analytics/.

Each command group lives in its own module exposing ``register(app)``; :data:`COMMAND_MODULES`
lists them. Every error takes the one shape of :mod:`arena.cli.style`: usage and user errors
exit 2; a failed job exits 1, and so does a full disk or a read-only database under a command
that writes, or a database lost in the middle of a command.
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Annotated

import typer

from arena import __version__
from arena.cli.common import AppState
from arena.cli.style import command_group, command_path, fail, fail_usage, usage_hint
from arena.errors import ArenaError, OptionError, UserError

COMMAND_MODULES = [
    "arena.cli.core",
    "arena.cli.markets",
    "arena.cli.jobs",
    "arena.cli.decide",
    "arena.cli.run",
    "arena.cli.analyze",
    "arena.cli.results",
    "arena.cli.publish",
    "arena.cli.demo",
    "arena.cli.serve",
    "arena.cli.verify",
]

app = command_group(
    name="arena", help="Benchmark LLMs as forecasters by paper-trading Polymarket markets."
)


def _version(value: bool) -> None:
    if value:
        print(f"arena {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            metavar="FILE",
            help="Path to config.yaml (default: $ARENA_CONFIG, else ./config.yaml).",
            show_default=False,
        ),
    ] = None,
    json_logs: Annotated[
        bool | None,
        typer.Option("--json-logs/--text-logs", help="Log as JSON lines (default: config)."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Benchmark LLMs as forecasters by paper-trading Polymarket markets."""
    from arena.logs import configure_logging

    app_state = AppState(config_path=config, json_logs=json_logs)
    ctx.obj = app_state
    ctx.call_on_close(app_state.close)
    settings = app_state.settings
    configure_logging(
        settings.logging.level, settings.logging.json_logs if json_logs is None else json_logs
    )


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)


def main(argv: list[str] | None = None) -> None:
    """Console entry point with one error style and the documented exit codes."""
    try:
        _main(argv)
    finally:
        # The interpreter's last collection walks every object the command made, in cycles or
        # not (0.2 to 0.4 s of each exit); what it would free dies with the process anyway.
        # Files, connections and clients are closed by the command itself, not by the GC.
        gc.freeze()


def _main(argv: list[str] | None) -> None:
    try:
        result = app(args=argv, prog_name="arena", standalone_mode=False)
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `arena` or `arena db` alone: the help
            print(exc.format_message(), file=sys.stderr)  # (typer tells it by name, too)
            sys.exit(exc.exit_code)
        fail_usage(exc)
    except OptionError as exc:
        path = command_path(typer.main.get_command(app), sys.argv[1:] if argv is None else argv)
        fail(str(exc), exit_code=2, hint=exc.hint or usage_hint(path))
    except UserError as exc:
        fail(str(exc), exit_code=2, hint=exc.hint)
    except ArenaError as exc:  # JobFailed, StorageFailed and the rest: the job ran and failed
        fail(str(exc), exit_code=1)
    except Exception as exc:
        # A full disk, a read-only database, or the database lost under a running command:
        # nothing was half-written (each job commits in transactions), so one line and exit 1;
        # anything else is a bug and keeps its traceback.
        from arena.store.db import database_unreachable, storage_failure

        failure = storage_failure(exc)
        lost = database_unreachable(exc)
        if failure is None and lost is not None:
            failure = f"{lost} (each job commits whole: run the command again when it is back)"
        if failure is None:
            raise
        fail(failure, exit_code=1)
    sys.exit(result if isinstance(result, int) else 0)
