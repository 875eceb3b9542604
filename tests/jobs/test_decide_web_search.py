"""Families with web search (issue 27, part 1): the request carries OpenRouter's
``openrouter:web_search`` server tool, every attempt stores the answer's citations and search
cost, the decision page shows them and the export holds them; a search that fails still gives
an answer, a provider error follows the failure taxonomy, and the budget reserves what the
search can cost. On SQLite and PostgreSQL, with the fake OpenRouter over real HTTP."""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from arena.clock import FixedClock
from arena.config import WebSearch
from arena.export.writer import ExportTarget, export
from arena.fakes.openrouter import http_error, no_results, search_unavailable, searched
from arena.jobs.budget import SEARCH_WORST_CASE_USD
from arena.store.models import Citation
from arena.web.app import create_app
from tests.conftest import Database
from tests.helpers import SEVEN_FAMILIES
from tests.jobs.decide_world import DECIDE_AT, HOLD, MODELS, World, fake_answer, make_world
from tests.jobs.test_decide_replies import run_with_budget

GPT = "gpt-5.1"
WEB_SEARCH = {"engine": "exa", "max_results": 3, "search_context_size": "low"}
HOSTILE_TITLE = '<script>alert("x")</script> & "quotes"'
SOURCES = (
    {"url": "https://example.org/rain?city=paris&d=1", "title": HOSTILE_TITLE, "content": "Wet."},
    {"url": "javascript:alert(1)", "title": "not a web link", "content": "dropped"},
    {"url": "https://example.com/fed", "title": None, "content": "The Fed\x00 meets."},
)
SECRET = "sk-or-v1-fake-test-key"


def web_world(db: Database, tmp_path: Path, **config: Any) -> World:
    """The decision world with web search on for GPT only."""
    families = [{**f, "web_search": WEB_SEARCH} if f["id"] == GPT else f for f in SEVEN_FAMILIES]
    return make_world(db, tmp_path, families=families, **config)


def citations_of(db: Database, attempt_id: int) -> list[Citation]:
    with db.factory() as session:
        return list(
            session.scalars(
                select(Citation)
                .where(Citation.attempt_id == attempt_id)
                .order_by(Citation.position)
            )
        )


