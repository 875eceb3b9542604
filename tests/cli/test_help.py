"""Every command has help text and is documented in the README (sqlite-utils' habit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer.main

from arena.cli import app

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _is_group(command: Any) -> bool:
    return hasattr(command, "commands")


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix}{name}"
        found.append((path, command))
        if _is_group(command):
            found.extend(_commands(command, path + " "))
    return found


def all_commands() -> list[tuple[str, Any]]:
    """Every (sub)command of the real app, found through typer's click command tree."""
    root = typer.main.get_command(app)
    assert _is_group(root)
    return _commands(root)


def test_there_are_commands() -> None:
    names = {name for name, _ in all_commands()}
    assert {"db upgrade", "cohort start", "families"} <= names


def test_every_command_has_help() -> None:
    for name, command in all_commands():
        assert (command.help or "").strip(), f"arena {name} has no help text"
        for param in command.params:
            if param.param_type_name == "option" and not getattr(param, "hidden", False):
                assert (param.help or "").strip(), f"arena {name} {param.opts} has no help"


def test_every_command_is_in_the_readme() -> None:
    for name, command in all_commands():
        if _is_group(command):
            continue
        assert f"arena {name}" in README, f"`arena {name}` is not documented in README.md"
