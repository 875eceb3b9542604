"""One agent's turn in a decision run: the decision it claimed, the agent, what it is shown,
and where its attempts and its outcome are written as they happen."""

from __future__ import annotations

from dataclasses import dataclass

from arena.jobs.claims import Claim
from arena.jobs.decide_report import AgentResult, AttemptLog
from arena.jobs.universe import FrozenUniverse
from arena.store.models import Agent


@dataclass(frozen=True)
class Turn:
    """One claimed decision in hand: the claim, the agent and its decision week, the frozen
    universe and the cohort's pricing mode it is decided on, the log of its model calls, and
    the result the run reports for it (filled in as the turn goes on)."""

    claim: Claim
    agent: Agent
    week: int
    universe: FrozenUniverse
    pricing: str
    attempts: AttemptLog
    result: AgentResult
