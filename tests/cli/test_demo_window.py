"""The demo's simulated weeks end before the present, and its families are named by skill."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from arena.cli.demo import DEMO_AGENT_ID, DEMO_SKILLS, _demo_lineup, demo_skills, demo_window
from arena.config import BaselineFamily, OpenRouterFamily
from arena.domain.states import FamilyKind


@pytest.mark.parametrize(
    "now",
    [
        datetime(2026, 11, 23, 9, 30, tzinfo=UTC),  # the Monday of finding 7
        datetime(2026, 11, 22, 0, 0, 1, tzinfo=UTC),  # just after a week starts
        datetime(2026, 11, 28, 23, 59, tzinfo=UTC),
    ],
)
@pytest.mark.parametrize("weeks", [1, 4, 8])
def test_the_simulated_weeks_end_before_now(now: datetime, weeks: int) -> None:
    start, end = demo_window(now, weeks, 240)
    assert end < now
    assert start.weekday() == 6 and start.hour == 0  # a Sunday, as cohorts start
    assert end - start == timedelta(weeks=weeks) - timedelta(minutes=240)


def test_families_are_named_by_their_simulated_skill() -> None:
    configured = [
        OpenRouterFamily(id="gpt-5.1", display_name="GPT", openrouter_id="openai/gpt-5.2"),
        BaselineFamily(kind="baseline", id="always-hold", strategy="always-hold"),
    ]
    lineup = _demo_lineup(configured, "http://127.0.0.1:9/decide")
    ids = [f.id for f in lineup]
    assert "gpt-5.1" not in ids  # a real model's name never stands beside a made-up skill
    assert "always-hold" in ids
    agent = next(f for f in lineup if f.id == DEMO_AGENT_ID)  # the example outside agent
    assert agent.kind == FamilyKind.AGENT and str(agent.endpoint) == "http://127.0.0.1:9/decide"
    skills = demo_skills(lineup)
    assert sorted(skills.values()) == sorted(DEMO_SKILLS)
    for family_id, skill in skills.items():
        assert family_id == f"sim-skill-{round(skill * 100):02d}"
