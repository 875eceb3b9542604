"""A fake Polymarket Gamma: a seeded world of markets, served with the real API's shapes and faults.

:class:`FakeGammaWorld` holds synthetic markets (binary, named-outcome, negRisk groups with
placeholders and ``negRiskOther`` children) and renders them as real-shaped raw Gamma JSON:
JSON-encoded ``outcomes``/``outcomePrices``/``clobTokenIds`` strings, null keys omitted, string
``volume`` beside numeric ``volumeNum``, Postgres-text ``closedTime``, ``events[]`` with tags.
Prices move, markets close, are proposed, disputed and resolved over fake time.

:meth:`FakeGammaWorld.handle` is a pure request handler for ``GET /markets/keyset`` (envelope,
100-row clamp, order/ascending, closed/active/id filters, ``after_cursor``; ``offset`` and bad
order fields -> 422), legacy ``GET /markets`` (bare array) and ``GET /markets/{id}`` (404 when
unknown). Scripted faults (:meth:`FakeGammaWorld.fail`) make it misbehave: 429 with Retry-After,
500, dropped connections, slow responses, malformed pages, a repeating cursor; the ``type_flips``
and ``missing_fields`` switches vary the row shapes. Two transports serve it:
:meth:`FakeGammaWorld.mock_transport` (in-process) and :func:`serve_fake_gamma` (real HTTP on
127.0.0.1, see :mod:`arena.fakes.serving`).
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx

from arena.fakes.gamma_api import (
    FakeEvent,
    FakeMarket,
    Fault,
    ServedGamma,
    error_reply,
    fault_reply,
    route,
    take_fault,
)
from arena.fakes.serving import FakeSlow, Reply, mock_transport, serve_handler

TICK = Decimal("0.001")
ONE = Decimal(1)
FAULT_KINDS = ("429", "500", "drop", "connect_error", "slow", "malformed", "repeat_cursor")

_CATEGORIES = ("Politics", "Sports", "Crypto", "Economy", "Culture", "Tech", "Science", "World")
# fmt: off
_NAMES = (
    "Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan", "Kendall",
    "Logan", "Morgan", "Parker", "Quinn", "Riley", "Rowan", "Sawyer", "Taylor", "Winter",
)
# fmt: on
_TEAMS = ("Falcons", "Otters", "Comets", "Wolves", "Herons", "Titans", "Rockets", "Pumas")
# fmt: off
_TOPICS = (
    "the bill pass", "the index close higher", "the launch happen", "the deal close",
    "the ceasefire hold", "the record be broken", "the rate be cut", "the merger complete",
)
# fmt: on


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]


class FakeGammaWorld(ServedGamma):
    """A seeded fake Gamma with ``n_markets`` markets at fake time ``start``."""

    def __init__(
        self,
        n_markets: int = 1200,
        seed: int = 0,
        start: datetime = datetime(2026, 11, 1, tzinfo=UTC),
    ) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.now = start
        self.requests: list[RecordedRequest] = []
        self._lock = threading.RLock()
        self._next_id = 500_000
        self._next_event = 20_000
        while len(self.markets) < n_markets:
            self._generate(n_markets - len(self.markets))

    # -- building the world ------------------------------------------------------------------

    def _generate(self, room: int) -> None:
        roll = self.rng.random()
        if roll < 0.2 and room >= 4:
            self._add_group(min(room, self.rng.randint(4, 9)))
        elif roll < 0.32:
            self._add_sports()
        else:
            self._add_binary()

    def _new_event(self, title: str, category: str, neg_risk: bool = False) -> FakeEvent:
        self._next_event += self.rng.randint(1, 5)
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]
        tags = [category, *self.rng.sample(["Featured", "Hide From New", "Recurring"], 1)]
        nr_id = "0x" + self.rng.randbytes(32).hex() if neg_risk else None
        return FakeEvent(str(self._next_event), slug, title, tags, neg_risk, nr_id)

    def _new_market(
        self,
        question: str,
        outcomes: list[str],
        prices: list[Decimal] | None,
        event: FakeEvent,
        **extra: Any,
    ) -> FakeMarket:
        self._next_id += self.rng.randint(1, 9)
        volume = Decimal(int(self.rng.lognormvariate(12, 1.6) * 1e6)) / Decimal(10**6)
        start = self.now - timedelta(
            days=self.rng.randint(1, 300), seconds=self.rng.randint(0, 86_399)
        )
        market = FakeMarket(
            id=str(self._next_id),
            question=question,
            outcomes=outcomes,
            prices=prices,
            volume=volume if prices is not None else Decimal(0),
            volume_24h=(volume * Decimal(self.rng.random()) / 20).quantize(Decimal("0.000001")),
            liquidity=(volume / 40).quantize(Decimal("0.00001")),
            start_date=start,
            end_date=self.now + timedelta(days=self.rng.randint(5, 400)),
            updated_at=self.now,
            condition_id="0x" + self.rng.randbytes(32).hex() if prices is not None else "",
            event=event,
            **extra,
        )
        self.markets[market.id] = market
        return market

    def _add_binary(self) -> None:
        category = self.rng.choice(_CATEGORIES)
        question = f"Will {self.rng.choice(_TOPICS)} by {self.rng.choice(_NAMES)}'s deadline?"
        event = self._new_event(question, category)
        p = Decimal(self.rng.randint(10, 990)) * TICK
        roll = self.rng.random()
        if roll < 0.03:
            p = Decimal("0.9995")  # open and near-certain: still tradable
        market = self._new_market(question, ["Yes", "No"], [p, ONE - p], event)
        if roll > 0.95:
            self._settle_at_birth(market)
        elif roll > 0.93:
            market.accepting_orders = False
        elif roll > 0.92:
            market.prices = [ONE, Decimal(0)]  # open but pinned: not valid for trading

    def _add_sports(self) -> None:
        home, away = self.rng.sample(_TEAMS, 2)
        title = f"{home} vs {away}"
        event = self._new_event(title, "Sports")
        p = Decimal(self.rng.randint(50, 950)) * TICK
        market = self._new_market(title, [home, away], [p, ONE - p], event, sports=True)
        if self.rng.random() < 0.05:
            self._settle_at_birth(market)

    def _add_group(self, size: int) -> None:
        subject = self.rng.choice(("the election", "the award", "the cup", "the primary"))
        event = self._new_event(f"Who will win {subject}?", "Politics", neg_risk=True)
        names = self.rng.sample(_NAMES, size)
        weights = [self.rng.random() ** 2 + 0.02 for _ in names]
        total = sum(weights)
        for i, name in enumerate(names):
            if i == size - 1 and size >= 5:
                p = Decimal("0.010")
                self._new_market(
                    f"Will another candidate win {subject}?",
                    ["Yes", "No"],
                    [p, ONE - p],
                    event,
                    neg_risk_other=True,
                    group_item_title="Other",
                )
            elif i == size - 2 and size >= 6:
                child = self._new_market(
                    f"Will Person {'ABC'[i % 3]} win {subject}?",
                    ["Yes", "No"],
                    None,
                    event,
                    group_item_title=f"Person {'ABC'[i % 3]}",
                )
                child.active = self.rng.random() < 0.3
                child.accepting_orders = None
            else:
                p = max(TICK, min(Decimal("0.985"), Decimal(weights[i] / total).quantize(TICK)))
                self._new_market(
                    f"Will {name} win {subject}?",
                    ["Yes", "No"],
                    [p, ONE - p],
                    event,
                    group_item_title=name,
                )

    def _settle_at_birth(self, market: FakeMarket) -> None:
        market.end_date = self.now - timedelta(days=self.rng.randint(1, 30))
        self.resolve(market.id, self.rng.randrange(len(market.outcomes)))

    # -- moving the world over fake time -----------------------------------------------------

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self.now += delta

    def move_prices(self, fraction: float = 0.3, step: int = 20) -> list[str]:
        """Random-walk the prices of a ``fraction`` of open binary markets; returns their ids."""
        moved = []
        with self._lock:
            for market in self.markets.values():
                if market.closed or market.prices is None or len(market.prices) != 2:
                    continue
                if not (TICK < market.prices[0] < ONE - TICK) or self.rng.random() > fraction:
                    continue
                p = market.prices[0] + Decimal(self.rng.randint(-step, step)) * TICK
                p = max(TICK * 5, min(ONE - TICK * 5, p))
                if p != market.prices[0]:
                    market.prices = [p, ONE - p]
                    market.volume += Decimal(self.rng.randint(1, 5000))
                    market.updated_at = self.now
                    moved.append(market.id)
        return moved

    def set_prices(self, market_id: str, prices: list[str] | None) -> None:
        with self._lock:
            market = self.markets[market_id]
            market.prices = None if prices is None else [Decimal(p) for p in prices]
            market.updated_at = self.now

    def close(self, market_id: str) -> None:
        """Stop trading: ``closed``, a ``closedTime``, no longer accepting orders."""
        with self._lock:
            market = self.markets[market_id]
            market.closed, market.accepting_orders = True, False
            market.closed_time = market.updated_at = self.now

    def propose(self, market_id: str, winner: int | str) -> None:
        with self._lock:
            self.close(market_id)
            market = self.markets[market_id]
            market.prices = self._decisive(market, winner)
            self._status(market, "proposed")

    def dispute(self, market_id: str) -> None:
        with self._lock:
            self._status(self.markets[market_id], "disputed")

    def resolve(self, market_id: str, winner: int | str) -> None:
        """Final result with a winner (``["1","0"]`` style prices)."""
        with self._lock:
            market = self.markets[market_id]
            if not market.closed:
                self.close(market_id)
            market.prices = self._decisive(market, winner)
            self._status(market, "resolved")

    def resolve_50_50(self, market_id: str) -> None:
        self._resolve_at(market_id, [Decimal("0.5")] * len(self.markets[market_id].outcomes))

    def resolve_ambiguous(self, market_id: str) -> None:
        """Resolved with no determinable winner: every price 0."""
        self._resolve_at(market_id, [Decimal(0)] * len(self.markets[market_id].outcomes))

    def resolve_group(self, event_id: str, winner_market_id: str) -> None:
        """Resolve a negRisk event: the winning child ``["1","0"]``, every other ``["0","1"]``."""
        with self._lock:
            for market in list(self.markets.values()):
                if market.event.id == event_id and market.prices is not None:
                    self.resolve(market.id, 0 if market.id == winner_market_id else 1)

    def remove(self, market_id: str) -> None:
        """The market disappears from Gamma (404 from then on)."""
        with self._lock:
            del self.markets[market_id]

    def corrupt(self, market_id: str, **raw: Any) -> None:
        """Override raw keys of one market's rendering (``None`` deletes the key)."""
        with self._lock:
            self.overrides.setdefault(market_id, {}).update(raw)

    def fail(self, kind: str, times: int = 1, **options: Any) -> None:
        """Queue ``times`` faults of ``kind`` (see :data:`FAULT_KINDS`)."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; one of {FAULT_KINDS}")
        with self._lock:
            self.faults.extend(Fault(kind, **options) for _ in range(times))

    def _resolve_at(self, market_id: str, prices: list[Decimal]) -> None:
        with self._lock:
            market = self.markets[market_id]
            if not market.closed:
                self.close(market_id)
            market.prices = prices
            self._status(market, "resolved")

    def _decisive(self, market: FakeMarket, winner: int | str) -> list[Decimal]:
        if isinstance(winner, str):
            names = [o.lower() for o in market.outcomes]
            winner = names.index(winner.lower())
        return [ONE if i == winner else Decimal(0) for i in range(len(market.outcomes))]

    def _status(self, market: FakeMarket, status: str) -> None:
        market.uma_status = status
        market.uma_history.append(status)
        market.updated_at = self.now

    # -- what a correct client should find ---------------------------------------------------

    def expected_top(self, n: int) -> list[str]:
        """The oracle: ids of the ``n`` highest-volume open, tradable, non-skipped markets."""
        with self._lock:
            ok = [m for m in self.markets.values() if _tradable(m)]
            ok.sort(key=lambda m: (-m.volume, int(m.id)))
            return [m.id for m in ok[:n]]

    # -- serving -----------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: Mapping[str, list[str]]) -> Reply:
        """Answer one request; transport faults raise :class:`FakeDrop` or :class:`FakeSlow`."""
        with self._lock:
            query = {k: list(v) for k, v in query.items()}
            self.requests.append(RecordedRequest(method, path, query))
            if method != "GET":
                return error_reply(405, "method not allowed", "only GET is supported")
            fault = take_fault(self, path, query)
            if fault is not None:
                reply = fault_reply(fault)
                if reply is not None:
                    return reply
            reply = route(self, path, query, fault)
            if fault is not None and fault.kind == "slow":
                raise FakeSlow(fault.delay, reply)
            return reply

    def mock_transport(self) -> httpx.MockTransport:
        """An in-process transport: drops raise httpx errors, slow replies time out."""
        return mock_transport(lambda method, path, query, _body: self.handle(method, path, query))


def _tradable(market: FakeMarket) -> bool:
    prices = market.prices
    return (
        market.active
        and not market.closed
        and market.accepting_orders is not False
        and not market.neg_risk_other
        and bool(market.condition_id)
        and prices is not None
        and all(Decimal(0) < p < ONE for p in prices)
    )


@contextmanager
def serve_fake_gamma(world: FakeGammaWorld) -> Iterator[str]:
    """Serve ``world`` over real HTTP on 127.0.0.1 (an ephemeral port); yields the base URL.

    A dropped connection closes the socket without an answer; a slow reply sleeps first.
    """
    with serve_handler(world.handle) as base_url:
        yield base_url
