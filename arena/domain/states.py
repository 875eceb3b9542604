"""Every status arena stores or reports, one enum each.

The values are what the database holds and the exports carry, so they never change here. One
casing: lower case (``snake_case``), except where the value is part of the interface contract
and is exported as it stands: position statuses are upper case, like the decision actions
(``BET``), the sides (``YES``) and the settlement outcomes (``WON``) beside them in the
``positions`` and ``trades`` exports. Member names are always upper case.
"""

from __future__ import annotations

import enum


class CohortStatus(enum.StrEnum):
    """A cohort's life: it trades until its window ends and every position has settled."""

    ACTIVE = "active"
    """Trading or waiting for its positions to settle."""
    COMPLETED = "completed"
    """Past its window with no open position left; nothing will change it again."""


class MarketStatus(enum.StrEnum):
    """A market's local settlement state, set only by the settling transaction."""

    OPEN = "open"
    """Not settled here (Gamma may already show it closed)."""
    RESOLVED = "resolved"
    """Settled on a winner (or 50-50): positions paid, forecasts scored."""
    CANCELLED = "cancelled"
    """Settled without a winner (or overdue): cost bases refunded, nothing scored."""


class PositionStatus(enum.StrEnum):
    """A position's state. Upper case: the contract's ``positions`` export carries it."""

    OPEN = "OPEN"
    """Holds shares; valued at each snapshot."""
    CLOSED = "CLOSED"
    """Sold in full before settlement."""
    SETTLED = "SETTLED"
    """Paid out at settlement (won, lost or void)."""
    CANCELLED = "CANCELLED"
    """Refunded at its cost basis: the market settled without a winner."""


class DecisionStatus(enum.StrEnum):
    """A weekly decision's claim state (methodology: claims)."""

    CLAIMED = "claimed"
    """A daemon or a CLI run holds it under a lease."""
    COMPLETED = "completed"
    """Final: the decision is stored and its trades executed."""
    RETRYABLE = "retryable"
    """Failed (provider, internal error); a later run may take it again."""
    BUDGET_SKIPPED = "budget_skipped"
    """Not asked: its worst-case cost did not fit the budget."""


class AttemptKind(enum.StrEnum):
    """Why a model call of a decision was made."""

    INITIAL = "initial"
    """The first call of a round."""
    REPAIR = "repair"
    """A call that quotes the previous answer's error back to the model."""
    RETRY = "retry"
    """The same request again after a transient failure."""


class AttemptOutcome(enum.StrEnum):
    """What one model call (or baseline answer) came to."""

    VALID = "valid"
    """A valid decision."""
    MALFORMED = "malformed"
    """An answer that failed extraction or validation (repairable)."""
    TRANSIENT_ERROR = "transient_error"
    """A provider failure worth retrying."""
    PERMANENT_ERROR = "permanent_error"
    """A provider failure that repeats on the same request."""
    FATAL_ERROR = "fatal_error"
    """Bad key or no credit: the run stops."""
    BUDGET_SKIPPED = "budget_skipped"
    """No call: the budget forbade it (a row is written so the skip is visible)."""
    RECEIVED = "received"
    """An answer stored the moment it arrived, before its verdict (valid or malformed) was
    written on the same row; it stays so only when what followed the call failed."""


FAILED_CALLS = (
    AttemptOutcome.TRANSIENT_ERROR,
    AttemptOutcome.PERMANENT_ERROR,
    AttemptOutcome.FATAL_ERROR,
)
"""The outcomes of calls the provider failed."""


class FamilyKind(enum.StrEnum):
    """How a model family answers (config ``families[].kind``; ``families.kind`` and
    ``agents.kind`` in the database and the exports)."""

    OPENROUTER = "openrouter"
    """A language model called through OpenRouter (a configured family without ``kind``)."""
    BASELINE = "baseline"
    """A built-in deterministic strategy, answering through the same validation path."""
    AGENT = "agent"
    """An outside agent: arena POSTs a signed decision request to its endpoint, and its
    answer goes through the same validation path (:mod:`arena.sources.outside_agent`)."""


class Methodology(enum.StrEnum):
    """A methodology version (config ``methodology``; every cohort, agent and decision stores
    the one it ran under, and the export's manifest names it)."""

    V1 = "v1"
    """Bets and sells on the weekly universe."""
    V2 = "v2"
    """v1 plus a forecast panel: a stated probability for each panel market and each bet."""


