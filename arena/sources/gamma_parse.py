"""Turn raw Polymarket Gamma market objects into domain :class:`MarketView` values.

Gamma omits null-valued keys, JSON-encodes list fields inside strings, mixes string and numeric
volume fields and uses three timestamp formats (gamma-api.md, "A market object"). Everything
here is defensive: optional fields default to ``None``; a row that cannot be trusted (no id,
unreadable outcomes or prices) raises :class:`MarketParseError` carrying the market id, which
callers log before skipping the row. Prices become exact ``Decimal`` values, never floats.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from arena.clock import ensure_utc, parse_timestamp
from arena.domain.ledger import ONE, ZERO
from arena.domain.markets import MarketView
from arena.domain.storable import (
    LONG_TEXT,
    MAX_OUTCOME_LENGTH,
    fits_digits,
    has_unstorable,
    is_market_id,
    optional_text,
)
from arena.errors import MarketParseError

logger = logging.getLogger(__name__)

# Top-level categories recognised among event tag labels (lower-case label -> category).
_TAG_CATEGORIES = {
    "politics": "Politics",
    "elections": "Politics",
    "us election": "Politics",
    "us politics": "Politics",
    "geopolitics": "Geopolitics",
    "world": "World",
    "sports": "Sports",
    "esports": "Sports",
    "crypto": "Crypto",
    "bitcoin": "Crypto",
    "ethereum": "Crypto",
    "crypto prices": "Crypto",
    "economy": "Economy",
    "economics": "Economy",
    "fed": "Economy",
    "finance": "Finance",
    "business": "Business",
    "tech": "Tech",
    "technology": "Tech",
    "ai": "Tech",
    "science": "Science",
    "weather": "Weather",
    "climate": "Weather",
    "culture": "Culture",
    "pop culture": "Culture",
    "entertainment": "Culture",
    "us current affairs": "Politics",  # a legacy (2020) category
    "coronavirus": "Science",  # a legacy (2020) category
}

# Fallback when no tag names a category: keywords in the event title or the question.
_TITLE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (category, re.compile(pattern, re.IGNORECASE))
    for category, pattern in (
        (
            "Sports",
            r"\b(vs\.?|nba|nfl|mlb|nhl|ufc|fifa|uefa|premier league|champions league|"
            r"super bowl|world cup|grand slam|wta|atp|counter-strike|dota|league of legends|"
            r"match|playoffs?|championship)\b",
        ),
        (
            "Crypto",
            r"\b(bitcoin|btc|ethereum|eth|solana|crypto|airdrop|token|fdv|memecoin|stablecoin)\b",
        ),
        (
            "Geopolitics",
            r"\b(ceasefire|invades?|invasion|war|nato|nuclear (deal|test|weapons?))\b",
        ),
        (
            "Economy",
            r"\b(fed|interest rates?|inflation|cpi|gdp|recession|unemployment|tariffs?)\b",
        ),
        (
            "Politics",
            r"\b(elections?|president(ial)?|nominee|nomination|senate|congress|governor|"
            r"prime minister|parliament|government|shutdown|primar(y|ies)|mayor|trump|biden|"
            r"xi jinping|putin|banned in the us)\b",
        ),
        (
            "Culture",
            r"\b(album|box office|opening weekend|movie|film|oscars?|grammys?|emmys?|"
            r"billboard|spotify|netflix|youtube|tiktok)\b",
        ),
        ("Weather", r"\b(hurricane|named storms?|tornado|temperature|rainfall|snowfall)\b"),
        ("Business", r"\b(largest company|market cap|ipo|earnings|nvidia|apple|tesla)\b"),
        ("Sports", r"\b(wsop|poker|formula 1|f1|grand prix|boxing|golf|pga|tennis)\b"),
    )
)


@dataclass
class ParsedRows:
    """The outcome of parsing a batch: the markets, and one error per row that failed."""

    markets: list[MarketView] = field(default_factory=list)
    errors: list[MarketParseError] = field(default_factory=list)


def parse_market(raw: Mapping[str, Any], event: Mapping[str, Any] | None = None) -> MarketView:
    """Parse one raw Gamma market; ``event`` is the enclosing event for nested markets.

    Raises :class:`MarketParseError` when the row has no usable id, outcomes or prices.
    """
    if not isinstance(raw, Mapping):
        raise MarketParseError(None, f"row is a {type(raw).__name__}, not an object")
    market_id = _market_id(raw.get("id"))
    outcomes = _outcomes(market_id, raw.get("outcomes"))
    prices = _prices(market_id, raw.get("outcomePrices"), len(outcomes))
    events = raw.get("events")
    if isinstance(events, list) and events and isinstance(events[0], Mapping):
        event = events[0]
    if not isinstance(event, Mapping):
        event = None
    tags = _tag_labels(event)
    question = _text(raw.get("question")) or ""
    event_title = _text(event.get("title")) if event else None
    return MarketView(
        id=market_id,
        question=optional_text(question, LONG_TEXT) or "",
        outcomes=outcomes,
        prices=prices,
        slug=optional_text(_text(raw.get("slug")), 300),
        description=optional_text(_text(raw.get("description")), LONG_TEXT),
        category=optional_text(derive_category(raw, event_title, tags, question), 100),
        volume=_volume(market_id, raw, "volumeNum", "volume"),
        volume_24h=_volume(market_id, raw, "volume24hr"),
        liquidity=_volume(market_id, raw, "liquidityNum", "liquidity"),
        end_date=_first_time(raw, "endDate", "endDateIso"),
        closed_time=_first_time(raw, "closedTime"),
        active=bool(_flag(raw.get("active"), default=True)),
        closed=bool(_flag(raw.get("closed"), default=False)),
        accepting_orders=_flag(raw.get("acceptingOrders"), default=None),
        uma_resolution_status=_identifier(
            (_text(raw.get("umaResolutionStatus")) or "").lower() or None, 32
        ),
        condition_id=_identifier(_text(raw.get("conditionId"), strip=False), 80),
        clob_token_ids=_token_ids(market_id, raw.get("clobTokenIds")),
        neg_risk=bool(_flag(raw.get("negRisk"), default=False)),
        neg_risk_market_id=_identifier(_text(raw.get("negRiskMarketID")), 80),
        neg_risk_other=bool(_flag(raw.get("negRiskOther"), default=False)),
        group_item_title=optional_text(_text(raw.get("groupItemTitle")), 300),
        event_id=_event_id(event.get("id")) if event else None,
        event_slug=optional_text(_text(event.get("slug")), 300) if event else None,
        event_title=optional_text(event_title, LONG_TEXT),
        tags=tags,
        market_type=_identifier(_text(raw.get("marketType")), 32),
    )


def parse_rows(rows: Iterable[Any], event: Mapping[str, Any] | None = None) -> ParsedRows:
    """Parse many rows; a bad row is logged with its market id and reported, never raised."""
    parsed = ParsedRows()
    for raw in rows:
        try:
            parsed.markets.append(parse_market(raw, event))
        except MarketParseError as exc:
            logger.warning("skipping unparseable Gamma market %s: %s", exc.market_id, exc.reason)
            parsed.errors.append(exc)
        except Exception as exc:  # one hostile row never stops the batch
            market_id = _market_id_or_none(raw)
            logger.warning("skipping unparseable Gamma market %s: %r", market_id, exc)
            parsed.errors.append(MarketParseError(market_id, f"{type(exc).__name__}: {exc}"))
    return parsed


def parse_events(events: Iterable[Any]) -> ParsedRows:
    """Parse the markets nested in raw Gamma events (``/events`` rows, search results)."""
    parsed = ParsedRows()
    for event in events:
        if not isinstance(event, Mapping):
            continue
        markets = event.get("markets")
        if isinstance(markets, list):
            batch = parse_rows(markets, event)
            parsed.markets.extend(batch.markets)
            parsed.errors.extend(batch.errors)
    return parsed


_PLACEHOLDER_TITLE = re.compile(
    r"^(person|candidate|player|team|option|other)\s+[a-z0-9]{1,2}$", re.I
)


def should_skip(market: MarketView) -> str | None:
    """Why a market must stay out of the universe even if listed, or ``None`` to keep it.

    Catches multi-outcome placeholders ("Person X" children that are inactive, unpriced or
    never deployed) and ``negRiskOther`` catch-all children (gamma-api.md, Multi-outcome events).
    Tradability itself (open, active, accepting orders, valid prices) is ``MarketView.is_tradable``.
    """
    if market.neg_risk_other:
        return "negRiskOther child"
    if not market.active:
        reason = "inactive"
    elif market.prices is None:
        reason = "no prices"
    elif not market.condition_id:
        reason = "not deployed (empty conditionId)"
    elif not market.question.strip():
        reason = "no question"
    else:
        return None
    title = (market.group_item_title or "").strip()
    return f"placeholder {title!r}: {reason}" if _PLACEHOLDER_TITLE.match(title) else reason


def derive_category(
    raw: Mapping[str, Any], event_title: str | None, tags: tuple[str, ...], question: str
) -> str | None:
    """Gamma's legacy ``category``, else one from the event's tags, else from title keywords.

    A legacy category that names one of the tag categories (``US-current-affairs``,
    ``Crypto``) becomes that category, so one topic is one name whichever field gave it; other
    legacy text is kept as Gamma wrote it. None when nothing names a category (the analyses
    count such a market as "other")."""
    legacy = _text(raw.get("category"))
    if legacy:
        return _TAG_CATEGORIES.get(legacy.replace("-", " ").strip().lower(), legacy)
    for label in tags:
        category = _TAG_CATEGORIES.get(label.strip().lower())
        if category:
            return category
    if raw.get("sportsMarketType") or raw.get("gameId"):
        return "Sports"
    for text in (event_title, question):
        if not text:
            continue
        for category, pattern in _TITLE_RULES:
            if pattern.search(text):
                return category
    return None


def parse_gamma_time(value: Any) -> datetime | None:
    """RFC 3339 (ms/µs, ``Z``), Postgres text (``2026-05-25 22:43:31+00``) or a bare date."""
    text = _text(value)
    if not text:
        return None
    try:
        if len(text) == 10:
            moment = ensure_utc(datetime.combine(date.fromisoformat(text), datetime.min.time()))
        else:
            moment = parse_timestamp(text)
    except (ValueError, OverflowError):
        return None
    return moment if 1970 <= moment.year <= 2200 else None


def to_decimal(value: Any) -> Decimal | None:
    """A finite Decimal from an int, a JSON decimal, a float (via its repr) or a string."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, Decimal):
            number = value
        elif isinstance(value, int | float | str):
            number = Decimal(str(value).strip())
        else:
            return None
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _market_id(value: Any) -> str:
    text = _id_text(value)
    if not text or not is_market_id(text):
        shown = optional_text(text, 40) if text else None
        raise MarketParseError(shown, f"missing or non-numeric id {value!r:.60}")
    return text


