"""``/metrics``: Prometheus text format (prometheus-client), every name prefixed ``arena_``.

The arena's state is read from the database at each scrape (one collector, a fixed number of
queries, cached per data version), so any replica serving the dashboard reports the same
numbers; HTTP request counts are this process's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.domain.states import (
    BOOK_HASH_MISMATCH,
    DeliveryStatus,
    Job,
    JobRunStatus,
    PositionStatus,
)
from arena.jobs.gaps import GAP_HOURS, abandoned_runs, snapshot_gaps
from arena.store.models import (
    Agent,
    AnchorDelivery,
    Commitment,
    Decision,
    DecisionAttempt,
    JobRun,
    PortfolioSnapshot,
    Position,
    RecordHead,
    SystemLog,
)
from arena.web.context import WebContext


class ArenaCollector(Collector):
    """Job runs, decisions, attempts, cost, open positions, snapshot age, snapshot gaps,
    abandoned runs, the record chain and its anchors' deliveries, from the database."""

    def __init__(self, ctx: WebContext) -> None:
        self.ctx = ctx

    def collect(self) -> Iterator[Metric]:
        with self.ctx.session() as session:
            values = self.ctx.cache.get(
                ("metrics", None), self.ctx.version(session), lambda: _read(session)
            )
            newest = session.scalar(select(func.max(PortfolioSnapshot.taken_at)))
            # Judged at the time of the scrape, so read each time, not cached by data version.
            now, wall = self.ctx.now(), datetime.now(UTC)
            gaps = snapshot_gaps(session, self.ctx.settings, now, wall)
            abandoned = [run.job for run in abandoned_runs(session, now, wall)]
        runs = CounterMetricFamily(
            "arena_job_runs", "Job runs recorded, by job and outcome.", labels=["job", "outcome"]
        )
        for (job, outcome), n in values["runs"]:
            runs.add_metric([job, outcome], n)
        yield runs
        success = GaugeMetricFamily(
            "arena_job_last_success_timestamp_seconds",
            "Unix time at which each job's latest successful run finished.",
            labels=["job"],
        )
        for job, finished in values["last_success"]:
            success.add_metric([job], finished)
        yield success
        duration = GaugeMetricFamily(
            "arena_job_last_duration_seconds",
            "Duration of each job's latest finished run.",
            labels=["job"],
        )
        for job, seconds in values["duration"]:
            duration.add_metric([job], seconds)
        yield duration
        decisions = GaugeMetricFamily(
            "arena_decisions", "Decisions stored, by status.", labels=["status"]
        )
        for status, n in values["decisions"]:
            decisions.add_metric([status], n)
        yield decisions
        attempts = CounterMetricFamily(
            "arena_model_call_attempts",
            "Model-call attempts (and baseline answers), by outcome.",
            labels=["outcome"],
        )
        for outcome, n in values["attempts"]:
            attempts.add_metric([outcome], n)
        yield attempts
        cost = CounterMetricFamily(
            "arena_cost_usd", "Model cost in USD credits, by family.", labels=["family"]
        )
        for family, usd in values["cost"]:
            cost.add_metric([family], usd)
        yield cost
        yield GaugeMetricFamily(
            "arena_open_positions", "Open positions across all agents.", value=values["open"]
        )
        yield CounterMetricFamily(
            "arena_book_hash_mismatches",
            "Order books served with a hash other than the one arena computed of them.",
            value=values["hash_mismatches"],
        )
        age = GaugeMetricFamily(
            "arena_newest_snapshot_age_seconds",
            "Seconds since the newest portfolio snapshot (absent when there is none).",
        )
        if newest is not None:
            age.add_metric([], (datetime.now(UTC) - newest).total_seconds())
        yield age
        yield GaugeMetricFamily(
            "arena_snapshot_gap_slots",
            f"Snapshot slots of the last {GAP_HOURS} h at which an agent has no snapshot.",
            value=len(gaps.slots),
        )
        yield GaugeMetricFamily(
            "arena_missing_snapshots",
            f"Agent snapshots missing from the snapshot slots of the last {GAP_HOURS} h.",
            value=gaps.missing_snapshots,
        )
        lost = GaugeMetricFamily(
            "arena_abandoned_job_runs",
            f"Job runs of the last {GAP_HOURS} h whose holder died mid-run and that nobody "
            "finished, by job.",
            labels=["job"],
        )
        for job in Job:
            lost.add_metric([job], abandoned.count(job))
        yield lost
        yield from _record_metrics(values["record"])


