"""Idempotent decision claims (methodology: "Idempotent decision claims").

Before any model call the engine claims the unique decision row of
``(agent_id, cohort_id, decision_week)``: an atomic insert, or an atomic take-over of a row
whose lease expired or whose status is retryable. The claim carries a random token and a lease
renewed by a background thread while the call is in flight. Trades are written only in a
transaction that re-checks the token (:func:`lock_claim`), so a stale worker can never trade.

Each claim records its holder (:mod:`arena.jobs.holders`: host, pid, process start time). A
claim whose holder is dead on this host is taken over at once; elsewhere its short lease
decides. Leases run on the real wall clock (``lease_clock``), not the simulated one: they
measure whether a *process* is still alive, which ``--at`` does not change.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, iso_utc
from arena.domain.decisions import ValidDecision
from arena.domain.states import Blocked, DecisionStatus
from arena.domain.storable import MODEL_TEXT, optional_text, storable_json
from arena.jobs.holders import Heartbeat, holder_alive, label, this_process
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import Agent, Decision, DecisionAttempt
from arena.store.upsert import insert_ignore

if TYPE_CHECKING:
    from arena.jobs.execute import ExecutionResult

log = logging.getLogger(__name__)

TAKEOVER_STATUSES = (DecisionStatus.RETRYABLE, DecisionStatus.BUDGET_SKIPPED)


@dataclass(frozen=True)
class Claim:
    decision_id: int
    token: str
    attempts_before: int  # attempts stored by earlier claims of the same decision
    cost_before: Decimal = Decimal(0)  # what those attempts cost (the budget counts it)


@dataclass(frozen=True)
class LeaseTerms:
    """How long a claim holds: ``seconds`` from now on ``clock``, the real clock leases run on
    (never a simulated one, so a dead holder's lease runs out in real time)."""

    clock: Clock
    seconds: int

    def until(self) -> datetime:
        """When a lease taken or renewed now runs out."""
        return self.clock.now() + timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class Refused:
    """Why a decision could not be claimed: it is final, or a live holder has it."""

    decision_id: int
    status: str
    holder: str | None = None
    lease_until: datetime | None = None

    @property
    def held(self) -> bool:
        return self.status == DecisionStatus.CLAIMED

    def describe(self) -> str:
        """``already final`` or ``held by HOST:PID until T``."""
        if not self.held:
            return Blocked.ALREADY_FINAL
        until = iso_utc(self.lease_until) if self.lease_until else "?"
        return f"held by {label(self.holder)} until {until}"


def claim_decision(
    factory: sessionmaker[Session],
    agent: Agent,
    *,
    decision_week: int,
    universe_id: int | None,
    now: datetime,
    lease: LeaseTerms,
) -> Claim | Refused:
    """Claim the agent's decision row of the week, or say why not (final, or held by a live
    worker)."""
    agent_id, cohort_id = agent.id, agent.cohort_id
    token = secrets.token_hex(16)
    holder = str(this_process())
    lease_until = lease.until()
    key = (
        Decision.agent_id == agent_id,
        Decision.cohort_id == cohort_id,
        Decision.decision_week == decision_week,
    )
    take_over = {
        "status": DecisionStatus.CLAIMED,
        "claim_token": token,
        "holder": holder,
        "lease_until": lease_until,
        "claim_count": Decision.claim_count + 1,
        "universe_id": universe_id,
        "updated_at": now,
    }
    with transaction(factory) as session:
        inserted = insert_ignore(
            session,
            schema.decisions,
            {
                "agent_id": agent_id,
                "cohort_id": cohort_id,
                "decision_week": decision_week,
                "universe_id": universe_id,
                "status": DecisionStatus.CLAIMED,
                "claim_token": token,
                "holder": holder,
                "lease_until": lease_until,
                "claim_count": 1,
                "prompt_version": agent.prompt_version,
                "methodology_version": agent.methodology_version,
                "created_at": now,
                "updated_at": now,
            },
            conflict=["agent_id", "cohort_id", "decision_week"],
        )
        if not inserted:
            result = session.execute(
                update(Decision)
                .where(
                    *key,
                    or_(
                        Decision.status.in_(TAKEOVER_STATUSES),
                        (Decision.status == DecisionStatus.CLAIMED)
                        & (Decision.lease_until < lease.clock.now()),
                    ),
                )
                .values(**take_over)
            )
            if result.rowcount != 1:  # type: ignore[attr-defined]
                row = session.execute(select(Decision).where(*key)).scalar_one()
                if row.status != DecisionStatus.CLAIMED or holder_alive(row.holder) is not False:
                    return Refused(row.id, row.status, row.holder, row.lease_until)
                # Its holder died on this host: take it over now, unless someone just did.
                log.warning(
                    "decision %s: holder %s is dead; taking it over", row.id, label(row.holder)
                )
                result = session.execute(
                    update(Decision)
                    .where(*key, Decision.claim_token == row.claim_token)
                    .values(**take_over)
                )
                if result.rowcount != 1:  # type: ignore[attr-defined]
                    return Refused(row.id, DecisionStatus.CLAIMED, None, None)
        decision_id = session.execute(select(Decision.id).where(*key)).scalar_one()
        costs = session.scalars(
            select(DecisionAttempt.cost_usd).where(DecisionAttempt.decision_id == decision_id)
        ).all()
    paid = sum((cost for cost in costs if cost is not None), Decimal(0))
    return Claim(decision_id, token, len(costs), paid)


def lock_claim(session: Session, claim: Claim) -> Decision | None:
    """Inside a write transaction: the decision row if ``claim`` still holds it, else None."""
    statement = select(Decision).where(
        Decision.id == claim.decision_id,
        Decision.claim_token == claim.token,
        Decision.status == DecisionStatus.CLAIMED,
    )
    return session.execute(statement.with_for_update()).scalar_one_or_none()


def renew_lease(factory: sessionmaker[Session], claim: Claim, lease: LeaseTerms) -> bool:
    """Push the lease forward; False when the claim was lost."""
    with transaction(factory) as session:
        result = session.execute(
            update(Decision)
            .where(
                Decision.id == claim.decision_id,
                Decision.claim_token == claim.token,
                Decision.status == DecisionStatus.CLAIMED,
            )
            .values(lease_until=lease.until())
        )
        return result.rowcount == 1  # type: ignore[attr-defined]


class LeaseKeeper(Heartbeat):
    """Renews a claim's lease every third of its length while a model call is in flight."""

    def __init__(self, factory: sessionmaker[Session], claim: Claim, lease: LeaseTerms) -> None:
        super().__init__(
            lambda: renew_lease(factory, claim, lease),
            lease.seconds / 3,
            f"lease-{claim.decision_id}",
        )


def release_completed(
    row: Decision,
    decision: ValidDecision,
    system_hold: bool,
    cash_shown: Decimal,
    execution: ExecutionResult,
    now: datetime,
) -> None:
    """Release a claim as final: the decision, its answer and any refused executions."""
    row.status = DecisionStatus.COMPLETED
    row.action = decision.action.value
    row.system_hold = system_hold
    row.cash_shown = cash_shown
    row.reasoning = optional_text(decision.reasoning, MODEL_TEXT)
    row.payload = storable_json(decision.to_json_dict())
    row.error = optional_text("; ".join(execution.failures), MODEL_TEXT) or None
    row.refusals = storable_json(execution.refusals) or None
    row.completed_at = row.updated_at = now
    row.lease_until = None


def release_failed(
    row: Decision,
    status: str,
    error: str,
    decision: ValidDecision | None,
    refusals: list[dict[str, object]] | None,
    now: datetime,
) -> None:
    """Release a claim in a failure state (retryable, budget skipped) with its error."""
    row.status = status
    row.error = optional_text(error, MODEL_TEXT)
    row.action = decision.action.value if decision else None
    row.payload = storable_json(decision.to_json_dict()) if decision else None
    row.refusals = storable_json(refusals) if refusals else None
    row.updated_at = now
    row.lease_until = None


def withdraw_claim(factory: sessionmaker[Session], claim: Claim, now: datetime) -> None:
    """Give back a claim whose agent was never asked (the run stopped first): a row this claim
    created is removed, as if the agent had not been reached; a row it took over goes back to
    ``retryable``, saying why."""
    with transaction(factory) as session:
        row = lock_claim(session, claim)
        if row is None:
            return
        if row.claim_count == 1:  # this claim created the row: nothing was ever asked on it
            session.delete(row)
        else:
            release_failed(
                row, DecisionStatus.RETRYABLE, "not asked: the run stopped first", None, None, now
            )
