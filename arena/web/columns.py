"""The columns of the dashboard's v2 ranking table (the standings' columns are the one table
of :mod:`arena.analytics.leaderboard_columns`, shared with ``arena leaderboard``)."""

from __future__ import annotations

from arena.analytics.leaderboard_columns import LeaderboardColumn, ValueFormat

RANKING_COLUMNS = (
    LeaderboardColumn(
        "adjusted_brier",
        "Adjusted Brier",
        "Difficulty-adjusted Brier score (two-way fixed "
        "effects, market-anchored; always-50% scores 0.25). Lower is better.",
        ValueFormat.FIXED,
    ),
    LeaderboardColumn(
        "ci_low",
        "95% low",
        "Lower end of the 95% t-interval of the adjusted score, clipped to [0, 1].",
        ValueFormat.FIXED,
    ),
    LeaderboardColumn(
        "ci_high",
        "95% high",
        "Upper end of the 95% t-interval of the adjusted score, clipped to [0, 1].",
        ValueFormat.FIXED,
    ),
    LeaderboardColumn(
        "p_rank_1",
        "P(rank 1)",
        "Share of the cluster-bootstrap resamples in which the forecaster ranked first (the same "
        "resamples as the bootstrap interval).",
        ValueFormat.SHARE,
    ),
    LeaderboardColumn(
        "brier", "Brier", "Plain mean Brier score over the same forecasts.", ValueFormat.FIXED
    ),
    LeaderboardColumn(
        "n_questions",
        "Questions",
        "Scored panel questions forecast (one market outcome in one week; a question the "
        "family answered from several cohorts counts once).",
        ValueFormat.INT,
    ),
    LeaderboardColumn(
        "peer_score",
        "Peer score",
        "Mean log-score advantage over the other forecasters on "
        "the same questions; higher is better.",
        ValueFormat.SIGNED_FIXED,
    ),
)