def test_citations_and_search_cost_are_stored_shown_and_exported(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    world = web_world(db, tmp_path)
    world.fake.script(MODELS[GPT], searched(fake_answer(HOLD), *SOURCES, cost="0.012"))

    with world.serve(), caplog.at_level(logging.DEBUG):
        report = world.run()

    assert "citations=2" in caplog.text and SECRET not in caplog.text
    assert report.failure() is None, [(r.family_id, r.describe()) for r in report.results]
    [sent] = world.fake.chat_requests(MODELS[GPT])
    assert sent.json["tools"] == [{"type": "openrouter:web_search", "parameters": WEB_SEARCH}]
    other = world.fake.chat_requests(MODELS["grok-4"])
    assert other and all("tools" not in r.json for r in other)
    [attempt] = world.attempts(GPT)
    assert attempt.outcome == "valid" and attempt.search_note is None
    assert attempt.search_cost_usd == Decimal("0.012")
    assert attempt.cost_usd is not None and attempt.cost_usd > attempt.search_cost_usd
    rows = citations_of(db, attempt.id)
    assert [(c.position, c.url, c.title, c.content) for c in rows] == [
        (0, SOURCES[0]["url"], HOSTILE_TITLE, "Wet."),
        (1, SOURCES[2]["url"], None, "The Fed\ufffd meets."),
    ]
    assert all(c.cited_at == attempt.finished_at for c in rows)
    assert world.attempts("grok-4")[0].search_cost_usd is None

    decision_id = world.decisions()[GPT].id
    with TestClient(create_app(world.settings)) as client:
        page = client.get(f"/decisions/{decision_id}").text
        api = client.get(f"/api/v1/decisions/{decision_id}").json()
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert (
        '<a href="https://example.org/rain?city=paris&amp;d=1" rel="nofollow noopener '
        'noreferrer" target="_blank">&lt;script&gt;' in page
    )
    assert "javascript:" not in page and SECRET not in page
    [shown] = api["attempts"]
    assert [c["url"] for c in shown["citations"]] == [SOURCES[0]["url"], SOURCES[2]["url"]]
    assert shown["search_cost_usd"] == "0.012"

    export(db.factory, ExportTarget(tmp_path / "out", "jsonl"), clock=FixedClock(DECIDE_AT))
    lines = (tmp_path / "out" / "citations.jsonl").read_text().splitlines()
    exported = [json.loads(line) for line in lines]
    assert [(r["attempt_id"], r["position"], r["url"], r["title"]) for r in exported] == [
        (attempt.id, 0, SOURCES[0]["url"], HOSTILE_TITLE),
        (attempt.id, 1, SOURCES[2]["url"], None),
    ]
    assert {r["family_id"] for r in exported} == {GPT}
    assert all(SECRET not in p.read_text() for p in (tmp_path / "out").iterdir())


def test_a_failed_search_still_answers_with_no_citations_and_a_note(
    db: Database, tmp_path: Path
) -> None:
    world = web_world(db, tmp_path)
    world.fake.script(MODELS[GPT], search_unavailable(fake_answer(HOLD)))

    with world.serve():
        report = world.run()

    assert report.failure() is None
    assert world.decisions()[GPT].status == "completed"
    [attempt] = world.attempts(GPT)
    assert attempt.outcome == "valid" and citations_of(db, attempt.id) == []
    assert attempt.search_note == (
        "web search did not run (unavailable, or the model did not search)"
    )
    assert attempt.search_cost_usd == 0


def test_a_search_without_results_still_answers_and_its_cost_is_kept(
    db: Database, tmp_path: Path
) -> None:
    world = web_world(db, tmp_path)
    world.fake.script(MODELS[GPT], no_results(fake_answer(HOLD)))

    with world.serve():
        world.run()

    assert world.decisions()[GPT].status == "completed"
    [attempt] = world.attempts(GPT)
    assert attempt.outcome == "valid" and citations_of(db, attempt.id) == []
    assert attempt.search_note == "web search ran (1 requests) but gave no citations"
    assert attempt.search_cost_usd == Decimal("0.004")


def test_a_provider_error_of_a_web_search_call_follows_the_failure_taxonomy(
    db: Database, tmp_path: Path
) -> None:
    world = web_world(db, tmp_path)
    world.fake.script(
        MODELS[GPT],
        http_error(503),
        http_error(404, "No endpoints found that support tool use."),
    )

    with world.serve():
        world.run()

    assert world.decisions()[GPT].status == "retryable"
    transient, permanent = world.attempts(GPT)
    assert (transient.outcome, permanent.outcome) == ("transient_error", "permanent_error")
    assert (transient.http_status, permanent.http_status) == (503, 404)
    assert transient.search_note is None and permanent.search_cost_usd is None


def test_the_budget_reserves_what_the_search_can_cost(db: Database, tmp_path: Path) -> None:
    """The same cap per family, the same prices: it covers grok-4's three rounds of tokens,
    not GPT's with their searches."""
    cap = Decimal("0.30")
    world = web_world(db, tmp_path, budget={"per_family_usd": str(cap)})

    with world.serve():
        budget = run_with_budget(world)

    assert world.decisions()["grok-4"].status == "completed"
    [grok] = world.attempts("grok-4")
    worst = budget.worst_case(
        MODELS["grok-4"], grok.request_messages, world.settings.max_tokens("grok-4")
    )
    assert worst < cap < worst + 3 * SEARCH_WORST_CASE_USD
    assert world.decisions()[GPT].status == "budget_skipped"
    assert "budget.per_family_usd" in (world.decisions()[GPT].error or "")
    assert world.fake.chat_requests(MODELS[GPT]) == []


def test_the_search_is_paid_from_the_budget(db: Database, tmp_path: Path) -> None:
    world = web_world(db, tmp_path, budget={"per_family_usd": "10"})
    world.fake.script(MODELS[GPT], searched(fake_answer(HOLD), *SOURCES[:1], cost="0.25"))

    with world.serve():
        budget = run_with_budget(world)

    [attempt] = world.attempts(GPT)
    assert attempt.search_cost_usd == Decimal("0.25")
    assert budget.spent[GPT] == attempt.cost_usd and attempt.cost_usd > Decimal("0.25")


def test_the_call_follows_the_web_search_its_cohort_froze_not_todays_config(
    db: Database, tmp_path: Path
) -> None:
    """The cohort opened with search on for GPT and off for grok-4; the config then turned
    them around mid-week. The open cohort's agents keep what they were frozen with."""
    world = web_world(db, tmp_path)
    edited = [
        f.model_copy(update={"web_search": None})
        if f.id == GPT
        else f.model_copy(update={"web_search": WebSearch()})
        if f.id == "grok-4"
        else f
        for f in world.settings.families
    ]
    world.settings = world.settings.model_copy(update={"families": edited})
    world.fake.script(MODELS[GPT], searched(fake_answer(HOLD), *SOURCES[:1], cost="0.01"))

    with world.serve():
        report = world.run()

    assert report.failure() is None
    [sent] = world.fake.chat_requests(MODELS[GPT])
    assert sent.json["tools"] == [{"type": "openrouter:web_search", "parameters": WEB_SEARCH}]
    [grok] = world.fake.chat_requests(MODELS["grok-4"])
    assert "tools" not in grok.json
    [attempt] = world.attempts(GPT)
    assert [c.url for c in citations_of(db, attempt.id)] == [SOURCES[0]["url"]]
    assert attempt.search_cost_usd == Decimal("0.01")
    assert world.attempts("grok-4")[0].search_cost_usd is None
