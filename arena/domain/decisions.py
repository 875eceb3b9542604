"""A model's answer as a decision: tolerant JSON extraction, then strict validation.

methodology.md, "What the model answers". Two stages:

1. :func:`~arena.domain.extraction.extract_json_object` finds the answer object in whatever
   text came back (fences, prose, several objects, trailing commas, single quotes).
2. :func:`validate_decision` checks the object against the frozen universe and the agent's
   portfolio: first its shape (pydantic models of the three actions), then every rule, and
   returns a :class:`ValidDecision` with exact Decimals (numbers go through ``str``, never
   float arithmetic).

Any failure raises :class:`~arena.errors.MalformedResponse` whose message names every problem
found (up to :data:`~arena.domain.answer_shape.MAX_ERRORS`) in words the repair prompt can
quote, e.g. ``bets[1].amount 12.0 is below the minimum bet 50``. The answer's shape (pydantic
models, tolerant readers, shape errors) is :mod:`arena.domain.answer_shape`.

Choices the methodology leaves open, made here:

* a BET naming the same (market, side) twice is rejected, not merged (merging two maximum bets
  would exceed the maximum bet);
* a SELL naming the same position twice is rejected;
* BET only on markets of the prompt's market list; markets held only in positions can be sold;
* ids may be written as integers (``559651``) and numbers as numeric strings (``"500"``);
* v2 forecasts: ``{"market_id", "probability"}`` (probability of YES) for a YES/NO market,
  ``{"market_id", "probabilities": {outcome: p}}`` for a named-outcome market, covering every
  outcome and adding up to 1 within :data:`PROBABILITY_SUM_TOLERANCE`; probabilities lie in
  [0, 1]; stored flat as :class:`PanelForecast` rows (outcome ``YES`` for YES/NO markets);
* under v1, ``probability`` and ``forecasts`` are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from arena.domain.answer_shape import (
    Action,
    BetDecisionIn,
    BetIn,
    ForecastIn,
    SellDecisionIn,
    SellIn,
    decision_adapter,
    error_message,
    forecasts_adapter,
    shape_errors,
    show,
    to_decimal,
)
from arena.domain.extraction import extract_json_object
from arena.domain.ledger import HUNDRED, ONE, ZERO
from arena.domain.markets import YES, MarketView
from arena.domain.prompting import PromptContext, display_outcome, ordered_markets
from arena.domain.states import Methodology
from arena.errors import MalformedResponse

__all__ = [
    "Action",
    "BetOrder",
    "MalformedResponse",
    "PanelForecast",
    "SellOrder",
    "ValidDecision",
    "ValidationContext",
    "extract_json_object",
    "parse_decision",
    "resolve_side",
    "validate_decision",
]

PROBABILITY_SUM_TOLERANCE = Decimal("0.02")


@dataclass(frozen=True)
class BetOrder:
    market_id: str
    side: str  # canonical: YES/NO or the outcome's own name
    amount: Decimal
    probability: Decimal | None = None  # v2: the probability that this side wins


@dataclass(frozen=True)
class SellOrder:
    position_id: str
    percentage: Decimal


@dataclass(frozen=True)
class PanelForecast:
    """One v2 panel probability: of YES for a YES/NO market, of one outcome otherwise."""

    market_id: str
    outcome: str
    probability: Decimal


@dataclass(frozen=True)
class ValidDecision:
    action: Action
    bets: tuple[BetOrder, ...] = ()
    sells: tuple[SellOrder, ...] = ()
    reasoning: str = ""
    forecasts: tuple[PanelForecast, ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        """The decision in the answer format, JSON-safe, Decimals as exact strings."""
        data: dict[str, Any] = {"action": self.action.value}
        if self.action is Action.BET:
            data["bets"] = [
                {"market_id": b.market_id, "side": b.side, "amount": str(b.amount)}
                | ({} if b.probability is None else {"probability": str(b.probability)})
                for b in self.bets
            ]
        if self.action is Action.SELL:
            data["sells"] = [
                {"position_id": s.position_id, "percentage": str(s.percentage)} for s in self.sells
            ]
        if self.forecasts:
            data["forecasts"] = _forecasts_json(self.forecasts)
        data["reasoning"] = self.reasoning
        return data


def _forecasts_json(forecasts: Sequence[PanelForecast]) -> list[dict[str, Any]]:
    grouped: dict[str, list[PanelForecast]] = {}
    for forecast in forecasts:
        grouped.setdefault(forecast.market_id, []).append(forecast)
    out: list[dict[str, Any]] = []
    for market_id, rows in grouped.items():
        if len(rows) == 1 and rows[0].outcome == YES:
            out.append({"market_id": market_id, "probability": str(rows[0].probability)})
        else:
            probabilities = {r.outcome: str(r.probability) for r in rows}
            out.append({"market_id": market_id, "probabilities": probabilities})
    return out


@dataclass(frozen=True)
class ValidationContext:
    """What an answer is checked against: the prompt's universe, portfolio and limits."""

    markets: Mapping[str, MarketView]  # the market list shown (BET targets), by id
    position_ids: frozenset[str]  # this agent's open positions
    cash: Decimal  # the cash balance shown in the prompt
    min_bet: Decimal
    max_bet: Decimal
    methodology: Methodology = Methodology.V1
    panel: Sequence[MarketView] = ()
    held_market_ids: frozenset[str] = frozenset()  # markets shown under open positions

    @classmethod
    def from_prompt(cls, ctx: PromptContext) -> ValidationContext:
        return cls(
            markets={m.id: m for m in ctx.markets},
            position_ids=frozenset(p.position_id for p in ctx.positions),
            cash=ctx.cash,
            min_bet=ctx.min_bet,
            max_bet=ctx.max_bet,
            methodology=ctx.methodology,
            panel=tuple(ctx.panel),
            held_market_ids=frozenset(p.market.id for p in ctx.positions),
        )


