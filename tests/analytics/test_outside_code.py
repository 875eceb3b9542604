"""The research measures of issue 24 agree with outside code on synthetic tournaments:
alpha and its intervals with statsmodels, the return against the odds with pm-rank, log loss
and the spherical score with pm-rank and scikit-learn, ACE and MCE with a direct
implementation, and the rank probabilities with a brute-force bootstrap (tests/analytics/
outside.py says what is compared where, and why). The demo's v2 export gets the same checks in
tests/cli/test_demo.py."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from arena.analytics import ordering
from arena.analytics.difficulty import Cells
from arena.analytics.options import AnalysisOptions, prepare
from arena.analytics.records import COLUMNS, Forecasts
from arena.analytics.synthetic_tournament import TournamentDesign, simulate_tournament
from tests.analytics.outside import (
    check_alpha,
    check_calibration,
    check_rank_probabilities,
    check_return,
    direct_ace,
    direct_mce,
)

DESIGN = TournamentDesign(
    n_forecasters=9,
    n_questions=240,
    n_rounds=6,
    questions_per_round=36,
    forecasters_per_round=6,
    persistence=0.6,
)
OPTIONS = AnalysisOptions(bootstrap_resamples=150, seed=3, min_questions=1)


def tournament(seed: int) -> Forecasts:
    """A small synthetic tournament whose questions come in event groups of three (so the
    clusters hold several questions and the cluster-robust formulas matter)."""
    data = simulate_tournament(seed, DESIGN).to_forecasts()
    group = np.array([f"g{int(m[1:]) // 3}" for m in data.market_id], dtype=object)
    columns = {name: getattr(data, name) for name in COLUMNS}
    return Forecasts.from_columns({**columns, "event_group": group})


@pytest.mark.parametrize("seed", [1, 2])
def test_alpha_and_its_intervals_equal_statsmodels_cluster_wls(seed: int) -> None:
    assert check_alpha(tournament(seed), OPTIONS) >= 2 * DESIGN.n_forecasters - 2


def test_alpha_equals_statsmodels_without_question_weights_too() -> None:
    options = replace(OPTIONS, group_weights=False)
    assert check_alpha(tournament(4), options) >= 2 * DESIGN.n_forecasters - 2


def test_return_against_the_odds_equals_pm_rank_risk_neutral_average_return() -> None:
    assert check_return(tournament(5), OPTIONS) >= DESIGN.n_forecasters - 1


def test_log_loss_spherical_ace_mce_equal_outside_code() -> None:
    assert check_calibration(tournament(6), OPTIONS) == DESIGN.n_forecasters


def test_ace_and_mce_by_hand_on_uneven_bins() -> None:
    """The direct implementations themselves, on numbers worked by hand: 7 forecasts in 3
    equal-mass bins of 3, 2, 2 (sorted: .1 .2 .2 | .6 .7 | .8 .9)."""
    p = np.array([0.9, 0.2, 0.1, 0.6, 0.8, 0.2, 0.7])
    o = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    # runs: (.1 .2 .2 | o 0 0 1), (.6 .7 | 1 0), (.8 .9 | 1 1)
    ace = (3 * abs(0.5 / 3 - 1 / 3) + 2 * abs(0.65 - 0.5) + 2 * abs(0.85 - 1.0)) / 7
    assert direct_ace(p, o, 3) == pytest.approx(ace, abs=1e-15)
    # width-1/3 bins: [0, 1/3) holds .1 .2 .2 (o 0 0 1), [1/3, 2/3) .6 (1), [2/3, 1] .7 .8 .9
    mce = max(abs(0.5 / 3 - 1 / 3), abs(0.6 - 1.0), abs(0.8 - 2 / 3))
    assert direct_mce(p, o, 3) == pytest.approx(mce, abs=1e-15)


@pytest.mark.parametrize("seed", [7, 8])
def test_rank_probabilities_and_bootstrap_bounds_equal_a_brute_force_bootstrap(seed: int) -> None:
    assert check_rank_probabilities(tournament(seed), OPTIONS) >= 5


def test_rank_probabilities_hold_when_the_draws_come_in_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The joint bootstrap draws its resamples in chunks of rows of one stream: with a chunk of
    a few resamples, the brute force (one draw of all rows) still agrees."""
    monkeypatch.setattr(ordering, "JOINT_CHUNK_CELLS", 7 * 40)
    assert check_rank_probabilities(tournament(9), OPTIONS) >= 5


def test_the_joint_bootstrap_counts_its_draws_in_blocks_without_changing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The joint bootstrap counts each chunk's draws a block of rows at a time
    (``ordering.DRAW_CELLS``): blocks of a few rows give the same resampled means, bit for
    bit, as one block for the whole chunk."""
    data = tournament(4)
    prep = prepare(data, OPTIONS)
    panel = prep.panel
    cells = Cells(
        panel.forecaster,
        panel.question,
        panel.brier,
        len(panel.forecasters),
        len(prep.questions),
    )
    weights, clusters = prep.weights[panel.question], prep.clusters[panel.question]

    def means() -> list[int]:
        joint = ordering.joint_cluster_bootstrap(cells, weights, clusters, resamples=150, seed=3)
        return joint.means.view(np.int64).ravel().tolist()  # bit patterns: NaN equals NaN

    whole = means()
    monkeypatch.setattr(ordering, "DRAW_CELLS", 3 * len(set(clusters.tolist())) + 1)
    assert means() == whole
