"""Cohort job: open this week's cohort with ``replicates`` agents (``r1``..``rN``) per active
family; cohort lifecycle.

Exactly one cohort per week start is guaranteed by the unique constraint on
``cohorts.week_start`` (insert-or-nothing), never by check-then-insert, so any number of
concurrent callers leave one cohort. Agents are created in the same transaction as their cohort.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import exists, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, iso_utc, week_start
from arena.config import FamilyConfig, Settings
from arena.domain.prompting import prompt_version_for
from arena.domain.states import CohortStatus, PositionStatus
from arena.jsonable import jsonable
from arena.record.chain import record_cohort
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import Agent, Cohort, Position
from arena.store.queries import decision_window
from arena.store.upsert import insert_ignore, upsert

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CohortReport:
    """What a cohort start did (a :class:`arena.jobs.report.JobReport`)."""

    cohort_id: int
    week_start: datetime
    created: bool
    agents: int

    def counts(self) -> dict[str, Any]:
        """The cohort, whether this run created it, and its agents."""
        return dict(
            jsonable({"cohort_id": self.cohort_id, "created": self.created, "agents": self.agents})
        )

    def failure(self) -> None:
        """Never: a cohort start either opens the cohort, finds it open, or raises."""
        return None

    def summary(self) -> str:
        verb = "created" if self.created else "already exists:"
        return (
            f"cohort {self.cohort_id} {verb} week starting {iso_utc(self.week_start)}, "
            f"{self.agents} agents"
        )


def family_row(family: FamilyConfig, now: datetime) -> dict[str, object]:
    return {
        "id": family.id,
        "kind": family.kind,
        "display_name": family.display_name or family.id,
        "provider": family.provider,
        "openrouter_id": family.openrouter_id,
        "strategy": getattr(family, "strategy", None),
        "active": family.active,
        "first_seen_at": now,
        "updated_at": now,
    }


def sync_families(session: Session, settings: Settings, now: datetime) -> None:
    """Mirror the configured families into the families table (agents keep their frozen copy)."""
    rows = [family_row(family, now) for family in settings.families]
    upsert(
        session,
        schema.families,
        rows,
        conflict=["id"],
        update=[
            "kind",
            "display_name",
            "provider",
            "openrouter_id",
            "strategy",
            "active",
            "updated_at",
        ],
    )


def start_cohort(factory: sessionmaker[Session], settings: Settings, clock: Clock) -> CohortReport:
    """Create the cohort of the week containing ``clock.now()`` (no-op if it exists)."""
    now = clock.now()
    start = week_start(now)
    with transaction(factory) as session:
        sync_families(session, settings, now)
        created = insert_ignore(
            session,
            schema.cohorts,
            {
                "week_start": start,
                "created_at": now,
                "methodology_version": settings.methodology,
                "prompt_version": prompt_version_for(
                    settings.methodology, settings.benchmark.pricing
                ),
                "pricing": settings.benchmark.pricing,
                "starting_balance": settings.benchmark.starting_balance,
                "status": CohortStatus.ACTIVE,
            },
            conflict=["week_start"],
        )
        cohort = session.execute(select(Cohort).where(Cohort.week_start == start)).scalar_one()
        if created:
            for family in settings.active_families:
                for replicate in range(1, family.replicates + 1):
                    session.add(new_agent(cohort, family, now, replicate))
            session.flush()
            record_cohort(session, cohort.id, now)
        agents = session.scalar(
            select(func.count()).select_from(Agent).where(Agent.cohort_id == cohort.id)
        )
    if created:
        log.info("cohort %s opened for week %s with %s agents", cohort.id, start, agents)
    return CohortReport(cohort.id, start, bool(created), int(agents or 0))


def new_agent(cohort: Cohort, family: FamilyConfig, now: datetime, replicate: int = 1) -> Agent:
    """Replicate ``replicate`` of the family in the cohort, with the family's identity, its web
    search settings and the versions frozen on it."""
    web_search = getattr(family, "web_search", None)
    return Agent(
        cohort_id=cohort.id,
        family_id=family.id,
        kind=family.kind,
        display_name=family.display_name or family.id,
        provider=family.provider,
        openrouter_id=family.openrouter_id,
        strategy=getattr(family, "strategy", None),
        prompt_version=cohort.prompt_version,
        methodology_version=cohort.methodology_version,
        web_search=None if web_search is None else web_search.model_dump(mode="json"),
        starting_balance=cohort.starting_balance,
        cash=cohort.starting_balance,
        realized_pnl=0,
        created_at=now,
        replicate=replicate,
    )


def complete_cohorts(factory: sessionmaker[Session], limit: int, clock: Clock) -> list[int]:
    """Mark completed every cohort outside the decision window with no open position."""
    now = clock.now()
    with transaction(factory) as session:
        window = {c.id for c in session.execute(decision_window(limit, now))}
        open_position = exists().where(
            Position.cohort_id == Cohort.id, Position.status == PositionStatus.OPEN
        )
        candidates = session.execute(
            select(Cohort.id).where(Cohort.status == CohortStatus.ACTIVE, ~open_position)
        ).scalars()
        done = [cohort_id for cohort_id in candidates if cohort_id not in window]
        if done:
            session.execute(
                update(Cohort)
                .where(Cohort.id.in_(done), Cohort.status == CohortStatus.ACTIVE)
                .values(status=CohortStatus.COMPLETED, completed_at=now)
            )
    return done