# --- rules ------------------------------------------------------------------------------------


def resolve_side(market: MarketView, side: str) -> str | None:
    """The canonical side for what the model wrote (any case; raw or displayed outcome name)."""
    wanted = side.strip().casefold()
    if market.is_binary:
        return wanted.upper() if wanted in ("yes", "no") else None
    for outcome in market.outcomes:
        if wanted in (outcome.strip().casefold(), display_outcome(outcome).casefold()):
            return outcome
    return None


def _sides_hint(market: MarketView) -> str:
    return ", ".join(market.sides() if market.is_binary else map(display_outcome, market.outcomes))


def _probability(value: Any, path: str, errors: list[str]) -> Decimal | None:
    if value is None:
        errors.append(f"{path} is missing")
        return None
    try:
        number = to_decimal(value)
    except PydanticCustomError as exc:
        errors.append(f"{path} {exc.message()}")
        return None
    if not ZERO <= number <= ONE:
        hint = f" (write {number / HUNDRED:f} for {number:f}%)" if ONE < number <= HUNDRED else ""
        errors.append(f"{path} {number:f} is outside [0, 1]{hint}")
        return None
    return number


def validate_decision(payload: Mapping[str, Any], ctx: ValidationContext) -> ValidDecision:
    """Check an extracted answer against every rule; raises MalformedResponse naming each error."""
    if not isinstance(payload, Mapping):
        raise MalformedResponse(f"the answer must be a JSON object, got {show(payload)}")
    action = payload.get("action")
    if action is None:
        raise MalformedResponse('action is missing: use one of "BET", "SELL", "HOLD"')
    normalised = action.strip().upper() if isinstance(action, str) else action
    if not isinstance(normalised, str) or normalised not in Action.__members__:
        raise MalformedResponse(f'action {show(action)} is not one of "BET", "SELL", "HOLD"')
    try:
        shape = decision_adapter().validate_python({**payload, "action": normalised})
    except ValidationError as exc:
        raise MalformedResponse(error_message(shape_errors(exc))) from None
    errors: list[str] = []
    v2 = ctx.methodology == Methodology.V2
    bets: list[BetOrder] = []
    sells: list[SellOrder] = []
    if isinstance(shape, BetDecisionIn):
        bets = _check_bets(shape.bets, ctx, v2, errors)
    elif isinstance(shape, SellDecisionIn):
        sells = _check_sells(shape.sells, ctx, errors)
    forecasts = _check_forecasts(shape.forecasts, ctx, errors) if v2 else []
    if errors:
        raise MalformedResponse(error_message(errors))
    return ValidDecision(
        action=Action(normalised),
        bets=tuple(bets),
        sells=tuple(sells),
        reasoning=shape.reasoning,
        forecasts=tuple(forecasts),
    )


def parse_decision(
    text: str | None, ctx: ValidationContext
) -> tuple[dict[str, Any], ValidDecision]:
    """Extract and validate in one step: (the parsed payload, the valid decision)."""
    payload = extract_json_object(text)
    return payload, validate_decision(payload, ctx)


def _check_bets(
    bets: Sequence[BetIn], ctx: ValidationContext, v2: bool, errors: list[str]
) -> list[BetOrder]:
    out: list[BetOrder] = []
    seen: dict[tuple[str, str], int] = {}
    total = ZERO
    for i, bet in enumerate(bets):
        where = f"bets[{i}]"
        total += bet.amount
        if bet.amount < ctx.min_bet:
            errors.append(f"{where}.amount {bet.amount:f} is below the minimum bet {ctx.min_bet:f}")
        elif bet.amount > ctx.max_bet:
            errors.append(f"{where}.amount {bet.amount:f} is above the maximum bet {ctx.max_bet:f}")
        market = ctx.markets.get(bet.market_id)
        if market is None:
            if bet.market_id in ctx.held_market_ids:
                errors.append(
                    f'{where}.market_id "{bet.market_id}" is not in the MARKETS list: '
                    "a market shown only under open positions can be sold, not bet on"
                )
            else:
                errors.append(f'{where}.market_id "{bet.market_id}" is not in the MARKETS list')
            continue
        side = resolve_side(market, bet.side)
        if side is None:
            errors.append(
                f"{where}.side {show(bet.side)} is not a side of market {market.id} "
                f"(use one of: {_sides_hint(market)})"
            )
            continue
        if (market.id, side) in seen:
            first = seen[(market.id, side)]
            errors.append(
                f"{where} repeats market {market.id} side {show(side)} of bets[{first}]: "
                "one bet per market and side"
            )
            continue
        seen[(market.id, side)] = i
        probability = _probability(bet.probability, f"{where}.probability", errors) if v2 else None
        out.append(BetOrder(market.id, side, bet.amount, probability))
    if total > ctx.cash:
        errors.append(f"the bets add up to {total:f}, more than the cash balance {ctx.cash:f}")
    return out


