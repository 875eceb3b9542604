"""Every command's ``--help`` reads well in an 80- and a 120-column terminal (issue 23).

Paragraphs are rewrapped to the terminal (never the docstring's own line breaks), nothing is
cut (every paragraph of every help text appears whole), option descriptions get a useful
width, and flags show no type.
"""

from __future__ import annotations

import inspect
import io
import itertools
import re
import sys

import pytest

from arena.cli import app
from arena.cli.style import HELP_MAX_WIDTH
from tests.cli.test_help import all_commands

WIDTHS = (80, 120)
TERM = re.compile(r"^( {2})(\S.*?)( {2,})(\S)")
"""The first line of a definition-list entry: two spaces, the term, 2+ spaces, its text."""


def help_of(path: str, width: int) -> str:
    """``arena PATH --help`` in a terminal ``width`` columns wide. In this process, as the
    real command runs (typer's CliRunner forces every help to 80 columns)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", str(width))
        out = io.StringIO()
        patch.setattr(sys, "stdout", out)
        assert app(args=[*path.split(), "--help"], standalone_mode=False) == 0
    return out.getvalue()


def first_chunk(text: str) -> str:
    """The first piece a greedy wrapper would try to put on the previous line (a word, or
    the part of a hyphenated word up to its hyphen)."""
    match = re.match(r"[^\s-]*[A-Za-z]-(?=[A-Za-z])|\S+", text.strip())
    assert match is not None
    return match.group(0)


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def continuations(output: str) -> list[tuple[str, str]]:
    """Pairs of consecutive lines where the second continues the first's paragraph: in the
    description (before the first section), lines at the same indent; in a section, a line
    indented to the column where the previous line's text starts."""
    pairs = []
    lines = output.splitlines()
    in_section = False
    for above, below in itertools.pairwise(lines[1:]):
        if above and not above.startswith(" "):
            in_section = above.rstrip().endswith(":") or in_section
            continue
        if not above.strip() or not below.strip():
            continue
        if in_section:
            term = TERM.match(above)
            column = term.start(4) if term else indent(above)
        else:
            column = indent(above)
        if indent(below) == column and not below.lstrip().startswith("-"):
            pairs.append((above, below))
    return pairs


def paragraphs(text: str | None) -> list[str]:
    """A help text's paragraphs, each without whitespace (so wrapping does not matter)."""
    cleaned = inspect.cleandoc(text or "").partition("\f")[0].replace("\b", "")
    return ["".join(p.split()) for p in cleaned.split("\n\n") if p.strip()]


def examples(text: str | None) -> list[str]:
    """The lines of a help text's verbatim blocks (a paragraph that starts with ``\\b``)."""
    cleaned = inspect.cleandoc(text or "")
    blocks = [p for p in cleaned.split("\n\n") if p.startswith("\b")]
    return [line for block in blocks for line in block.splitlines()[1:]]


@pytest.mark.parametrize("width", WIDTHS)
def test_help_paragraphs_wrap_to_the_terminal(width: int) -> None:
    """No line of a help paragraph ends early where the next word would still have fit:
    the docstrings' own line breaks are gone, and the width is the terminal's."""
    limit = min(width, HELP_MAX_WIDTH) - 2  # click leaves a margin of 2
    early = []
    for path, command in [("", None), *all_commands()]:
        output = help_of(path, width)
        verbatim = {line.strip() for line in examples(command.help if command else None)}
        for above, below in continuations(output):
            if below.strip() in verbatim:
                continue
            if len(above.rstrip()) + 1 + len(first_chunk(below)) <= limit:
                early.append(f"arena {path} --help:\n{above}\n{below}")
        assert all(len(line) <= width for line in output.splitlines()), output
    assert not early, "\n\n".join(early)


@pytest.mark.parametrize("width", WIDTHS)
def test_help_is_never_cut(width: int) -> None:
    """Every paragraph of every command's help, and every option's help, is printed whole
    (Typer's panels cut ``--at``'s example to ``2026-11-22T00:05:0…``)."""
    for path, command in [("", None), *all_commands()]:
        output = help_of(path, width)
        assert "…" not in output, output
        assert not re.search(r"[│╭╰─]", output), output
        whole = "".join(output.split())
        texts = [] if command is None else [command.help]
        texts += [] if command is None else [p.help for p in command.params]
        for text in texts:
            for paragraph in paragraphs(text):
                assert paragraph in whole, f"arena {path} --help cuts:\n{paragraph}\n{output}"
        if command is not None and any("--at" in p.opts for p in command.params):
            assert "2026-11-22T00:05:00Z" in output


def option_entries(output: str) -> list[str]:
    lines = output.splitlines()
    start = lines.index("Options:")
    return [line for line in lines[start + 1 :] if TERM.match(line)]


def test_option_descriptions_get_room_at_80_columns() -> None:
    """``analyze ranking --help`` gave its descriptions about 20 columns: every command's
    option descriptions now start by column 40 of 80 (they get at least 38 columns)."""
    for path, command in all_commands():
        if hasattr(command, "commands"):
            continue
        output = help_of(path, 80)
        entries = option_entries(output)
        options = [p for p in command.params if p.param_type_name == "option"]
        assert len(entries) == len(options) + 1, output  # and --help
        for entry in entries:
            term = TERM.match(entry)
            assert term is not None
            assert term.start(4) <= 40, f"arena {path} --help:\n{entry}"


def test_flags_show_no_type() -> None:
    """A flag is written as itself (``--wide``, ``--weights / --no-weights``), never typed
    ``<bool>``; a value shows what to write (``--pair A,B``, ``--at TIMESTAMP``)."""
    for path, _command in all_commands():
        output = help_of(path, 80)
        assert "<bool>" not in output, output
    ranking = help_of("analyze ranking", 80)
    assert re.search(r"^  --weights / --no-weights  ", ranking, re.MULTILINE), ranking
    assert re.search(r"^  --wide  ", ranking, re.MULTILINE), ranking
    assert "  --pair A,B  " in help_of("analyze report", 80)
    assert "  --at TIMESTAMP  " in ranking


@pytest.mark.parametrize("width", WIDTHS)
def test_examples_are_printed_as_written(width: int) -> None:
    """An example (a ``\\b`` block) is printed line for line, indented as written, never
    rewrapped or cut; a few commands have one."""
    shown = 0
    for path, command in all_commands():
        lines = help_of(path, width).splitlines()
        for line in examples(command.help):
            assert f"  {line}" in lines, f"arena {path} --help:\n{line}"
            shown += 1
    assert shown >= 3
