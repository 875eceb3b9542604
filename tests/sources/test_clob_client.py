"""ClobClient against the fake CLOB, in-process (MockTransport) and over real HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

import httpx
import pytest

from arena.config import Polymarket
from arena.domain.book import NO_FEE, FeeSchedule
from arena.errors import BookMissing, ClobError
from arena.fakes.clob import FakeClobMarket, FakeClobWorld, serve_fake_clob
from arena.sources import clob as clob_module
from arena.sources.clob import MAX_BATCH, BookBatch, BookSource, ClobClient
from arena.sources.retry import POLYMARKET_BACKOFF, RETRY_AFTER_CAP_SECONDS

UNKNOWN = "9" * 77
FEE = FeeSchedule(rate=Decimal("0.04"), exponent=Decimal(1))


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retries never really wait in tests; the waits asked for are recorded instead."""
    waits: list[float] = []
    monkeypatch.setattr(clob_module, "retry_sleep", waits.append)
    return waits


@dataclass
class Harness:
    """A fake world plus a way to build clients talking to it over one transport."""

    world: FakeClobWorld
    base_url: str
    transport: str
    http: httpx.Client
    markets: list[FakeClobMarket] = field(default_factory=list)

    def client(self, max_attempts: int = 4, timeout: float = 2.0) -> ClobClient:
        return ClobClient(
            Polymarket(max_attempts=max_attempts, timeout_seconds=timeout),
            base_url=self.base_url,
            http=self.http,
        )


def populated(seed: int = 5, n: int = 6) -> tuple[FakeClobWorld, list[FakeClobMarket]]:
    world = FakeClobWorld(seed=seed)
    markets = [
        world.add_plausible_market(
            Decimal(world.rng.randint(3, 97)) / 100, fee=FEE if i % 2 else NO_FEE
        )
        for i in range(n)
    ]
    return world, markets


@pytest.fixture(params=["mock", "http"])
def clob(request: pytest.FixtureRequest) -> Iterator[Harness]:
    world, markets = populated()
    if request.param == "mock":
        with httpx.Client(transport=world.mock_transport()) as http:
            yield Harness(world, "http://clob.test", "mock", http, markets)
    else:
        with serve_fake_clob(world) as base_url, httpx.Client() as http:
            yield Harness(world, base_url, "http", http, markets)


@pytest.fixture
def mock() -> Iterator[Harness]:
    """In-process only: for faults whose real-HTTP form would really wait."""
    world, markets = populated()
    with httpx.Client(transport=world.mock_transport()) as http:
        yield Harness(world, "http://clob.test", "mock", http, markets)


def batch_bodies(world: FakeClobWorld, path: str = "/books") -> list[list[str]]:
    return [
        [item["token_id"] for item in json.loads(r.body)]
        for r in world.requests
        if r.path == path and r.method == "POST"
    ]


# -- the operations ----------------------------------------------------------------------


def test_book_is_the_fakes_book(clob: Harness) -> None:
    market = clob.markets[0]
    for token in (market.yes_token, market.no_token):
        book = clob.client().book(token)
        assert book == clob.world.books[token]
        assert book.best_bid is not None and book.best_ask is not None
        assert book.best_bid < book.best_ask
    assert clob.world.count("/book", "GET") == 2


def test_unknown_or_removed_book_is_missing_at_once(clob: Harness) -> None:
    client = clob.client()
    with pytest.raises(BookMissing) as missing:
        client.book(UNKNOWN)
    assert missing.value.token_id == UNKNOWN
    removed = clob.markets[1].yes_token
    clob.world.remove_book(removed)
    with pytest.raises(BookMissing, match=removed):
        client.book(removed)
    assert clob.world.count("/book") == 2  # a 404 is never retried


def test_books_over_500_tokens_are_chunked_and_merged(clob: Harness) -> None:
    extra = [clob.world.add_plausible_market(Decimal("0.5")) for _ in range(600)]
    tokens = [m.yes_token for m in clob.markets + extra] + [m.no_token for m in extra[:100]]
    batch = clob.client().books([*tokens, tokens[0], tokens[7]])  # duplicates asked once
    assert isinstance(batch, BookBatch)
    assert set(batch.books) == set(tokens)
    assert batch.missing == ()
    assert all(batch.books[t] == clob.world.books[t] for t in tokens)
    bodies = batch_bodies(clob.world)
    assert [len(b) for b in bodies] == [500, len(tokens) - 500]
    assert [t for body in bodies for t in body] == tokens


