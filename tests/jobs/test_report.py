"""Every job's report implements :class:`arena.jobs.report.JobReport`: JSON-ready counts (the
``job_runs`` row stores them) and a failure that decides both the CLI's exit code and whether
the daemon's slot is done."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from arena.errors import JobFailed
from arena.jobs.cohorts import CohortReport
from arena.jobs.decide_report import AgentResult, DecideReport
from arena.jobs.markets import SyncReport
from arena.jobs.report import JobReport, raise_failure
from arena.jobs.settle import SettleReport
from arena.jobs.snapshots import SnapshotReport

AT = datetime(2026, 11, 22, 0, 5, tzinfo=UTC)


def _agent(status: str, *, attempts: int = 1, error: str | None = None) -> AgentResult:
    return AgentResult(1, 7, "gpt-x", 3, status, attempts=attempts, error=error)


def reports() -> list[JobReport]:
    """One report of each job, each holding what JSON cannot say by itself."""
    return [
        CohortReport(cohort_id=4, week_start=AT, created=True, agents=7),
        SyncReport(at=AT, universe_size=500, listed=499, missing=["1"], skipped={"a": 2}),
        DecideReport(
            universe_id=2,
            results=[
                AgentResult(1, 7, "gpt-x", 3, "completed", trades=2, cost_usd=Decimal("0.0125"))
            ],
        ),
        SettleReport(checked=3, resolved=1, payout=Decimal("120.50"), cohorts_completed=[1]),
        SnapshotReport(taken_at=AT, agents=7, written=7, positions=3, unpriced_positions=0),
    ]


@pytest.mark.parametrize("report", reports(), ids=lambda r: type(r).__name__)
def test_every_report_is_a_job_report_with_json_ready_counts(report: JobReport) -> None:
    counts = report.counts()
    assert json.loads(json.dumps(counts)) == counts  # JSON-ready as it stands
    assert report.failure() is None
    assert report.summary()
    raise_failure(report)  # no failure: no exception


def test_counts_write_money_as_exact_text_and_instants_with_z() -> None:
    cohort, sync, decide, settle, snapshot = reports()
    assert cohort.counts() == {"cohort_id": 4, "created": True, "agents": 7}
    assert sync.counts()["missing"] == 1 and sync.counts()["skipped"] == 2
    assert decide.counts() == {
        "decided": 1,
        "already_final": 0,
        "unfinished": 0,
        "trades": 2,
        "cost_usd": "0.0125",
        "aborted": None,
    }
    assert settle.counts()["payout"] == "120.50"
    assert settle.counts()["cohorts_completed"] == [1]
    assert snapshot.counts()["taken_at"] == "2026-11-22T00:05:00Z"


def test_a_settlement_with_failed_markets_fails() -> None:
    report = SettleReport(checked=2, failures=["market 9: disk on fire", "market 8: gone"])
    failure = "2 market(s) failed to settle: market 9: disk on fire; market 8: gone"
    assert report.failure() == failure
    assert report.counts()["failures"] == 2
    with pytest.raises(JobFailed, match="failed to settle"):
        raise_failure(report)


@pytest.mark.parametrize(
    ("report", "reason"),
    [
        (DecideReport(aborted="universe refused: 3 markets"), "stopped: universe refused"),
        (DecideReport(results=[_agent("retryable", error="HTTP 500")]), "1 decision(s) not final"),
        (DecideReport(results=[_agent("held", error="held by h:1")]), "gpt-x: held by h:1"),
        (
            DecideReport(results=[_agent("completed", error="every round failed")]),
            "every model call failed",
        ),
        (DecideReport(missing_cohort=AT), "no cohort for the week of 2026-11-22"),
    ],
)
def test_a_decision_run_fails_on_what_is_left_undone(report: DecideReport, reason: str) -> None:
    failure = report.failure()
    assert failure is not None and reason in failure


def test_a_decision_run_with_nothing_to_decide_does_not_fail() -> None:
    """By hand (no slot, so no missing cohort), an empty run is a success: exit 0."""
    report = DecideReport()
    assert report.failure() is None
    assert report.summary().startswith("0 completed, 0 already final, 0 unfinished")
