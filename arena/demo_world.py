"""A simulated arena: the production runtime driven by a fake clock against fake sources.

Used by ``arena demo`` and by the daemon tests. Only the sources and the clock differ from
production: the fake Gamma world (:mod:`arena.fakes.gamma`) served in-process, the fake
OpenRouter (:mod:`arena.fakes.openrouter`) answering for the simulated model families through
the real OpenAI SDK, and a :class:`~arena.clock.FixedClock` moved step by step. At every step
the world evolves (prices drift towards each market's hidden outcome; markets whose end date
passed close, get a UMA proposal and resolve, including a 50-50, an ambiguous result, a
dispute and one never resolved that the arena must refund once overdue), then
:meth:`Runtime.run_due` runs every job due at that instant under the database guard.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
from pydantic import SecretStr
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import FixedClock
from arena.config import Settings
from arena.domain.states import FamilyKind
from arena.fakes.book_world import BookWorld
from arena.fakes.gamma import FakeGammaWorld, FakeMarket
from arena.fakes.openrouter import FakeOpenRouter, answer
from arena.jobs.guard import GuardedRun
from arena.runtime import Runtime, Sources
from arena.sources.clob import ClobClient
from arena.sources.gamma import GammaClient
from arena.sources.registry import ProviderRegistry

ONE = Decimal(1)
TICK = Decimal("0.001")
_ROW = re.compile(r"^(\d+) \| (.*?) \| (.*?) \| (.*?) \| ")


@dataclass
class _Fate:
    """What will happen to a market that ends during the simulation."""

    kind: str  # winner | fifty | ambiguous | disputed | never
    winner: int = 0
    stage: int = 0  # 0 open, 1 closed, 2 proposed/disputed, 3 resolved


@dataclass(frozen=True)
class WorldPlan:
    """The simulated world to build: its first instant, how many days it runs, how many
    synthetic markets it lists, and the seed everything random in it is drawn from."""

    start: datetime
    days: int
    n_markets: int = 300
    seed: int = 7


@dataclass
class SimulatedWorld:
    """The fake Gamma world plus each market's hidden truth and end-of-life script, and the
    order books of the fake CLOB kept around its prices (mode book)."""

    gamma: FakeGammaWorld
    rng: random.Random
    books: BookWorld
    fates: dict[str, _Fate] = field(default_factory=dict)
    truth: dict[str, int] = field(default_factory=dict)  # winning outcome index

    @classmethod
    def build(cls, plan: WorldPlan) -> SimulatedWorld:
        n_markets, seed, start, days = plan.n_markets, plan.seed, plan.start, plan.days
        gamma = FakeGammaWorld(n_markets=n_markets, seed=seed, start=start)
        world = cls(gamma, random.Random(seed + 1), BookWorld(gamma, seed=seed + 2))
        special = iter(["fifty", "ambiguous", "disputed", "never"])
        candidates = sorted(
            (
                m
                for m in gamma.markets.values()
                if m.prices is not None
                and not m.closed
                and not m.event.neg_risk
                and all(TICK * 50 < p < ONE - TICK * 50 for p in m.prices)
            ),
            key=lambda m: (-m.volume, int(m.id)),
        )
        for market in candidates:
            weights = [float(p) for p in market.prices or []]
            world.truth[market.id] = world.rng.choices(range(len(weights)), weights)[0]
        ending = candidates[: max(8, len(candidates) * 7 // 10)]
        for index, market in enumerate(ending):
            market.end_date = start + timedelta(
                days=2 + (index * 5) % max(days - 3, 3), hours=index % 24
            )
            kind = next(special, "winner") if index % 3 == 0 else "winner"
            if kind == "never":
                market.end_date = start + timedelta(days=2)  # overdue well before the end
            world.fates[market.id] = _Fate(kind, world.truth[market.id])
        return world

    def evolve(self, now: datetime) -> None:
        """Move the world to ``now``: drift prices, then advance every ending market."""
        gamma = self.gamma
        gamma.advance(now - gamma.now)
        for market_id, winner in self.truth.items():
            market = gamma.markets.get(market_id)
            if market is None or market.closed or market.prices is None:
                continue
            if len(market.prices) == 2 and self.rng.random() < 0.3:
                self._drift(market, winner)
        for market_id, fate in self.fates.items():
            self._advance(gamma.markets[market_id], fate, now)
        self.books.sync()

    def _drift(self, market: FakeMarket, winner: int) -> None:
        assert market.prices is not None
        p = market.prices[0]
        towards = 1 if winner == 0 else -1
        step = Decimal(self.rng.randint(-6, 10) * towards) * TICK
        p = max(TICK * 20, min(ONE - TICK * 20, p + step))
        self.gamma.set_prices(market.id, [str(p), str(ONE - p)])
        market.volume += Decimal(self.rng.randint(100, 5000))

    def _advance(self, market: FakeMarket, fate: _Fate, now: datetime) -> None:
        gamma = self.gamma
        ended = now - market.end_date
        if fate.stage == 0 and ended >= timedelta(0):
            gamma.close(market.id)
            fate.stage = 1
        if fate.kind == "never":
            return
        if fate.stage == 1 and ended >= timedelta(hours=2):
            gamma.propose(market.id, fate.winner)
            if fate.kind == "disputed":
                gamma.dispute(market.id)
            fate.stage = 2
        wait = timedelta(days=3) if fate.kind == "disputed" else timedelta(hours=4)
        if fate.stage == 2 and ended >= wait:
            if fate.kind == "fifty":
                gamma.resolve_50_50(market.id)
            elif fate.kind == "ambiguous":
                gamma.resolve_ambiguous(market.id)
            else:
                gamma.resolve(market.id, fate.winner)
            fate.stage = 3


def _dollars(prompt: str, label: str) -> Decimal:
    """A dollar figure the prompt shows as ``label: $1,234.56``."""
    match = re.search(rf"{re.escape(label)}: \$([\d,.]+)", prompt)
    return Decimal(match.group(1).replace(",", "")) if match else Decimal(0)


def _quotes(prices: str, *, mid: bool) -> list[float]:
    """Each side's price in a prompt's prices column: ``YES=0.62`` (mode gamma), or
    ``YES=0.61/0.62`` (bid/ask, mode book; ``-`` for an empty side) read as the mid or the ask."""
    out = []
    for part in prices.split("; "):
        quote = part.split("=")[1]
        if "/" not in quote:
            out.append(float(quote))
            continue
        bid, ask = (None if q == "-" else float(q) for q in quote.split("/"))
        if ask is None:
            out.append(bid if bid is not None else 0.5)
        elif mid and bid is not None:
            out.append((bid + ask) / 2)
        else:
            out.append(ask)
    return out


class SimulatedForecaster:
    """A fake LLM behind the fake OpenRouter: reads the market list from the prompt and answers
    with a JSON decision. ``skill`` in [0, 1] is how much it knows the hidden truth; now and
    then it answers badly first (prose, fences) so the repair path is exercised."""

    def __init__(self, world: SimulatedWorld, seed: int, skill: float) -> None:
        self.world = world
        self.rng = random.Random(seed)
        self.skill = skill

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        repair = len(messages) > 2
        if not repair and self.rng.random() < 0.1:
            return "Let me think... the markets look interesting but I am not sure."
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        rows = self._markets(prompt)
        decision = self._decide(prompt, rows)
        text = json.dumps(decision)
        return f"```json\n{text}\n```" if self.rng.random() < 0.3 else text

    @staticmethod
    def _markets(prompt: str) -> list[tuple[str, str]]:
        block = prompt.split("<<<BEGIN MARKETS>>>")[-1].split("<<<END MARKETS>>>")[0]
        return [
            (m.group(1), m.group(4))
            for line in block.splitlines()
            if (m := _ROW.match(line.strip()))
        ]

    def _belief(self, market_id: str, prices: str) -> tuple[list[str], list[float]]:
        """Market prices moved towards the hidden truth by ``skill``, plus noise that shrinks
        as skill grows (a poor forecaster sees edges that are not there)."""
        names = [part.split("=")[0] for part in prices.split("; ")]
        market = _quotes(prices, mid=True)
        truth = self.world.truth.get(market_id)
        known = (
            [1.0 if i == truth else 0.0 for i in range(len(market))]
            if truth is not None
            else market
        )
        noise = 0.15 * (1 - self.skill)
        belief = [
            max(0.01, (1 - self.skill) * m + self.skill * k + self.rng.gauss(0, noise))
            for m, k in zip(market, known, strict=True)
        ]
        total = sum(belief)
        return names, [b / total for b in belief]

    def _decide(self, prompt: str, rows: list[tuple[str, str]]) -> dict[str, Any]:
        cash = _dollars(prompt, "Cash balance")
        max_bet = _dollars(prompt, "Maximum bet for this decision")
        decision: dict[str, Any] = {"action": "HOLD", "reasoning": "nothing mispriced"}
        bets: list[dict[str, Any]] = []
        budget = cash
        for market_id, prices in self.rng.sample(rows, min(len(rows), 25)):
            names, belief = self._belief(market_id, prices)
            market = _quotes(prices, mid=False)  # what a share costs: the ask in mode book
            edges = [b - m for b, m in zip(belief, market, strict=True)]
            best = max(range(len(edges)), key=lambda i: edges[i])
            if edges[best] < 0.08 or len(bets) >= 3:
                continue
            amount = min(
                max_bet,
                max(Decimal(50), max_bet * Decimal(str(round(min(1.0, edges[best] * 2), 2)))),
                budget,
            )
            if amount < 50:
                break
            budget -= amount
            bets.append(
                {
                    "market_id": market_id,
                    "side": names[best],
                    "amount": float(amount.quantize(Decimal("0.01"))),
                    "probability": round(min(0.99, max(0.01, belief[best])), 3),
                }
            )
        if bets:
            decision = {"action": "BET", "bets": bets, "reasoning": "edge over market price"}
        if "FORECAST PANEL" in prompt:
            decision["forecasts"] = self._forecasts(prompt, dict(rows))
        return decision

    def _forecasts(self, prompt: str, prices: dict[str, str]) -> list[dict[str, Any]]:
        block = prompt.split("<<<BEGIN FORECAST PANEL>>>")[-1].split("<<<END FORECAST PANEL>>>")[0]
        ids = [
            m.group(1)
            for line in block.splitlines()
            if (m := re.match(r"^(\d+) \| ", line.strip()))
        ]
        out = []
        for market_id in ids:
            names, belief = self._belief(market_id, prices.get(market_id, "YES=0.5; NO=0.5"))
            noisy = [
                min(0.99, max(0.01, b + self.rng.gauss(0, 0.05 * (1 - self.skill)))) for b in belief
            ]
            if names == ["YES", "NO"]:
                out.append({"market_id": market_id, "probability": round(noisy[0], 3)})
            else:
                total = sum(noisy)
                out.append(
                    {
                        "market_id": market_id,
                        "probabilities": {
                            n: round(p / total, 4) for n, p in zip(names, noisy, strict=True)
                        },
                    }
                )
        return out


class Simulation:
    """The production :class:`Runtime` on fake sources and a fake clock."""

    def __init__(
        self,
        settings: Settings,
        factory: sessionmaker[Session],
        plan: WorldPlan,
        *,
        skills: dict[str, float] | None = None,
    ) -> None:
        if settings.benchmark.min_universe_markets is None:  # a small world: a floor it can meet
            floor = min(settings.benchmark.universe_floor, max(plan.n_markets // 4, 1))
            benchmark = settings.benchmark.model_copy(update={"min_universe_markets": floor})
            settings = settings.model_copy(update={"benchmark": benchmark})
        self.settings = settings
        self.clock = FixedClock(plan.start)
        self.world = SimulatedWorld.build(plan)
        self.openrouter = FakeOpenRouter(sleep=lambda _s: None)
        skills = skills or {}
        for index, family in enumerate(
            f for f in settings.families if f.kind == FamilyKind.OPENROUTER
        ):
            model = family.openrouter_id
            self.openrouter.add_model(model, "0.0000005", "0.0000015", provider="SimProvider")
            forecaster = SimulatedForecaster(
                self.world, plan.seed + index, skills.get(family.id, 0.3)
            )
            self.openrouter.set_default(model, answer(forecaster))
        # The simulation made these clients, so it closes them (Simulation.close).
        self._resources = contextlib.ExitStack()
        gamma_http = self._resources.enter_context(
            httpx.Client(transport=self.world.gamma.mock_transport())
        )
        openrouter_http = self._resources.enter_context(
            httpx.Client(transport=self.openrouter.transport(), timeout=30)
        )
        # Outside agents of a simulation are local (the demo's example agent on 127.0.0.1):
        # called directly, never through a proxy the environment names.
        agent_http = self._resources.enter_context(
            httpx.Client(trust_env=False, follow_redirects=False)
        )
        gamma = GammaClient(settings.polymarket, sleep=lambda _s: None, http=gamma_http)
        self.world.books.sync()
        clob_http = self._resources.enter_context(
            httpx.Client(transport=self.world.books.clob.mock_transport())
        )
        clob = ClobClient(settings.polymarket, http=clob_http, sleep=lambda _s: None)
        providers = self._resources.enter_context(
            contextlib.closing(
                ProviderRegistry(
                    settings,
                    api_key=SecretStr(self.openrouter.api_key),
                    http_client=openrouter_http,
                    agent_http=agent_http,
                )
            )
        )
        self.runtime = Runtime(
            settings,
            factory,
            Sources(gamma, providers, clob),
            sleep=lambda _s: None,
            wall_clock=self.clock,
        )

    def step(self, at: datetime) -> list[GuardedRun]:
        self.clock.set(at)
        self.world.evolve(at)
        return self.runtime.run_due(at)

    def run(
        self,
        until: datetime,
        step: timedelta,
        on_step: Callable[[datetime, list[GuardedRun]], None] | None = None,
    ) -> None:
        at = self.clock.now()
        while at <= until:
            results = self.step(at)
            if on_step is not None:
                on_step(at, results)
            at += step

    def close(self) -> None:
        self.runtime.close()
        self._resources.close()
