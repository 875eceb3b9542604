"""The HTTP surface of the fake Gamma: what it serves, routing, keyset paging, filters, and
raw-JSON rendering.

:class:`ServedGamma` is the state the surface reads (markets and their events, faults,
switches); the functions take it (a :class:`~arena.fakes.gamma.FakeGammaWorld`, under its lock,
from ``FakeGammaWorld.handle``). Rows are rendered the way Gamma sends them: null keys omitted,
``outcomes``/``outcomePrices``/``clobTokenIds`` as JSON-encoded strings, ``volume`` a string
beside a numeric ``volumeNum``, ``closedTime`` in Postgres text, one ``events[]`` entry with tags.
Keyset cursors encode the sort key of a page's last row, as a real keyset cursor does.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import json
import re
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from arena.fakes.serving import FakeDrop, Reply

TICK = Decimal("0.001")
_edits = 0  # attribute writes on any FakeMarket (see note_edit); keys the sorted-listing cache
PAGE_CLAMP = 100
LEGACY_OFFSET_MAX = 2000
ORDER_FIELDS = ("volumeNum", "volume24hr", "liquidityNum", "endDate", "startDate", "id")
# fmt: off
OPTIONAL_KEYS = (
    "volumeNum", "liquidity", "liquidityNum", "volume24hr", "events", "description", "slug",
    "endDateIso", "clobTokenIds", "bestBid", "lastTradePrice", "negRiskMarketID",
)  # never acceptingOrders/closed/active/outcomes/outcomePrices: they decide tradability
# fmt: on


def note_edit() -> None:
    """Record that some fake market changed, so cached sorted listings are rebuilt."""
    global _edits
    _edits += 1


@dataclass
class Fault:
    """One scripted misbehaviour, used by the next request whose path starts with ``path``."""

    kind: str
    path: str = "/markets"
    retry_after: float | None = 1.0
    delay: float = 2.0


@dataclass
class FakeEvent:
    id: str
    slug: str
    title: str
    tags: list[str]
    neg_risk: bool = False
    neg_risk_market_id: str | None = None


@dataclass
class FakeMarket:
    """The world's state of one market (what Gamma would serve for it)."""

    id: str
    question: str
    outcomes: list[str]
    prices: list[Decimal] | None
    volume: Decimal
    volume_24h: Decimal
    liquidity: Decimal
    start_date: datetime
    end_date: datetime
    updated_at: datetime
    condition_id: str
    event: FakeEvent
    active: bool = True
    closed: bool = False
    accepting_orders: bool | None = True
    closed_time: datetime | None = None
    uma_status: str | None = None
    uma_history: list[str] = field(default_factory=list)
    neg_risk_other: bool = False
    group_item_title: str | None = None
    sports: bool = False

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        note_edit()

    @property
    def placeholder(self) -> bool:
        return self.prices is None


class ServedGamma:
    """What the fake Gamma serves (:class:`~arena.fakes.gamma.FakeGammaWorld` builds and moves
    it): the markets, the scripted faults, and the switches that vary the rows and the pages."""

    def __init__(self) -> None:
        self.markets: dict[str, FakeMarket] = {}
        self.faults: deque[Fault] = deque()
        self.overrides: dict[str, dict[str, Any]] = {}
        self.type_flips = False
        self.missing_fields = False
        self.empty_end_cursor = False
        self.page_clamp = PAGE_CLAMP  # rows per page at most, whatever `limit` asks
        self.sort_cache: dict[tuple[str, bool], Any] = {}  # see _sorted


def take_fault(world: ServedGamma, path: str, query: dict[str, list[str]]) -> Fault | None:
    for fault in world.faults:
        if not path.startswith(fault.path):
            continue
        if fault.kind == "repeat_cursor" and not query.get("after_cursor"):
            continue
        world.faults.remove(fault)
        return fault
    return None


def fault_reply(fault: Fault) -> Reply | None:
    if fault.kind == "429":
        headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
        status, headers_, body = error_reply(429, "rate limit", "too many requests")
        return status, {**headers_, **headers}, body
    if fault.kind == "500":
        return error_reply(500, "internal server error", "cannot get the information")
    if fault.kind in ("drop", "connect_error"):
        raise FakeDrop(fault.kind)
    if fault.kind == "malformed":
        return 200, {"Content-Type": "application/json"}, b'{"markets": [{"id": "5000'
    return None


def route(world: ServedGamma, path: str, query: dict[str, list[str]], fault: Fault | None) -> Reply:
    if path == "/markets/keyset":
        return _keyset(world, query, fault)
    if path == "/markets":
        return _legacy(world, query)
    match = re.fullmatch(r"/markets/([^/]+)", path)
    if match:
        market = world.markets.get(match.group(1))
        if market is None:
            return error_reply(404, "not found", "market not found")
        return _json(render_market(world, market))
    return error_reply(404, "not found", f"no route for {path}")


