"""Every table the CLI prints is readable in an 80-column terminal: no cell is cut to "…".

The tables are printed by real ``arena`` processes with ``COLUMNS=80`` on a real demo database
(methodology v2, so the research tables have data; the demo's weeks end before now, so the
commands see all of it); ``--wide`` tables are printed at their natural width and never cut
either.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from rich.console import Console

from arena.cli import decide as decide_cli
from arena.jobs.decide_report import AgentResult, DecideReport
from tests.helpers import cli_env, run_arena

REPO = Path(__file__).resolve().parents[2]
ELLIPSIS = "…"


@dataclass
class Demo:
    directory: Path
    env: dict[str, str]
    output: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    directory = tmp_path_factory.mktemp("fit")
    shutil.copy(REPO / "config.yaml", directory / "config.yaml")
    env = cli_env(COLUMNS="80", LINES="50")
    done = run_arena(
        "demo", "--weeks", "2", "--methodology", "v2", "--out", "out",
        env=env, cwd=directory, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    env = {**env, "ARENA_DATABASE_URL": f"sqlite:///{directory / 'out' / 'demo.db'}"}
    return Demo(directory, env, done.stdout)


def assert_fits(text: str, width: int | None = 80) -> None:
    assert ELLIPSIS not in text, text
    if width is not None:
        too_long = [line for line in text.splitlines() if len(line.rstrip()) > width]
        assert not too_long, "\n".join(too_long)


def test_the_demo_output_fits(demo: Demo) -> None:
    assert "Leaderboard" in demo.output
    assert "Difficulty-adjusted Brier" in demo.output
    # The closing `arena serve` command is printed whole (to be copied), whatever its length.
    lines = demo.output.splitlines()
    assert "arena serve" in lines[-1]
    assert_fits("\n".join(lines[:-1]))
    assert ELLIPSIS not in lines[-1]


COMMANDS = [
    ["leaderboard"],
    ["status"],
    ["families"],
    ["analyze", "ranking"],
    ["analyze", "h2h", "sim-skill-90", "sim-skill-10"],
    ["analyze", "proxy"],
    ["analyze", "calibration"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("wide", [False, True], ids=["default", "wide"])
def test_every_table_fits_80_columns(demo: Demo, command: list[str], wide: bool) -> None:
    args = command + (["--wide"] if wide else [])
    done = run_arena(*args, env=demo.env, cwd=demo.directory)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip()
    # The default view fits 80 columns; --wide is as wide as its columns, and still whole.
    assert_fits(done.stdout, None if wide else 80)


def test_the_decide_summary_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(width=80, record=True, force_terminal=False)
    monkeypatch.setattr(decide_cli, "console", console)
    held = "held by worker-7.example.internal:48213:1795400000.12 until 2026-11-22T00:07:30Z"
    report = DecideReport(
        universe_id=12,
        results=[
            AgentResult(1, 1, "claude-opus-4.5", 10, "completed", "BET", False, 2, 1,
                        Decimal("0.012345")),
            AgentResult(1, 2, "qwen-3-next-80b-a3b-thinking", 11, "held", error=held),
            AgentResult(1, 3, "always-hold", 12, "completed", "HOLD", True, 0, 3),
        ],
    )  # fmt: skip
    decide_cli.print_report(report)
    assert_fits(console.export_text())
