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
from arena.terminal import TerminalColumn, fitted_table, show
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
    ["analyze", "trend"],
    ["analyze", "market"],
    ["analyze", "power"],
    ["analyze", "report", "--format", "table"],
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


def test_families_at_80_columns_keep_every_identifier_whole(tmp_path: Path) -> None:
    """``arena families`` at 80 columns split words ("OPENROUTER_API_KE" / "Y",
    "google/gemini-3-p" / "ro-preview"): every id, model id and the key's name is whole."""
    import yaml

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    done = run_arena(
        "--config", str(REPO / "config.yaml"), "families", env=cli_env(COLUMNS="80"), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert_fits(done.stdout)
    words = set(done.stdout.split())
    for family in config["families"]:
        assert family["id"] in words, done.stdout
        if "openrouter_id" in family:
            assert family["openrouter_id"] in words, done.stdout
    assert "OPENROUTER_API_KEY" in words
    assert not (tmp_path / "arena.db").exists()


def test_a_table_too_wide_for_its_words_leaves_columns_out() -> None:
    """When even each column's longest word does not fit, the widest columns are left out
    (and named), never an identifier split in the middle."""
    columns = [
        TerminalColumn("id", lambda r: r[0], numeric=False),
        TerminalColumn("model", lambda r: r[1], numeric=False),
        TerminalColumn("ready", lambda r: r[2], numeric=False),
    ]
    rows = [("family-one", "vendor/a-very-long-model-identifier-2026-preview", "yes")]
    console = Console(width=40, record=True, force_terminal=False)
    show(console, fitted_table(columns, rows))
    text = console.export_text()
    assert_fits(text, 40)
    assert "family-one" in text.split() and "yes" in text.split()
    assert "vendor/a-very" not in text  # not folded into pieces either
    assert "left out to fit 40 columns: model; --wide shows every column" in " ".join(text.split())
