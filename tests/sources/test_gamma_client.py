"""GammaClient against the fake Gamma, in-process (MockTransport) and over real HTTP."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

import httpx
import pytest

from arena.config import Polymarket
from arena.domain.markets import ResolutionState
from arena.domain.resolution import classify
from arena.errors import GammaError, MarketParseError
from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.sources import gamma as gamma_module
from arena.sources.gamma import USER_AGENT, FetchStats, GammaClient
from arena.sources.retry import POLYMARKET_BACKOFF

FILTERS = {
    "order": ["volumeNum"],
    "ascending": ["false"],
    "closed": ["false"],
    "active": ["true"],
    "limit": ["100"],
}


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retries never really wait in tests; the waits asked for are recorded instead."""
    waits: list[float] = []
    monkeypatch.setattr(gamma_module, "retry_sleep", waits.append)
    return waits


@dataclass
class Harness:
    """A fake world plus a way to build clients talking to it over one transport."""

    world: FakeGammaWorld
    base_url: str
    transport: str
    http: httpx.Client
    clients: list[GammaClient] = field(default_factory=list)

    def client(self, max_attempts: int = 5, timeout: float = 2.0) -> GammaClient:
        settings = Polymarket(
            gamma_url=self.base_url, max_attempts=max_attempts, timeout_seconds=timeout
        )
        client = GammaClient(settings, http=self.http)
        self.clients.append(client)
        return client


@pytest.fixture
def world() -> FakeGammaWorld:
    return FakeGammaWorld(n_markets=1200, seed=3)


@pytest.fixture(params=["mock", "http"])
def gamma(request: pytest.FixtureRequest, world: FakeGammaWorld) -> Iterator[Harness]:
    if request.param == "mock":
        with httpx.Client(transport=world.mock_transport()) as http:
            yield Harness(world, "http://gamma.test", "mock", http)
    else:
        with serve_fake_gamma(world) as base_url, httpx.Client() as http:
            yield Harness(world, base_url, "http", http)


def keyset_requests(world: FakeGammaWorld) -> list[dict[str, list[str]]]:
    return [r.query for r in world.requests if r.path == "/markets/keyset"]


def test_top_500_of_1200_in_five_or_more_pages(gamma: Harness) -> None:
    stats = FetchStats()
    markets = gamma.client().top_markets(500, stats)
    assert [m.id for m in markets] == gamma.world.expected_top(500)
    assert stats.pages >= 5
    assert stats.stop_reason == "collected 500 tradable markets"
    assert all(m.is_tradable for m in markets)
    assert all(isinstance(p, Decimal) for m in markets for p in m.prices or ())
    requests = keyset_requests(gamma.world)
    assert len(requests) == stats.pages
    for i, query in enumerate(requests):
        assert {k: query[k] for k in FILTERS} == FILTERS  # every filter on every page
        assert "offset" not in query
        assert ("after_cursor" in query) == (i > 0)


def test_skips_are_counted_with_reasons(gamma: Harness) -> None:
    stats = FetchStats()
    gamma.client().top_markets(500, stats)
    assert stats.skipped["negRiskOther child"] > 0
    assert stats.skipped["not accepting orders"] > 0
    assert stats.skipped["prices not strictly inside (0, 1)"] > 0
    assert stats.rows >= 500 + sum(stats.skipped.values())
    assert stats.parse_errors == []


def test_listing_ends_when_next_cursor_is_absent(gamma: Harness) -> None:
    world = gamma.world
    listed = [m for m in world.markets.values() if not m.closed and m.active]
    stats = FetchStats()
    markets = gamma.client().top_markets(5000, stats)
    assert [m.id for m in markets] == world.expected_top(5000)
    assert stats.stop_reason == "no next_cursor"
    assert stats.pages == math.ceil(len(listed) / 100)


def test_empty_string_cursor_also_ends_the_listing(gamma: Harness) -> None:
    gamma.world.empty_end_cursor = True
    stats = FetchStats()
    gamma.client().top_markets(5000, stats)
    assert stats.stop_reason == "no next_cursor"


def test_short_pages_do_not_end_the_listing(gamma: Harness) -> None:
    gamma.world.page_clamp = 37
    stats = FetchStats()
    markets = gamma.client().top_markets(500, stats)
    assert [m.id for m in markets] == gamma.world.expected_top(500)
    assert stats.pages >= math.ceil(500 / 37)


