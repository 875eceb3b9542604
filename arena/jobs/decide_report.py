"""What a decision run reports (per agent and in all) and the log of a decision's model
calls, each stored the moment it happens: a paid answer is committed on arrival, before it is
parsed, so nothing that fails after the call can lose the record of what was paid."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock
from arena.domain.states import AttemptOutcome, Blocked, DecisionStatus
from arena.domain.storable import MODEL_TEXT, optional_text, storable_json
from arena.errors import ProviderCallError
from arena.jobs.claims import Claim
from arena.jsonable import jsonable
from arena.sources.providers import ModelReply
from arena.store.db import transaction
from arena.store.models import Citation, DecisionAttempt


@dataclass
class AgentResult:
    cohort_id: int
    agent_id: int
    family_id: str
    decision_id: int | None
    status: str  # completed | retryable | budget_skipped | already final | held
    action: str | None = None
    system_hold: bool = False
    trades: int = 0
    attempts: int = 0
    cost_usd: Decimal = Decimal(0)
    error: str | None = None
    lease_until: datetime | None = None

    @property
    def failed(self) -> bool:
        return self.status in (DecisionStatus.RETRYABLE, DecisionStatus.BUDGET_SKIPPED)

    @property
    def final(self) -> bool:
        return self.status in (DecisionStatus.COMPLETED, Blocked.ALREADY_FINAL)

    def describe(self) -> str:
        """``completed``, ``already final``, ``held by HOST:PID until T``, or the failure."""
        if self.status == Blocked.HELD or (self.status == Blocked.ALREADY_FINAL and self.error):
            return self.error or self.status
        return self.status + (f": {self.error}" if self.error else "")


@dataclass
class DecideReport:
    """What a decision run did, agent by agent (a :class:`arena.jobs.report.JobReport`).

    ``missing_cohort`` is set only on a run for a scheduled slot
    (:meth:`arena.runtime.Runtime.decision_run` with its slot): the week start of the slot when
    that week had no cohort as the run started. Such a run fails, so the slot is not done and
    the catch-up decides that cohort once it exists; ``arena decide`` run by hand with nothing
    to decide succeeds."""

    universe_id: int | None = None
    results: list[AgentResult] = field(default_factory=list)
    aborted: str | None = None
    missing_cohort: datetime | None = None

    @property
    def unfinished(self) -> list[AgentResult]:
        """Agents whose decision is not final: failed, or still held by another process."""
        return [r for r in self.results if not r.final]

    def failure(self) -> str | None:
        """Failed (exit 1, a slot to retry): the run was aborted (a refused universe, a refused
        key, a shutdown), an agent is not final (failed or held), every model call failed, or
        the slot's week had no cohort (``missing_cohort``)."""
        if self.aborted:
            return f"decision run stopped: {self.aborted}"
        if self.unfinished:
            reasons = "; ".join(f"{r.family_id}: {r.describe()}" for r in self.unfinished[:5])
            return f"{len(self.unfinished)} decision(s) not final: {reasons}"
        called = [r for r in self.results if r.attempts]
        if called and all(r.error for r in called):
            return f"every model call failed ({len(called)} agents)"
        if self.missing_cohort is not None:
            return (
                f"no cohort for the week of {self.missing_cohort.date()} when the run started: "
                "its agents are decided once it exists"
            )
        return None

    def counts(self) -> dict[str, Any]:
        """How many agents were decided, already final and unfinished; trades and cost."""
        figures = {
            "decided": sum(r.status == DecisionStatus.COMPLETED for r in self.results),
            "already_final": sum(r.status == Blocked.ALREADY_FINAL for r in self.results),
            "unfinished": len(self.unfinished),
            "trades": sum(r.trades for r in self.results),
            "cost_usd": sum((r.cost_usd for r in self.results), Decimal(0)),
            "aborted": self.aborted,
        }
        return dict(jsonable(figures))

    def summary(self) -> str:
        """The totals, then one line per unfinished agent and the refusal, if any."""
        done = sum(1 for r in self.results if r.status == DecisionStatus.COMPLETED)
        final = sum(1 for r in self.results if r.final) - done
        lines = [
            f"{done} completed, {final} already final, {len(self.unfinished)} unfinished "
            f"(universe {self.universe_id})"
        ]
        lines += [
            f"  unfinished: {r.family_id} (agent {r.agent_id}): {r.describe()}"
            for r in self.unfinished
        ]
        if self.aborted:
            lines.append(f"run refused: {self.aborted}")
        return "\n".join(lines)