def _market_id_or_none(raw: Any) -> str | None:
    text = _id_text(raw.get("id")) if isinstance(raw, Mapping) else None
    return text if text and is_market_id(text) else None


def _event_id(value: Any) -> str | None:
    """An event id, kept only when it is one a market id could be (ASCII digits, <= 32)."""
    text = _id_text(value)
    return text if text and is_market_id(text) else None


def _identifier(text: str | None, limit: int) -> str | None:
    """A short machine value (condition id, status): kept whole or not at all, never cut."""
    if text is None or len(text) > limit or has_unstorable(text):
        return None
    return text


def _volume(market_id: str, raw: Mapping[str, Any], *keys: str) -> Decimal | None:
    number = _first_number(raw, *keys)
    if number is not None and not fits_digits(number):
        raise MarketParseError(market_id, f"{keys[0]} out of range: {number:.3e}")
    return number


def _id_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    return None


def _json_list(value: Any) -> list[Any] | None:
    """A JSON-encoded list (Gamma's usual shape) or an actual list; ``None`` when absent."""
    if value is None:
        return None
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        if not value.strip():
            return None
        decoded = json.loads(value, parse_float=Decimal)
        if isinstance(decoded, list):
            return decoded
    raise ValueError(f"expected a JSON list, got {value!r:.80}")


