"""An independent recomputation of the leaderboard from an export directory.

Reads the exported files with nothing but csv/json/pyarrow (:mod:`tests.analytics.export_files`)
and recomputes each family's value, P/L, Brier (from the trades and the markets' winners, not
from the stored Brier rows), skill, win rate, cost and reliability counts.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from tests.analytics.export_files import cents, dec, flag, num, read_rows, text

INTERFACE_FIELDS = {
    "family_id",
    "display_name",
    "cohorts",
    "total_value",
    "pnl",
    "return_pct",
    "brier",
    "scored_bets",
    "win_rate",
    "cost_usd",
}
SCORE_TOLERANCE = 5e-7  # the leaderboard rounds scores to 6 places


@dataclass
class Recomputed:
    cohorts: set[int] = field(default_factory=set)
    start: Decimal = Decimal(0)
    cash: Decimal = Decimal(0)
    value: Decimal = Decimal(0)
    basis: Decimal = Decimal(0)
    realized: Decimal = Decimal(0)
    briers: list[Decimal] = field(default_factory=list)
    market_briers: list[Decimal] = field(default_factory=list)
    stored_briers: list[Decimal] = field(default_factory=list)
    wins: int = 0
    cost: Decimal = Decimal(0)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0
    called: set[Any] = field(default_factory=set)  # decisions that made at least one call
    malformed: int = 0
    system_holds: int = 0


def _side_index(outcomes: list[str], side: str) -> int:
    if [o.lower() for o in outcomes] == ["yes", "no"]:
        return 0 if side == "YES" else 1
    return outcomes.index(side)


def _side_price(market: dict[str, Any], side: str) -> Decimal:
    outcomes = json.loads(market["outcomes"])
    prices = [Decimal(p) for p in json.loads(market["prices"])]
    if [o.lower() for o in outcomes] == ["yes", "no"]:
        return prices[0] if side == "YES" else 1 - prices[0]
    return prices[outcomes.index(side)]


def _mark(market: dict[str, Any], side: str, book: bool, marks: dict[str, Decimal]) -> Decimal:
    """Mode book: the side token's last valid book mark when it has one; else (and in mode
    gamma) the Gamma side price."""
    tokens = json.loads(market["clob_token_ids"] or "null") or []
    outcomes = json.loads(market["outcomes"])
    if book and len(tokens) == len(outcomes):
        token = str(tokens[_side_index(outcomes, side)])
        if token in marks:
            return marks[token]
    return _side_price(market, side)


def recompute(directory: Path, fmt: str, cohort: int | None = None) -> dict[str, Recomputed]:
    """Standings from the export files alone (no arena code), optionally for one cohort."""

    def rows(table: str) -> list[dict[str, Any]]:
        found = read_rows(directory, table, fmt)
        return [r for r in found if cohort is None or num(r.get("cohort_id")) == cohort]

    out: dict[str, Recomputed] = defaultdict(Recomputed)
    markets = {text(m["market_id"]): m for m in read_rows(directory, "markets", fmt)}
    book_cohorts = {
        num(c["cohort_id"]) for c in read_rows(directory, "cohorts", fmt) if c["pricing"] == "book"
    }
    marks = {
        text(m["token_id"]): dec(m["mark"]) or Decimal(0)
        for m in read_rows(directory, "book_marks", fmt)
    }
    for agent in rows("agents"):
        fam = out[agent["family_id"]]
        fam.cohorts.add(num(agent["cohort_id"]) or 0)
        fam.start += dec(agent["starting_balance"]) or 0
        fam.cash += dec(agent["cash"]) or 0
        fam.realized += dec(agent["realized_pnl"]) or 0
    for position in rows("positions"):
        if position["status"] != "OPEN":
            continue
        fam = out[position["family_id"]]
        book = num(position["cohort_id"]) in book_cohorts
        price = _mark(markets[text(position["market_id"])], position["side"], book, marks)
        shares, basis = dec(position["shares"]), dec(position["cost_basis"])
        assert shares is not None
        assert basis is not None
        fam.value += (shares * price).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
        fam.basis += basis
    for trade in rows("trades"):
        market = markets[text(trade["market_id"])]
        if trade["trade_type"] != "BUY" or market["resolution_state"] != "resolved_winner":
            continue
        fam = out[trade["family_id"]]
        won = trade["side"] == market["winning_outcome"]
        hit = Decimal(1 if won else 0)
        confidence, price = dec(trade["implied_confidence"]), dec(trade["price"])
        assert confidence is not None
        assert price is not None
        fam.briers.append((confidence - hit) ** 2)
        fam.market_briers.append((price - hit) ** 2)
        fam.wins += won
    for score in rows("brier_scores"):
        out[score["family_id"]].stored_briers.append(dec(score["brier"]) or Decimal(0))
    for attempt in rows("attempts"):
        if attempt["outcome"] == "budget_skipped":  # no call was made
            continue
        fam = out[attempt["family_id"]]
        fam.cost += dec(attempt["cost_usd"]) or 0
        fam.prompt_tokens += num(attempt["prompt_tokens"]) or 0
        fam.completion_tokens += num(attempt["completion_tokens"]) or 0
        fam.attempts += 1
        fam.called.add(attempt["decision_id"])
        fam.malformed += attempt["outcome"] == "malformed"
    for decision in rows("decisions"):
        out[decision["family_id"]].system_holds += bool(flag(decision["system_hold"]))
    return dict(out)


def _close(published: float | None, exact: Decimal | float | None) -> bool:
    if published is None or exact is None:
        return published is None and exact is None
    return abs(published - float(exact)) <= SCORE_TOLERANCE


def assert_matches(board: list[dict[str, Any]], expected: dict[str, Recomputed]) -> None:
    assert {row["family_id"] for row in board} == set(expected)
    for row in board:
        fam = expected[row["family_id"]]
        total = fam.cash + fam.value
        pnl = total - fam.start
        assert row["cohorts"] == len(fam.cohorts)
        assert row["total_value"] == cents(total)
        assert row["pnl"] == cents(pnl)
        assert row["realized_pnl"] == cents(fam.realized)
        assert row["unrealized_pnl"] == cents(fam.value - fam.basis)
        assert pnl == fam.realized + fam.value - fam.basis  # the ledger invariant, per family
        # return_pct is published to 4 decimal places of a percent
        assert abs(row["return_pct"] - float(pnl / fam.start * 100)) <= 0.5e-4 + 1e-9
        n = len(fam.briers)
        assert row["scored_bets"] == n == len(fam.stored_briers)
        if n:
            brier = sum(fam.briers, Decimal(0)) / n
            market = sum(fam.market_briers, Decimal(0)) / n
            assert _close(row["brier"], brier)
            assert _close(row["brier"], sum(fam.stored_briers, Decimal(0)) / n)
            assert _close(row["bss_uniform"], 1 - brier / Decimal("0.25"))
            assert _close(row["bss_market"], 1 - brier / market)
            assert _close(row["win_rate"], Decimal(fam.wins) / n)
        else:
            assert row["brier"] is None
            assert row["win_rate"] is None
        assert Decimal(row["cost_usd"]) == fam.cost
        assert row["prompt_tokens"] == fam.prompt_tokens
        assert row["completion_tokens"] == fam.completion_tokens
        assert row["attempts"] == fam.attempts
        assert row["malformed_attempts"] == fam.malformed
        assert row["retries"] == fam.attempts - len(fam.called)
        assert row["system_holds"] == fam.system_holds