def test_missing_tokens_are_reported_in_request_order_and_logged(
    clob: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    present, omitted, removed = (m.yes_token for m in clob.markets[:3])
    clob.world.omit_from_batches(omitted)
    clob.world.remove_book(removed)
    with caplog.at_level(logging.WARNING, logger="arena.sources.clob"):
        batch = clob.client().books([UNKNOWN, present, omitted, removed])
    assert set(batch.books) == {present}
    assert batch.missing == (UNKNOWN, omitted, removed)
    assert "no book for 3 of 4 tokens" in caplog.text
    assert UNKNOWN in caplog.text


def test_books_are_keyed_by_asset_id_whatever_the_answer_order(clob: Harness) -> None:
    tokens = [t for m in clob.markets for t in (m.yes_token, m.no_token)]
    _, _, body = clob.world.handle(
        "POST", "/books", {}, json.dumps([{"token_id": t} for t in tokens]).encode()
    )
    answered = [book["asset_id"] for book in json.loads(body)]
    assert sorted(answered) == sorted(tokens)
    assert answered != tokens  # the fake reorders, as the server does
    batch = clob.client().books(tokens)
    assert all(batch.books[t].token_id == t for t in tokens)


def test_an_unreadable_book_in_a_batch_is_missing_not_fatal(
    clob: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    good, bad = clob.markets[0].yes_token, clob.markets[1].yes_token
    clob.world.corrupt(bad, bids=[{"price": "not a price", "size": "1"}])
    with caplog.at_level(logging.WARNING, logger="arena.sources.clob"):
        batch = clob.client().books([good, bad])
    assert set(batch.books) == {good}
    assert batch.missing == (bad,)
    assert f"token {bad}" in caplog.text
    with pytest.raises(ClobError, match=f"token {bad}"):
        clob.client().book(bad)


def test_no_tokens_no_request(clob: Harness) -> None:
    assert clob.client().books([]) == BookBatch(books={}, missing=())
    assert clob.client().midpoints([]) == {}
    assert clob.world.requests == []


def test_token_ids_must_be_strings(clob: Harness) -> None:
    token = clob.markets[0].yes_token
    with pytest.raises(TypeError):
        clob.client().book(int(token))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        clob.client().books([token, float(token)])  # type: ignore[list-item]
    assert clob.world.requests == []


def test_midpoints_are_exact_and_chunked(clob: Harness) -> None:
    extra = [clob.world.add_plausible_market(Decimal("0.31")) for _ in range(520)]
    tokens = [m.no_token for m in clob.markets + extra]
    asked = [*tokens, UNKNOWN]
    mids = clob.client().midpoints(asked)
    assert mids == {t: clob.world.books[t].mid for t in tokens}  # the unknown one is absent
    assert all(isinstance(m, Decimal) for m in mids.values())
    assert [len(b) for b in batch_bodies(clob.world, "/midpoints")] == [500, len(asked) - 500]


def test_fee_schedule(clob: Harness) -> None:
    client = clob.client()
    charged, free = clob.markets[1], clob.markets[0]
    assert client.fee_schedule(charged.condition_id) == FEE
    assert client.fee_schedule(free.condition_id) == NO_FEE
    with pytest.raises(ClobError, match="404"):
        client.fee_schedule("0x" + "00" * 32)
    assert clob.world.count("/clob-markets/0x" + "00" * 32) == 1


def test_fee_schedules_are_fetched_concurrently_and_one_failure_costs_that_market(
    clob: Harness,
) -> None:
    extra = [
        clob.world.add_plausible_market(Decimal("0.5"), fee=FEE if i % 3 else NO_FEE)
        for i in range(40)
    ]
    markets = clob.markets + extra
    unknown = "0x" + "00" * 32
    bad = markets[5].condition_id
    clob.world.fail("400", path=f"/clob-markets/{bad}")  # refused: not retried
    asked = [m.condition_id for m in markets] + [unknown, markets[0].condition_id]
    batch = clob.client().fee_schedules(asked)
    assert batch.schedules == {m.condition_id: m.fee for m in markets if m.condition_id != bad}
    assert set(batch.failed) == {bad, unknown} and not batch.stopped
    assert "400" in batch.failed[bad] and "404" in batch.failed[unknown]
    assert clob.world.count(f"/clob-markets/{markets[0].condition_id}") == 1  # asked once
    assert (
        sum(c for p, c in clob.world.counts().items() if "/clob-markets/" in p) == len(markets) + 1
    )


def test_fee_schedules_stop_asking_when_the_clob_is_down(mock: Harness) -> None:
    for _ in range(100):
        mock.world.add_plausible_market(Decimal("0.5"))
    mock.world.outage = True
    client = mock.client(max_attempts=2)
    batch = client.fee_schedules(list(mock.world.markets))
    assert batch.stopped and not batch.schedules
    # at most the failures that stop it plus the requests already running, each with retries
    assert 3 <= len(batch.failed) <= clob_module.FEE_FAILURES_TO_STOP + clob_module.FEE_CONCURRENCY
    assert client.requests == 2 * len(batch.failed) < 2 * len(mock.world.markets)


def test_the_client_is_a_book_source(clob: Harness) -> None:
    source: BookSource = clob.client()
    assert source.books([clob.markets[0].yes_token]).books
    source.close()
    assert not clob.http.is_closed  # a shared client is not the source's to close


def test_a_client_built_on_a_transport_owns_and_closes_it() -> None:
    world, markets = populated(n=1)
    with ClobClient(transport=world.mock_transport(), base_url="http://clob.test") as client:
        assert client.book(markets[0].yes_token).token_id == markets[0].yes_token
    with pytest.raises(RuntimeError, match="closed"):
        client.book(markets[0].yes_token)


# -- retries -----------------------------------------------------------------------------


def test_500s_are_retried_with_backoff_and_logged(
    clob: Harness, no_retry_waits: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    token = clob.markets[0].yes_token
    clob.world.fail("500", times=2)
    with caplog.at_level(logging.WARNING, logger="arena.sources.clob"):
        book = clob.client().book(token)
    assert book == clob.world.books[token]
    assert clob.world.count("/book") == 3
    assert len(no_retry_waits) == 2
    for attempt, wait in enumerate(no_retry_waits, start=1):
        assert 0 <= wait <= POLYMARKET_BACKOFF.first * 2 ** (attempt - 1)
    assert caplog.text.count("clob retry: attempt") == 2
    assert "error getting the orderbook" in caplog.text


def test_429_honours_retry_after(clob: Harness, no_retry_waits: list[float]) -> None:
    clob.world.fail("429", times=2, retry_after=7, path="/books")
    batch = clob.client().books([clob.markets[0].yes_token])
    assert batch.missing == ()
    assert no_retry_waits == [7.0, 7.0]
    assert clob.world.count("/books") == 3


def test_a_huge_retry_after_is_capped(mock: Harness, no_retry_waits: list[float]) -> None:
    mock.world.fail("429", retry_after=3600)
    mock.client().book(mock.markets[0].yes_token)
    assert no_retry_waits == [RETRY_AFTER_CAP_SECONDS]


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("html", {"status": 502}),
        ("html", {"status": 200}),  # an HTML page with a 200: not JSON, so retried
        ("malformed", {}),
        ("timeout", {}),
        ("drop", {}),
        ("connect_error", {}),
        ("500", {}),
    ],
)
def test_transient_failures_are_retried(
    mock: Harness, no_retry_waits: list[float], kind: str, options: dict[str, object]
) -> None:
    token = mock.markets[2].no_token
    mock.world.fail(kind, **options)
    assert mock.client().book(token) == mock.world.books[token]
    assert mock.world.count("/book") == 2
    assert len(no_retry_waits) == 1


def test_a_real_timeout_over_http_is_retried(no_retry_waits: list[float]) -> None:
    # Generous bounds, so that a busy machine never adds a timeout of its own: the slow reply
    # takes far longer than the timeout, and the retry's answer is far quicker than it
    world, markets = populated(n=1)
    world.fail("timeout", delay=60.0)
    with serve_fake_clob(world) as base_url:
        client = ClobClient(Polymarket(timeout_seconds=2.0, max_attempts=2), base_url=base_url)
        with client:
            assert client.book(markets[0].yes_token).token_id == markets[0].yes_token
    assert len(no_retry_waits) == 1


def test_latency_under_the_timeout_is_just_latency(mock: Harness) -> None:
    mock.world.latency = 0.5
    assert mock.client(timeout=2.0).book(mock.markets[0].yes_token)
    assert mock.world.count("/book") == 1


def test_gives_up_after_max_attempts(clob: Harness, no_retry_waits: list[float]) -> None:
    clob.world.fail("500", times=10)
    with pytest.raises(ClobError, match=r"GET /book: HTTP 500.*after 3 attempts"):
        clob.client(max_attempts=3).book(clob.markets[0].yes_token)
    assert clob.world.count("/book") == 3
    assert len(no_retry_waits) == 2


def test_an_outage_ends_in_a_clob_error(mock: Harness) -> None:
    mock.world.outage = True
    with pytest.raises(ClobError, match=r"503.*after 4 attempts"):
        mock.client().books([mock.markets[0].yes_token])
    mock.world.outage = False
    mock.world.fail("timeout", times=4)
    with pytest.raises(ClobError, match="timeout"):
        mock.client().book(mock.markets[0].yes_token)


def test_a_400_is_not_retried(clob: Harness, no_retry_waits: list[float]) -> None:
    clob.world.batch_limit = 2  # as if the server lowered its cap under the client
    tokens = [m.yes_token for m in clob.markets[:3]]
    with pytest.raises(ClobError, match="HTTP 400: Payload exceeds the limit"):
        clob.client().books(tokens)
    assert clob.world.count("/books") == 1
    clob.world.fail("400", path="/book")
    with pytest.raises(ClobError, match="HTTP 400: Invalid token id") as error:
        clob.client().book(tokens[0])
    assert not isinstance(error.value, BookMissing)
    assert clob.world.count("/book") == 1
    assert no_retry_waits == []


def test_the_batch_cap_is_500() -> None:
    assert MAX_BATCH == 500


def test_json_of_the_wrong_shape_is_retried(no_retry_waits: list[float]) -> None:
    """A 200 whose JSON is not the shape the endpoint sends (say, an object from a proxy where
    the array belongs) is retried like a non-JSON body."""
    world, markets = populated(n=2)
    wrapped = iter([b'{"error":"upstream"}', b"[]"])

    def respond(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/books" and (body := next(wrapped, None)) is not None:
            return httpx.Response(200, json=json.loads(body))
        query = {k: [v] for k, v in request.url.params.items()}
        status, headers, content = world.handle(
            request.method, request.url.path, query, request.read()
        )
        return httpx.Response(status, headers=headers, content=content)

    client = ClobClient(transport=httpx.MockTransport(respond), base_url="http://clob.test")
    with client:
        assert client.books([markets[0].yes_token]).missing == (markets[0].yes_token,)
        assert client.books([markets[1].yes_token]).missing == ()
    assert len(no_retry_waits) == 1


def test_answers_for_tokens_not_asked_for_are_ignored() -> None:
    world, markets = populated(n=2)
    stranger = world.rendered(markets[1].yes_token)

    def respond(request: httpx.Request) -> httpx.Response:
        query = {k: [v] for k, v in request.url.params.items()}
        status, headers, content = world.handle(
            request.method, request.url.path, query, request.read()
        )
        if request.url.path == "/books":
            content = json.dumps([stranger, *json.loads(content)]).encode()
        return httpx.Response(status, headers=headers, content=content)

    with ClobClient(transport=httpx.MockTransport(respond), base_url="http://clob.test") as client:
        batch = client.books([markets[0].yes_token])
    assert set(batch.books) == {markets[0].yes_token}
    assert batch.missing == ()
