"""A command that takes its options as one value (:func:`arena.cli.composed.with_options`):
the command line lists the options in the order given, the command receives one value with
the shared options and its own parameters beside it, and a layout that forgets a parameter
fails at import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from arena.cli.composed import with_options

Loud = Annotated[bool, typer.Option("--loud", help="Shout.")]
Times = Annotated[int, typer.Option("--times", min=1, help="How often.")]


@dataclass(frozen=True)
class Shared:
    loud: Loud = False
    times: Times = 1


def test_the_command_gets_one_value_and_its_own_parameters() -> None:
    app = typer.Typer()
    seen: list[tuple[Shared, str, str]] = []

    @app.command()
    @with_options(Shared, "name", "times", "greeting")
    def greet(
        ctx: typer.Context,
        shared: Shared,
        name: Annotated[str, typer.Argument(help="Who.")],
        greeting: Annotated[str, typer.Option("--greeting", help="What.")] = "hi",
    ) -> None:
        """Greet someone."""
        seen.append((shared, name, greeting))

    runner = CliRunner()
    result = runner.invoke(app, ["ada", "--times", "3", "--greeting", "hello"])
    assert result.exit_code == 0, result.output
    assert seen == [(Shared(loud=False, times=3), "ada", "hello")]  # --loud: not offered
    help_text = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "Greet someone." in help_text
    assert "--loud" not in help_text
    assert help_text.index("--times") < help_text.index("--greeting")
    assert runner.invoke(app, ["ada", "--times", "0"]).exit_code == 2  # typer checks min=1


def test_a_layout_must_name_every_own_parameter_and_only_known_names() -> None:
    def command(ctx: typer.Context, shared: Shared, own: int = 0) -> None:
        """A command."""

    with pytest.raises(TypeError, match="own"):
        with_options(Shared, "loud")(command)
    with pytest.raises(TypeError, match="nope"):
        with_options(Shared, "own", "nope")(command)