def _keyset(world: ServedGamma, query: dict[str, list[str]], fault: Fault | None) -> Reply:
    if "offset" in query:
        return error_reply(422, "validation error", "offset is not supported, use after_cursor")
    try:
        rows, keep = _select(world, query)
        limit = _limit(query, world.page_clamp)
        cursor = _first(query, "after_cursor")
        start = 0
        if cursor:
            after = _decode_cursor(cursor)
            start = bisect.bisect_right(rows, after, key=lambda row: row[0])
    except ValueError as exc:
        return error_reply(422, "validation error", str(exc))
    page: list[tuple[tuple[int, Decimal, int], FakeMarket]] = []
    more = False
    for row in itertools.islice(rows, start, None):
        if keep(row[1]):
            if len(page) == limit:
                more = True
                break
            page.append(row)
    body: dict[str, Any] = {"markets": [render_market(world, m) for _, m in page]}
    if fault is not None and fault.kind == "repeat_cursor" and cursor:
        body["next_cursor"] = cursor
    elif more:
        body["next_cursor"] = _encode_cursor(page[-1][0])
    elif world.empty_end_cursor:
        body["next_cursor"] = ""
    return _json(body)


def _legacy(world: ServedGamma, query: dict[str, list[str]]) -> Reply:
    try:
        ordered, keep = _select(world, query)
        limit = _limit(query, world.page_clamp)
        offset = int(_first(query, "offset") or 0)
    except ValueError as exc:
        return error_reply(422, "validation error", str(exc))
    if offset > LEGACY_OFFSET_MAX:
        return error_reply(422, "validation error", "offset too large, use /markets/keyset")
    rows = [market for _, market in ordered if keep(market)]
    status, headers, body = _json([render_market(world, m) for m in rows[offset : offset + limit]])
    headers.update({"Deprecation": "true", "Sunset": "Fri, 01 May 2026 00:00:00 GMT"})
    return status, headers, body


def _select(
    world: ServedGamma, query: dict[str, list[str]]
) -> tuple[list[tuple[tuple[int, Decimal, int], FakeMarket]], Callable[[FakeMarket], bool]]:
    """All markets in the requested order, and the filter a market must pass."""
    order = _first(query, "order") or "id"
    if order not in ORDER_FIELDS:
        raise ValueError("order fields are not valid")
    ascending = (_first(query, "ascending") or "false").lower() == "true"
    closed = (_first(query, "closed") or "false").lower() == "true"
    active = _first(query, "active")
    wanted_active = None if active is None else active.lower() == "true"
    ids = set(query.get("id", []))
    if len(ids) > PAGE_CLAMP:
        raise ValueError(f"at most {PAGE_CLAMP} ids")
    volume_min = Decimal(_first(query, "volume_num_min") or "-1")

    def keep(market: FakeMarket) -> bool:
        return (
            market.closed == closed
            and (not ids or market.id in ids)
            and (wanted_active is None or market.active == wanted_active)
            and market.volume >= volume_min
        )

    return _sorted(world, order, ascending), keep


def _sorted(
    world: ServedGamma, order: str, ascending: bool
) -> list[tuple[tuple[int, Decimal, int], FakeMarket]]:
    """Every market in ``order``; cached until any market is edited, added or removed."""
    stamp = (_edits, len(world.markets))
    cached = world.sort_cache.get((order, ascending))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    rows = sorted(
        ((_sort_key(m, order, ascending), m) for m in world.markets.values()),
        key=lambda row: row[0],
    )
    world.sort_cache[(order, ascending)] = (stamp, rows)
    return rows


