"""A small, complete stored arena for leaderboard and export tests, written through the ORM.

Three cohorts (weeks of 2026-11-01, -08, -15), three families (two model families and a
baseline), weekly decisions with attempts (valid, malformed + repair, a system HOLD, a failed
call), BUY and SELL trades through the real execution (:mod:`arena.jobs.execute`, mode gamma),
settlement of decisive, 50-50 and cancelled markets with Brier rows, price history, portfolio
snapshots, frozen universes and methodology-v2 forecasts. Deterministic (seeded); every agent
satisfies the ledger invariant.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from sqlalchemy.orm import Session, sessionmaker

from arena.domain import ledger
from arena.domain.decisions import Action, BetOrder, SellOrder, ValidDecision
from arena.domain.markets import MarketView, side_price
from arena.domain.states import PositionStatus
from arena.jobs.execute import Desk, execute_decision
from arena.store.models import (
    Agent,
    BookMark,
    BrierScore,
    Citation,
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionUniverse,
    Family,
    Forecast,
    Market,
    MarketPrice,
    PortfolioSnapshot,
    Position,
    Trade,
    UniverseMarket,
)

D = Decimal
WEEK = timedelta(days=7)
FIRST_WEEK = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
SETTLED_AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
SCORE = D("0.0000000001")
FRACTION = D("0.25")
SECRET_FREE_PROMPT = "You are a forecaster. Markets follow as data.\n" + "market line\n" * 40

FAMILIES = [
    ("alpha-model", "openrouter", "Alpha Model", "vendor/alpha", None),
    ("beta-model", "openrouter", "Beta Model", "vendor/beta", None),
    ("market-follower", "baseline", "Market follower", None, "market-follower"),
]

# id, outcomes, prices at decision time, final prices, resolution (state, winner)
MARKETS = [
    ("101", ["Yes", "No"], ["0.40", "0.60"], ["0.55", "0.45"], ("resolved_winner", "YES")),
    ("102", ["Yes", "No"], ["0.70", "0.30"], ["0.65", "0.35"], ("resolved_winner", "NO")),
    (
        "103",
        ["Red", "Blue", "Green"],
        ["0.5", "0.3", "0.2"],
        ["0.6", "0.3", "0.1"],
        ("resolved_winner", "Blue"),
    ),
    ("104", ["Yes", "No"], ["0.25", "0.75"], ["0.5", "0.5"], ("resolved_50_50", None)),
    ("105", ["Yes", "No"], ["0.62", "0.38"], ["0.58", "0.42"], ("ambiguous", None)),
    ("106", ["Yes", "No"], ["0.33", "0.67"], ["0.41", "0.59"], None),
    ("107", ["Yes", "No"], ["0.81", "0.19"], ["0.77", "0.23"], None),
    ("108", ["Alpha", "Beta"], ["0.45", "0.55"], ["0.35", "0.65"], None),
    ("109", ["Yes", "No"], ["0.12", "0.88"], ["0.12", "0.88"], None),  # universe only
]


@dataclass
class ArenaFacts:
    """What the builder wrote, for assertions."""

    cohort_ids: list[int] = field(default_factory=list)
    agent_ids: list[int] = field(default_factory=list)
    week_starts: list[datetime] = field(default_factory=list)
    families: list[str] = field(default_factory=lambda: [f[0] for f in FAMILIES])


def build_arena(factory: sessionmaker[Session], seed: int = 11) -> ArenaFacts:
    rng = random.Random(seed)
    facts = ArenaFacts()
    with factory() as session, session.begin():
        _families_and_markets(session)
        for index in range(3):
            start = FIRST_WEEK + index * WEEK
            facts.week_starts.append(start)
            cohort = Cohort(
                week_start=start,
                created_at=start,
                methodology_version="v2",
                prompt_version="v2",
                starting_balance=D(10000),
                status="active",
            )
            session.add(cohort)
            session.flush()
            facts.cohort_ids.append(cohort.id)
            for family_id, kind, name, model, strategy in FAMILIES:
                agent = Agent(
                    cohort_id=cohort.id,
                    family_id=family_id,
                    kind=kind,
                    display_name=name,
                    provider="test",
                    openrouter_id=model,
                    strategy=strategy,
                    prompt_version="v2",
                    methodology_version="v2",
                    starting_balance=D(10000),
                    cash=D(10000),
                    realized_pnl=D(0),
                    created_at=start,
                )
                session.add(agent)
                session.flush()
                facts.agent_ids.append(agent.id)
        universes = _universes(session, facts.week_starts)
        for week_index, run_at in enumerate(facts.week_starts):
            for agent in session.query(Agent).order_by(Agent.id).all():
                cohort_start = FIRST_WEEK + (facts.cohort_ids.index(agent.cohort_id)) * WEEK
                if cohort_start > run_at:
                    continue
                week = (run_at - cohort_start) // WEEK + 1
                _decide(session, rng, agent, week, run_at, universes[week_index])
        _settle(session)
        _final_prices(session)
        _snapshots(session, facts)
    return facts


def _families_and_markets(session: Session) -> None:
    for family_id, kind, name, model, strategy in FAMILIES:
        session.add(
            Family(
                id=family_id,
                kind=kind,
                display_name=name,
                provider="" if model is None else "V",
                openrouter_id=model,
                strategy=strategy,
                active=True,
                first_seen_at=FIRST_WEEK,
                updated_at=FIRST_WEEK,
            )
        )
    for market_id, outcomes, prices, _final, _resolution in MARKETS:
        binary = outcomes == ["Yes", "No"]
        tokens = [f"{market_id}{i}" * 8 for i in range(len(outcomes))]
        session.add(
            Market(
                id=market_id,
                question=f"Question {market_id}? “quoted”, comma",
                outcomes=outcomes,
                prices=prices,
                yes_price=D(prices[0]) if binary else None,
                volume=D("12345.5"),
                end_date=datetime(2026, 12, 31, tzinfo=UTC),
                active=True,
                closed=False,
                accepting_orders=True,
                neg_risk=market_id == "108",
                neg_risk_market_id="0xneg" if market_id == "108" else None,
                event_id=f"e{market_id}",
                first_seen_at=FIRST_WEEK,
                updated_at=FIRST_WEEK,
                status="open",
                category="line one\nline two" if market_id == "101" else "politics",
                clob_token_ids=tokens,
            )
        )
        session.flush()  # the market row before its book marks
        # the books last seen of each token (the cohorts here price at Gamma's display prices,
        # so the marks are exported but value nothing)
        for token, price in zip(tokens, prices, strict=True):
            session.add(
                BookMark(
                    token_id=token,
                    market_id=market_id,
                    mark=D(price),
                    best_bid=D(price) - D("0.01"),
                    best_ask=D(price) + D("0.01"),
                    book_hash=f"{int(token) % 2**64:040x}",
                    book_timestamp=1_762_000_000_000,
                    observed_at=FIRST_WEEK,
                )
            )
        session.add(
            MarketPrice(
                market_id=market_id,
                observed_at=FIRST_WEEK,
                prices=prices,
                yes_price=D(prices[0]) if binary else None,
                volume=D(100),
            )
        )
    session.flush()


def _universes(session: Session, runs: list[datetime]) -> list[int]:
    ids = []
    for index, run_at in enumerate(runs):
        shown = MARKETS if index == 0 else MARKETS[:-1]  # market 109: first universe only
        universe = DecisionUniverse(
            run_slot=run_at,
            frozen_at=run_at + timedelta(minutes=5),
            universe_size=500,
            market_count=len(shown),
        )
        session.add(universe)
        session.flush()
        for rank, (market_id, outcomes, prices, _f, _r) in enumerate(shown, start=1):
            session.add(
                UniverseMarket(
                    universe_id=universe.id,
                    market_id=market_id,
                    rank=rank,
                    held_only=False,
                    in_panel=rank <= 3,
                    question=f"Question {market_id}?",
                    outcomes=outcomes,
                    prices=prices,
                    yes_price=D(prices[0]) if outcomes[0] == "Yes" else None,
                )
            )
        ids.append(universe.id)
    session.flush()
    return ids


def _decide(
    session: Session, rng: random.Random, agent: Agent, week: int, run_at: datetime, universe: int
) -> None:
    at = run_at + timedelta(minutes=5)
    decision = Decision(
        agent_id=agent.id,
        cohort_id=agent.cohort_id,
        decision_week=week,
        universe_id=universe,
        status="completed",
        claim_token="tok",
        claim_count=1,
        cash_shown=agent.cash,
        prompt_version="v2",
        methodology_version="v2",
        created_at=at,
        updated_at=at,
        completed_at=at,
    )
    session.add(decision)
    session.flush()
    scenario = (agent.id * 7 + week) % 6
    outcomes = {0: ["malformed", "valid"], 1: ["malformed"] * 3, 2: ["transient_error"]}
    attempts = outcomes.get(scenario, ["valid"])
    model = agent.kind == "openrouter"
    for number, outcome in enumerate(attempts, start=1):
        attempt = DecisionAttempt(
            decision_id=decision.id,
            attempt_no=number,
            claim_token="tok",
            kind="initial" if number == 1 else "repair",
            outcome=outcome,
            request_messages=[
                {"role": "system", "content": SECRET_FREE_PROMPT},
                {"role": "user", "content": f"week {week}, cash {agent.cash}"},
            ],
            raw_response=None if outcome == "transient_error" else '{"action": "HOLD"}',
            raw_body={"id": f"gen-{decision.id}-{number}"} if model else None,
            parsed={"action": "HOLD"} if outcome == "valid" else None,
            error="bad json" if outcome == "malformed" else None,
            http_status=200 if model else None,
            provider="P" if model else None,
            model=agent.openrouter_id,
            generation_id=f"gen-{decision.id}-{number}",
            prompt_tokens=1000 + number if model else None,
            completion_tokens=100 + number if model else None,
            cost_usd=D("0.0012345678") * number if model else None,
            latency_ms=900,
            prompt_version="v2",
            started_at=at,
            finished_at=at,
            search_cost_usd=D("0.004") if model and outcome == "valid" else None,
        )
        session.add(attempt)
        if model and outcome == "valid":  # a web source the answer cites
            session.flush()
            session.add(
                Citation(
                    attempt_id=attempt.id,
                    position=0,
                    url=f"https://example.org/news?week={week}&d={decision.id}",
                    title='Markets, "this" week',
                    content="What the page said.\nSecond line.",
                    cited_at=at,
                )
            )
    if scenario == 1:
        decision.action, decision.system_hold = "HOLD", True
        return
    if scenario == 2:
        decision.status, decision.completed_at, decision.error = "retryable", None, "timeout"
        return
    decision.action = "BET"
    cash_shown = agent.cash
    for market in rng.sample(MARKETS[:8], 2):
        market_id, outcomes_, prices, _final, _resolution = market
        side = rng.choice(["YES", "NO"]) if outcomes_ == ["Yes", "No"] else rng.choice(outcomes_)
        price = side_price(outcomes_, [D(p) for p in prices], side)
        wanted = D(rng.randrange(50, 2400)) + D(rng.randrange(0, 100)) / 100
        amount = min(wanted, ledger.max_bet(cash_shown, FRACTION))
        order = BetOrder(market_id, side, amount, probability=price)
        _buy(session, decision, agent, order, cash_shown, at)
        _forecast(session, decision, agent, market, rng, at)
    if week == 2:
        _sell_first(session, decision, agent, at + timedelta(seconds=1))


def _buy(
    session: Session,
    decision: Decision,
    agent: Agent,
    order: BetOrder,
    cash_shown: Decimal,
    at: datetime,
) -> None:
    """BUY through the real execution (mode gamma), the model's probability being the price."""
    market_id = order.market_id
    market = session.get_one(Market, market_id)
    frozen = MarketView(
        id=market_id,
        question=market.question,
        outcomes=tuple(market.outcomes),
        prices=tuple(D(p) for p in market.prices or []),
    )
    assert frozen.side_price(order.side) == order.probability
    desk = Desk(session, decision.id, agent, {market_id: frozen}, at)
    _execute(desk, ValidDecision(Action.BET, bets=(order,)), cash_shown)


