"""The fake Gamma itself: the real envelope and row shapes, the API's rules, fake time."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from arena.fakes.gamma import FakeGammaWorld, serve_fake_gamma
from arena.fakes.serving import FakeDrop, FakeSlow
from arena.sources.gamma_parse import parse_market

KEYSET = {"order": ["volumeNum"], "ascending": ["false"], "closed": ["false"], "limit": ["500"]}


def get(world: FakeGammaWorld, path: str, **query: list[str]) -> tuple[int, dict[str, str], Any]:
    status, headers, body = world.handle("GET", path, query)
    return status, headers, json.loads(body)


@pytest.fixture
def world() -> FakeGammaWorld:
    return FakeGammaWorld(n_markets=300, seed=2)


def test_keyset_envelope_clamp_and_cursor(world: FakeGammaWorld) -> None:
    status, _, page = get(world, "/markets/keyset", **KEYSET)
    assert status == 200
    assert set(page) == {"markets", "next_cursor"}
    assert len(page["markets"]) == 100  # limit=500 is clamped silently
    volumes = [Decimal(str(m["volumeNum"])) for m in page["markets"]]
    assert volumes == sorted(volumes, reverse=True)
    _, _, second = get(world, "/markets/keyset", **KEYSET, after_cursor=[page["next_cursor"]])
    assert {m["id"] for m in second["markets"]}.isdisjoint({m["id"] for m in page["markets"]})


def test_rows_have_the_real_shapes(world: FakeGammaWorld) -> None:
    _, _, page = get(world, "/markets/keyset", **KEYSET)
    row = page["markets"][0]
    assert isinstance(row["outcomes"], str)
    assert isinstance(json.loads(row["outcomes"]), list)
    assert all(isinstance(p, str) for p in json.loads(row["outcomePrices"]))
    assert isinstance(row["volume"], str)
    assert isinstance(row["volumeNum"], float)
    assert all(len(t) >= 77 for t in json.loads(row["clobTokenIds"]))
    assert row["events"][0]["tags"][0]["label"]
    assert "umaResolutionStatus" not in row  # null keys are omitted...
    assert row["feeType"] is None  # ...except this one
    assert parse_market(row).is_tradable


def test_closed_defaults_to_false_and_true_returns_only_closed(world: FakeGammaWorld) -> None:
    closed = {m.id for m in world.markets.values() if m.closed}
    _, _, open_page = get(world, "/markets/keyset", limit=["100"], order=["id"])
    assert closed
    assert closed.isdisjoint(m["id"] for m in open_page["markets"])
    _, _, closed_page = get(world, "/markets/keyset", limit=["100"], closed=["true"])
    assert {m["id"] for m in closed_page["markets"]} == closed
    row = closed_page["markets"][0]
    assert row["closedTime"].endswith("+00")
    assert "T" not in row["closedTime"]


def test_repeated_ids_filter(world: FakeGammaWorld) -> None:
    ids = [m.id for m in world.markets.values() if not m.closed][:3]
    _, _, page = get(world, "/markets/keyset", id=ids, limit=["100"])
    assert sorted(m["id"] for m in page["markets"]) == sorted(ids)
    status, _, _body = get(world, "/markets/keyset", id=[str(i) for i in range(101)])
    assert status == 422


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"offset": ["100"]}, "offset is not supported"),
        ({"order": ["volume_num"]}, "order fields are not valid"),
        ({"after_cursor": ["not-a-cursor"]}, "invalid after_cursor"),
        ({"limit": ["ten"]}, "limit must be an integer"),
    ],
)
def test_keyset_validation_errors(
    world: FakeGammaWorld, query: dict[str, list[str]], message: str
) -> None:
    status, _, body = get(world, "/markets/keyset", **query)
    assert status == 422
    assert body == {"type": "validation error", "error": body["error"]}
    assert message in body["error"]


def test_wrong_cursor_name_is_ignored_and_returns_page_one(world: FakeGammaWorld) -> None:
    _, _, first = get(world, "/markets/keyset", **KEYSET)
    _, _, again = get(world, "/markets/keyset", **KEYSET, cursor=[first["next_cursor"]])
    assert again == first


def test_legacy_list_is_a_bare_array_with_sunset_headers(world: FakeGammaWorld) -> None:
    status, headers, rows = get(world, "/markets", limit=["10"], offset=["5"])
    assert status == 200
    assert isinstance(rows, list)
    assert len(rows) == 10
    assert "Sunset" in headers
    status, _, body = get(world, "/markets", offset=["2500"])
    assert status == 422
    assert "use /markets/keyset" in body["error"]


def test_single_market_and_404(world: FakeGammaWorld) -> None:
    market_id = next(iter(world.markets))
    status, _, row = get(world, f"/markets/{market_id}")
    assert (status, row["id"]) == (200, market_id)
    status, _, body = get(world, "/markets/1")
    assert status == 404
    assert body["type"] == "not found"


def test_faults_are_used_once_in_order(world: FakeGammaWorld) -> None:
    world.fail("429", retry_after=4)
    world.fail("500")
    world.fail("drop")
    world.fail("slow", delay=3)
    world.fail("malformed")
    status, headers, _ = world.handle("GET", "/markets/keyset", {})
    assert (status, headers["Retry-After"]) == (429, "4")
    status, _, body = world.handle("GET", "/markets/keyset", {})
    assert status == 500
    assert json.loads(body)["error"] == "cannot get the information"
    with pytest.raises(FakeDrop):
        world.handle("GET", "/markets/keyset", {})
    with pytest.raises(FakeSlow) as slow:
        world.handle("GET", "/markets/keyset", {})
    assert slow.value.delay == 3
    assert slow.value.reply[0] == 200
    status, _, body = world.handle("GET", "/markets/keyset", {})
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(body)
    assert world.handle("GET", "/markets/keyset", {})[0] == 200


def test_unknown_fault_kind_is_refused(world: FakeGammaWorld) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        world.fail("teapot")


def test_same_seed_same_world() -> None:
    one, two = FakeGammaWorld(200, seed=9), FakeGammaWorld(200, seed=9)
    assert one.handle("GET", "/markets/keyset", KEYSET) == two.handle(
        "GET", "/markets/keyset", KEYSET
    )


def test_prices_move_and_markets_resolve_over_fake_time(world: FakeGammaWorld) -> None:
    before = {i: list(m.prices or ()) for i, m in world.markets.items()}
    moved = world.move_prices(fraction=0.5)
    assert moved
    assert all(world.markets[i].prices != before[i] for i in moved)
    market_id = moved[0]
    world.advance(timedelta(hours=2))
    world.resolve(market_id, "No")
    raw = world.handle("GET", f"/markets/{market_id}", {})[2]
    row = json.loads(raw)
    assert json.loads(row["outcomePrices"]) == ["0", "1"]
    assert row["umaResolutionStatus"] == "resolved"
    assert row["acceptingOrders"] is False


def test_served_over_http_with_repeated_keys(world: FakeGammaWorld) -> None:
    ids = [m.id for m in world.markets.values() if not m.closed][:2]
    with serve_fake_gamma(world) as base_url:
        response = httpx.get(f"{base_url}/markets/keyset", params=[("id", ids[0]), ("id", ids[1])])
        assert response.status_code == 200
        assert sorted(m["id"] for m in response.json()["markets"]) == sorted(ids)
        world.fail("drop")
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(f"{base_url}/markets/keyset")
