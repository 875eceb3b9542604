"""What ``arena status`` (and the daemon's status page) shows, read in a fixed number of queries.

The latest run of every job with its next fire time, the cohorts still tracked, whether a
daemon serves the database (:class:`Daemon`), the record chain's head with its latest
commitment and each anchor's deliveries (:class:`RecordLine`, also ``/api/v1/record``), and
the open warnings (an anchor that failed among them): the current week's
missing and unfinished work (:mod:`arena.jobs.due`), the snapshot gaps and abandoned runs of
the last day (:mod:`arena.jobs.gaps`), and held markets that have waited long for resolution.
Where no daemon serves the database, the work its schedule owes is information, not a
warning; failures stay warnings. Everything is judged at ``now`` (``--at``); claim and run
leases are judged on ``lease_now``, the real clock they are renewed on.

It reads in SQLAlchemy Core (:mod:`arena.store.schema`, :mod:`arena.store.queries`), on an
ORM session (the dashboard) or a plain connection: ``arena status`` never loads the ORM (the
ORM and the mapped classes cost it about 0.13 s of start-up).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from arena.clock import iso_utc
from arena.domain.states import (
    BOOK_HASH_MISMATCH,
    CLOB_UNAVAILABLE,
    DeliveryStatus,
    Job,
    MarketStatus,
    PositionStatus,
)
from arena.jobs.due import current_week_due
from arena.jobs.gaps import (
    AbandonedRun,
    SnapshotGaps,
    abandoned_runs,
    abandoned_warnings,
    snapshot_gaps,
)
from arena.jsonable import jsonable
from arena.slots import next_slot
from arena.store.queries import decision_window, held_market_ids, latest_runs, unfinished_cohorts
from arena.store.schema import (
    agents,
    anchor_deliveries,
    commitments,
    job_runs,
    markets,
    positions,
    record_head,
    system_log,
)

if TYPE_CHECKING:
    from arena.config import Settings
    from arena.store.queries import Reader

AWAITING_TOO_LONG = timedelta(days=3)
OUTAGE_WINDOW = timedelta(hours=24)
OUTAGE_LINES = 1000


@dataclass(frozen=True)
class JobLine:
    job: Job
    last_slot: datetime | None
    status: str  # the last run's status, or "never"
    finished_at: datetime | None
    next_run: datetime
    error: str | None


@dataclass(frozen=True)
class CohortLine:
    cohort_id: int
    week_start: datetime
    phase: str  # "deciding" (in the decision window) or "tracking"
    agents: int
    open_positions: int


@dataclass(frozen=True)
class Daemon:
    """Whether a daemon runs this database's jobs, judged from the database alone: a daemon
    runs a job for a slot every few minutes (market sync, snapshots, settlement), so its
    latest job run lies within :func:`served_within` before now. A database no daemon serves
    (the demo's, whose runs were simulated, or one whose daemon stopped) owes its schedule's
    work to nobody: that work is information there, not a warning."""

    serving: bool
    last_run: datetime | None  # the slot of the latest job run at or before now

    def headline(self) -> str | None:
        """The line to show first when no daemon serves the database; None when one does."""
        if self.serving:
            return None
        since = f" since {iso_utc(self.last_run)}" if self.last_run else ""
        return (
            f"no daemon has run against this database{since}: nothing runs its jobs (start "
            "one with `arena run`); the work its schedule owes is listed as information, "
            "and 'next if run' is when a daemon would run each job"
        )


def served_within(settings: Settings) -> timedelta:
    """How recent a daemon's latest job run is: three periods of its most frequent job, and
    at least an hour (a job may run long, or wait for a lease)."""
    schedule = settings.schedule
    minutes = min(
        schedule.market_sync_minutes, schedule.snapshot_minutes, schedule.settlement_minutes
    )
    return max(timedelta(hours=1), timedelta(minutes=3 * minutes))


def daemon_at(session: Reader, settings: Settings, now: datetime) -> Daemon:
    """Whether a daemon serves the database at ``now`` (:class:`Daemon`)."""
    last = session.execute(select(func.max(job_runs.c.slot)).where(job_runs.c.slot <= now))
    last_run = last.scalar()
    serving = last_run is not None and now - last_run <= served_within(settings)
    return Daemon(serving, last_run)


UNSIGNED = "commitments are unsigned (no ARENA_SIGNING_KEY where they were made)"


@dataclass(frozen=True)
class CommitmentLine:
    """The latest commitment: the head it commits, how many records it added, when, and
    whether it is signed (and by which key)."""

    seq: int
    head_hash: str
    count: int
    committed_at: datetime
    signed: bool
    key_id: str | None


@dataclass(frozen=True)
class AnchorLine:
    """One configured anchor: the latest commitment it took, how many wait for it, and its
    latest failure (while one waits)."""

    anchor: str
    delivered_seq: int | None  # the latest commitment it took (None: none yet)
    delivered_at: datetime | None
    undelivered: int  # commitments pending or failed for it
    failed_attempts: int  # attempts of the delivery that is failing (0: none is)
    last_error: str | None
    failed_at: datetime | None


@dataclass(frozen=True)
class RecordLine:
    """The record chain's head (``head_seq`` 0: empty), its latest commitment (None: none
    yet), how many records came after it, and each configured anchor."""

    head_seq: int
    head_hash: str
    commitment: CommitmentLine | None
    uncommitted: int
    anchors: list[AnchorLine]
    signing: str | None  # "signed", "unsigned" (the latest commitment's), None: no commitment

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = jsonable(asdict(self))
        return result


def read_record(session: Reader, settings: Settings) -> RecordLine:
    """The chain's head, its latest commitment and the configured anchors' deliveries."""
    head = session.execute(select(record_head.c.seq, record_head.c.hash)).first()
    head_seq, head_hash = (head.seq, head.hash) if head is not None else (0, "0" * 64)
    latest = session.execute(
        select(commitments).order_by(commitments.c.seq.desc(), commitments.c.id.desc()).limit(1)
    ).first()
    commitment = (
        None
        if latest is None
        else CommitmentLine(
            latest.seq,
            latest.head_hash,
            latest._mapping["count"],  # Row.count is the tuple's method
            latest.committed_at,
            latest.signature is not None,
            latest.key_id,
        )
    )
    names = [anchor.name for anchor in settings.record.anchors]
    waiting: dict[str, int] = dict(
        session.execute(
            select(anchor_deliveries.c.anchor, func.count())
            .where(
                anchor_deliveries.c.anchor.in_(names),
                anchor_deliveries.c.status != DeliveryStatus.DELIVERED,
            )
            .group_by(anchor_deliveries.c.anchor)
        ).all()
    )
    delivered = {
        row.anchor: row
        for row in session.execute(
            select(
                anchor_deliveries.c.anchor,
                func.max(commitments.c.seq).label("seq"),
                func.max(anchor_deliveries.c.delivered_at).label("at"),
            )
            .join(commitments, commitments.c.id == anchor_deliveries.c.commitment_id)
            .where(
                anchor_deliveries.c.anchor.in_(names),
                anchor_deliveries.c.status == DeliveryStatus.DELIVERED,
            )
            .group_by(anchor_deliveries.c.anchor)
        )
    }
    failing = {
        row.anchor: row
        for row in session.execute(
            select(anchor_deliveries)
            .where(
                anchor_deliveries.c.anchor.in_(names),
                anchor_deliveries.c.status == DeliveryStatus.FAILED,
            )
            .order_by(anchor_deliveries.c.updated_at, anchor_deliveries.c.id)
        )
    }  # the latest failure of each anchor last, so it is the one kept
    anchors = [
        AnchorLine(
            anchor=name,
            delivered_seq=delivered[name].seq if name in delivered else None,
            delivered_at=delivered[name].at if name in delivered else None,
            undelivered=int(waiting.get(name, 0)),
            failed_attempts=failing[name].attempts if name in failing else 0,
            last_error=failing[name].last_error if name in failing else None,
            failed_at=failing[name].updated_at if name in failing else None,
        )
        for name in names
    ]
    signing = None if commitment is None else ("signed" if commitment.signed else "unsigned")
    uncommitted = head_seq - (commitment.seq if commitment else 0)
    return RecordLine(head_seq, head_hash, commitment, uncommitted, anchors, signing)


def anchor_warnings(record: RecordLine) -> list[str]:
    """One warning per anchor whose latest delivery attempt failed."""
    return [
        f"anchor {line.anchor}: {line.undelivered} commitment(s) not delivered; "
        f"{line.failed_attempts} attempt(s) failed, the latest at {iso_utc(line.failed_at)}: "
        f"{line.last_error}"
        for line in record.anchors
        if line.failed_at is not None
    ]


@dataclass(frozen=True)
class Status:
    """What ``arena status`` and ``/status`` show. ``warnings`` are real trouble, and also the
    work the schedule owes when a daemon serves the database; when none does, that work is in
    ``pending`` instead (information)."""

    now: datetime
    jobs: list[JobLine]
    cohorts: list[CohortLine]
    warnings: list[str]
    snapshot_gaps: SnapshotGaps = field(default_factory=SnapshotGaps)
    abandoned_runs: list[AbandonedRun] = field(default_factory=list)
    daemon: Daemon = field(default_factory=lambda: Daemon(True, None))
    pending: list[str] = field(default_factory=list)
    headline: str | None = None
    record: RecordLine | None = None

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = jsonable(asdict(self))
        return result


def read_status(session: Reader, settings: Settings, now: datetime, lease_now: datetime) -> Status:
    """The status at ``now``."""
    runs: dict[Job, Any] = {}
    for run in session.execute(latest_runs(now)):
        job = Job(run.job)  # a row stored under an old name (``resolution``) is its job's run
        if job not in runs or run.slot > runs[job].slot:
            runs[job] = run
    jobs = [
        JobLine(
            job=job,
            last_slot=runs[job].slot if job in runs else None,
            status=runs[job].status if job in runs else "never",
            finished_at=runs[job].finished_at if job in runs else None,
            next_run=next_slot(settings, job, now),
            error=runs[job].error if job in runs else None,
        )
        for job in Job
    ]
    limit = settings.benchmark.decision_cohort_limit
    window = {c.id for c in session.execute(decision_window(limit, now))}
    cohorts = session.execute(unfinished_cohorts(now)).all()
    ids = [c.id for c in cohorts]
    agent_counts = _counts(
        session, select(agents.c.cohort_id, func.count()).where(agents.c.cohort_id.in_(ids))
    )
    open_counts = _counts(
        session,
        select(positions.c.cohort_id, func.count()).where(
            positions.c.cohort_id.in_(ids), positions.c.status == PositionStatus.OPEN
        ),
    )
    lines = [
        CohortLine(
            cohort_id=c.id,
            week_start=c.week_start,
            phase="deciding" if c.id in window else "tracking",
            agents=agent_counts.get(c.id, 0),
            open_positions=open_counts.get(c.id, 0),
        )
        for c in cohorts
    ]
    gaps = snapshot_gaps(session, settings, now, lease_now)
    abandoned = abandoned_runs(session, now, lease_now)
    due = current_week_due(settings, session, now, lease_now)
    daemon = daemon_at(session, settings, now)
    if daemon.serving:
        warnings, pending = due.warnings() + gaps.warnings(), []
    else:
        warnings, pending = due.trouble(), due.pending() + gaps.warnings()
    warnings += abandoned_warnings(abandoned)
    warnings += awaiting_resolution(session, now)
    warnings += clob_outages(session, now)
    warnings += book_hash_mismatches(session, now)
    record = read_record(session, settings)
    warnings += anchor_warnings(record)
    return Status(
        now, jobs, lines, warnings, gaps, abandoned, daemon, pending, daemon.headline(), record
    )


def _counts(session: Reader, statement: Any) -> dict[int, int]:
    grouped = statement.group_by(statement.selected_columns[0])
    return dict(session.execute(grouped).all())


def clob_outages(session: Reader, now: datetime) -> list[str]:
    """The Polymarket CLOB outages of the last :data:`OUTAGE_WINDOW` (mode book: decisions
    and snapshots that could not get an order book), newest first, with how many there were."""
    rows = session.execute(
        select(system_log.c.at, system_log.c.source, system_log.c.message)
        .where(
            system_log.c.event == CLOB_UNAVAILABLE,
            system_log.c.at <= now,
            system_log.c.at > now - OUTAGE_WINDOW,
        )
        .order_by(system_log.c.at.desc(), system_log.c.id.desc())
        .limit(OUTAGE_LINES)
    ).all()
    if not rows:
        return []
    at, source, message = rows[0]
    more = f" ({len(rows)} in the last 24 h)" if len(rows) > 1 else ""
    return [f"CLOB outage at {iso_utc(at)} during the {source}{more}: {message}"]


def book_hash_mismatches(session: Reader, now: datetime) -> list[str]:
    """How many order books of the last :data:`OUTAGE_WINDOW` were served with a hash other
    than the one computed of them, and the latest such fetch."""
    mismatch = system_log.c.event == BOOK_HASH_MISMATCH
    window = (system_log.c.at <= now, system_log.c.at > now - OUTAGE_WINDOW)
    total = session.execute(
        select(func.sum(system_log.c.details["count"].as_integer())).where(mismatch, *window)
    ).scalar()
    if not total:
        return []
    at, source, message = session.execute(
        select(system_log.c.at, system_log.c.source, system_log.c.message)
        .where(mismatch, *window)
        .order_by(system_log.c.at.desc(), system_log.c.id.desc())
        .limit(1)
    ).one()
    return [
        f"{total} order book(s) served with a wrong hash in the last 24 h; latest at "
        f"{iso_utc(at)} during the {source}: {message}"
    ]


def awaiting_resolution(session: Reader, now: datetime) -> list[str]:
    """Held markets closed for more than :data:`AWAITING_TOO_LONG` that still await resolution."""
    warnings: list[str] = []
    held = (
        select(
            markets.c.id,
            markets.c.closed,
            markets.c.closed_time,
            markets.c.end_date,
            markets.c.uma_resolution_status,
        )
        .where(markets.c.id.in_(held_market_ids()), markets.c.status == MarketStatus.OPEN)
        .order_by(markets.c.id)
    )
    for market in session.execute(held):
        closed_at = market.closed_time or (market.end_date if market.closed else None)
        if market.closed and closed_at and now - closed_at > AWAITING_TOO_LONG:
            warnings.append(
                f"market {market.id} closed {closed_at.date()} and still awaits "
                f"resolution ({market.uma_resolution_status or 'no proposal'})"
            )
    return warnings
