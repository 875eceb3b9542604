"""Options with a fixed set of values: the help lists what the command takes, and anything
else is one line naming them, exit code 2 (``cli.common.one_of``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli import app
from arena.errors import UserError
from tests.helpers import write_config

runner = CliRunner()


@pytest.mark.parametrize(
    ("command", "formats"),
    [
        (["status"], "table or json"),
        (["families"], "table or json"),
        (["analyze", "ranking"], "table, json or csv"),
        (["analyze", "market"], "table, json or csv"),
        (["analyze", "report"], "table, json or csv"),
        (["leaderboard"], "table, json or csv"),
    ],
)
def test_the_help_offers_only_the_formats_the_command_takes(
    command: list[str], formats: str
) -> None:
    shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0
    assert f"Output format: {formats}." in shown.output


@pytest.mark.parametrize(
    ("command", "refusal"),
    [
        (["status", "--format", "csv"], "--format: 'csv' is not one of table, json"),
        (["families", "--format", "csv"], "--format: 'csv' is not one of table, json"),
        (["leaderboard", "--format", "xml"], "--format: 'xml' is not one of table, json, csv"),
        (["analyze", "ranking", "--by", "week"], "--by: 'week' is not one of family, agent"),
        (
            ["analyze", "ranking", "--format", "xml"],
            "--format: 'xml' is not one of table, json, csv",
        ),
        (["analyze", "power", "--format", "xml"], "--format: 'xml' is not one of table, json, csv"),
        (["analyze", "h2h", "a", "b", "--score", "x"], "--score: 'x' is not one of log, brier"),
    ],
)
def test_a_value_outside_the_choices_is_one_line_and_exit_2(
    tmp_path: Path, command: list[str], refusal: str
) -> None:
    config = write_config(tmp_path / "c.yaml", f"sqlite:///{tmp_path / 'a.db'}")
    done = runner.invoke(app, ["--config", str(config), *command])
    assert isinstance(done.exception, UserError)  # arena.cli.main: one line, exit code 2
    assert str(done.exception) == refusal
