"""The leaderboard's money recomputed from a published dataset's tables (``arena verify``).

The published ``leaderboard.json`` is what ``arena leaderboard --format json`` printed
(:mod:`arena.analytics.leaderboard`, which reads each agent's stored cash). Here each agent's
cash is rebuilt from its fills and settlements instead, so the leaderboard is checked against
the trades themselves:

* cash = starting balance - every BUY's amount (fees included) + every SELL's proceeds + the
  payout of every settled or cancelled position (the ledger, :mod:`arena.domain.ledger`);
* each open position is valued as the leaderboard values it (:func:`position_value` at
  :func:`position_mark`: its token's last book mark in a mode-book cohort, else its side's
  price at the market's stored prices), to the cent;
* ``total_value = cash + positions value``, ``pnl = total_value - starting balance``;
  ``realized_pnl = cash + open cost basis - starting balance`` (the ledger's invariant) and
  ``unrealized_pnl = positions value - open cost basis``; all summed per family;
* ``scored_bets`` and ``brier`` (the mean of the family's Brier rows).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from arena.domain.book import Pricing
from arena.domain.ledger import ZERO, to_money
from arena.domain.markets import stored_prices
from arena.domain.states import PositionStatus
from arena.domain.valuation import position_mark, position_value
from arena.publish.tables import table_rows

SCORE_TOLERANCE = 5e-7  # the leaderboard rounds scores to 6 places
SETTLED = (PositionStatus.SETTLED, PositionStatus.CANCELLED)


@dataclass
class AgentLedger:
    """One agent's cash rebuilt from its fills and settlements."""

    family_id: str
    cohort_id: int
    starting_balance: Decimal
    stored_cash: Decimal
    cash: Decimal = ZERO


@dataclass
class FamilyMoney:
    """One family's recomputed leaderboard money and scores."""

    cohorts: set[int] = field(default_factory=set)
    agents: int = 0
    starting_balance: Decimal = ZERO
    cash: Decimal = ZERO
    positions_value: Decimal = ZERO
    open_cost_basis: Decimal = ZERO
    briers: list[Decimal] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        """The compared leaderboard fields, as the leaderboard writes them."""
        total = self.cash + self.positions_value
        return {
            "cohorts": len(self.cohorts),
            "agents": self.agents,
            "starting_balance": _money(self.starting_balance),
            "total_value": _money(total),
            "pnl": _money(total - self.starting_balance),
            "realized_pnl": _money(self.cash + self.open_cost_basis - self.starting_balance),
            "unrealized_pnl": _money(self.positions_value - self.open_cost_basis),
            "scored_bets": len(self.briers),
            "brier": (float(sum(self.briers, ZERO) / len(self.briers)) if self.briers else None),
        }


def _money(value: Decimal) -> str:
    return format(to_money(value), "f")


def agent_ledgers(directory: Path) -> dict[int, AgentLedger]:
    """Every agent's cash from its starting balance, trades and settled positions."""
    agents: dict[int, AgentLedger] = {}
    columns = ("agent_id", "family_id", "cohort_id", "starting_balance", "cash")
    for row in table_rows(directory, "agents", columns):
        start = Decimal(row["starting_balance"] or 0)
        agents[row["agent_id"]] = AgentLedger(
            row["family_id"], row["cohort_id"], start, Decimal(row["cash"] or 0), start
        )
    for row in table_rows(directory, "trades", ("agent_id", "trade_type", "amount")):
        agent = agents.get(row["agent_id"])
        if agent is None:
            continue
        amount = Decimal(row["amount"] or 0)
        agent.cash += -amount if row["trade_type"] == "BUY" else amount
    for row in table_rows(directory, "positions", ("agent_id", "status", "payout")):
        agent = agents.get(row["agent_id"])
        if agent is not None and row["status"] in SETTLED and row["payout"] is not None:
            agent.cash += Decimal(row["payout"])
    return agents


def family_money(directory: Path, agents: dict[int, AgentLedger]) -> dict[str, FamilyMoney]:
    """Each family's leaderboard money and scores, from the agents' rebuilt cash."""
    families: dict[str, FamilyMoney] = defaultdict(FamilyMoney)
    for agent in agents.values():
        family = families[agent.family_id]
        family.cohorts.add(agent.cohort_id)
        family.agents += 1
        family.starting_balance += agent.starting_balance
        family.cash += agent.cash
    book_cohorts = {
        row["cohort_id"]
        for row in table_rows(directory, "cohorts", ("cohort_id", "pricing"))
        if row["pricing"] == Pricing.BOOK
    }
    marks = {
        str(row["token_id"]): Decimal(row["mark"])
        for row in table_rows(directory, "book_marks", ("token_id", "mark"))
        if row["mark"] is not None
    }
    markets = _markets(directory)
    columns = ("agent_id", "market_id", "side", "shares", "cost_basis", "status", "cohort_id")
    for row in table_rows(directory, "positions", columns):
        owner = agents.get(row["agent_id"])
        if owner is None or row["status"] != PositionStatus.OPEN:
            continue
        outcomes, prices, tokens = markets.get(row["market_id"], (None, None, None))
        book = row["cohort_id"] in book_cohorts
        mark = position_mark(outcomes, prices, tokens, marks, row["side"], book)
        basis = Decimal(row["cost_basis"])
        family = families[owner.family_id]
        family.positions_value += position_value(Decimal(row["shares"]), basis, mark)
        family.open_cost_basis += basis
    for row in table_rows(directory, "brier_scores", ("family_id", "brier")):
        if row["brier"] is not None:
            families[row["family_id"]].briers.append(Decimal(row["brier"]))
    return dict(families)


def _markets(directory: Path) -> dict[str, tuple[Any, Any, Any]]:
    columns = ("market_id", "outcomes", "prices", "clob_token_ids")
    return {
        row["market_id"]: (
            _json(row["outcomes"]),
            stored_prices(_json(row["prices"])),
            _json(row["clob_token_ids"]),
        )
        for row in table_rows(directory, "markets", columns)
    }


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def differences(published: dict[str, Any], recomputed: FamilyMoney) -> list[str]:
    """The fields of one published leaderboard row that the tables do not give."""
    wrong = []
    for name, value in recomputed.fields().items():
        shown = published.get(name)
        if name == "brier":
            agree = (shown is None and value is None) or (
                shown is not None and value is not None and abs(shown - value) <= SCORE_TOLERANCE
            )
        else:
            agree = shown == value
        if not agree:
            wrong.append(f"{name}: published {shown}, the tables give {value}")
    return wrong
