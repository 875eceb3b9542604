"""Decide from a market's Gamma state whether it is over, who won, and what settlement does.

Pure functions over :class:`MarketView` (gamma-api.md "Resolution", methodology "Settlement"):

- Only a market that is ``closed`` *and* has ``umaResolutionStatus == "resolved"`` has a final
  result: a decisive winner (one price >= 0.99, every other <= 0.01, mapped through the
  outcomes), a 50-50 void (every price 0.5), or ambiguous (no determinable winner: refund).
- ``proposed`` and ``disputed`` are not final: wait.
- An open market is never resolved, however near-certain its price (0.9995/0.0005 is common).
- Closed without a UMA status is *closed_awaiting*, including the "rare outlier" that shows
  decisive prices while ``acceptingOrders`` is still true: it is not treated as a result, so the
  overdue rule (:func:`is_overdue`, ``cancel_after_days`` after close) refunds it if no
  resolution ever comes. Two legacy shapes with no UMA status are over for good and classified
  *ambiguous*: every price 0 (``["0","0"]``), and scalar markets (``marketType`` "scalar",
  Long/Short), which pay proportionally and so never have a single winner.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal

from arena.clock import ensure_utc
from arena.domain.ledger import ZERO, SettlementOutcome
from arena.domain.markets import NO, YES, MarketView, Resolution, ResolutionState
from arena.domain.states import MarketStatus

WIN_MIN = Decimal("0.99")
LOSE_MAX = Decimal("0.01")
HALF = Decimal("0.5")

_WAITING = {"proposed": ResolutionState.PROPOSED, "disputed": ResolutionState.DISPUTED}


def classify(market: MarketView) -> Resolution:
    """The resolution state of ``market`` and, when decided, the canonical winning side."""
    status = market.uma_resolution_status
    if not market.closed:
        if status in _WAITING:
            return Resolution(_WAITING[status], reason=f"open, UMA {status}")
        return Resolution(ResolutionState.OPEN, reason="market is open")
    if status in _WAITING:
        return Resolution(_WAITING[status], reason=f"closed, UMA {status}: not final")
    if status == "resolved":
        return _resolved(market)
    if market.prices is not None and all(price == ZERO for price in market.prices):
        return Resolution(
            ResolutionState.AMBIGUOUS, reason="closed with every price 0: no determinable winner"
        )
    if (market.market_type or "").lower() == "scalar":
        return Resolution(
            ResolutionState.AMBIGUOUS, reason="closed scalar market: pays proportionally"
        )
    if market.accepting_orders and winner_index(market.prices) is not None:
        reason = "closed with decisive prices but no UMA status and accepting orders: not final"
    elif status:
        reason = f"closed, unknown UMA status {status!r}"
    else:
        reason = "closed, no resolution proposed yet"
    return Resolution(ResolutionState.CLOSED_AWAITING, reason=reason)


def _resolved(market: MarketView) -> Resolution:
    prices = market.prices
    if prices is None:
        return Resolution(ResolutionState.AMBIGUOUS, reason="resolved without prices")
    if all(price == HALF for price in prices):
        return Resolution(ResolutionState.RESOLVED_50_50, reason="resolved 50-50")
    index = winner_index(prices)
    if index is None:
        shown = ", ".join(str(price) for price in prices)
        return Resolution(
            ResolutionState.AMBIGUOUS, reason=f"resolved at [{shown}]: no determinable winner"
        )
    winner = winning_side(market, index)
    return Resolution(ResolutionState.RESOLVED_WINNER, winner=winner, reason=f"{winner} won")


def winner_index(prices: tuple[Decimal, ...] | None) -> int | None:
    """The index priced >= 0.99 while every other is <= 0.01, if there is exactly one."""
    if not prices or len(prices) < 2:
        return None
    winners = [i for i, price in enumerate(prices) if price >= WIN_MIN]
    if len(winners) != 1:
        return None
    if all(price <= LOSE_MAX for i, price in enumerate(prices) if i != winners[0]):
        return winners[0]
    return None


def winning_side(market: MarketView, index: int) -> str:
    """The canonical side for outcome ``index``: YES/NO for binary, else the outcome name."""
    outcome = market.outcomes[index]
    if market.is_binary:
        return YES if outcome.strip().lower() == "yes" else NO
    return outcome


def is_overdue(market: MarketView, now: datetime, cancel_after_days: int) -> bool:
    """A closed market still without a result ``cancel_after_days`` after it closed.

    The close instant is ``closed_time``, else ``end_date``; with neither it is never overdue.
    An open market is never overdue (many trade past their ``endDate``). Whether the state is
    still unresolved is the caller's business (refund only awaiting/proposed/disputed markets).
    """
    if not market.closed:
        return False
    closed_at = market.closed_time or market.end_date
    if closed_at is None:
        return False
    return ensure_utc(now) >= ensure_utc(closed_at) + timedelta(days=cancel_after_days)


# --- the settlement verdict -------------------------------------------------------------------

OVERDUE = "overdue"  # resolution_state of a market cancelled by the overdue rule
_UNSETTLED = {
    ResolutionState.OPEN,
    ResolutionState.CLOSED_AWAITING,
    ResolutionState.PROPOSED,
    ResolutionState.DISPUTED,
}


@dataclass(frozen=True)
class Verdict:
    """What to do with one market: settle it with ``outcome`` for the winner, or wait."""

    state: str  # stored as markets.resolution_state
    status: MarketStatus  # markets.status: resolved | cancelled
    winner: str | None = None
    void: bool = False
    reason: str = ""

    @property
    def cancelled(self) -> bool:
        return self.status is MarketStatus.CANCELLED

    def outcome_for(self, side: str) -> SettlementOutcome:
        if self.cancelled:
            return SettlementOutcome.CANCELLED
        if self.void:
            return SettlementOutcome.VOID
        return SettlementOutcome.WON if same_side(side, self.winner) else SettlementOutcome.LOST


def settlement_verdict(
    market: MarketView | None, known: MarketView, now: datetime, cancel_after_days: int
) -> Verdict | None:
    """The verdict for a market given its fresh Gamma state (``None``: gone), or ``None`` to wait.

    ``known`` is the stored market, used for the overdue rule when Gamma no longer has it.
    """
    if market is None:
        if is_overdue(replace(known, closed=True), now, cancel_after_days):
            return Verdict(OVERDUE, MarketStatus.CANCELLED, reason="gone from Gamma and overdue")
        return None
    resolution: Resolution = classify(market)
    if resolution.state is ResolutionState.RESOLVED_WINNER:
        return Verdict(
            resolution.state.value,
            MarketStatus.RESOLVED,
            winner=resolution.winner,
            reason=resolution.reason,
        )
    if resolution.state is ResolutionState.RESOLVED_50_50:
        return Verdict(
            resolution.state.value, MarketStatus.RESOLVED, void=True, reason=resolution.reason
        )
    if resolution.state is ResolutionState.AMBIGUOUS:
        return Verdict(resolution.state.value, MarketStatus.CANCELLED, reason=resolution.reason)
    if resolution.state in _UNSETTLED and is_overdue(market, now, cancel_after_days):
        days = cancel_after_days
        return Verdict(
            OVERDUE, MarketStatus.CANCELLED, reason=f"{resolution.state.value} {days}+ days"
        )
    return None


def same_side(side: str, winner: str | None) -> bool:
    """Sides are stored canonically; compare case-insensitively all the same."""
    return winner is not None and side.strip().lower() == winner.strip().lower()
