"""Built-in deterministic baseline strategies, answering like a model does.

A baseline is a :class:`~arena.sources.providers.ModelProvider`: it reads the
:class:`~arena.domain.prompting.PromptContext` carried in ``ModelRequest.context`` (never the
prompt text) and answers with a JSON *string*, so its answer goes through the same extraction
and validation as a model's. Costs nothing, calls nothing.

* ``always-hold``: HOLD every week; in v2 it forecasts 0.5 (1/n for n named outcomes), the
  uninformed reference forecaster.
* ``market-follower``: bets on the favourite side of the top few markets by volume that it
  does not hold yet, from the minimum bet up to a modest cap, more the stronger the favourite;
  in v2 it forecasts the prices it was shown (the frozen mids in pricing mode book): the
  "market" reference forecaster.
* ``random``: seeded by (family seed, cohort, agent, decision week), so a rerun answers the
  same; random markets, sides and amounts within the rules, sometimes SELL, sometimes HOLD.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from decimal import ROUND_DOWN, Decimal
from typing import Any

from arena.config import BaselineFamily
from arena.domain.ledger import ONE, ZERO, money_floor
from arena.domain.markets import MarketView
from arena.domain.prompting import PromptContext, ordered_markets, ordered_positions
from arena.domain.states import Methodology
from arena.errors import PermanentProviderError
from arena.sources.providers import ModelReply, ModelRequest

STRATEGIES = ("always-hold", "market-follower", "random")
PROVIDER_NAME = "arena baseline"
FOLLOWER_MARKETS = 3
FOLLOWER_MAX_AMOUNT = Decimal(250)
PROBABILITY_STEP = Decimal("0.0001")

Payload = dict[str, Any]


class BaselineProvider:
    """A deterministic strategy behind the provider interface."""

    def __init__(self, strategy: str, seed: int = 0) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown baseline strategy {strategy!r}; known: {STRATEGIES}")
        self.strategy = strategy
        self.seed = seed

    @classmethod
    def for_family(cls, family: BaselineFamily) -> BaselineProvider:
        return cls(family.strategy, family.seed)

    def decide(self, ctx: PromptContext) -> Payload:
        """The answer object this strategy gives for one prompt context."""
        if self.strategy == "always-hold":
            return always_hold(ctx)
        if self.strategy == "market-follower":
            return market_follower(ctx)
        return random_bettor(ctx, self.seed)

    def complete(self, request: ModelRequest) -> ModelReply:
        ctx = request.context
        if not isinstance(ctx, PromptContext):
            raise PermanentProviderError(
                f"baseline {self.strategy} needs the PromptContext in ModelRequest.context",
                reason="no_context",
                provider=PROVIDER_NAME,
                model=request.model,
            )
        return ModelReply(
            content=json.dumps(self.decide(ctx)),
            reasoning=None,
            finish_reason="stop",
            provider=PROVIDER_NAME,
            model=f"baseline/{self.strategy}",
            generation_id=None,
            prompt_tokens=None,
            completion_tokens=None,
            cost_usd=ZERO,
            latency_ms=0,
            raw=None,
        )


# --- strategies -------------------------------------------------------------------------------


def always_hold(ctx: PromptContext) -> Payload:
    payload: Payload = {"action": "HOLD", "reasoning": "baseline always-hold: never trades"}
    return _with_forecasts(payload, ctx, uniform_forecast)


def market_follower(
    ctx: PromptContext,
    count: int = FOLLOWER_MARKETS,
    max_amount: Decimal = FOLLOWER_MAX_AMOUNT,
) -> Payload:
    """Favourites of the top ``count`` unheld markets, min bet .. ``max_amount`` each."""
    held = {p.market.id for p in ctx.positions}
    cap = min(max_amount, ctx.max_bet)
    remaining = ctx.cash
    bets: list[Payload] = []
    for market in ordered_markets(ctx.markets):
        if len(bets) >= count or cap < ctx.min_bet:
            break
        if market.id in held or not market.has_valid_prices:
            continue
        side, price = favourite(market)
        floor = ONE / len(market.sides())
        strength = (price - floor) / (ONE - floor)
        amount = money_floor(ctx.min_bet + (cap - ctx.min_bet) * strength)
        if amount > remaining:
            break
        remaining -= amount
        bets.append(_bet(ctx, market.id, side, amount, price))
    if not bets:
        payload: Payload = {"action": "HOLD", "reasoning": "baseline market-follower: no bet"}
    else:
        payload = {
            "action": "BET",
            "bets": bets,
            "reasoning": "baseline market-follower: favourites of the top markets by volume",
        }
    return _with_forecasts(payload, ctx, market_forecast)


def random_bettor(ctx: PromptContext, seed: int) -> Payload:
    """Random but reproducible: the same (seed, cohort, agent, week) gives the same answer."""
    rng = random.Random(f"{seed}|{ctx.cohort_id}|{ctx.agent_id}|{ctx.decision_week}")
    roll = rng.random()
    positions = ordered_positions(ctx.positions)
    markets = [m for m in ordered_markets(ctx.markets) if m.has_valid_prices]
    payload: Payload
    if positions and roll < 0.25:
        chosen = rng.sample(positions, rng.randint(1, min(2, len(positions))))
        payload = {
            "action": "SELL",
            "sells": [
                {"position_id": p.position_id, "percentage": rng.choice((25, 50, 100))}
                for p in chosen
            ],
            "reasoning": "baseline random: sells at random",
        }
    elif roll < 0.45 or not markets or ctx.max_bet < ctx.min_bet:
        payload = {"action": "HOLD", "reasoning": "baseline random: holds at random"}
    else:
        remaining = ctx.cash
        bets: list[Payload] = []
        for market in rng.sample(markets, min(rng.randint(1, 3), len(markets))):
            side = rng.choice(market.sides())
            span = ctx.max_bet - ctx.min_bet
            amount = money_floor(ctx.min_bet + span * _unit(rng))
            if amount > remaining:
                break
            remaining -= amount
            bets.append(_bet(ctx, market.id, side, amount, _unit(rng)))
        payload = {"action": "BET", "bets": bets, "reasoning": "baseline random: bets at random"}
        if not bets:
            payload = {"action": "HOLD", "reasoning": "baseline random: too little cash"}
    return _with_forecasts(payload, ctx, lambda m: random_forecast(m, rng))


# --- forecasts (methodology v2) ---------------------------------------------------------------


def favourite(market: MarketView) -> tuple[str, Decimal]:
    """The side with the highest price (ties: the first side), and that price."""
    best = max(market.sides(), key=lambda side: (market.side_price(side), -_index(market, side)))
    return best, market.side_price(best)


def _index(market: MarketView, side: str) -> int:
    return market.sides().index(side)


def market_forecast(market: MarketView) -> Payload:
    """The prices the model was shown, as a forecast (named outcomes normalised to add up to
    1): in pricing mode book each outcome's frozen mid, which is what a forecast records as its
    market price (methodology, "Skill against the market"), so the follower copies that price
    exactly; Gamma's display price in mode gamma, or where a book is one-sided (no mid, and no
    market price recorded either)."""
    if market.is_binary:
        return {"market_id": market.id, "probability": _number(shown_price(market, "YES"))}
    return _distribution(market, [shown_price(market, outcome) for outcome in market.outcomes])


def shown_price(market: MarketView, side: str) -> Decimal:
    """A side's frozen mid in mode book (the market has books), else its display price."""
    if market.books:
        mid = market.side_touch(side).mid
        if mid is not None:
            return mid
    return market.side_price(side)


