"""The leaderboard with replicates: each family's P/L per replicate is the mean of its
replicates' P/L and its spread their sample standard deviation, as computed here directly from
the agents; the families rank on that mean, not on their total."""

from __future__ import annotations

import statistics
from decimal import Decimal
from pathlib import Path

from sqlalchemy import select

from arena.analytics.leaderboard import compute_leaderboard
from arena.store.models import Agent
from tests.conftest import Database
from tests.jobs.decide_world import make_world
from tests.jobs.test_replicates import _families

CASH = {  # (family, replicate) -> cash; every agent starts with 10,000 and holds nothing
    ("gpt-5.1", 1): Decimal("10300.00"),
    ("gpt-5.1", 2): Decimal("9900.00"),
    ("gpt-5.1", 3): Decimal("10150.50"),
    ("grok-4", 1): Decimal("10250.00"),  # less than gpt-5.1 in all, more per replicate
}


def test_family_mean_and_spread_over_replicates(db: Database, tmp_path: Path) -> None:
    world = make_world(db, tmp_path, families=_families(**{"gpt-5.1": 3, "random-bettor": 2}))
    with db.factory() as session, session.begin():
        for agent in session.scalars(select(Agent)):
            cash = CASH.get((agent.family_id, agent.replicate))
            if cash is not None:
                agent.realized_pnl = cash - agent.cash
                agent.cash = cash
    rows = {r.family_id: r for r in compute_leaderboard(world.db.factory)}
    gpt = rows["gpt-5.1"].to_json()
    pnl = [float(CASH["gpt-5.1", r] - 10000) for r in (1, 2, 3)]
    assert gpt["replicates"] == 3 and gpt["agents"] == 3
    assert gpt["pnl"] == "350.50"
    assert Decimal(gpt["pnl_mean"]) == round(Decimal(str(statistics.mean(pnl))), 2)
    assert abs(float(gpt["pnl_spread"]) - statistics.stdev(pnl)) < 0.005
    grok = rows["grok-4"].to_json()
    assert (grok["replicates"], grok["pnl_mean"], grok["pnl_spread"]) == (1, "250.00", None)
    assert rows["random-bettor"].to_json()["pnl_spread"] == "0.00"
    ranked = [r.family_id for r in compute_leaderboard(world.db.factory)]
    assert ranked.index("grok-4") < ranked.index("gpt-5.1")  # 250 a replicate beats 116.83
