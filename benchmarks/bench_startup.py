"""Start-up time of the ``arena`` command, measured as whole processes.

Run: .venv/bin/python benchmarks/bench_startup.py [--runs 7] [--smoke]

Prints the minimum and median wall time of ``import arena.cli``, ``arena --help`` and
``arena status`` (on an empty SQLite database, made by ``arena db upgrade`` first, not counted:
``arena status`` only reads, so it never creates one).
Targets on the reference machine (2 cores): ``arena --help`` at most 0.3 s, ``arena status`` at
most 0.6 s. arena is byte-compiled first, as an installed package is (``installed.py``). A busy
machine gives larger numbers: quote medians measured on a quiet one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from installed import byte_compile_arena

TARGETS = {"arena --help": 0.3, "arena status": 0.6}


def timed(command: list[str], env: dict[str, str], cwd: str, runs: int) -> list[float]:
    subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True)  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    byte_compile_arena()  # as an installed arena is (benchmarks/installed.py)
    arena = str(Path(sys.executable).with_name("arena"))
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "ARENA_DATABASE_URL": f"sqlite:///{scratch}/empty.db"}
        env.pop("ARENA_CONFIG", None)
        subprocess.run(
            [arena, "db", "upgrade"], env=env, cwd=scratch, check=True, capture_output=True
        )
        commands = {
            "import arena.cli": [sys.executable, "-c", "import arena.cli"],
            "arena --help": [arena, "--help"],
            "arena status": [arena, "status"],
        }
        print(f"{'command':18} {'min s':>7} {'median s':>9} {'target s':>9}  ({args.runs} runs)")
        for name, command in commands.items():
            times = timed(command, env, scratch, args.runs)
            target = TARGETS.get(name)
            print(
                f"{name:18} {min(times):7.3f} {statistics.median(times):9.3f} "
                f"{'-' if target is None else f'{target:.1f}':>9}"
            )


if __name__ == "__main__":
    main()
