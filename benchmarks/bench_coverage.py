"""Coverage of every 95% interval arena reports, on simulated tournaments shaped like the arena.

A 95% interval must cover the true value of its estimand in 95% of tournaments. This benchmark
draws many tournaments from a known data-generating process, runs arena's own analysis
(:func:`arena.analytics.report.ranking` and :func:`~arena.analytics.report.head_to_head`, the
functions behind ``arena analyze``) on each, and counts how often each interval covers the
truth. The design follows the arena:

* **weekly panels** of ``PANEL`` (20) questions for ``WEEKS`` (12) weeks;
* **repeats with shared outcomes**: a market stays in the panel for 1 to 4 consecutive weeks,
  with one outcome; each forecaster's error on a market is **persistent** (drawn once per
  market) with a small weekly jitter, so a model that misjudges a market misjudges it again;
* **event groups**: 30% of new markets arrive as a group of 2 to 4 markets that share part of
  their true log-odds and part of every forecaster's error on them (arena's ``event_group``);
* **missing forecasts**: each forecast is missing with probability 0.1;
* **market prices**: the market forecasts every question with its own persistent noise;
* **six forecasters of known skill**: noise levels ``SIGMAS`` (lower is better).

Estimands (the true values, computed once from 2,000,000 fresh questions of the same process;
every question has the same marginal distribution, so question weights do not move them):

* head-to-head A vs B: ``100 * (E[log score A] - E[log score B])`` on a question;
* difficulty-adjusted ranking of forecaster i: ``E[Brier_i - Brier_market] + shift``, where
  ``shift`` is the tournament's own mean question difficulty (a constant the report adds);
* difference between two forecasters A and B (:func:`arena.analytics.report.difference`, which
  the ranking report gives for each pair of neighbours): ``E[Brier_A - Brier_B]``;
* alpha against the market (:func:`arena.analytics.report.against_market`) of forecaster i:
  ``E[Brier_market - Brier_i]`` (Brier) and ``E[log score_i - log score_market]`` (log), the
  market being the price each forecast was shown.

Per interval type the benchmark prints one line: ``coverage: 0.XXX`` with its Monte Carlo
standard error (from the spread of the per-tournament coverage, so dependence between the
intervals of one tournament is accounted for), how many intervals were checked, and the mean
width against the *oracle width* ``2 * 1.96 * sd(estimate - truth)`` over tournaments (the
width an interval would have if it knew the true sampling spread): a ratio near 1 means the
interval is no wider than needed. Three reference lines follow, which say ``covers`` instead
of ``coverage:`` because they are not intervals arena reports:
the head-to-head t interval without clustering, as arena computed it before issue 15 (its
frequency-weight convention, with arena's 1/k repeat and group weights, happens to widen it by
about what the dependence needs in this design); the same without question weights (a plain
t-test over questions, which treats every repeat as new evidence); and the ranking report's
neighbour differences, whose pairs are chosen by the data (so their errors, grouped by pair,
are truncated and the oracle width means little).

The benchmark resamples fewer times than arena's default 10,000 (``--resamples``: 2,000 in
the full run, 1,000 with ``--quick``); that changes the bootstrap's Monte Carlo noise, not its
coverage. ``--quick`` runs 400 tournaments (well under 5 minutes on 2 cores); the full run
2,000.

Run: ``.venv/bin/python benchmarks/bench_coverage.py [--quick]``
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray

from arena.analytics.options import Prepared
from arena.analytics.records import Forecasts, to_datetime64
from arena.analytics.report import (
    AnalysisOptions,
    against_market,
    difference,
    head_to_head,
    prepare,
    ranking,
)
from arena.analytics.significance import TInterval, weighted_t_interval

SIGMAS = (0.3, 0.6, 0.9, 1.2, 1.6, 2.0)  # forecaster noise in log-odds: known skill order
NAMES = tuple(f"skill-{rank}" for rank in range(1, len(SIGMAS) + 1))
WEEKS = 12
PANEL = 20
GROUP_SHARE = 0.4
GROUP_SPREAD, MARKET_SPREAD = 1.3, 0.4  # true log-odds: group part + market part
GROUP_ERROR = 0.8  # share of a forecaster's error variance shared by one event group
JITTER = 0.15  # weekly jitter of an error, relative to the persistent part
MARKET_SIGMA, MARKET_JITTER = 0.4, 0.1
MISSING = 0.1
LOG_EPS = 0.001
PAIRS = ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 5))
START = datetime(2025, 1, 5, tzinfo=UTC)  # a Sunday


def _sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 1.0 / (1.0 + np.exp(-x))


def simulate(
    seed: int,
    weeks: int = WEEKS,
    sigmas: tuple[float, ...] = SIGMAS,
    names: tuple[str, ...] = NAMES,
) -> Forecasts:
    """One tournament as forecast rows (module docstring): ``weeks`` weekly panels, one
    forecaster of noise ``sigmas[i]`` named ``names[i]`` each (``bench_power.py`` simulates
    other lengths and pairs)."""
    rng = np.random.default_rng(seed)
    n_f = len(sigmas)
    sigma = np.array(sigmas)
    markets: list[dict] = []
    live: list[int] = []
    parts: dict[str, list] = defaultdict(list)
    for week in range(weeks):
        live = [m for m in live if markets[m]["last"] >= week]
        while len(live) < PANEL:
            size = int(rng.integers(2, 7)) if rng.random() < GROUP_SHARE else 1
            group = f"g{len(markets)}" if size > 1 else None
            shared = rng.normal(0.0, GROUP_SPREAD)
            shared_error = rng.normal(0.0, 1.0, n_f)
            last = week + int(rng.integers(0, 4))
            for _ in range(size):
                logit = shared + rng.normal(0.0, MARKET_SPREAD)
                error = sigma * (
                    np.sqrt(GROUP_ERROR) * shared_error
                    + np.sqrt(1.0 - GROUP_ERROR) * rng.normal(0.0, 1.0, n_f)
                )
                markets.append(
                    {
                        "id": f"m{len(markets):05d}",
                        "group": group,
                        "logit": logit,
                        "outcome": float(rng.random() < _sigmoid(np.array(logit))),
                        "error": error,
                        "market_error": rng.normal(0.0, MARKET_SIGMA),
                        "last": last,
                    }
                )
                live.append(len(markets) - 1)
        week_start = to_datetime64(START) + np.timedelta64(7 * week, "D")
        for m in live:
            market = markets[m]
            price = _sigmoid(
                np.array(market["logit"] + market["market_error"]) + rng.normal(0.0, MARKET_JITTER)
            )
            noise = market["error"] + JITTER * sigma * rng.normal(0.0, 1.0, n_f)
            probability = _sigmoid(market["logit"] + noise)
            present = rng.random(n_f) >= MISSING
            for i in np.flatnonzero(present):
                parts["family_id"].append(names[i])
                parts["market_id"].append(market["id"])
                parts["event_group"].append(market["group"])
                parts["probability"].append(float(probability[i]))
                parts["market_probability"].append(float(price))
                parts["resolved_value"].append(market["outcome"])
                parts["week_start"].append(week_start)
    n = len(parts["family_id"])
    week_starts = np.array(parts.pop("week_start"), dtype="datetime64[us]")
    end = to_datetime64(START) + np.timedelta64(7 * weeks + 3, "D")
    columns = {name: np.array(values, dtype=object) for name, values in parts.items()}
    for name in ("probability", "market_probability", "resolved_value"):
        columns[name] = np.array(parts[name], dtype=np.float64)
    columns["forecast_at"] = week_starts + np.timedelta64(5, "m")
    columns["week_start"] = week_starts
    columns["scheduled_close_at"] = np.full(n, end)
    columns["resolved_at"] = np.full(n, end)
    return Forecasts.from_columns(columns)


@dataclass(frozen=True)
class Truth:
    """Expected scores of one fresh question under the process (module docstring)."""

    log_score: NDArray[np.float64]
    brier: NDArray[np.float64]
    market_brier: float
    market_log_score: float = 0.0


def oracle(n: int = 2_000_000, seed: int = 20_261_123, sigmas: tuple[float, ...] = SIGMAS) -> Truth:
    """Estimands from ``n`` fresh questions, with the outcome integrated out exactly."""
    rng = np.random.default_rng(seed)
    logit = rng.normal(0.0, np.hypot(GROUP_SPREAD, MARKET_SPREAD), n)
    truth = _sigmoid(logit)

    def expected(noise_sd: float) -> tuple[float, float]:
        p = _sigmoid(logit + rng.normal(0.0, noise_sd, n))
        clipped = np.clip(p, LOG_EPS, 1.0 - LOG_EPS)
        log_score = truth * np.log(clipped) + (1.0 - truth) * np.log(1.0 - clipped)
        brier = truth * (1.0 - p) ** 2 + (1.0 - truth) * p**2
        return float(log_score.mean()), float(brier.mean())

    scores = [expected(s * np.hypot(1.0, JITTER)) for s in sigmas]
    market_log, market = expected(float(np.hypot(MARKET_SIGMA, MARKET_JITTER)))
    return Truth(
        np.array([s[0] for s in scores]), np.array([s[1] for s in scores]), market, market_log
    )


@dataclass
class Tally:
    """Coverage bookkeeping of one interval type."""

    label: str
    reference: bool = False  # not an interval arena reports: printed as "covers", not "coverage"
    covered: list[list[bool]] = field(default_factory=list)  # per tournament
    widths: list[float] = field(default_factory=list)
    errors: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, tournament: int, slot: str, low: float | None, high: float | None,
            estimate: float, truth: float) -> None:  # fmt: skip
        while len(self.covered) <= tournament:
            self.covered.append([])
        if low is None or high is None:
            return
        self.covered[tournament].append(low <= truth <= high)
        self.widths.append(high - low)
        self.errors[slot].append(estimate - truth)

    def line(self) -> str:
        per = [np.mean(c) for c in self.covered if c]
        n = sum(len(c) for c in self.covered)
        coverage = float(np.mean([x for c in self.covered for x in c]))
        mc_error = float(np.std(per, ddof=1) / np.sqrt(len(per)))
        least = 10 if any(len(e) >= 10 for e in self.errors.values()) else 2
        oracle_width = float(
            np.mean(
                [2 * 1.959964 * np.std(e, ddof=1) for e in self.errors.values() if len(e) >= least]
            )
        )
        width = float(np.mean(self.widths))
        return (
            f"{self.label:<47} {'covers' if self.reference else 'coverage:'} {coverage:.3f} "
            f"+/- {mc_error:.3f} (MC s.e.; "
            f"{n} intervals, {len(per)} tournaments)  mean width {width:.4g} vs oracle "
            f"{oracle_width:.4g} (ratio {width / oracle_width:.2f})"
        )


def run(tournaments: int, resamples: int, seed: int) -> list[Tally]:
    """Simulate, analyse and tally every interval type."""
    truth = oracle()
    tallies = {
        key: Tally(label)
        for key, label in (
            ("h2h_t", "head-to-head, cluster-robust t"),
            ("h2h_boot", "head-to-head, cluster bootstrap"),
            ("rank_t", "ranking (difficulty-adjusted), cluster t"),
            ("rank_boot", "ranking (difficulty-adjusted), cluster boot"),
            ("diff_t", "difference of two forecasters, cluster t"),
            ("diff_boot", "difference of two forecasters, cluster boot"),
            ("alpha_t", "alpha (Brier) against the market, cluster t"),
            ("alpha_boot", "alpha (Brier) against the market, cluster boot"),
            ("alpha_log_t", "alpha (log) against the market, cluster t"),
            ("alpha_log_boot", "alpha (log) against the market, cluster boot"),
        )
    }
    reference = Tally("reference only: head-to-head t, unclustered", True)
    unweighted = Tally("reference only: h2h t, unclustered, no weights", True)
    neighbours = Tally("reference only: neighbours chosen by ranking", True)
    options = AnalysisOptions(bootstrap_resamples=resamples, seed=seed, min_questions=1)
    index = {name: i for i, name in enumerate(NAMES)}
    for k in range(tournaments):
        data = simulate(seed * 1_000_003 + k)
        prep = prepare(data, options)
        for a, b in PAIRS:
            report = head_to_head(data, NAMES[a], NAMES[b], options, prep)
            value = 100.0 * (truth.log_score[a] - truth.log_score[b])
            slot = f"{a}-{b}"
            t, boot = report["t_test"], report["bootstrap"]
            tallies["h2h_t"].add(k, slot, t["low"], t["high"], report["mean"], value)
            tallies["h2h_boot"].add(k, slot, boot["low"], boot["high"], report["mean"], value)
            plain, bare = _unclustered(prep, a, b)
            reference.add(k, slot, plain.low, plain.high, plain.mean, value)
            unweighted.add(k, slot, bare.low, bare.high, bare.mean, value)
            diff = difference(data, NAMES[a], NAMES[b], options, prep)
            value = truth.brier[a] - truth.brier[b]
            mean = diff["mean"]
            tallies["diff_t"].add(k, slot, diff["ci_low"], diff["ci_high"], mean, value)
            tallies["diff_boot"].add(
                k, slot, diff["bootstrap_low"], diff["bootstrap_high"], mean, value
            )
        board = ranking(data, options, prep)
        for row in board["rows"]:
            if row["reference"] or row["forecaster"] not in index:
                continue
            i = index[row["forecaster"]]
            value = truth.brier[i] - truth.market_brier + board["shift"]
            estimate = row["adjusted_brier"]
            name = row["forecaster"]
            tallies["rank_t"].add(k, name, row["ci_low"], row["ci_high"], estimate, value)
            tallies["rank_boot"].add(
                k, name, row["bootstrap_low"], row["bootstrap_high"], estimate, value
            )
        for row in against_market(data, options, prep)["rows"]:
            i = index[row["forecaster"]]
            for key, value in (
                ("alpha", truth.market_brier - truth.brier[i]),
                ("alpha_log", truth.log_score[i] - truth.market_log_score),
            ):
                found = row["alpha_brier" if key == "alpha" else "alpha_log"]
                if isinstance(found, str):  # "insufficient": no interval to check
                    continue
                name, estimate = row["forecaster"], found["estimate"]
                tallies[f"{key}_t"].add(k, name, found["low"], found["high"], estimate, value)
                tallies[f"{key}_boot"].add(
                    k, name, found["bootstrap_low"], found["bootstrap_high"], estimate, value
                )
        for diff in board["differences"]:
            if diff["status"] != "ok":
                continue
            i, j = index[diff["upper"]], index[diff["lower"]]
            value = truth.brier[i] - truth.brier[j]
            neighbours.add(k, f"{i}-{j}", diff["ci_low"], diff["ci_high"], diff["mean"], value)
    return [*tallies.values(), reference, unweighted, neighbours]


def _unclustered(prep: Prepared, a: int, b: int) -> tuple[TInterval, TInterval]:
    """The head-to-head t interval as arena computed it before clustering (weights taken as
    frequencies), and the same without question weights."""
    panel = prep.panel
    ia, ib = panel.forecasters.index(NAMES[a]), panel.forecasters.index(NAMES[b])
    scores = np.full((2, len(prep.questions)), np.nan)
    for row, forecaster in ((0, ia), (1, ib)):
        mine = panel.forecaster == forecaster
        scores[row, panel.question[mine]] = panel.log_score[mine]
    common = np.flatnonzero(~np.isnan(scores).any(axis=0))
    values = 100.0 * (scores[0, common] - scores[1, common])
    return weighted_t_interval(values, prep.weights[common]), weighted_t_interval(values)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 tournaments, 1,000 resamples")
    parser.add_argument("--tournaments", type=int, default=None)
    parser.add_argument("--resamples", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest size, in seconds: what CI runs to see the benchmark still works",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.tournaments, args.resamples = 3, 20
    tournaments = args.tournaments or (400 if args.quick else 2000)
    resamples = args.resamples or (1000 if args.quick else 2000)
    started = time.perf_counter()
    print(
        f"coverage benchmark, {tournaments} tournaments of {WEEKS} weekly panels x {PANEL} "
        f"questions, {len(SIGMAS)} forecasters (sigma {', '.join(map(str, SIGMAS))}), "
        f"{resamples} bootstrap resamples, seed {args.seed}; nominal level 0.95"
    )
    for tally in run(tournaments, resamples, args.seed):
        print(tally.line())
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