def _check_sells(
    sells: Sequence[SellIn], ctx: ValidationContext, errors: list[str]
) -> list[SellOrder]:
    out: list[SellOrder] = []
    seen: dict[str, int] = {}
    for i, sell in enumerate(sells):
        where = f"sells[{i}]"
        if sell.position_id not in ctx.position_ids:
            errors.append(
                f'{where}.position_id "{sell.position_id}" is not one of your open positions'
            )
        elif sell.position_id in seen:
            errors.append(
                f"{where} repeats position {sell.position_id} of sells[{seen[sell.position_id]}]"
            )
        else:
            seen[sell.position_id] = i
        if not ZERO < sell.percentage <= HUNDRED:
            errors.append(f"{where}.percentage {sell.percentage:f} is outside (0, 100]")
        out.append(SellOrder(sell.position_id, sell.percentage))
    return out


def _check_forecasts(raw: Any, ctx: ValidationContext, errors: list[str]) -> list[PanelForecast]:
    panel = ordered_markets(ctx.panel)
    if not panel:
        return []
    if raw is None:
        errors.append(f"forecasts is missing: give one for each of the {len(panel)} panel markets")
        return []
    try:
        entries = forecasts_adapter().validate_python(raw)
    except ValidationError as exc:
        errors.extend(shape_errors(exc, ("forecasts",)))
        return []
    by_id = {m.id: m for m in panel}
    given: dict[str, list[PanelForecast]] = {}
    for i, entry in enumerate(entries):
        where = f"forecasts[{i}]"
        market = by_id.get(entry.market_id)
        if market is None:
            errors.append(f'{where}.market_id "{entry.market_id}" is not in the FORECAST PANEL')
        elif market.id in given:
            errors.append(f"{where} repeats the forecast for market {market.id}")
        else:
            rows = _forecast_rows(entry, market, where, errors)
            if rows is not None:
                given[market.id] = rows
    missing = [m.id for m in panel if m.id not in given and m.id not in _mentioned(entries)]
    if missing:
        shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
        errors.append(f"forecasts has no entry for panel markets {shown}")
    return [row for m in panel for row in given.get(m.id, [])]


def _mentioned(entries: Sequence[ForecastIn]) -> set[str]:
    return {e.market_id for e in entries}


def _forecast_rows(
    entry: ForecastIn, market: MarketView, where: str, errors: list[str]
) -> list[PanelForecast] | None:
    probabilities = entry.probabilities
    if probabilities is not None and not isinstance(probabilities, dict):
        errors.append(f"{where}.probabilities must be an object, got {show(probabilities)}")
        return None
    if market.is_binary:
        if entry.probability is None and probabilities:
            yes = [p for k, p in probabilities.items() if resolve_side(market, str(k)) == YES]
            value: Any = yes[0] if yes else None
        else:
            value = entry.probability
        if value is None:
            errors.append(
                f'{where} (market {market.id}, a YES/NO market) needs "probability": '
                "the probability of YES"
            )
            return None
        p = _probability(value, f"{where}.probability", errors)
        return None if p is None else [PanelForecast(market.id, YES, p)]
    if not probabilities:
        errors.append(
            f'{where} (market {market.id}) needs "probabilities" for each outcome: '
            f"{_sides_hint(market)}"
        )
        return None
    found: dict[str, Decimal] = {}
    ok = True
    for key, raw in probabilities.items():
        outcome = resolve_side(market, str(key))
        p = _probability(raw, f"{where}.probabilities[{show(key)}]", errors)
        if outcome is None:
            errors.append(
                f"{where}.probabilities has {show(key)}, not an outcome of market {market.id} "
                f"(outcomes: {_sides_hint(market)})"
            )
            ok = False
        elif p is None:
            ok = False
        else:
            found[outcome] = p
    absent = [display_outcome(o) for o in market.outcomes if o not in found]
    if ok and absent:
        errors.append(f"{where}.probabilities lacks outcomes: {', '.join(absent)}")
        return None
    if not ok:
        return None
    total = sum(found.values(), ZERO)
    if abs(total - ONE) > PROBABILITY_SUM_TOLERANCE:
        errors.append(f"{where}.probabilities add up to {total:f}, not 1")
        return None
    return [PanelForecast(market.id, o, found[o]) for o in market.outcomes]
