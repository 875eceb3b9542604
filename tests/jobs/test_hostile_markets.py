"""Hostile Gamma rows stop at the edge: each is skipped and reported, the sync completes
(issue 10, finding 1), identically on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from arena.clock import FixedClock
from arena.config import Benchmark, Polymarket, Settings
from arena.domain.storable import CUT_MARKER
from arena.fakes.gamma import FakeGammaWorld
from arena.jobs.markets import sync_markets
from arena.sources import gamma as gamma_module
from arena.sources.gamma import GammaClient
from arena.store.db import transaction
from arena.store.models import Market
from tests.conftest import Database

NOW = datetime(2026, 11, 1, 0, 5, tzinfo=UTC)
SETTINGS = Settings(benchmark=Benchmark(universe_size=40))

# Rows that broke the whole sync before (finding 1): (raw overrides, whether the row is skipped).
HOSTILE: dict[str, tuple[dict[str, Any], bool]] = {
    "nul-question": ({"question": "Will it\x00 rain?"}, False),
    "nul-description": ({"description": "a\x00b"}, False),
    "nul-slug": ({"slug": "sl\x00ug"}, False),
    "nul-group-title": ({"groupItemTitle": "gr\x00oup"}, False),
    "long-slug": ({"slug": "s" * 5000}, False),
    "surrogate-question": ({"question": "lone \ud800 surrogate"}, False),
    "id-33-digits": ({"id": "9" * 33}, True),
    "id-superscript": ({"id": "12²"}, True),
    "volume-1e18": ({"volumeNum": 1e18}, True),
    "volume-1e300": ({"volumeNum": 1e300}, True),
    "volume-string-huge": ({"volumeNum": None, "volume": "9" * 40}, True),
    "nul-outcome": ({"outcomes": '["Yes\\u0000", "No"]'}, True),
    "long-outcome": ({"outcomes": '["' + "Y" * 301 + '", "No"]'}, True),
    "date-year-1": ({"endDate": "0001-01-01T00:00:00+05:00"}, False),
    # An id too long to store is dropped, and a market without one is not deployed: skipped.
    "long-condition-id": ({"conditionId": "0x" + "a" * 200}, True),
}


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gamma_module, "retry_sleep", lambda seconds: None)


@pytest.fixture
def world() -> FakeGammaWorld:
    return FakeGammaWorld(n_markets=120, seed=5, start=NOW - timedelta(hours=1))


@pytest.fixture
def client(world: FakeGammaWorld) -> Iterator[GammaClient]:
    with httpx.Client(transport=world.mock_transport()) as http:
        yield GammaClient(Polymarket(gamma_url="http://gamma.test"), http=http)


def stored(db: Database) -> dict[str, Market]:
    with transaction(db.factory) as session:
        rows = session.scalars(select(Market)).all()
        session.expunge_all()
    return {row.id: row for row in rows}


def test_each_hostile_row_is_skipped_or_made_storable_and_the_rest_syncs(
    db: Database, world: FakeGammaWorld, client: GammaClient
) -> None:
    targets = world.expected_top(len(HOSTILE) + 10)
    planted = dict(zip(HOSTILE, targets, strict=False))
    for name, market_id in planted.items():
        world.corrupt(market_id, **HOSTILE[name][0])

    report = sync_markets(db.factory, client, SETTINGS, FixedClock(NOW))

    rows = stored(db)
    reported = {error_id for error_id, _reason in report.parse_errors}
    for name, market_id in planted.items():
        skipped = HOSTILE[name][1]
        if skipped:
            assert market_id not in rows, name
        else:
            assert market_id in rows, name
    # The ids that could not be stored are reported (with the id when it is a valid one).
    skipped_rows = len(report.parse_errors) + sum(report.skipped.values())
    assert skipped_rows >= sum(skipped for _o, skipped in HOSTILE.values())
    assert planted["volume-1e300"] in reported
    # Every clean market of the listing is stored; text is storable and cut with the marker.
    clean = set(targets) - set(planted.values())
    assert clean <= set(rows)
    assert "\x00" not in rows[planted["nul-question"]].question
    assert rows[planted["long-slug"]].slug is not None
    assert rows[planted["long-slug"]].slug.endswith(CUT_MARKER)
    assert len(rows[planted["long-slug"]].slug) == 300


_nasty_text = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.sampled_from("\x00\ud800\udfff²¹٣a9 \t\n<>"), max_size=20),
    st.builds(lambda n, c: c * n, st.integers(0, 700), st.sampled_from(["x", "\x00", "é"])),
)
_nasty_number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from(["1e300", "NaN", "-Infinity", "9" * 30, "", "1e-400", "0x10"]),
)
_nasty_value = st.one_of(_nasty_text, _nasty_number, st.none(), st.booleans(), st.just([]))
_KEYS = (
    "id", "question", "description", "slug", "groupItemTitle", "conditionId", "volumeNum",
    "volume", "liquidityNum", "outcomes", "outcomePrices", "endDate", "closedTime",
    "umaResolutionStatus", "acceptingOrders", "active", "closed", "negRiskMarketID",
    "clobTokenIds", "category", "marketType",
)  # fmt: skip
_overrides = st.dictionaries(st.sampled_from(_KEYS), _nasty_value, min_size=1, max_size=5)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(corruptions=st.lists(_overrides, min_size=1, max_size=8))
def test_fuzzed_rows_never_stop_the_sync(
    db: Database, world: FakeGammaWorld, client: GammaClient, corruptions: list[dict[str, Any]]
) -> None:
    world.overrides.clear()
    targets = world.expected_top(len(corruptions) + 20)
    for market_id, raw in zip(targets, corruptions, strict=False):
        world.corrupt(market_id, **raw)

    report = sync_markets(db.factory, client, SETTINGS, FixedClock(NOW))

    rows = stored(db)
    untouched = set(targets[len(corruptions) :])
    assert untouched <= set(rows)
    assert report.listed > 0
    for row in rows.values():
        for text in (row.question, row.description, row.slug, row.group_item_title):
            assert text is None or ("\x00" not in text and "\ud800" not in text)