def _record_metrics(record: dict[str, Any]) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "arena_record_head_seq",
        "Sequence number of the record chain's head (0: empty).",
        value=record["head_seq"],
    )
    committed = GaugeMetricFamily(
        "arena_record_last_commitment_timestamp_seconds",
        "Unix time of the latest commitment of the chain's head (absent when there is none).",
    )
    if record["committed_at"] is not None:
        committed.add_metric([], record["committed_at"])
    yield committed
    undelivered = GaugeMetricFamily(
        "arena_anchor_undelivered_commitments",
        "Commitments an anchor has not taken yet (pending or failed), by anchor.",
        labels=["anchor"],
    )
    failures = CounterMetricFamily(
        "arena_anchor_failed_deliveries",
        "Failed attempts to deliver a commitment to an anchor, by anchor.",
        labels=["anchor"],
    )
    for anchor, (waiting, failed) in sorted(record["anchors"].items()):
        undelivered.add_metric([anchor], waiting)
        failures.add_metric([anchor], failed)
    yield undelivered
    yield failures


def _read_record(session: Session) -> dict[str, Any]:
    """The chain's head, the latest commitment's time, and per anchor: the commitments it has
    not taken and its failed attempts (every attempt but the one that delivered)."""
    anchors: dict[str, list[int]] = {}
    for anchor, status, n, attempts in session.execute(
        select(
            AnchorDelivery.anchor,
            AnchorDelivery.status,
            func.count(),
            func.sum(AnchorDelivery.attempts),
        ).group_by(AnchorDelivery.anchor, AnchorDelivery.status)
    ):
        counts = anchors.setdefault(anchor, [0, 0])
        delivered = status == DeliveryStatus.DELIVERED
        counts[0] += 0 if delivered else int(n)
        counts[1] += int(attempts or 0) - (int(n) if delivered else 0)
    committed = session.scalar(select(func.max(Commitment.committed_at)))
    return {
        "head_seq": session.scalar(select(func.max(RecordHead.seq))) or 0,
        "committed_at": committed.timestamp() if committed is not None else None,
        "anchors": {anchor: tuple(counts) for anchor, counts in anchors.items()},
    }


def _read(session: Session) -> dict[str, Any]:
    latest = select(func.max(JobRun.id)).where(JobRun.finished_at.is_not(None)).group_by(JobRun.job)
    durations = [
        (Job(run.job), (run.finished_at - run.started_at).total_seconds())
        for run in session.scalars(select(JobRun).where(JobRun.id.in_(latest)))
        if run.finished_at is not None
    ]
    cost = session.execute(
        select(Agent.family_id, func.sum(DecisionAttempt.cost_usd))
        .join(Decision, Decision.id == DecisionAttempt.decision_id)
        .join(Agent, Agent.id == Decision.agent_id)
        .group_by(Agent.family_id)
    )
    return {
        "runs": [
            ((Job(job), status), int(n))
            for job, status, n in session.execute(
                select(JobRun.job, JobRun.status, func.count()).group_by(JobRun.job, JobRun.status)
            )
        ],
        "last_success": [
            (Job(job), finished.timestamp())
            for job, finished in session.execute(
                select(JobRun.job, func.max(JobRun.finished_at))
                .where(JobRun.status == JobRunStatus.SUCCEEDED)
                .group_by(JobRun.job)
            )
            if finished is not None
        ],
        "duration": durations,
        "decisions": [
            (status, int(n))
            for status, n in session.execute(
                select(Decision.status, func.count()).group_by(Decision.status)
            )
        ],
        "attempts": [
            (outcome, int(n))
            for outcome, n in session.execute(
                select(DecisionAttempt.outcome, func.count()).group_by(DecisionAttempt.outcome)
            )
        ],
        "cost": [(family, float(usd or 0)) for family, usd in cost],
        "record": _read_record(session),
        "hash_mismatches": int(
            session.scalar(
                select(func.sum(SystemLog.details["count"].as_integer())).where(
                    SystemLog.event == BOOK_HASH_MISMATCH
                )
            )
            or 0
        ),
        "open": int(
            session.scalar(
                select(func.count())
                .select_from(Position)
                .where(Position.status == PositionStatus.OPEN)
            )
            or 0
        ),
    }


class HttpMetrics:
    """This process's request counter and latency histogram, on the app's own registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "arena_http_requests",
            "HTTP requests served, by route and status code.",
            ["route", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "arena_http_request_duration_seconds",
            "HTTP request latency, by route.",
            ["route"],
            registry=registry,
        )


def make_registry(ctx: WebContext) -> tuple[CollectorRegistry, HttpMetrics]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ArenaCollector(ctx))
    return registry, HttpMetrics(registry)