@dataclass
class AttemptLog:
    """Collects the attempts of one decision as they happen, and stores each at once, each in
    its own transaction (never in the one that executes the decision)."""

    factory: sessionmaker[Session]
    claim: Claim
    prompt_version: str
    clock: Clock
    count: int = 0
    cost: Decimal = Decimal(0)
    uncosted: bool = False  # an answer came without a usable cost (the budget keeps its guess)

    def store(
        self,
        kind: str,
        outcome: str,
        messages: list[dict[str, Any]],
        started: datetime,
        answer: ModelReply | ProviderCallError | None = None,
        message: str | None = None,
    ) -> int:
        """Store one attempt (committed before this returns); its row id. ``answer``: what
        the call returned, a reply or the error it failed with (None: no call was made)."""
        self.count += 1
        reply = answer if isinstance(answer, ModelReply) else None
        error = answer if isinstance(answer, ProviderCallError) else None
        cost = getattr(answer, "cost_usd", None)
        if cost is not None:
            self.cost += cost
        elif reply is not None:
            self.uncosted = True
        row = DecisionAttempt(
            decision_id=self.claim.decision_id,
            attempt_no=self.claim.attempts_before + self.count,
            claim_token=self.claim.token,
            kind=kind,
            outcome=outcome,
            request_messages=storable_json(messages),
            raw_response=optional_text(reply.content if reply is not None else None, MODEL_TEXT),
            raw_body=storable_json(
                reply.raw if reply is not None else error.raw if error else None
            ),
            error=optional_text(
                message or (error.message if error is not None else None), MODEL_TEXT
            ),
            http_status=error.status if error is not None else None,
            finish_reason=reply.finish_reason if reply is not None else None,
            provider=getattr(answer, "provider", None),
            model=getattr(answer, "model", None),
            generation_id=getattr(answer, "generation_id", None),
            prompt_tokens=getattr(answer, "prompt_tokens", None),
            completion_tokens=getattr(answer, "completion_tokens", None),
            cost_usd=cost,
            latency_ms=getattr(answer, "latency_ms", None),
            prompt_version=self.prompt_version,
            started_at=started,
            finished_at=self.clock.now(),
            search_cost_usd=reply.search_cost_usd if reply is not None else None,
            search_note=reply.search_note if reply is not None else None,
        )
        with transaction(self.factory) as session:
            session.add(row)
            session.flush()
            for position, cited in enumerate(reply.citations if reply is not None else ()):
                session.add(
                    Citation(
                        attempt_id=row.id,
                        position=position,
                        url=cited.url,
                        title=cited.title,
                        content=cited.content,
                        cited_at=row.finished_at,
                    )
                )
            return row.id

    def verdict(
        self,
        attempt_id: int,
        outcome: str,
        parsed: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        """Write the verdict on an answer stored as ``received``: once, never over another."""
        with transaction(self.factory) as session:
            session.execute(
                update(DecisionAttempt)
                .where(
                    DecisionAttempt.id == attempt_id,
                    DecisionAttempt.outcome == AttemptOutcome.RECEIVED,
                )
                .values(
                    outcome=outcome,
                    parsed=storable_json(parsed),
                    error=optional_text(message, MODEL_TEXT),
                )
            )
