"""Idempotent decision claims (methodology: "Idempotent decision claims").

Before any model call the engine claims the unique decision row of
``(agent_id, cohort_id, decision_week)``: an atomic insert, or an atomic take-over of a row
whose lease expired or whose status is retryable. The claim carries a random token and a lease
renewed by a background thread while the call is in flight. Trades are written only in a
transaction that re-checks the token (:func:`lock_claim`), so a stale worker can never trade.

Leases run on the real wall clock (``lease_clock``), not the simulated one: they measure
whether a *process* is still alive, which ``--at`` does not change.
"""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock
from arena.store.db import transaction
from arena.store.models import Decision
from arena.store.upsert import insert_ignore

log = logging.getLogger(__name__)

CLAIMED = "claimed"
COMPLETED = "completed"
RETRYABLE = "retryable"
BUDGET_SKIPPED = "budget_skipped"
TAKEOVER_STATUSES = (RETRYABLE, BUDGET_SKIPPED)


@dataclass(frozen=True)
class Claim:
    decision_id: int
    token: str
    attempts_before: int  # attempts stored by earlier claims of the same decision


def claim_decision(
    factory: sessionmaker[Session],
    *,
    agent_id: int,
    cohort_id: int,
    decision_week: int,
    universe_id: int | None,
    prompt_version: str,
    methodology_version: str,
    now: datetime,
    lease_clock: Clock,
    lease_seconds: int,
) -> Claim | None:
    """Claim the decision row, or return ``None`` when it is final or held by a live worker."""
    from arena.store.models import DecisionAttempt

    token = secrets.token_hex(16)
    lease_until = lease_clock.now() + timedelta(seconds=lease_seconds)
    with transaction(factory) as session:
        inserted = insert_ignore(
            session,
            Decision.__table__,  # type: ignore[arg-type]
            {
                "agent_id": agent_id,
                "cohort_id": cohort_id,
                "decision_week": decision_week,
                "universe_id": universe_id,
                "status": CLAIMED,
                "claim_token": token,
                "lease_expires_at": lease_until,
                "claim_count": 1,
                "prompt_version": prompt_version,
                "methodology_version": methodology_version,
                "created_at": now,
                "updated_at": now,
            },
            conflict=["agent_id", "cohort_id", "decision_week"],
        )
        if not inserted:
            result = session.execute(
                update(Decision)
                .where(
                    Decision.agent_id == agent_id,
                    Decision.cohort_id == cohort_id,
                    Decision.decision_week == decision_week,
                    or_(
                        Decision.status.in_(TAKEOVER_STATUSES),
                        (Decision.status == CLAIMED)
                        & (Decision.lease_expires_at < lease_clock.now()),
                    ),
                )
                .values(
                    status=CLAIMED,
                    claim_token=token,
                    lease_expires_at=lease_until,
                    claim_count=Decision.claim_count + 1,
                    universe_id=universe_id,
                    updated_at=now,
                )
            )
            if result.rowcount != 1:  # type: ignore[attr-defined]
                return None
        decision_id = session.execute(
            select(Decision.id).where(
                Decision.agent_id == agent_id,
                Decision.cohort_id == cohort_id,
                Decision.decision_week == decision_week,
            )
        ).scalar_one()
        from sqlalchemy import func

        attempts = session.scalar(
            select(func.count())
            .select_from(DecisionAttempt)
            .where(DecisionAttempt.decision_id == decision_id)
        )
    return Claim(decision_id, token, int(attempts or 0))


def lock_claim(session: Session, claim: Claim) -> Decision | None:
    """Inside a write transaction: the decision row if ``claim`` still holds it, else None."""
    statement = select(Decision).where(
        Decision.id == claim.decision_id,
        Decision.claim_token == claim.token,
        Decision.status == CLAIMED,
    )
    return session.execute(statement.with_for_update()).scalar_one_or_none()


def renew_lease(
    factory: sessionmaker[Session], claim: Claim, lease_clock: Clock, lease_seconds: int
) -> bool:
    """Push the lease forward; False when the claim was lost."""
    with transaction(factory) as session:
        result = session.execute(
            update(Decision)
            .where(
                Decision.id == claim.decision_id,
                Decision.claim_token == claim.token,
                Decision.status == CLAIMED,
            )
            .values(lease_expires_at=lease_clock.now() + timedelta(seconds=lease_seconds))
        )
        return result.rowcount == 1  # type: ignore[attr-defined]


class LeaseKeeper:
    """Renews a claim's lease every third of its length while a model call is in flight."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        claim: Claim,
        lease_clock: Clock,
        lease_seconds: int,
    ) -> None:
        self._factory = factory
        self._claim = claim
        self._clock = lease_clock
        self._seconds = lease_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lease-{claim.decision_id}", daemon=True
        )
        self.lost = False

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        interval = max(self._seconds / 3, 0.2)
        while not self._stop.wait(interval):
            try:
                if not renew_lease(self._factory, self._claim, self._clock, self._seconds):
                    self.lost = True
                    log.warning(
                        "decision %s: claim lost to another worker", self._claim.decision_id
                    )
                    return
            except Exception:  # a failed renewal must not kill the call; the next one retries
                log.exception("decision %s: lease renewal failed", self._claim.decision_id)
