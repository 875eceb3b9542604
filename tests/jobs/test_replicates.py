"""Replicates (issue 27, part 3): a family's ``replicates: N`` gives each cohort N agents of it,
``r1``..``rN``, with the same universe and prompt, claimed and traded independently; two
``arena decide`` at once still decide each of them once; each has its own agent page, replicate
1 at the page's address from before replicates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from arena.config import load_settings
from arena.errors import ConfigError
from arena.store.models import Agent, Decision, Trade
from arena.web.app import create_app
from tests.conftest import Database
from tests.helpers import SEVEN_FAMILIES, write_config
from tests.jobs.decide_world import MODELS, make_world
from tests.jobs.test_decide_processes import _trades_per_decision, concurrent_decides

GPT = "gpt-5.1"
REPLICATED = {GPT: 3, "random-bettor": 2}


def _families(**replicates: int) -> list[dict[str, Any]]:
    return [
        {**family, "replicates": replicates[family["id"]]}
        if family["id"] in replicates
        else dict(family)
        for family in SEVEN_FAMILIES
    ]


def _replicated() -> list[dict[str, Any]]:
    return _families(**{GPT: REPLICATED[GPT], "random-bettor": REPLICATED["random-bettor"]})


def test_replicates_default_to_one_and_reach_twenty(tmp_path: Path) -> None:
    families = [dict(SEVEN_FAMILIES[0]), {**SEVEN_FAMILIES[1], "replicates": 20}]
    settings = load_settings(write_config(tmp_path / "c.yaml", "sqlite://", families=families))
    assert [f.replicates for f in settings.families] == [1, 20]


def _agents(db: Database) -> list[Agent]:
    with db.factory() as session:
        return list(session.scalars(select(Agent).order_by(Agent.family_id, Agent.replicate)))


@pytest.mark.parametrize("count", [0, 21, "2", 1.5])
def test_replicates_are_one_to_twenty(tmp_path: Path, count: object) -> None:
    families = [{**SEVEN_FAMILIES[0], "replicates": count}]
    with pytest.raises(ConfigError, match="replicates"):
        load_settings(write_config(tmp_path / "c.yaml", "sqlite://", families=families))


def test_a_cohort_opens_n_agents_per_family(db: Database, tmp_path: Path) -> None:
    make_world(db, tmp_path, families=_replicated())
    agents = _agents(db)
    assert len(agents) == len(SEVEN_FAMILIES) - 2 + sum(REPLICATED.values())
    for family_id, n in REPLICATED.items():
        mine = [a for a in agents if a.family_id == family_id]
        assert [a.replicate for a in mine] == list(range(1, n + 1))
        identity = {(a.display_name, a.openrouter_id, a.prompt_version, a.cash) for a in mine}
        assert len(identity) == 1  # the same family, prompt and money, each its own agent
    assert {a.replicate for a in agents if a.family_id not in REPLICATED} == {1}


def test_two_concurrent_runs_decide_each_replicate_once(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path, families=_replicated())
    concurrent_decides(world, tmp_path, 2)
    agents = _agents(db)
    with db.factory() as session:
        decisions = list(session.scalars(select(Decision)))
        universes = {d.universe_id for d in decisions}
    assert sorted(d.agent_id for d in decisions) == sorted(a.id for a in agents)
    assert {d.status for d in decisions} == {"completed"}
    assert len(universes) == 1  # one frozen universe for every replicate
    # one call per replicate over both processes, the same prompt to each
    requests = world.fake.chat_requests(MODELS[GPT])
    assert len(requests) == REPLICATED[GPT]
    gpt_ids = {a.id for a in agents if a.family_id == GPT}
    per_decision = _trades_per_decision(db)
    assert [per_decision[d.id] for d in decisions if d.agent_id in gpt_ids] == [1, 1, 1]
    world.assert_ledger()


def test_each_replicate_has_its_agent_page(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path, families=_replicated())
    world.run()
    agents = {(a.family_id, a.replicate): a for a in _agents(db)}
    cohort = agents[GPT, 1].cohort_id
    base = f"/api/v1/cohorts/{cohort}/families/{GPT}"
    with TestClient(create_app(world.settings)) as client:
        first = client.get(base).json()
        second = client.get(f"{base}?replicate=2").json()
        assert client.get(f"{base}?replicate=1").json() == first
        assert client.get(f"{base}?replicate=4").status_code == 404
        assert client.get(f"{base}?replicate=21").status_code == 422
        page = client.get(f"/cohorts/{cohort}/families/{GPT}?replicate=3").text
        family = client.get(f"/families/{GPT}").text
        lineage = client.get(f"/api/v1/families/{GPT}").json()["cohorts"]
        standings = client.get(f"/cohorts/{cohort}").text
        with db.factory() as session:  # a trade of a replicate other than 1
            trade, trader = session.execute(
                select(Trade, Agent)
                .join(Agent, Agent.id == Trade.agent_id)
                .where(Agent.replicate > 1)
                .limit(1)
            ).one()
        market = client.get(f"/api/v1/markets/{trade.market_id}").json()
        market_page = client.get(f"/markets/{trade.market_id}").text
        assert client.get(f"/cohorts/{cohort}/families/{GPT}?replicate=0").status_code == 400
    assert (first["agent"]["id"], first["agent"]["replicate"]) == (agents[GPT, 1].id, 1)
    assert (second["agent"]["id"], second["agent"]["replicate"]) == (agents[GPT, 2].id, 2)
    assert [d["replicate"] for d in second["decisions"]["items"]] == [2]
    assert "GPT-5.2 r3" in page
    assert [a["replicate"] for a in lineage] == [1, 2, 3]
    assert f'href="/cohorts/{cohort}/families/{GPT}?replicate=2"' in family
    # the cohort's standings link every replicate; a market's record names the replicate
    for n in (2, 3):
        assert f'href="/cohorts/{cohort}/families/{GPT}?replicate={n}">r{n}</a>' in standings
    mine = [t for t in market["trades"] if t["agent_id"] == trader.id]
    assert mine and {t["replicate"] for t in mine} == {trader.replicate}
    link = f"/cohorts/{trader.cohort_id}/families/{trader.family_id}?replicate={trader.replicate}"
    assert f'href="{link}">{trader.display_name} r{trader.replicate}</a>' in market_page
    single = f"/api/v1/cohorts/{cohort}/families/grok-4"
    with TestClient(create_app(world.settings)) as client:
        assert client.get(single).json()["agent"]["replicate"] == 1
