"""Question weights for correlated questions (seed 001, Metaculus AI benchmarking).

Two reasons to count a question as less than one independent question:

* **Logically related group.** The N questions of one event group asked in the same week
  (markets of one negRisk event, or the outcomes of one multi-outcome market) each weigh
  ``log2(N + 1) / (N + 1)``: a group of 2 counts 1.06 in total, of 3 counts 1.5, of 64 about 6.
  A question alone in its group weighs 1 (the formula is for groups; at N = 1 it would give 0.5).
* **Repeat.** The weekly panel can ask about the same event (market and outcome) again in later
  weeks. The k-th week in which it is asked weighs ``1 / k`` (1, 1/2, 1/3...). k counts the
  distinct weeks of that event in the data analysed (every forecaster gets the same weight: a
  weight is a property of the question, not of who answered it); an analysis at T counts them
  on the data known at T only (:func:`arena.analytics.options.prepare`).

The combined weight is the product of the two.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

from arena.analytics.questions import Questions, factorize, group_ids


def group_weight(size: NDArray[np.int64] | int) -> NDArray[np.float64]:
    """Weight of each question in a group of ``size`` related questions (1 for a lone one)."""
    n = np.asarray(size, dtype=np.float64)
    return np.where(n <= 1.0, 1.0, np.log2(n + 1.0) / (n + 1.0))


def repeat_weight(k: NDArray[np.int64] | int) -> NDArray[np.float64]:
    """Weight of the k-th asking (k = 1, 2, ...) of the same question: ``1 / k``."""
    return 1.0 / np.asarray(k, dtype=np.float64)


def group_sizes(questions: Questions) -> NDArray[np.int64]:
    """Per question, how many questions share its event group in its week.

    The group is ``event_group`` when known, else the market itself (the outcomes of one
    multi-outcome market are one group; a binary market alone is a group of one).
    """
    groups = np.array(
        [
            group if group is not None else f"market:{market}"
            for group, market in zip(questions.event_group, questions.market_id, strict=True)
        ],
        dtype=object,
    )
    group_codes, _ = factorize(groups)
    _, week_codes = np.unique(questions.week_start.astype(np.int64), return_inverse=True)
    member, _ = group_ids(group_codes, week_codes.reshape(-1).astype(np.int64))
    return np.bincount(member)[member].astype(np.int64)


def repeat_index(questions: Questions) -> NDArray[np.int64]:
    """Per question, k: its week's rank (1-based) among the weeks its event was asked in."""
    market_codes, _ = factorize(questions.market_id)
    outcome_codes, _ = factorize(questions.outcome)
    event, _ = group_ids(market_codes, outcome_codes)
    weeks = questions.week_start.astype(np.int64)
    order = np.lexsort((weeks, event))
    k = np.empty(len(order), dtype=np.int64)
    sorted_events = event[order]
    starts = np.flatnonzero(np.r_[True, sorted_events[1:] != sorted_events[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    k[order] = np.arange(len(order)) - run_start + 1
    return k


def question_weights(
    questions: Questions, *, groups: bool = True, repeats: bool = True
) -> NDArray[np.float64]:
    """Combined weight of every question: group weight x repeat weight (each can be off)."""
    weights = np.ones(len(questions))
    if len(questions) == 0:
        return weights
    if groups:
        weights = weights * group_weight(group_sizes(questions))
    if repeats:
        weights = weights * repeat_weight(repeat_index(questions))
    return weights


def cluster_labels(questions: Questions) -> NDArray[np.object_]:
    """Per question, its dependence cluster: every question linked to it by sharing a market
    (the weekly repeats, whose outcome is one and the same) or an event group (the members of
    one negRisk event, asked in any week), transitively. Labelled by the cluster's smallest
    market id, so the labels do not depend on row order.

    Intervals treat clusters as independent and questions within one as dependent in any way.
    """
    n = len(questions)
    if n == 0:
        return np.empty(0, dtype=object)
    market_codes, markets = factorize(questions.market_id)
    has_group = np.array([group is not None for group in questions.event_group], dtype=bool)
    group_codes, _ = factorize(questions.event_group[has_group])
    n_markets = len(markets)
    n_groups = int(group_codes.max()) + 1 if len(group_codes) else 0
    edges = sp.coo_matrix(
        (
            np.ones(int(has_group.sum())),
            (market_codes[has_group], n_markets + group_codes),
        ),
        shape=(n_markets + n_groups, n_markets + n_groups),
    )
    _, component = connected_components(edges, directed=False)
    market_component = component[:n_markets]
    names = np.array(markets, dtype=object)
    smallest: dict[int, str] = {}
    for code in np.argsort(names, kind="stable"):
        smallest.setdefault(int(market_component[code]), str(names[code]))
    label = np.array([smallest[int(c)] for c in market_component], dtype=object)
    return label[market_codes]