def render_market(world: ServedGamma, market: FakeMarket) -> dict[str, Any]:
    """The market as Gamma sends it (null keys omitted, JSON-encoded lists)."""
    seq = int(market.id)
    p0 = market.prices[0] if market.prices else None
    row: dict[str, Any] = {
        "id": market.id,
        "question": market.question,
        "conditionId": market.condition_id,
        "slug": _slug(market.question, market.id),
        "resolutionSource": "",
        "endDate": _rfc(market.end_date),
        "liquidity": str(market.liquidity),
        "startDate": _rfc(market.start_date, "ms"),
        "description": f"This market resolves per its rules. {market.question}",
        "outcomes": json.dumps(market.outcomes),
        "outcomePrices": None
        if market.prices is None
        else json.dumps([_price(p) for p in market.prices]),
        "volume": str(market.volume),
        "active": market.active,
        "closed": market.closed,
        "createdAt": _rfc(market.start_date - timedelta(hours=3), "us"),
        "updatedAt": _rfc(market.updated_at, "us"),
        "closedTime": _pg(market.closed_time) if market.closed_time else None,
        "archived": False,
        "groupItemTitle": market.group_item_title or "",
        "enableOrderBook": True,
        "volumeNum": _number(world, market.volume, seq),
        "liquidityNum": _number(world, market.liquidity, seq + 1),
        "endDateIso": market.end_date.date().isoformat(),
        "volume24hr": _number(world, market.volume_24h, seq + 2),
        "clobTokenIds": json.dumps(token_ids(market)) if market.prices is not None else None,
        "acceptingOrders": market.accepting_orders,
        "negRisk": market.event.neg_risk,
        "negRiskMarketID": market.event.neg_risk_market_id,
        "negRiskOther": market.neg_risk_other,
        "umaResolutionStatus": market.uma_status,
        "umaResolutionStatuses": json.dumps(market.uma_history),
        "lastTradePrice": float(p0) if p0 is not None else None,
        "bestBid": float(max(Decimal(0), p0 - TICK)) if p0 is not None and seq % 5 else None,
        "sportsMarketType": "moneyline" if market.sports else None,
        "events": [_render_event(market.event)],
    }
    row = {key: value for key, value in row.items() if value is not None}
    row["feeType"] = None  # the one null Gamma does send
    if world.missing_fields and seq % 2 == 0:
        for key in OPTIONAL_KEYS[seq % 3 :: 2]:
            row.pop(key, None)
    for key, value in world.overrides.get(market.id, {}).items():
        if value is None:
            row.pop(key, None)
        else:
            row[key] = value
    return row


def token_ids(market: FakeMarket) -> list[str]:
    """The market's CLOB token ids (77-digit decimal strings, aligned with its outcomes):
    stable, so a fake CLOB can serve their books (:mod:`arena.fakes.book_world`)."""
    return [str(10**76 + int(market.id) * 7919 + i) for i in range(len(market.outcomes))]


def _render_event(event: FakeEvent) -> dict[str, Any]:
    rendered: dict[str, Any] = {
        "id": event.id,
        "ticker": event.slug,
        "slug": event.slug,
        "title": event.title,
        "active": True,
        "closed": False,
        "negRisk": event.neg_risk,
        "tags": [
            {
                "id": str(100 + sum(map(ord, t)) % 900),
                "label": t,
                "slug": t.lower().replace(" ", "-"),
            }
            for t in event.tags
        ],
    }
    if event.neg_risk_market_id:
        rendered["negRiskMarketID"] = event.neg_risk_market_id
    return rendered


def _number(world: ServedGamma, value: Decimal, seq: int) -> Any:
    """A JSON number, or with ``type_flips`` an int, a float or a string by turns."""
    if world.type_flips:
        flavour = seq % 3
        if flavour == 0:
            return int(value)
        if flavour == 1:
            return str(value)
    return float(value)


_SORT_VALUES: dict[str, Callable[[FakeMarket], Decimal]] = {
    "volumeNum": lambda m: m.volume,
    "volume24hr": lambda m: m.volume_24h,
    "liquidityNum": lambda m: m.liquidity,
    "endDate": lambda m: Decimal(int(m.end_date.timestamp())),
    "startDate": lambda m: Decimal(int(m.start_date.timestamp())),
    "id": lambda m: Decimal(int(m.id)),
}


def _sort_key(market: FakeMarket, order: str, ascending: bool) -> tuple[int, Decimal, int]:
    value = _SORT_VALUES[order](market)
    return (0, value if ascending else -value, int(market.id))


def _encode_cursor(key: tuple[int, Decimal, int]) -> str:
    raw = json.dumps({"v": 1, "k": [key[0], str(key[1]), key[2]]}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, Decimal, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        flag, value, market_id = json.loads(raw)["k"]
        return int(flag), Decimal(value), int(market_id)
    except (binascii.Error, ValueError, KeyError, TypeError, ArithmeticError):
        raise ValueError("invalid after_cursor") from None


def _first(query: Mapping[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _limit(query: Mapping[str, list[str]], clamp: int = PAGE_CLAMP) -> int:
    text = _first(query, "limit")
    if text is None:
        return min(20, clamp)
    try:
        return max(1, min(clamp, int(text)))
    except ValueError:
        raise ValueError("limit must be an integer") from None


def _json(body: Any) -> Reply:
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def error_reply(status: int, kind: str, message: str) -> Reply:
    body = json.dumps({"type": kind, "error": message}).encode()
    return status, {"Content-Type": "application/json"}, body


def _price(price: Decimal) -> str:
    text = format(price.normalize(), "f")
    return text if text not in ("-0", "") else "0"


def _slug(question: str, market_id: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", question.lower()).strip("-")[:50] + "-" + market_id[-3:]


def _rfc(moment: datetime, precision: str = "s") -> str:
    moment = moment.astimezone(UTC)
    if precision == "ms":
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if precision == "us":
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pg(moment: datetime) -> str:
    """Postgres text timestamp, as Gamma sends ``closedTime``: ``2026-05-25 22:43:31+00``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S+00")
