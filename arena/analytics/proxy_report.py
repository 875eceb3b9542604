"""The proxy ranking report (seed 002): an early ranking on questions still open at ``as_of``.

See :mod:`arena.analytics.proxy` for the scores, the per-question standardisation and the
minimum samples. Clearly labelled as a proxy in every output.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from arena.analytics.options import AnalysisOptions, Prepared, clean, prepare, with_at
from arena.analytics.proxy import Votes, proxy_scores
from arena.analytics.questions import open_questions
from arena.analytics.records import to_datetime
from arena.analytics.significance import INSUFFICIENT, OK
from arena.domain.states import FamilyKind


def proxy_ranking(
    forecasts: Any,
    options: AnalysisOptions | None = None,
    prep: Prepared | None = None,
    *,
    at: datetime | None = None,
) -> dict:
    """Early ranking on open questions by proxy score (seed 002); clearly a proxy."""
    options = with_at(options, at)
    prep = prep or prepare(forecasts, options)
    panel, questions = prep.panel, prep.questions
    domain = np.ones(len(questions), dtype=bool)
    if not options.proxy_include_resolved:
        domain = open_questions(questions, prep.as_of)
    voters = np.ones(len(panel.forecasters), dtype=bool)
    if not options.proxy_include_baselines:
        voters = ~_baseline_forecasters(prep)
    cells = np.flatnonzero(domain[panel.question] & voters[panel.forecaster])
    position = np.full(len(panel), -1, dtype=np.int64)
    position[cells] = np.arange(len(cells))
    rows_in = position[panel.row_cell]
    keep = rows_in >= 0
    week_values, week_of_question = np.unique(questions.week_start, return_inverse=True)
    votes = Votes(
        panel.forecaster[cells],
        panel.question[cells],
        panel.logit[cells],
        rows_in[keep],
        prep.forecasts.probability[keep],
        week_of_question.reshape(-1).astype(np.int64),
        len(panel.forecasters),
    )
    scores = proxy_scores(
        votes,
        min_voters=options.proxy_min_voters,
        min_week_questions=options.proxy_min_week_questions,
    )
    present = np.bincount(panel.forecaster[cells], minlength=len(panel.forecasters))
    rows = [
        {
            "forecaster": name,
            "status": OK if scores.n_weeks[i] > 0 else INSUFFICIENT,
            "mean_z": scores.mean_z[i],
            "n_weeks": int(scores.n_weeks[i]),
            "n_questions": int(scores.n_questions[i]),
        }
        for i, name in enumerate(panel.forecasters)
        if voters[i] and present[i] > 0
    ]
    ranked = sorted((r for r in rows if r["status"] == OK), key=lambda r: r["mean_z"])
    for rank, row in enumerate(ranked, start=1):
        row["rank"] = rank
    unranked = [dict(r, rank=None) for r in rows if r["status"] != OK]
    weeks = [
        {
            "week_start": to_datetime(week_values[scores.week_index[k]]),
            "forecaster": panel.forecasters[scores.week_family[k]],
            "n_questions": int(scores.week_questions[k]),
            "proxy_score": scores.week_score[k],
            "z": scores.week_z[k],
            "status": OK if scores.week_sufficient[k] else INSUFFICIENT,
        }
        for k in np.lexsort((scores.week_family, scores.week_index))
    ]
    return clean(
        {
            "kind": "proxy",
            "label": "PROXY ranking: agreement with the other families' extremized consensus "
            "on unresolved questions, not accuracy against outcomes",
            "as_of": to_datetime(prep.as_of),
            "options": options.to_dict(),
            "minimums": {
                "voting_families_per_question": options.proxy_min_voters,
                "questions_per_week": options.proxy_min_week_questions,
            },
            "rows": ranked + unranked,
            "weeks": weeks,
        }
    )


def _baseline_forecasters(prep: Prepared) -> NDArray[np.bool_]:
    panel = prep.panel
    kinds = prep.forecasts.family_kind
    is_baseline = np.zeros(len(panel.forecasters), dtype=bool)
    row_forecaster = panel.forecaster[panel.row_cell]
    marked = np.array([kind == FamilyKind.BASELINE for kind in kinds], dtype=bool)
    is_baseline[np.unique(row_forecaster[marked])] = True
    return is_baseline