def _sell_first(session: Session, decision: Decision, agent: Agent, at: datetime) -> None:
    """SELL half of the agent's first open position through the real execution."""
    position = (
        session.query(Position)
        .filter_by(agent_id=agent.id, status=PositionStatus.OPEN)
        .order_by(Position.id)
        .first()
    )
    if position is None:
        return
    market = session.get_one(Market, position.market_id)
    frozen = MarketView(
        id=market.id,
        question=market.question,
        outcomes=tuple(market.outcomes),
        prices=tuple(D(p) for p in market.prices or []),
    )
    order = SellOrder(str(position.id), D(50))
    desk = Desk(session, decision.id, agent, {market.id: frozen}, at)
    _execute(desk, ValidDecision(Action.SELL, sells=(order,)), agent.cash)


def _execute(desk: Desk, valid: ValidDecision, cash_shown: Decimal) -> None:
    done = execute_decision(desk, valid, cash_shown, FRACTION)
    assert done.trades == 1, done.failures
    desk.session.flush()


def _forecast(
    session: Session,
    decision: Decision,
    agent: Agent,
    market: tuple[str, list[str], list[str], list[str], tuple[str, str | None] | None],
    rng: random.Random,
    at: datetime,
) -> None:
    """A panel forecast on ``market`` (an entry of :data:`MARKETS`), once per decision."""
    market_id, outcomes, prices, _final, _resolution = market
    if session.query(Forecast).filter_by(decision_id=decision.id, market_id=market_id).count():
        return
    outcome = "YES" if outcomes == ["Yes", "No"] else outcomes[0]
    session.add(
        Forecast(
            decision_id=decision.id,
            agent_id=agent.id,
            cohort_id=agent.cohort_id,
            family_id=agent.family_id,
            market_id=market_id,
            outcome=outcome,
            probability=D(rng.randrange(1, 99)) / 100,
            market_probability=D(prices[0]),
            source="panel",
            forecast_at=at,
        )
    )
    session.flush()


