"""Time and memory of the difficulty-adjusted Brier fit at benchmark scale.

1,000 forecasters x 50,000 questions with 2,000,000 forecasts, drawn as seed 000's
round-based tournament with drift (50 weekly rounds of 1,000 fresh questions, 40 forecasters
per round, half of them staying for the next round, so that all 1,000 take part). Prints, for

* the fit alone (integer ids in, adjusted scores out; exact least squares by the Schur
  complement, and by LSMR for comparison),
* the whole leaderboard from forecast rows (question index, panel, weights, fit, per-forecaster
  t intervals; one bootstrap resample, the least the report takes),

the wall and CPU time (best of ``--repeat`` runs, without tracing; CPU time is the fairer
figure on a busy machine) and the peak of traced Python/numpy allocations (tracemalloc, a
separate run), plus the process's peak RSS.

Run: ``.venv/bin/python benchmarks/bench_difficulty_fit.py [--smoke]``
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from arena.analytics.difficulty import Cells, difficulty_adjusted
from arena.analytics.report import AnalysisOptions, ranking
from arena.analytics.synthetic_tournament import TournamentDesign, simulate_tournament

# the tournament measured, and the smoke CI runs (20 forecasters x 1,000 questions)
BENCHMARK = {
    "n_forecasters": 1000,
    "n_questions": 50_000,
    "n_rounds": 50,
    "questions_per_round": 1000,
    "forecasters_per_round": 40,
}
SMOKE = {
    "n_forecasters": 20,
    "n_questions": 1000,
    "n_rounds": 10,
    "questions_per_round": 100,
    "forecasters_per_round": 10,
}


def measure(label: str, work: Callable[[], Any], repeat: int) -> Any:
    """Print best wall time over ``repeat`` runs and the traced peak of one more run."""
    best = best_cpu = float("inf")
    result = None
    for _ in range(repeat):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = work()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    gc.collect()
    tracemalloc.start()
    work()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"{label:<46} wall {best:6.2f} s  cpu {best_cpu:6.2f} s  "
        f"peak traced {peak / 2**20:7.1f} MiB"
    )
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per measurement")
    parser.add_argument("--seed", type=int, default=0, help="simulation seed")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args(argv)

    start = time.perf_counter()
    if args.smoke:
        args.repeat = 1
    design = TournamentDesign(
        **(SMOKE if args.smoke else BENCHMARK),
        persistence=0.5,
    )
    sim = simulate_tournament(args.seed, design)
    brier = (sim.probability - sim.outcome[sim.question]) ** 2
    market_brier = (sim.market_probability - sim.outcome) ** 2
    n_present = len(np.unique(sim.forecaster))
    print(
        f"simulated {len(brier):,} forecasts, {n_present:,} of {sim.n_forecasters:,} "
        f"forecasters active, {sim.n_questions:,} questions "
        f"({time.perf_counter() - start:.1f} s)"
    )

    def fit(method: str, weight: float) -> Callable[[], Any]:
        return lambda: difficulty_adjusted(
            Cells(sim.forecaster, sim.question, brier, sim.n_forecasters, sim.n_questions),
            market_brier=market_brier,
            market_weight=weight,
            method=method,
        )

    schur = measure("fit, Schur complement (w = 0, pure OLS)", fit("schur", 0.0), args.repeat)
    measure("fit, Schur complement (w = 1, market)", fit("schur", 1.0), args.repeat)
    lsmr = measure("fit, LSMR on the sparse design (w = 0)", fit("lsmr", 0.0), 1)
    gap = np.nanmax(np.abs(schur.adjusted - lsmr.adjusted))
    print(f"max |Schur - LSMR| adjusted score: {gap:.2e}; components: {schur.n_components}")

    start = time.perf_counter()
    forecasts = sim.to_forecasts()
    print(f"built forecast rows ({time.perf_counter() - start:.1f} s)")
    options = AnalysisOptions(bootstrap_resamples=1)
    report = measure(
        "leaderboard from forecast rows (1 resample)",
        lambda: ranking(forecasts, options),
        args.repeat,
    )
    print(f"leaderboard rows: {len(report['rows'])}")
    scale = 1 if sys.platform == "darwin" else 1024
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    print(f"process peak RSS: {peak_rss / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
