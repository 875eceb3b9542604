"""A small world for decision-engine tests: a cohort of seven families, a few stored markets,
the fake OpenRouter, and helpers to inspect and check the ledger afterwards."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from pydantic import AnyHttpUrl, SecretStr
from sqlalchemy import func, select

from arena.clock import FixedClock
from arena.config import Settings, load_settings
from arena.fakes.openrouter import FakeOpenRouter
from arena.jobs.budget import Budget
from arena.jobs.cohorts import start_cohort
from arena.jobs.decide import DecisionRun, RunHooks, RunSources
from arena.jobs.decide_report import AgentResult, DecideReport
from arena.jobs.universe import freeze_universe
from arena.sources.clob import BookSource
from arena.sources.registry import ProviderRegistry
from arena.store.models import Agent, Decision, DecisionAttempt, Market, Position, Trade
from tests.conftest import Database
from tests.helpers import write_config

COHORT_AT = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)
DECIDE_AT = datetime(2026, 11, 22, 0, 5, tzinfo=UTC)
MODELS = {
    "gpt-5.1": "openai/gpt-5.2",
    "claude-opus-4.5": "anthropic/claude-opus-4.5",
    "grok-4": "x-ai/grok-4.1-fast",
    "qwen-3-next": "qwen/qwen3-235b-a22b-2507",
}


def bet(market_id: str = "1001", side: str = "YES", amount: float = 500.0) -> dict[str, Any]:
    return {
        "action": "BET",
        "bets": [{"market_id": market_id, "side": side, "amount": amount}],
        "reasoning": "test bet",
    }


HOLD = {"action": "HOLD", "reasoning": "nothing to do"}


def add_markets(db: Database, now: datetime = COHORT_AT) -> None:
    rows = [
        ("1001", "Will it rain in Paris on Dec 1?", ["Yes", "No"], ["0.40", "0.60"], 900000),
        ("1002", "Will BTC close above 150k in 2026?", ["Yes", "No"], ["0.10", "0.90"], 800000),
        ("1003", "FaZe vs illwill", ["FaZe", "illwill"], ["0.65", "0.35"], 700000),
        ("1004", "Will the Fed cut in December?", ["Yes", "No"], ["0.55", "0.45"], 600000),
    ]
    with db.factory() as session, session.begin():
        for market_id, question, outcomes, prices, volume in rows:
            yes = Decimal(prices[0]) if outcomes[0] == "Yes" else None
            session.add(
                Market(
                    id=market_id,
                    question=question,
                    outcomes=outcomes,
                    prices=prices,
                    yes_price=yes,
                    volume=Decimal(volume),
                    active=True,
                    closed=False,
                    accepting_orders=True,
                    first_seen_at=now,
                    updated_at=now,
                    category="test",
                )
            )


@dataclass
class World:
    db: Database
    settings: Settings
    config_path: Path
    fake: FakeOpenRouter
    sleeps: list[float]
    served: bool = False  # the fake answers over real HTTP (see :meth:`serve`)

    @contextmanager
    def serve(self) -> Iterator[None]:
        """Serve the fake on 127.0.0.1 and point the world's settings at it (real HTTP)."""
        before = self.settings
        with self.fake.serve() as url:
            openrouter = before.openrouter.model_copy(update={"base_url": AnyHttpUrl(url)})
            self.settings = before.model_copy(update={"openrouter": openrouter})
            self.served = True
            try:
                yield
            finally:
                self.settings, self.served = before, False

    def registry(self) -> ProviderRegistry:
        client = (
            httpx.Client(timeout=5)
            if self.served
            else httpx.Client(transport=self.fake.transport(), timeout=5)
        )
        return ProviderRegistry(
            self.settings, api_key=SecretStr(self.fake.api_key), http_client=client
        )

    def run(
        self,
        at: datetime = DECIDE_AT,
        budget: Budget | None = None,
        books: BookSource | None = None,
        on_progress: Callable[[AgentResult], None] | None = None,
        refresh: Callable[[Sequence[str]], object] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> DecideReport:
        """One decision run at ``at``; ``books``: the CLOB that mode-book cohorts freeze and
        trade against; ``on_progress`` hears of each agent's result as it ends; ``refresh``:
        the refresh of the markets a decision trades, right before its execution;
        ``should_stop``: asked before each agent is started."""
        registry = self.registry()
        clock = FixedClock(at)
        factory, settings = self.db.factory, self.settings
        try:
            sources = RunSources(
                registry.for_agent,
                lambda ids: freeze_universe(factory, settings, clock.now(), ids, books=books),
                refresh_markets=refresh,
                books=books,
            )
            hooks = RunHooks(sleep=self.sleeps.append, on_progress=on_progress)
            if should_stop is not None:
                hooks = replace(hooks, should_stop=should_stop)
            run = DecisionRun(factory, settings, clock, sources, budget=budget, hooks=hooks)
            return run.run()
        finally:
            registry.close()

    def decisions(self) -> dict[str, Decision]:
        with self.db.factory() as session:
            rows = session.execute(
                select(Agent.family_id, Decision).join(Agent, Agent.id == Decision.agent_id)
            ).all()
        return dict(rows)

    def attempts(self, family_id: str) -> list[DecisionAttempt]:
        with self.db.factory() as session:
            return list(
                session.scalars(
                    select(DecisionAttempt)
                    .join(Decision, Decision.id == DecisionAttempt.decision_id)
                    .join(Agent, Agent.id == Decision.agent_id)
                    .where(Agent.family_id == family_id)
                    .order_by(DecisionAttempt.id)
                )
            )

    def trade_count(self) -> int:
        with self.db.factory() as session:
            return int(session.scalar(select(func.count()).select_from(Trade)) or 0)

    def assert_ledger(self) -> None:
        """cash + open cost basis == starting balance + realized P/L, cash >= 0, for all."""
        with self.db.factory() as session:
            for agent in session.scalars(select(Agent)):
                basis = sum(
                    (
                        p.cost_basis
                        for p in session.scalars(
                            select(Position).where(
                                Position.agent_id == agent.id, Position.status == "OPEN"
                            )
                        )
                    ),
                    Decimal(0),
                )
                assert agent.cash + basis == agent.starting_balance + agent.realized_pnl
                assert agent.cash >= 0
                bought = sum(
                    (
                        t.amount
                        for t in session.scalars(
                            select(Trade).where(
                                Trade.agent_id == agent.id, Trade.trade_type == "BUY"
                            )
                        )
                    ),
                    Decimal(0),
                )
                sold = sum(
                    (
                        t.basis_out or 0
                        for t in session.scalars(
                            select(Trade).where(
                                Trade.agent_id == agent.id, Trade.trade_type == "SELL"
                            )
                        )
                    ),
                    Decimal(0),
                )
                assert bought - sold == basis


def make_world(db: Database, tmp_path: Path, **config: Any) -> World:
    fake = FakeOpenRouter(sleep=lambda _s: None)
    for model in MODELS.values():
        fake.add_model(model, "0.000001", "0.000004")
        fake.set_default(model, fake_answer(HOLD))
    config.setdefault("benchmark", {"min_universe_markets": 1})
    config.setdefault(
        "openrouter", {"base_url": "http://fake-openrouter.test/api/v1", "max_tokens": 2000}
    )
    path = write_config(tmp_path / "config.yaml", db.url, **config)
    settings = load_settings(path)
    add_markets(db)
    start_cohort(db.factory, settings, FixedClock(COHORT_AT))
    return World(db, settings, path, fake, [])


def fake_answer(obj: dict[str, Any]):  # type: ignore[no-untyped-def]
    from arena.fakes.openrouter import answer

    return answer(json.dumps(obj))
