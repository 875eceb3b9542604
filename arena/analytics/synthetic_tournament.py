"""Simulated tournaments with a known skill ranking (seed 000, "round-based sampling with drift").

Used to check that a ranking method recovers the truth when forecasters answer different
questions, and to benchmark the fit at scale. The data-generating process:

* Question j has a true probability ``pi_j = sigmoid(N(0, spread^2))`` and an outcome drawn from
  it. Its ex-ante difficulty is ``-|logit(pi_j)|`` (near 50/50 is hard).
* Forecaster i has a noise level ``sigma_i``; its forecast is
  ``sigmoid(logit(pi_j) + sigma_i * z)``. Expected Brier rises with ``sigma_i``, so the true
  ranking is the order of ``sigma_i`` (lower is better). The market forecasts with a small noise.
* Rounds (weeks): each round asks fresh questions, drawn with softmax weights
  ``exp(beta_t * difficulty)``, ``beta_t`` alternating ``+beta`` and ``-beta`` (hard and easy
  rounds: question drift). A share ``persistence`` of the round's forecasters stay for the
  next round; the others are replaced by new forecasters (who have not taken part yet, while
  there are any) drawn with softmax weights ``exp(tau_t * skill)``, ``tau_t`` rising from
  ``-tau`` to ``+tau`` (model drift: better models arrive later). Everyone in a round answers
  every question of the round.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray

from arena.analytics.records import Forecasts, to_datetime64

START = datetime(2025, 1, 5, tzinfo=UTC)  # a Sunday


@dataclass(frozen=True, eq=False)
class SimulatedTournament:
    """Cells of a simulated tournament (integer ids) and the true skill of every forecaster."""

    forecaster: NDArray[np.int64]
    question: NDArray[np.int64]
    probability: NDArray[np.float64]
    round: NDArray[np.int64]
    outcome: NDArray[np.float64]
    market_probability: NDArray[np.float64]
    question_round: NDArray[np.int64]
    sigma: NDArray[np.float64]
    n_forecasters: int
    n_questions: int

    def to_forecasts(self) -> Forecasts:
        """The tournament as forecast rows: family ``f0007``, market ``q000042``, weekly rounds."""
        weeks = to_datetime64(START) + (self.round * 7).astype("timedelta64[D]")
        forecast_at = weeks + np.timedelta64(5, "m")
        resolved_at = weeks + np.timedelta64(3, "D")
        names = np.array([f"f{i:04d}" for i in range(self.n_forecasters)], dtype=object)
        markets = np.array([f"q{j:06d}" for j in range(self.n_questions)], dtype=object)
        return Forecasts.from_columns(
            {
                "family_id": names[self.forecaster],
                "market_id": markets[self.question],
                "probability": self.probability,
                "market_probability": self.market_probability[self.question],
                "resolved_value": self.outcome[self.question],
                "forecast_at": forecast_at,
                "week_start": weeks,
                "scheduled_close_at": resolved_at,
                "resolved_at": resolved_at,
            }
        )

    def true_rank_score(self) -> NDArray[np.float64]:
        """Per forecaster, a score whose order is the true ranking (lower is better)."""
        return self.sigma


@dataclass(frozen=True)
class TournamentDesign:
    """The shape of a simulated tournament (module docstring): how many forecasters and
    questions, how many rounds of how many questions and forecasters, the share of forecasters
    who stay, the question drift ``beta`` and model drift ``tau``, the spread of the true
    logits, the range of the forecasters' noise and the market's noise."""

    n_forecasters: int = 150
    n_questions: int = 3000
    n_rounds: int = 10
    questions_per_round: int = 150
    forecasters_per_round: int = 30
    persistence: float = 0.7
    beta: float = 0.7
    tau: float = 1.5
    spread: float = 1.5
    sigma_range: tuple[float, float] = (0.3, 1.5)
    market_sigma: float = 0.3


def simulate_tournament(
    seed: int, design: TournamentDesign = TournamentDesign()
) -> SimulatedTournament:
    """Draw a round-based tournament with model and question drift (module docstring)."""
    n_forecasters, n_questions, n_rounds = design.n_forecasters, design.n_questions, design.n_rounds
    questions_per_round, forecasters_per_round = (
        design.questions_per_round,
        design.forecasters_per_round,
    )
    persistence, beta, tau, spread = design.persistence, design.beta, design.tau, design.spread
    sigma_range, market_sigma = design.sigma_range, design.market_sigma
    if n_rounds * questions_per_round > n_questions:
        raise ValueError("not enough questions for fresh questions in every round")
    rng = np.random.default_rng(seed)
    true_logit = rng.normal(0.0, spread, n_questions)
    outcome = (rng.random(n_questions) < _sigmoid(true_logit)).astype(np.float64)
    market = _sigmoid(true_logit + market_sigma * rng.standard_normal(n_questions))
    difficulty = _standardise(-np.abs(true_logit))
    sigma = rng.uniform(sigma_range[0], sigma_range[1], n_forecasters)
    skill = _standardise(-sigma)
    unused = np.ones(n_questions, dtype=bool)
    question_round = np.full(n_questions, -1, dtype=np.int64)
    members: NDArray[np.int64] = np.empty(0, dtype=np.int64)
    seen = np.zeros(n_forecasters, dtype=bool)
    parts_f, parts_q, parts_r = [], [], []
    for t in range(n_rounds):
        beta_t = beta if t % 2 == 0 else -beta
        tau_t = -tau + 2.0 * tau * t / max(n_rounds - 1, 1)
        chosen = _softmax_draw(rng, beta_t * difficulty, unused, questions_per_round)
        unused[chosen] = False
        question_round[chosen] = t
        stay = rng.permutation(members)[: round(persistence * len(members))]
        available = ~seen
        if available.sum() < forecasters_per_round - len(stay):  # nobody new left: reuse
            available = np.ones(n_forecasters, dtype=bool)
            available[stay] = False
        fresh = _softmax_draw(rng, tau_t * skill, available, forecasters_per_round - len(stay))
        members = np.concatenate([stay, fresh])
        seen[members] = True
        grid_f, grid_q = np.meshgrid(members, chosen, indexing="ij")
        parts_f.append(grid_f.ravel())
        parts_q.append(grid_q.ravel())
        parts_r.append(np.full(grid_f.size, t, dtype=np.int64))
    forecaster = np.concatenate(parts_f).astype(np.int64)
    question = np.concatenate(parts_q).astype(np.int64)
    noise = sigma[forecaster] * rng.standard_normal(len(forecaster))
    return SimulatedTournament(
        forecaster=forecaster,
        question=question,
        probability=_sigmoid(true_logit[question] + noise),
        round=np.concatenate(parts_r),
        outcome=outcome,
        market_probability=market,
        question_round=question_round,
        sigma=sigma,
        n_forecasters=n_forecasters,
        n_questions=n_questions,
    )


def _softmax_draw(
    rng: np.random.Generator, logits: NDArray[np.float64], allowed: NDArray[np.bool_], k: int
) -> NDArray[np.int64]:
    """k distinct allowed indices drawn with probability proportional to ``exp(logits)``."""
    candidates = np.flatnonzero(allowed)
    k = min(k, len(candidates))
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    weights = np.exp(logits[candidates] - logits[candidates].max())
    return rng.choice(candidates, size=k, replace=False, p=weights / weights.sum()).astype(np.int64)


def _standardise(values: NDArray[np.float64]) -> NDArray[np.float64]:
    sd = values.std()
    return (values - values.mean()) / (sd if sd > 0 else 1.0)


def _sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 1.0 / (1.0 + np.exp(-x))