def _settle(session: Session) -> None:
    for market_id, _outcomes, _prices, _final, resolution in MARKETS:
        if resolution is None:
            continue
        state, winner = resolution
        market = session.get_one(Market, market_id)
        for position in session.query(Position).filter_by(market_id=market_id, status="OPEN"):
            agent = session.get_one(Agent, position.agent_id)
            if state == "resolved_winner":
                outcome = (
                    ledger.SettlementOutcome.WON
                    if position.side == winner
                    else ledger.SettlementOutcome.LOST
                )
            elif state == "resolved_50_50":
                outcome = ledger.SettlementOutcome.VOID
            else:
                outcome = ledger.SettlementOutcome.CANCELLED
            done = ledger.settle(
                agent.cash, ledger.Holding(position.shares, position.cost_basis), outcome
            )
            agent.cash = done.cash_after
            agent.realized_pnl += done.realized_pnl
            position.realized_pnl += done.realized_pnl
            position.payout = done.payout
            position.status = "CANCELLED" if outcome == "CANCELLED" else "SETTLED"
            position.settlement_outcome = outcome.value
            position.closed_at = SETTLED_AT
        market.status = "cancelled" if state == "ambiguous" else "resolved"
        market.resolution_state = state
        market.winning_outcome = winner
        market.resolved_at = SETTLED_AT
        market.closed = True
        if state == "resolved_winner":
            for trade in session.query(Trade).filter_by(market_id=market_id, trade_type="BUY"):
                won = trade.side == winner
                hit = D(1) if won else D(0)
                assert trade.implied_confidence is not None
                session.add(
                    BrierScore(
                        trade_id=trade.id,
                        agent_id=trade.agent_id,
                        cohort_id=trade.cohort_id,
                        family_id=session.get_one(Agent, trade.agent_id).family_id,
                        market_id=market_id,
                        side=trade.side,
                        implied_confidence=trade.implied_confidence,
                        price_paid=trade.price,
                        won=won,
                        brier=_square(trade.implied_confidence - hit),
                        market_brier=_square(trade.price - hit),
                        scored_at=SETTLED_AT,
                    )
                )
        for forecast in session.query(Forecast).filter_by(market_id=market_id):
            if state == "resolved_winner":
                is_event = forecast.outcome == winner  # "YES"/"NO" or an outcome name
                forecast.resolved_value = 1 if is_event else 0
                forecast.brier = _square(forecast.probability - forecast.resolved_value)
                forecast.scored_at = SETTLED_AT
    session.flush()