class Job(enum.StrEnum):
    """The daemon's jobs, one name each. The value is what ``job_runs.job``, the logs, the
    ``job`` label of the metrics, ``arena status`` and the status page carry; the members are
    in the order ``arena run --once`` runs them (a cohort exists before its decisions, markets
    are fresh before decisions and settlement, snapshots see the state after everything else).

    Names kept for the interface contract are aliases, listed in :data:`JOB_ALIASES`.
    """

    COHORT_START = "cohort_start"
    """Open this week's cohort, one agent per active family (``arena cohort start``;
    weekly, ``schedule.cohort_start``)."""
    MARKET_SYNC = "market_sync"
    """Pull the Gamma universe and refresh the markets the store needs fresh
    (``arena markets sync``; every ``schedule.market_sync_minutes``)."""
    DECISION_RUN = "decision_run"
    """Freeze the universe and decide every agent of the decision window (``arena decide``;
    weekly, ``schedule.decision_run``)."""
    SETTLEMENT = "settlement"
    """Settle the positions of markets Gamma reports resolved, then complete finished cohorts
    (``arena settle``, alias ``arena resolve``; every ``schedule.settlement_minutes``, alias
    ``schedule.resolution_minutes``). A market's outcome itself is its *resolution*
    (:mod:`arena.domain.resolution`)."""
    SNAPSHOT = "snapshot"
    """Value every agent at this slot (``arena snapshot``; every ``schedule.snapshot_minutes``)."""
    ANALYSIS = "analysis"
    """Bring the stored methodology v2 analysis up to date, which the dashboard serves
    (:func:`arena.analytics.stored.refresh_analysis`; every ``schedule.analysis_minutes``, and
    right after each decision run and settlement). Operational: nothing it stores is recorded."""
    COMMITMENT = "commitment"
    """Commit the record chain's head, signed, and send it to the anchors, retrying earlier
    deliveries that failed (``arena record commit``; every ``schedule.commitment_minutes``,
    and after each decision run). Last: it commits what the jobs before it recorded."""

    @classmethod
    def _missing_(cls, value: object) -> Job | None:
        """A stored or configured old name (:data:`JOB_ALIASES`) reads as its job."""
        return JOB_ALIASES.get(value) if isinstance(value, str) else None

    @property
    def weekly(self) -> bool:
        """Fires once a week at its day and time (else every N minutes from midnight UTC)."""
        return self in (Job.COHORT_START, Job.DECISION_RUN)


JOB_ALIASES: dict[str, Job] = {"resolution": Job.SETTLEMENT}
"""Old job names that still read as their job: ``resolution`` was the settlement job's name in
``job_runs`` rows (migration 0006 rewrites them) and in the ``schedule.resolution_minutes``
key, which the interface contract keeps."""


class AnchorKind(enum.StrEnum):
    """Where a commitment is sent (config ``record.anchors[].kind``)."""

    FILE = "file"
    """Appended to ``commitments.jsonl`` in a directory."""
    GIT = "git"
    """Appended to ``commitments.jsonl`` in a local git repository, committed and pushed."""
    HTTP = "http"
    """POSTed as JSON to a URL; its answer is kept."""


class DeliveryStatus(enum.StrEnum):
    """A commitment's delivery to one anchor (``anchor_deliveries.status``)."""

    PENDING = "pending"
    """Not attempted yet (the commitment was just stored)."""
    DELIVERED = "delivered"
    """The anchor took it."""
    FAILED = "failed"
    """The latest attempt failed; the next commitment run tries again."""


class JobRunStatus(enum.StrEnum):
    """A scheduled job's run for one slot."""

    RUNNING = "running"
    """Started; its holder renews the lease."""
    SUCCEEDED = "succeeded"
    """Done; the slot is never run again."""
    FAILED = "failed"
    """Failed; a later tick (or the CLI) may run the slot again."""
    ABANDONED = "abandoned"
    """Its holder died mid-run (or its lease ran out on another host) and the slot was not
    taken over: it never ran to its end. A later run of the slot may still take it."""


class Blocked(enum.StrEnum):
    """Why a job slot or a decision was not run by this caller. The CLI prints these values."""

    HELD = "held"
    """Another live holder has it under a lease."""
    ALREADY_FINAL = "already final"
    """It was done before (a job run succeeded, a decision is final)."""
    WEEK_OVER = "week over"
    """A weekly job's latest slot lies in a past week (``--once`` between Sunday 00:00 and the
    decision run's fire time): a week's work is done in its week, never in the next."""


CLOB_UNAVAILABLE = "clob_unavailable"
"""The system-log event of a CLOB outage: written where a book could not be fetched
(:mod:`arena.jobs.books`), listed by ``arena status`` (:mod:`arena.jobs.status`)."""

BOOK_HASH_MISMATCH = "book_hash_mismatch"
"""The system-log event of books whose served ``hash`` differs from the one computed of them
(details ``count``): written by :mod:`arena.jobs.books`, counted by ``arena status`` and
``/metrics``."""
