"""Does "weeks to separate" predict the weeks it takes? Simulated tournaments with known gaps.

``arena analyze power`` (:func:`arena.analytics.report.power`) tells a reader, for each pair of
neighbours in the ranking, how many weeks in all give 80% power to separate them (their
difference's 95% cluster-robust interval excludes 0). This benchmark checks that promise:

1. a **pilot** tournament of ``--pilot`` weeks (the arena's design: ``bench_coverage.simulate``,
   weekly panels of 20 questions, repeats with persistent errors, event groups, missing
   forecasts) with two forecasters whose noise levels differ by a known amount, so the true
   Brier gap is known;
2. arena's ``power`` report on the pilot predicts the weeks needed in all (``weeks_needed``);
3. a **fresh** tournament of exactly that many weeks (same design, a new seed) is drawn, and
   :func:`arena.analytics.report.difference` says whether the pair separated, the better
   forecaster ahead.

If the prediction is right, about 80% of the fresh tournaments separate. Pilots that already
separate (0 more weeks) or whose gap is "not separable" (over 520 weeks in all) get no
prediction to check; they are counted apart. The table also shows, per gap, the *oracle*
number of weeks (the same formula with the true gap and the true per-week variance, from
``--oracle`` tournaments of ``ORACLE_WEEKS`` weeks) and the share that separate at it: that
isolates the formula (the se scaling with weeks) from the noise of a prediction made on a short
pilot (whose estimated gap is noisy, and whose power is then not 80% even when the formula is
exact).

The prediction uses only the t interval's ``delta`` and ``se`` (no bootstrap), so the benchmark
resamples only ``RESAMPLES`` times, which changes nothing it measures.

Run: ``.venv/bin/python benchmarks/bench_power.py [--tournaments N] [--seed S] [--smoke]``
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np
from scipy import stats

from arena.analytics.report import AnalysisOptions, difference, power, prepare

RESAMPLES = 20
PILOT_WEEKS = 8
ORACLE_WEEKS = 200
# pairs of noise levels in log-odds (lower is better): true Brier gaps of about 0.03 to 0.05
PAIRS = ((0.6, 1.3), (0.3, 1.2), (0.3, 1.3))
NAMES = ("better", "worse")


def _coverage_bench() -> ModuleType:
    """``bench_coverage.py`` (its simulation and oracle), loaded from beside this file."""
    path = Path(__file__).resolve().parent / "bench_coverage.py"
    spec = importlib.util.spec_from_file_location("bench_coverage", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_coverage", module)
    spec.loader.exec_module(module)
    return module


@dataclass
class Row:
    """One gap's tally."""

    sigmas: tuple[float, float]
    gap: float
    oracle_weeks: int | None = None
    oracle_separated: list[bool] = field(default_factory=list)
    predicted: list[int] = field(default_factory=list)
    separated: list[bool] = field(default_factory=list)
    wrong_way: int = 0
    already: int = 0
    not_separable: int = 0
    insufficient: int = 0


def _separated(bench: ModuleType, seed: int, weeks: int, sigmas: tuple[float, float],
               options: AnalysisOptions) -> tuple[bool, bool]:  # fmt: skip
    """(separated with the better one ahead, separated the wrong way) on a fresh tournament."""
    data = bench.simulate(seed, weeks=weeks, sigmas=sigmas, names=NAMES)
    diff = difference(data, NAMES[0], NAMES[1], options)
    if diff["status"] != "ok":
        return False, False
    return bool(diff["ci_high"] < 0), bool(diff["ci_low"] > 0)


def _per_week_variance(bench: ModuleType, seed: int, sigmas: tuple[float, float],
                       options: AnalysisOptions, count: int, weeks: int) -> float:  # fmt: skip
    """The true per-week variance of the pair's difference, ``W * se^2`` averaged over ``count``
    tournaments of ``weeks`` weeks: fed with the true gap into the formula of ``power``, it
    gives the oracle's weeks."""
    per_week = []
    for k in range(count):
        data = bench.simulate(seed + k, weeks=weeks, sigmas=sigmas, names=NAMES)
        diff = difference(data, NAMES[0], NAMES[1], options)
        per_week.append(diff["weeks_seen"] * diff["se"] ** 2)
    return float(np.mean(per_week))


