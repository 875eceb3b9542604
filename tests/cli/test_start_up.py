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


def test_loading_for_good_pauses_the_collector_and_freezes_what_was_made() -> None:
    code = (
        "import gc\n"
        "from arena.startup import loading_for_good\n"
        "gc.unfreeze()\n"
        "try:\n"
        "    with loading_for_good():\n"
        "        paused = not gc.isenabled()\n"
        "        made = [[n] for n in range(1000)]\n"
        "        raise KeyError\n"
        "except KeyError:\n"
        "    pass\n"
        "print(paused, gc.isenabled(), gc.get_freeze_count() >= 1000)\n"
    )
    assert python_prints(code) == ["True True True"]  # resumed even when the block failed


def test_a_decision_run_loads_the_log_renderer_ahead_on_a_thread() -> None:
    code = (
        "import sys, threading\n"
        "from arena.logs import load_renderer_in_background\n"
        "print('structlog' in sys.modules)\n"
        "load_renderer_in_background()\n"
        "[t.join() for t in threading.enumerate() if t.name == 'load-structlog']\n"
        "print('structlog' in sys.modules)\n"
        "load_renderer_in_background()\n"  # loaded: no thread
        "print(any(t.name == 'load-structlog' for t in threading.enumerate()))\n"
    )
    assert python_prints(code) == ["False", "True", "False"]
