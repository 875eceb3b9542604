from __future__ import annotations

from decimal import Decimal

from sqlalchemy import update

from arena.clock import FixedClock
from arena.config import Settings
from arena.jobs.audit import check_ledger
from arena.jobs.settle import settle_markets
from arena.store.models import Agent, Position
from tests.conftest import Database
from tests.jobs.ledger_world import NOW, FakeSource, World, gamma_market

D = Decimal


def _audit(db: Database) -> list[str]:
    with db.factory() as session:
        return check_ledger(session)


def _scenario(db: Database) -> tuple[int, int, int]:
    """Buys, a partial and a full sell, a win, a void and a refund across two agents."""
    world = World(db)
    cohort = world.cohort()
    a, b = world.agent(cohort, "fam-a"), world.agent(cohort, "fam-b")
    for market_id in ("m1", "m2", "m3", "m4"):
        world.market(gamma_market(market_id, ("0.37", "0.63")))
    p1 = world.buy(a, "m1", "YES", "333.33", "0.37")
    world.sell(p1, "33.3", "0.41")
    world.buy(a, "m1", "YES", "50", "0.39")
    p2 = world.buy(b, "m2", "NO", "777.77", "0.63")
    world.sell(p2, "100", "0.59")
    world.buy(b, "m3", "NO", "123.45", "0.63")
    world.buy(a, "m4", "YES", "99.99", "0.37")
    source = FakeSource()
    source.put(gamma_market("m1", ("1", "0"), closed=True, uma="resolved"))
    source.put(gamma_market("m2", ("0", "1"), closed=True, uma="resolved"))
    source.put(gamma_market("m3", ("0.5", "0.5"), closed=True, uma="resolved"))
    source.put(gamma_market("m4", ("0", "0"), closed=True, uma="resolved"))
    settle_markets(db.factory, Settings(), FixedClock(NOW), source)
    return a, b, p1


def test_clean_ledger_has_no_violation(db: Database) -> None:
    assert _audit(db) == []
    _scenario(db)
    assert _audit(db) == []


def test_cash_drift_breaks_the_balance_identity(db: Database) -> None:
    a, _b, _p1 = _scenario(db)
    with db.factory.begin() as session:
        session.execute(update(Agent).where(Agent.id == a).values(cash=Agent.cash + D("0.01")))
    (violation,) = _audit(db)
    assert violation.startswith(f"agent {a}: cash")
    assert "!= starting balance" in violation


def test_realized_pnl_must_match_trades_and_settlements(db: Database) -> None:
    a, _b, _p1 = _scenario(db)
    with db.factory.begin() as session:
        agent = session.get_one(Agent, a)
        agent.realized_pnl += D("5.00")
        agent.cash += D("5.00")  # the balance identity still holds...
    (violation,) = _audit(db)  # ...but the P/L no longer comes from trades and settlements
    assert violation.startswith(f"agent {a}: realized P/L")
    assert "SELL P/L" in violation


def test_negative_cash_and_shares_are_reported(db: Database) -> None:
    world = World(db)
    a = world.agent(world.cohort())
    world.market(gamma_market("m1"))
    position = world.buy(a, "m1", "YES", "60", "0.6")
    with db.factory.begin() as session:
        session.execute(update(Agent).values(cash=D("-1.00"), starting_balance=D("59.00")))
        session.execute(update(Position).values(shares=D("-1")))
    violations = _audit(db)
    assert f"agent {a}: cash -1.00 is negative" in violations
    assert any(v.startswith(f"position {position} ") and "shares -1" in v for v in violations)
    assert any("OPEN with no shares" in v for v in violations)


def test_settled_position_without_payout_is_reported(db: Database) -> None:
    _a, _b, p1 = _scenario(db)
    with db.factory.begin() as session:
        session.execute(update(Position).where(Position.id == p1).values(payout=None))
    violations = _audit(db)
    assert any(v.startswith(f"position {p1} ") and "no payout" in v for v in violations)