def uniform_forecast(market: MarketView) -> Payload:
    if market.is_binary:
        return {"market_id": market.id, "probability": 0.5}
    return _distribution(market, [ONE] * len(market.outcomes))


def random_forecast(market: MarketView, rng: random.Random) -> Payload:
    if market.is_binary:
        return {"market_id": market.id, "probability": _number(_unit(rng))}
    return _distribution(market, [_unit(rng) + PROBABILITY_STEP for _ in market.outcomes])


def _distribution(market: MarketView, weights: Sequence[Decimal]) -> Payload:
    """Weights scaled to probabilities on a 0.0001 grid that add up to exactly 1."""
    total = sum(weights, ZERO)
    scaled = [(w / total).quantize(PROBABILITY_STEP, rounding=ROUND_DOWN) for w in weights]
    scaled[-1] = ONE - sum(scaled[:-1], ZERO)
    return {
        "market_id": market.id,
        "probabilities": {o: _number(p) for o, p in zip(market.outcomes, scaled, strict=True)},
    }


def _with_forecasts(
    payload: Payload, ctx: PromptContext, forecaster: Callable[[MarketView], Payload]
) -> Payload:
    if ctx.methodology == Methodology.V2 and ctx.panel:
        payload["forecasts"] = [forecaster(m) for m in ordered_markets(ctx.panel)]
    return payload


def _bet(
    ctx: PromptContext, market_id: str, side: str, amount: Decimal, probability: Decimal
) -> Payload:
    """One bet; under v2 with the probability that its side wins."""
    bet: Payload = {"market_id": market_id, "side": side, "amount": _number(amount)}
    if ctx.methodology == Methodology.V2:
        bet["probability"] = _number(probability)
    return bet


def _unit(rng: random.Random) -> Decimal:
    """A uniform draw in [0, 1) on the probability grid, exact."""
    return Decimal(rng.randrange(10_000)) * PROBABILITY_STEP


def _number(value: Decimal) -> float | int:
    """A Decimal as a JSON number that prints back exactly (short decimals only)."""
    as_int = int(value)
    return as_int if value == as_int else float(value)
