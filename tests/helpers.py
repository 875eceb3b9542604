"""Small helpers shared by tests: config files and running the real CLI in subprocesses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

SEVEN_FAMILIES: list[dict[str, Any]] = [
    {
        "id": "gpt-5.1",
        "display_name": "GPT-5.2",
        "provider": "OpenAI",
        "openrouter_id": "openai/gpt-5.2",
    },
    {
        "id": "claude-opus-4.5",
        "display_name": "Claude Opus 4.5",
        "provider": "Anthropic",
        "openrouter_id": "anthropic/claude-opus-4.5",
    },
    {
        "id": "grok-4",
        "display_name": "Grok 4.1",
        "provider": "xAI",
        "openrouter_id": "x-ai/grok-4.1-fast",
    },
    {
        "id": "qwen-3-next",
        "display_name": "Qwen 3",
        "provider": "Alibaba",
        "openrouter_id": "qwen/qwen3-235b-a22b-2507",
    },
    {"id": "market-follower", "kind": "baseline", "strategy": "market-follower"},
    {"id": "always-hold", "kind": "baseline", "strategy": "always-hold"},
    {"id": "random-bettor", "kind": "baseline", "strategy": "random", "seed": 7},
]


def write_config(path: Path, database_url: str, **extra: Any) -> Path:
    """Write a config.yaml for tests and return its path."""
    data: dict[str, Any] = {"database_url": database_url, "families": SEVEN_FAMILIES}
    data.update(extra)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def cli_env(**overrides: str) -> dict[str, str]:
    # ARENA_BENCHMARK__PRICING stays: the suite runs mode gamma unless a test asks for book
    # (tests/conftest.py), in the processes it starts too.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ARENA_") or k == "ARENA_BENCHMARK__PRICING"
    }
    env.pop("OPENROUTER_API_KEY", None)
    env.update(overrides)
    return env


def run_arena(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m arena ARGS`` in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "arena", *args],
        capture_output=True,
        text=True,
        env=env or cli_env(),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def start_arena(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "arena", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or cli_env(),
        cwd=cwd,
    )


def python_prints(code: str) -> list[str]:
    """The lines a fresh Python process running ``code`` prints (for what a process imports
    or how it starts, which this one has long settled)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (bound, then closed again): to serve on,
    or to point a client at for a refused connection."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


WEEK_FAMILIES = [
    {"id": "sim-a", "display_name": "A", "openrouter_id": "sim/a"},
    {"id": "market-follower", "kind": "baseline", "strategy": "market-follower"},
    {"id": "always-hold", "kind": "baseline", "strategy": "always-hold"},
]
"""A model and two baselines: the families of the catch-up and decision-slot simulations."""


@contextmanager
def week_simulation(url: str, factory: Any, config: Path, sunday: datetime) -> Iterator[Any]:
    """A simulated arena of :data:`WEEK_FAMILIES` on the database at ``url``, its world built
    from the Saturday before ``sunday`` for two weeks (60 markets)."""
    from arena.config import load_settings
    from arena.demo_world import Simulation, WorldPlan

    write_config(config, url, families=WEEK_FAMILIES)
    simulation = Simulation(
        load_settings(config), factory, WorldPlan(sunday - timedelta(days=1), 14, n_markets=60)
    )
    try:
        yield simulation
    finally:
        simulation.close()
