"""How the ``arena`` command starts (issue 27's start-up): the CLI loads with the garbage
collector paused, and what it loaded is frozen out of later collections."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import python_prints


def test_the_command_loads_with_the_collector_paused_then_running() -> None:
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print(gc.isenabled(), gc.get_freeze_count() > 10000))\n"
        "sys.argv = ['arena', '--version']\n"
        "from arena.__main__ import run\n"
        "run()\n"
    )
    shown = python_prints(code)
    assert shown[0].startswith("arena ")
    assert shown[1] == "True True"  # collecting again, the CLI's own objects frozen


def test_python_m_arena_is_the_same_command() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "arena", "--version"], capture_output=True, text=True, check=True
    )
    assert shown.stdout.startswith("arena ")
