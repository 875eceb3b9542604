"""The ledger invariant checker (methodology, "Execution"): run after every scenario.

For every agent, to the cent:

* ``cash + sum(open cost basis) == starting balance + realized P/L``;
* ``realized P/L == sum(SELL trades' realized P/L) + sum(settled positions' payout - basis)``
  (a settled or cancelled position keeps the shares and cost basis it was settled with);
* ``cash >= 0``;
* every position has ``shares >= 0`` and ``cost basis >= 0``; an OPEN position holds shares;
  a SETTLED or CANCELLED position has a payout.

One query per table; sums are exact decimals in Python (SQLite keeps decimals as text).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.domain.book import TradeSide
from arena.domain.states import PositionStatus
from arena.store.models import (
    Agent,
    BrierScore,
    Citation,
    Cohort,
    Decision,
    DecisionAttempt,
    PortfolioSnapshot,
    Position,
    Trade,
)

SETTLED = (PositionStatus.SETTLED, PositionStatus.CANCELLED)


def check_ledger(session: Session) -> list[str]:
    """Every violation of the ledger invariants, one line each naming its agent or position."""
    violations: list[str] = []
    open_basis: dict[int, Decimal] = defaultdict(Decimal)
    settled_pnl: dict[int, Decimal] = defaultdict(Decimal)
    for position_id, agent_id, status, shares, basis, payout in session.execute(
        select(
            Position.id,
            Position.agent_id,
            Position.status,
            Position.shares,
            Position.cost_basis,
            Position.payout,
        ).order_by(Position.id)
    ).all():
        if shares < 0 or basis < 0:
            violations.append(
                f"position {position_id} (agent {agent_id}): shares {shares}, cost basis {basis}"
            )
        if status == PositionStatus.OPEN:
            open_basis[agent_id] += basis
            if shares <= 0:
                violations.append(f"position {position_id} (agent {agent_id}): OPEN with no shares")
        elif status in SETTLED:
            if payout is None:
                violations.append(f"position {position_id} (agent {agent_id}): {status} no payout")
            else:
                settled_pnl[agent_id] += payout - basis

    sell_pnl: dict[int, Decimal] = defaultdict(Decimal)
    for trade_id, agent_id, pnl in session.execute(
        select(Trade.id, Trade.agent_id, Trade.realized_pnl).where(
            Trade.trade_type == TradeSide.SELL
        )
    ).all():
        if pnl is None:
            violations.append(f"trade {trade_id} (agent {agent_id}): SELL without realized P/L")
        else:
            sell_pnl[agent_id] += pnl

    for agent_id, starting, cash, realized in session.execute(
        select(Agent.id, Agent.starting_balance, Agent.cash, Agent.realized_pnl).order_by(Agent.id)
    ).all():
        basis = open_basis[agent_id]
        if cash + basis != starting + realized:
            violations.append(
                f"agent {agent_id}: cash {cash} + open cost basis {basis} = {cash + basis}"
                f" != starting balance {starting} + realized P/L {realized}"
                f" = {starting + realized}"
            )
        parts = sell_pnl[agent_id] + settled_pnl[agent_id]
        if realized != parts:
            violations.append(
                f"agent {agent_id}: realized P/L {realized} != SELL P/L {sell_pnl[agent_id]}"
                f" + settlement P/L {settled_pnl[agent_id]} = {parts}"
            )
        if cash < 0:
            violations.append(f"agent {agent_id}: cash {cash} is negative")
    return violations


def row_counts(session: Session) -> dict[str, int]:
    """How much an arena holds (the demo's summary), in one query."""
    counts = {
        "cohorts": select(func.count()).select_from(Cohort),
        "agents": select(func.count()).select_from(Agent),
        "decisions": select(func.count()).select_from(Decision),
        "attempts": select(func.count()).select_from(DecisionAttempt),
        "system_holds": select(func.count()).where(Decision.system_hold.is_(True)),
        "trades": select(func.count()).select_from(Trade),
        "closed_positions": select(func.count()).where(Position.status != PositionStatus.OPEN),
        "brier_scores": select(func.count()).select_from(BrierScore),
        "citations": select(func.count()).select_from(Citation),
        "snapshots": select(func.count()).select_from(PortfolioSnapshot),
    }
    row = session.execute(select(*(q.scalar_subquery().label(k) for k, q in counts.items()))).one()
    return {key: int(value) for key, value in row._mapping.items()}
