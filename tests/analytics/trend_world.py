"""The results arena (:mod:`tests.analytics.results_arena`) with a new release of a model: from
its second cohort on, ``alpha-model`` runs another OpenRouter id, so the trend marks a lineage
change in the week of 2026-11-08."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.store.models import Agent, Cohort
from tests.analytics.results_arena import FIRST_WEEK, WEEK, build_arena

AT = datetime(2027, 1, 3, tzinfo=UTC)  # a Sunday after the panel questions close (2026-12-31)
CHANGED = ("alpha-model", "2026-11-08T00:00:00Z", "openrouter_id: vendor/alpha -> vendor/alpha-2")


def change_model(
    factory: sessionmaker[Session], family: str, cohort_index: int, model: str
) -> None:
    """Give ``family``'s agents in the cohorts from week ``cohort_index`` on another
    OpenRouter id (a new release of the model)."""
    with factory() as session, session.begin():
        later = select(Cohort.id).where(Cohort.week_start >= FIRST_WEEK + cohort_index * WEEK)
        session.execute(
            update(Agent)
            .where(Agent.family_id == family, Agent.cohort_id.in_(later))
            .values(openrouter_id=model)
        )


def build_trend_arena(factory: sessionmaker[Session]) -> None:
    """The results arena with ``alpha-model``'s new release from its second cohort on."""
    build_arena(factory)
    change_model(factory, "alpha-model", 1, "vendor/alpha-2")