def _outcomes(market_id: str, value: Any) -> tuple[str, ...]:
    try:
        items = _json_list(value)
    except ValueError as exc:
        raise MarketParseError(market_id, f"unreadable outcomes: {exc}") from None
    if not items or len(items) < 2:
        raise MarketParseError(market_id, f"needs at least two outcomes, got {value!r:.80}")
    if not all(isinstance(item, str) and item.strip() for item in items):
        raise MarketParseError(market_id, f"outcome names must be non-empty strings: {items!r:.80}")
    names = tuple(item.strip() for item in items)
    for name in names:
        if len(name) > MAX_OUTCOME_LENGTH or has_unstorable(name):
            raise MarketParseError(market_id, f"unstorable outcome name {name!r:.60}")
    if len({name.lower() for name in names}) != len(names):
        raise MarketParseError(market_id, f"duplicate outcome names {list(names)!r}")
    return names


def _prices(market_id: str, value: Any, n_outcomes: int) -> tuple[Decimal, ...] | None:
    """Exact prices aligned with the outcomes; ``None`` when Gamma gave none (placeholders)."""
    try:
        items = _json_list(value)
    except ValueError as exc:
        raise MarketParseError(market_id, f"unreadable outcomePrices: {exc}") from None
    if not items:
        return None
    prices = tuple(to_decimal(item) for item in items)
    if len(prices) != n_outcomes:
        raise MarketParseError(market_id, f"{len(prices)} prices for {n_outcomes} outcomes")
    checked: list[Decimal] = []
    for price in prices:
        if price is None or not (ZERO <= price <= ONE):
            raise MarketParseError(market_id, f"price outside [0, 1] in {items!r:.80}")
        checked.append(price)
    return tuple(checked)


def _token_ids(market_id: str, value: Any) -> tuple[str, ...]:
    """CLOB token ids stay decimal strings (77-78 digits: never int64 or float)."""
    try:
        items = _json_list(value) or []
    except ValueError:
        logger.info("market %s: ignoring unreadable clobTokenIds", market_id)
        return ()
    return tuple(str(item) for item in items if isinstance(item, str | int))


def _tag_labels(event: Mapping[str, Any] | None) -> tuple[str, ...]:
    if not event or not isinstance(event.get("tags"), list):
        return ()
    labels = (_text(tag.get("label")) for tag in event["tags"] if isinstance(tag, Mapping))
    return tuple(label for label in labels if label)


def _first_number(raw: Mapping[str, Any], *keys: str) -> Decimal | None:
    for key in keys:
        number = to_decimal(raw.get(key))
        if number is not None:
            return number
    return None


def _first_time(raw: Mapping[str, Any], *keys: str) -> datetime | None:
    for key in keys:
        moment = parse_gamma_time(raw.get(key))
        if moment is not None:
            return moment
    return None


def _flag(value: Any, *, default: bool | None) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    return default


def _text(value: Any, *, strip: bool = True) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip() if strip else value
    return text if text.strip() else None