def _final_prices(session: Session) -> None:
    for market_id, outcomes, _prices, final, resolution in MARKETS:
        if resolution is not None:
            continue
        market = session.get_one(Market, market_id)
        market.prices = final
        market.yes_price = D(final[0]) if outcomes == ["Yes", "No"] else None
        session.add(
            MarketPrice(
                market_id=market_id,
                observed_at=SETTLED_AT,
                prices=final,
                yes_price=market.yes_price,
                volume=D(200),
            )
        )
    session.flush()


def _snapshots(session: Session, facts: ArenaFacts) -> None:
    for agent in session.query(Agent).order_by(Agent.id):
        for day in (1, 8, 15):
            taken = datetime(2026, 11, day, 12, 0, tzinfo=UTC)
            value = sum(
                (
                    ledger.to_money(p.shares * D("0.5"))
                    for p in session.query(Position).filter_by(agent_id=agent.id, status="OPEN")
                ),
                D(0),
            )
            total = agent.cash + value
            session.add(
                PortfolioSnapshot(
                    agent_id=agent.id,
                    cohort_id=agent.cohort_id,
                    taken_at=taken,
                    cash=agent.cash,
                    positions_value=value,
                    total_value=total,
                    pnl=total - D(10000),
                    pnl_pct=(total - D(10000)) / 100,
                    realized_pnl=agent.realized_pnl,
                    unrealized_pnl=total - D(10000) - agent.realized_pnl,
                    brier=None,
                    resolved_bets=0,
                    open_positions=0,
                )
            )
    session.flush()


def _square(difference: Decimal) -> Decimal:
    return (difference * difference).quantize(SCORE, rounding=ROUND_HALF_EVEN)