def test_repeated_cursor_once_is_asked_again(
    gamma: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    gamma.world.fail("repeat_cursor", path="/markets/keyset")
    stats = FetchStats()
    with caplog.at_level(logging.WARNING, logger="arena.sources.gamma"):
        markets = gamma.client().top_markets(500, stats)
    assert [m.id for m in markets] == gamma.world.expected_top(500)
    assert "cursor repeated" in caplog.text
    assert stats.skipped["duplicate row"] > 0


def test_a_cursor_that_keeps_repeating_stops_the_listing(
    gamma: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    gamma.world.fail("repeat_cursor", times=50, path="/markets/keyset")
    stats = FetchStats()
    with caplog.at_level(logging.WARNING, logger="arena.sources.gamma"):
        markets = gamma.client(max_attempts=3).top_markets(500, stats)
    assert stats.stop_reason == "cursor repeated"
    assert "keeps repeating" in caplog.text
    assert 0 < len(markets) < 500
    assert [m.id for m in markets] == gamma.world.expected_top(len(markets))


def test_429_honours_retry_after_and_logs_each_retry(
    gamma: Harness, no_retry_waits: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    gamma.world.fail("429", times=2, retry_after=7)
    stats = FetchStats()
    with caplog.at_level(logging.WARNING, logger="arena.sources.gamma"):
        markets = gamma.client().top_markets(500, stats)
    assert [m.id for m in markets] == gamma.world.expected_top(500)
    assert no_retry_waits == [7.0, 7.0]
    assert stats.retries == 2
    assert "attempt 1/5 of GET /markets/keyset failed (HTTP 429" in caplog.text
    assert "attempt 2/5 of GET /markets/keyset failed (HTTP 429" in caplog.text


SLOW_REPLY = 60.0
TIMEOUT = 2.0


@pytest.mark.parametrize("kind", ["500", "drop", "connect_error", "malformed", "slow"])
def test_transient_faults_are_retried_with_backoff(
    gamma: Harness, no_retry_waits: list[float], caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    # Generous bounds, so that a busy machine never adds a timeout of its own: a slow reply
    # comes a minute late, and an ordinary one has seconds.
    gamma.world.fail(kind, times=3, delay=SLOW_REPLY)
    stats = FetchStats()
    with caplog.at_level(logging.WARNING, logger="arena.sources.gamma"):
        markets = gamma.client(timeout=TIMEOUT).top_markets(500, stats)
    assert [m.id for m in markets] == gamma.world.expected_top(500)
    assert stats.retries == 3
    assert len(no_retry_waits) == 3
    for attempt, wait in enumerate(no_retry_waits, start=1):
        assert 0 <= wait <= POLYMARKET_BACKOFF.first * 2 ** (attempt - 1)
    assert caplog.text.count("gamma retry: attempt") == 3
    expected = {
        "500": "cannot get the information",
        "drop": "connection error",
        "connect_error": "connection error",
        "malformed": "body is not JSON",
        "slow": "timeout",
    }[kind]
    assert expected in caplog.text


def test_retries_exhausted_raise_gamma_error(gamma: Harness) -> None:
    gamma.world.fail("500", times=10)
    with pytest.raises(GammaError, match=r"HTTP 500.*after 3 attempts"):
        gamma.client(max_attempts=3).top_markets(500)
    assert len(keyset_requests(gamma.world)) == 3


def test_other_4xx_fail_at_once_without_retry(no_retry_waits: list[float]) -> None:
    calls: list[httpx.Request] = []

    def forbidden(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(403, json={"type": "forbidden", "error": "go away"})

    with httpx.Client(transport=httpx.MockTransport(forbidden)) as http:
        client = GammaClient(Polymarket(gamma_url="http://gamma.test"), http=http)
        with pytest.raises(GammaError, match="HTTP 403: go away"):
            client.top_markets(10)
    assert len(calls) == 1
    assert no_retry_waits == []


def test_requests_carry_a_real_user_agent_and_a_timeout() -> None:
    seen: list[httpx.Request] = []

    def capture(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"markets": []})

    settings = Polymarket(gamma_url="http://gamma.test", timeout_seconds=12.5)
    with httpx.Client(transport=httpx.MockTransport(capture)) as http:
        GammaClient(settings, http=http).top_markets(10)
    assert seen[0].headers["User-Agent"] == USER_AGENT
    assert USER_AGENT.startswith("arena/")
    assert "(+https://github.com/" in USER_AGENT
    assert seen[0].extensions["timeout"]["read"] == 12.5


def test_type_flips_in_volume_fields_still_parse(gamma: Harness) -> None:
    gamma.world.type_flips = True
    markets = gamma.client().top_markets(500)
    assert [m.id for m in markets] == gamma.world.expected_top(500)
    for market in markets:
        truth = gamma.world.markets[market.id].volume
        assert market.volume in (truth, Decimal(int(truth)))


def test_missing_optional_fields_keep_the_server_order(gamma: Harness) -> None:
    gamma.world.missing_fields = True
    markets = gamma.client().top_markets(500)
    assert [m.id for m in markets] == gamma.world.expected_top(500)
    assert any(m.volume is None or m.event_id is None for m in markets)


def test_a_malformed_row_is_logged_and_skipped(
    gamma: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    bad = gamma.world.expected_top(10)[3]
    gamma.world.corrupt(bad, outcomePrices='["0.5", ')
    stats = FetchStats()
    with caplog.at_level(logging.WARNING):
        markets = gamma.client().top_markets(500, stats)
    assert [m.id for m in markets] == [i for i in gamma.world.expected_top(501) if i != bad]
    assert stats.parse_errors == [(bad, stats.parse_errors[0][1])]
    assert "unreadable outcomePrices" in stats.parse_errors[0][1]
    assert bad in caplog.text


def test_markets_by_ids_sees_open_and_closed_in_chunks(gamma: Harness) -> None:
    world = gamma.world
    open_ids = world.expected_top(230)
    closed_ids = [m.id for m in world.markets.values() if m.closed][:5]
    world.close(open_ids[0])
    wanted = [*open_ids, *closed_ids, "999999999"]
    found = gamma.client().markets_by_ids(wanted)
    assert set(found) == set(open_ids) | set(closed_ids)
    assert found[open_ids[0]].closed
    requests = [q for q in keyset_requests(world) if "id" in q]
    assert all(len(q["id"]) <= 100 for q in requests)
    open_pass = [q for q in requests if q["closed"] == ["false"]]
    closed_pass = [q for q in requests if q["closed"] == ["true"]]
    assert len(open_pass) == 3  # 236 ids in chunks of 100
    assert sorted(i for q in closed_pass for i in q["id"]) == sorted(
        [open_ids[0], *closed_ids, "999999999"]
    )


def test_markets_by_ids_without_closed(gamma: Harness) -> None:
    closed_id = next(m.id for m in gamma.world.markets.values() if m.closed)
    open_id = gamma.world.expected_top(1)[0]
    found = gamma.client().markets_by_ids([open_id, closed_id], include_closed=False)
    assert set(found) == {open_id}


def test_single_market_and_404_as_gone(gamma: Harness) -> None:
    market_id = gamma.world.expected_top(1)[0]
    client = gamma.client()
    market = client.market(market_id)
    assert market is not None
    assert market.id == market_id
    assert client.market("123") is None
    gamma.world.remove(market_id)
    assert client.market(market_id) is None


def test_single_market_with_a_bad_row_raises_parse_error(gamma: Harness) -> None:
    market_id = gamma.world.expected_top(1)[0]
    gamma.world.corrupt(market_id, outcomes="nope")
    with pytest.raises(MarketParseError) as info:
        gamma.client().market(market_id)
    assert info.value.market_id == market_id


S = ResolutionState


def apply_step(world: FakeGammaWorld, market_id: str, step: str) -> None:
    """Apply ``"close"``, ``"propose:Yes"``, ``"dispute"``, ``"resolve:No"``, ``"50-50"``..."""
    action, _, arg = step.partition(":")
    if action == "close":
        world.close(market_id)
    elif action == "propose":
        world.propose(market_id, arg)
    elif action == "dispute":
        world.dispute(market_id)
    elif action == "resolve":
        world.resolve(market_id, arg)
    elif action == "50-50":
        world.resolve_50_50(market_id)
    elif action == "ambiguous":
        world.resolve_ambiguous(market_id)


@pytest.mark.parametrize(
    ("steps", "state", "winner"),
    [
        ((), S.OPEN, None),
        (("close",), S.CLOSED_AWAITING, None),
        (("propose:Yes",), S.PROPOSED, None),
        (("propose:Yes", "dispute"), S.DISPUTED, None),
        (("propose:Yes", "dispute", "resolve:No"), S.RESOLVED_WINNER, "NO"),
        (("resolve:Yes",), S.RESOLVED_WINNER, "YES"),
        (("50-50",), S.RESOLVED_50_50, None),
        (("ambiguous",), S.AMBIGUOUS, None),
    ],
)
def test_fake_lifecycle_classifies_through_the_client(
    gamma: Harness, steps: tuple[str, ...], state: ResolutionState, winner: str | None
) -> None:
    market_id = next(
        m.id for m in gamma.world.markets.values() if m.outcomes == ["Yes", "No"] and not m.closed
    )
    for step in steps:
        apply_step(gamma.world, market_id, step)
    market = gamma.client().market(market_id)
    assert market is not None
    resolution = classify(market)
    assert (resolution.state, resolution.winner) == (state, winner)


def test_negrisk_group_resolution_through_the_client(gamma: Harness) -> None:
    world = gamma.world
    members = [m for m in world.markets.values() if m.event.neg_risk and m.prices is not None]
    event_id = members[0].event.id
    children = [m.id for m in members if m.event.id == event_id]
    world.resolve_group(event_id, children[0])
    found = gamma.client().markets_by_ids(children)
    winners = {i: classify(m).winner for i, m in found.items()}
    assert winners[children[0]] == "YES"
    assert all(winners[i] == "NO" for i in children[1:])