def run(
    tournaments: int,
    seed: int,
    oracle_count: int,
    pilot_weeks: int,
    oracle_weeks: int = ORACLE_WEEKS,
) -> list[Row]:
    """Pilot, predict and check every gap of :data:`PAIRS` (module docstring)."""
    bench = _coverage_bench()
    options = AnalysisOptions(bootstrap_resamples=RESAMPLES, seed=seed, min_questions=1)
    rows = []
    for p, sigmas in enumerate(PAIRS):
        truth = bench.oracle(400_000, sigmas=sigmas)
        gap = float(truth.brier[1] - truth.brier[0])
        row = Row(sigmas, gap)
        base = seed * 1_000_003 + p * 100_000
        variance = _per_week_variance(
            bench, base + 90_000, sigmas, options, oracle_count, oracle_weeks
        )
        factor = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
        row.oracle_weeks = math.ceil(variance * (factor / gap) ** 2)
        for k in range(tournaments):
            pilot = bench.simulate(base + k, weeks=pilot_weeks, sigmas=sigmas, names=NAMES)
            pairs = power(pilot, options, prepare(pilot, options))["rows"]
            if not pairs or pairs[0]["verdict"] == "insufficient":
                row.insufficient += 1
                continue
            found = pairs[0]
            if found["separated"]:
                row.already += 1
                continue
            if found["weeks_needed"] is None:
                row.not_separable += 1
                continue
            weeks = int(found["weeks_needed"])
            row.predicted.append(weeks)
            right, wrong = _separated(bench, base + 50_000 + k, weeks, sigmas, options)
            row.separated.append(right)
            row.wrong_way += int(wrong)
            if k < oracle_count:
                hit, _ = _separated(bench, base + 70_000 + k, row.oracle_weeks, sigmas, options)
                row.oracle_separated.append(hit)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tournaments", type=int, default=210, help="pilots per gap")
    parser.add_argument("--oracle", type=int, default=60, help="tournaments for the oracle")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pilot", type=int, default=PILOT_WEEKS, help="weeks of each pilot")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args(argv)
    oracle_weeks = ORACLE_WEEKS
    if args.smoke:
        args.tournaments, args.oracle, oracle_weeks = 1, 1, 20
    started = time.perf_counter()
    print(
        f"power benchmark: {args.tournaments} pilots of {args.pilot} weeks per gap, each "
        f"checked on a fresh tournament of the predicted length; oracle from {args.oracle} "
        f"tournaments of {oracle_weeks} weeks; seed {args.seed}; target: 80% separate"
    )
    header = (
        f"{'sigmas':<11} {'gap':>7} {'oracle W':>8} {'sep@oracle':>10} {'median W':>8} "
        f"{'checked':>7} {'separate':>8} {'wrong':>5} {'already':>7} {'never':>5}"
    )
    print(header)
    rows = run(args.tournaments, args.seed, args.oracle, args.pilot, oracle_weeks)
    for row in rows:
        at_oracle = float(np.mean(row.oracle_separated)) if row.oracle_separated else math.nan
        share = float(np.mean(row.separated)) if row.separated else math.nan
        median = int(np.median(row.predicted)) if row.predicted else 0
        print(
            f"{row.sigmas[0]:.1f} v {row.sigmas[1]:.1f}  {row.gap:7.4f} {row.oracle_weeks:8d} "
            f"{at_oracle:10.3f} {median:8d} {len(row.separated):7d} {share:8.3f} "
            f"{row.wrong_way:5d} {row.already:7d} {row.not_separable + row.insufficient:5d}"
        )
    checked = [hit for row in rows for hit in row.separated]
    at_oracle = [hit for row in rows for hit in row.oracle_separated]
    share = float(np.mean(checked)) if checked else math.nan
    mc = float(np.sqrt(share * (1 - share) / len(checked))) if checked else math.nan
    print(
        f"separate after the predicted weeks: {share:.3f} +/- {mc:.3f} (binomial s.e.) over "
        f"{len(checked)} tournaments; at the oracle's weeks: "
        f"{float(np.mean(at_oracle)) if at_oracle else math.nan:.3f} over {len(at_oracle)}"
    )
    print(f"seed {args.seed}; done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
