"""Baseline strategies answer through the same extraction and validation as a model."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.config import BaselineFamily
from arena.domain.book import Touch
from arena.domain.decisions import Action, PanelForecast, ValidationContext, parse_decision
from arena.domain.prompting import PromptContext
from arena.errors import PermanentProviderError
from arena.sources.baselines import STRATEGIES, BaselineProvider, favourite
from arena.sources.providers import ModelProvider, ModelRequest
from tests.domain.prompt_builders import binary, context, named, position

MARKETS = [
    binary("1", "0.80", volume=900),
    binary("2", "0.30", volume=800),
    named("3", ("Lakers", "Celtics", "Bulls"), ("0.2", "0.5", "0.31"), volume=700),
    binary("4", "0.50", volume=600),
    binary("5", "0.95", volume=500),
]


def ask(provider: BaselineProvider, ctx: PromptContext):
    reply = provider.complete(ModelRequest("fam", "baseline", [], 100, ctx))
    return reply, parse_decision(reply.content, ValidationContext.from_prompt(ctx))[1]


def test_provider_interface_and_reply_metadata():
    provider = BaselineProvider("always-hold")
    assert isinstance(provider, ModelProvider)
    reply, decision = ask(provider, context(markets=MARKETS))
    assert decision.action is Action.HOLD
    assert reply.finish_reason == "stop"
    assert reply.provider == "arena baseline"
    assert reply.model == "baseline/always-hold"
    assert reply.cost_usd == 0
    assert isinstance(json.loads(reply.content), dict)


def test_request_without_context_is_a_permanent_error():
    with pytest.raises(PermanentProviderError):
        BaselineProvider("random").complete(ModelRequest("fam", "baseline", [], 100, None))


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="unknown baseline strategy"):
        BaselineProvider("oracle")


def test_for_family():
    family = BaselineFamily(kind="baseline", id="rnd", strategy="random", seed=7)
    provider = BaselineProvider.for_family(family)
    assert (provider.strategy, provider.seed) == ("random", 7)


def test_always_hold_forecasts_uniform_in_v2():
    ctx = context(markets=MARKETS, methodology="v2", panel=MARKETS[:3])
    _, decision = ask(BaselineProvider("always-hold"), ctx)
    by_market = {(f.market_id, f.outcome): f.probability for f in decision.forecasts}
    assert by_market[("1", "YES")] == Decimal("0.5")
    assert sorted(v for (m, _), v in by_market.items() if m == "3") == [
        Decimal("0.3333"),
        Decimal("0.3333"),
        Decimal("0.3334"),
    ]


def test_market_follower_bets_favourites_of_top_unheld_markets():
    held = position("p1", MARKETS[0], "YES")
    ctx = context(markets=MARKETS, positions=[held])
    _, decision = ask(BaselineProvider("market-follower"), ctx)
    assert decision.action is Action.BET
    assert [(b.market_id, b.side) for b in decision.bets] == [
        ("2", "NO"),
        ("3", "Celtics"),
        ("4", "YES"),
    ]
    # min bet + (250 - min bet) x strength, strength = (p - 1/n) / (1 - 1/n):
    # NO at 0.70 -> 0.4; Celtics at 0.5 of 3 outcomes -> 0.25; YES at 0.50 -> 0
    assert [b.amount for b in decision.bets] == [Decimal(130), Decimal(100), Decimal(50)]


def test_market_follower_forecasts_the_market_in_v2():
    ctx = context(markets=MARKETS, methodology="v2", panel=MARKETS)
    _, decision = ask(BaselineProvider("market-follower"), ctx)
    assert PanelForecast("1", "YES", Decimal("0.8")) in decision.forecasts
    named_rows = [f for f in decision.forecasts if f.market_id == "3"]
    assert [f.outcome for f in named_rows] == ["Lakers", "Celtics", "Bulls"]
    assert sum(f.probability for f in named_rows) == 1  # prices normalised from 1.01
    assert [b.probability for b in decision.bets] == [
        Decimal("0.8"),
        Decimal("0.7"),
        Decimal("0.5"),
    ]


def test_market_follower_holds_without_cash():
    ctx = context(markets=MARKETS, cash="150")  # max bet 37.50 < min bet
    _, decision = ask(BaselineProvider("market-follower"), ctx)
    assert decision.action is Action.HOLD


def test_favourite_ties_go_to_the_first_side():
    assert favourite(binary("9", "0.5")) == ("YES", Decimal("0.5"))
    tie = named("8", ("A", "B", "C"), ("0.4", "0.4", "0.2"))
    assert favourite(tie) == ("A", Decimal("0.4"))


def test_random_is_reproducible_and_varies_by_week_and_agent():
    provider = BaselineProvider("random", seed=7)
    positions = [position("p1", MARKETS[0], "YES"), position("p2", MARKETS[1], "NO")]

    def content(week: int, agent: str) -> str:
        ctx = context(
            markets=MARKETS, positions=positions, decision_week=week, agent_id=agent, cohort_id="c1"
        )
        return provider.complete(ModelRequest("f", "b", [], 1, ctx)).content

    assert content(1, "a1") == content(1, "a1")
    answers = {content(week, agent) for week in range(1, 9) for agent in ("a1", "a2")}
    assert len(answers) > 8
    actions = {json.loads(a)["action"] for a in answers}
    assert actions == {"BET", "SELL", "HOLD"}
    other = BaselineProvider("random", seed=8)
    ctxs = [
        context(
            markets=MARKETS, positions=positions, decision_week=week, agent_id="a1", cohort_id="c1"
        )
        for week in range(1, 9)
    ]
    assert [other.complete(ModelRequest("f", "b", [], 1, c)).content for c in ctxs] != [
        content(week, "a1") for week in range(1, 9)
    ]


@st.composite
def situations(draw: st.DrawFn) -> PromptContext:
    """Any prompt a baseline may be asked: some markets, held positions, cash, week, agent."""
    methodology = draw(st.sampled_from(["v1", "v2"]))
    markets = MARKETS[: draw(st.integers(0, len(MARKETS)))]
    held = draw(st.lists(st.sampled_from(range(len(MARKETS))), max_size=4, unique=True))
    return context(
        markets=markets,
        positions=[position(f"p{i}", MARKETS[i], MARKETS[i].sides()[0]) for i in held],
        cash=str(draw(st.integers(0, 20000))),
        decision_week=draw(st.integers(1, 10)),
        agent_id=draw(st.text(max_size=5)),
        methodology=methodology,
        panel=markets[:3] if methodology == "v2" else [],
    )


@settings(max_examples=60, deadline=None)
@given(strategy=st.sampled_from(STRATEGIES), ctx=situations())
def test_every_baseline_answer_is_valid(strategy, ctx):
    _, decision = ask(BaselineProvider(strategy, seed=3), ctx)
    total = sum((b.amount for b in decision.bets), Decimal(0))
    assert total <= ctx.cash


def _touch(bid: str | None, ask: str | None) -> Touch:
    low = None if bid is None else Decimal(bid)
    high = None if ask is None else Decimal(ask)
    mid = None if low is None or high is None else (low + high) / 2
    return Touch("t", low, high, mid, Decimal(100), Decimal(100), "h", 0)


def test_market_follower_forecasts_the_mid_it_was_shown_in_mode_book():
    """In pricing mode book a forecast records the side's frozen mid as its market price, so
    the follower forecasts that mid (not Gamma's display price): it copies the market exactly,
    its copy distance 0. A one-sided book has no mid (and no market price recorded): the
    display price stands in."""
    booked = [
        binary("1", "0.62", books=(_touch("0.60", "0.63"), _touch("0.37", "0.40"))),
        binary("2", "0.30", books=(_touch(None, "0.33"), _touch("0.67", None))),
        named(
            "3",
            ("Lakers", "Celtics"),
            ("0.55", "0.45"),
            books=(_touch("0.50", "0.54"), _touch("0.46", "0.50")),
        ),
    ]
    ctx = context(markets=booked, methodology="v2", panel=booked)
    _, decision = ask(BaselineProvider("market-follower"), ctx)
    assert PanelForecast("1", "YES", Decimal("0.615")) in decision.forecasts
    assert PanelForecast("2", "YES", Decimal("0.3")) in decision.forecasts
    named_rows = {f.outcome: f.probability for f in decision.forecasts if f.market_id == "3"}
    assert named_rows == {"Lakers": Decimal("0.52"), "Celtics": Decimal("0.48")}
