"""Render the decision prompts from versioned templates (methodology: What the model sees).

The templates (``arena/resources/prompts/<version>/{system,user,repair}.txt``, jinja2, read by
:mod:`arena.prompts` and handed in as :class:`PromptTemplates`) own the wording and the layout;
this module reads no file and owns the *values*: it orders markets and positions deterministically,
formats numbers, and sanitises every piece of market text before it reaches a template.

MarketView text (questions, categories, outcome names) comes from a public website and is untrusted:
control and format characters are removed, whitespace collapsed, length bounded, the table's
column separator ``|`` replaced, and the block delimiters (``<<<`` / ``>>>``) neutralised, so a
market can neither break out of its table row nor forge the end of a data block.

Outcome names are shown in sanitised form; :func:`display_outcome` is the single definition, and
decision validation accepts a side written either way.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

from arena.domain.book import Pricing, Touch
from arena.domain.ledger import MONEY, ONE, ZERO, to_money
from arena.domain.markets import MarketView
from arena.domain.states import Methodology
from arena.domain.valuation import position_value
from arena.errors import ConfigError

PROMPT_VERSIONS: dict[tuple[str, str], str] = {
    (Methodology.V1, Pricing.GAMMA): "v1",
    (Methodology.V2, Pricing.GAMMA): "v2",
    (Methodology.V1, Pricing.BOOK): "v1-book",
    (Methodology.V2, Pricing.BOOK): "v2-book",
}
"""The current prompt version for each methodology version and pricing mode (mode book shows
each side's bid and ask instead of one price)."""

TEMPLATE_NAMES = ("system.txt", "user.txt", "repair.txt")
QUESTION_LIMIT = 300
CATEGORY_LIMIT = 60
OUTCOME_LIMIT = 60
ID_LIMIT = 80
REPAIR_ECHO_LIMIT = 20_000
"""The previous answer is echoed back to the model at most this long (characters)."""

_DROPPED_CATEGORIES = {"Cf", "Cs", "Co"}  # format (zero-width, bidi), surrogate, private use
_WHITESPACE = re.compile(r"\s+")
_ANGLES = re.compile(r"<{2,}|>{2,}")
PRICE_STEP = Decimal("0.0001")
SHARES_STEP = Decimal("0.01")


@dataclass(frozen=True)
class PositionView:
    """One open position as the prompt shows it.

    ``current_price`` is the *side-correct* current price (NO = 1 - YES price), the last valid
    mark, or ``None`` when there never was one. ``cost_basis`` defaults to shares x average
    entry price when the caller does not pass the exact stored figure.
    """

    position_id: str
    market: MarketView
    side: str
    shares: Decimal
    avg_entry_price: Decimal
    current_price: Decimal | None
    cost_basis: Decimal | None = None

    @property
    def basis(self) -> Decimal:
        if self.cost_basis is not None:
            return self.cost_basis
        return to_money(self.shares * self.avg_entry_price)

    @property
    def value(self) -> Decimal | None:
        """Marked value ``shares x current side price`` to the cent."""
        if self.current_price is None:
            return None
        return position_value(self.shares, self.basis, self.current_price)

    @property
    def unrealized_pnl(self) -> Decimal | None:
        value = self.value
        return None if value is None else value - self.basis


@dataclass(frozen=True)
class PromptContext:
    """Everything one agent's decision prompt is rendered from (and baselines decide from).

    ``markets`` is the list of new opportunities (the frozen universe); markets held only in
    positions appear in ``positions``. ``panel`` is the v2 forecast panel. ``cohort_id`` and
    ``agent_id`` are never shown to the model: they seed the random baseline. ``decision_id``
    and ``pricing`` (the cohort's pricing mode) are not in the prompt either: an outside
    agent's request carries them.
    """

    now: datetime
    decision_week: int
    cash: Decimal
    max_bet: Decimal
    min_bet: Decimal
    positions: Sequence[PositionView] = ()
    markets: Sequence[MarketView] = ()
    methodology: Methodology = Methodology.V1
    panel: Sequence[MarketView] = ()
    max_bet_fraction: Decimal = Decimal("0.25")
    starting_balance: Decimal = Decimal(10000)
    cohort_id: str = ""
    agent_id: str = ""
    max_slippage: Decimal = Decimal("0.05")  # mode book: how far past the touch a fill may go
    decision_id: str = ""
    pricing: str = Pricing.GAMMA


def prompt_version_for(methodology: str, pricing: str = "gamma") -> str:
    """The current prompt version for a methodology version and pricing mode."""
    try:
        return PROMPT_VERSIONS[(methodology, pricing)]
    except KeyError:
        raise ConfigError(
            f"methodology: unknown version {methodology!r} with pricing {pricing!r}"
        ) from None


# --- ordering ---------------------------------------------------------------------------------


def ordered_markets(markets: Iterable[MarketView]) -> list[MarketView]:
    """Volume descending (missing volume last), then id: the order every agent sees."""
    return sorted(markets, key=lambda m: (-(m.volume or ZERO), _id_key(m.id)))


def ordered_positions(positions: Iterable[PositionView]) -> list[PositionView]:
    """By market id, then side, then position id."""
    return sorted(positions, key=lambda p: (_id_key(p.market.id), p.side, _id_key(p.position_id)))


def _id_key(value: str) -> tuple[int, str]:
    """Digit-string ids in numeric order, others after them, then text order."""
    return (len(value), value) if value.isdigit() else (1 << 30, value)


# --- sanitising -------------------------------------------------------------------------------


def clean_text(value: object, limit: int) -> str:
    """Untrusted text as one bounded, delimiter-free line (see module docstring)."""
    if value is None:
        return ""
    text = unicodedata.normalize("NFKC", str(value))
    text = "".join(_clean_char(ch) for ch in text)
    text = _ANGLES.sub(lambda m: m.group(0)[0], text)
    text = _WHITESPACE.sub(" ", text.replace("|", "/")).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _clean_char(char: str) -> str:
    """Controls become spaces (then collapse); invisible format characters vanish."""
    category = unicodedata.category(char)
    if category == "Cc":
        return " "
    return "" if category in _DROPPED_CATEGORIES else char


def display_outcome(name: str) -> str:
    """An outcome name as the prompt shows it (``;`` and ``=`` separate prices in a row)."""
    return clean_text(name, OUTCOME_LIMIT).replace(";", ",").replace("=", "-")


def display_side(market: MarketView, side: str) -> str:
    return side if market.is_binary else display_outcome(side)


# --- formatting -------------------------------------------------------------------------------


def fmt_price(price: Decimal) -> str:
    """A price as stored, without trailing zeros (0.62, 0.0015)."""
    text = f"{price.normalize():f}"
    return text if "." not in text else text.rstrip("0").rstrip(".")


def fmt_money(amount: Decimal) -> str:
    return f"{amount.quantize(MONEY, rounding=ROUND_HALF_EVEN):,.2f}"


def fmt_signed_money(amount: Decimal) -> str:
    return ("+" if amount >= 0 else "-") + fmt_money(abs(amount))


def fmt_volume(volume: Decimal | None) -> str:
    """Three significant figures with K/M/B (the model needs the scale, not the cents)."""
    if volume is None:
        return "-"
    for threshold, suffix in ((10**9, "B"), (10**6, "M"), (10**3, "K")):
        if abs(volume) >= threshold:
            scaled = volume / threshold
            step = Decimal("0.01") if scaled < 10 else Decimal("0.1") if scaled < 100 else ONE
            return f"{scaled.quantize(step, rounding=ROUND_HALF_EVEN):f}{suffix}"
    return f"{volume.quantize(ONE, rounding=ROUND_HALF_EVEN):f}"


def fmt_prices(market: MarketView) -> str:
    """``YES=0.62; NO=0.38`` for binary markets, ``Name=p; ...`` for named outcomes; in mode
    book each side's frozen ``bid/ask`` (``YES=0.61/0.62; NO=0.38/0.39``, ``-`` for an empty
    side)."""
    if market.books:
        sides = ("YES", "NO") if market.is_binary else market.outcomes
        return "; ".join(
            f"{display_side(market, side)}={_fmt_touch(market.side_touch(side))}" for side in sides
        )
    if market.prices is None:
        return "-"
    if market.is_binary and market.yes_price is not None:
        p_yes = market.yes_price
        return f"YES={fmt_price(p_yes)}; NO={fmt_price(1 - p_yes)}"
    return "; ".join(
        f"{display_outcome(o)}={fmt_price(p)}"
        for o, p in zip(market.outcomes, market.prices, strict=True)
    )


def _fmt_touch(touch: Touch) -> str:
    bid = "-" if touch.best_bid is None else fmt_price(touch.best_bid)
    ask = "-" if touch.best_ask is None else fmt_price(touch.best_ask)
    return f"{bid}/{ask}"


def fmt_date(value: datetime | None) -> str:
    return "-" if value is None else value.astimezone(UTC).date().isoformat()


def prompt_market(market: MarketView) -> dict[str, str]:
    """One market's line of the prompt. The universe's markets are the same for every agent
    of a decision run (replicates, families), so each line is formatted once
    (:func:`_market_line`, keyed by the frozen market's value)."""
    return dict(_market_line(market))


@functools.lru_cache(maxsize=4096)
def _market_line(market: MarketView) -> dict[str, str]:
    category = market.category or (market.tags[0] if market.tags else None)
    return {
        "id": clean_text(market.id, ID_LIMIT),
        "question": clean_text(market.question, QUESTION_LIMIT),
        "category": clean_text(category, CATEGORY_LIMIT) or "-",
        "prices": fmt_prices(market),
        "volume": fmt_volume(market.volume),
        "closes": fmt_date(market.end_date),
    }


def position_row(position: PositionView) -> dict[str, str]:
    value, pnl, price = position.value, position.unrealized_pnl, position.current_price
    return {
        "position_id": clean_text(position.position_id, ID_LIMIT),
        "market_id": clean_text(position.market.id, ID_LIMIT),
        "question": clean_text(position.market.question, QUESTION_LIMIT),
        "side": display_side(position.market, position.side),
        "shares": f"{position.shares.quantize(SHARES_STEP, rounding=ROUND_HALF_EVEN):f}",
        "avg_entry_price": fmt_price(position.avg_entry_price.quantize(PRICE_STEP)),
        "current_price": "n/a" if price is None else fmt_price(price),
        "cost_basis": fmt_money(position.basis),
        "value": "n/a" if value is None else fmt_money(value),
        "unrealized_pnl": "n/a" if pnl is None else fmt_signed_money(pnl),
    }


def panel_row(market: MarketView) -> dict[str, str]:
    if market.is_binary:
        wanted = "probability of YES"
    else:
        wanted = "probabilities of: " + "; ".join(display_outcome(o) for o in market.outcomes)
    return {
        "id": clean_text(market.id, ID_LIMIT),
        "question": clean_text(market.question, QUESTION_LIMIT),
        "forecast": wanted,
    }


def template_values(ctx: PromptContext) -> dict[str, Any]:
    """The formatted values every template may use."""
    now = ctx.now.astimezone(UTC)
    percent = (ctx.max_bet_fraction * 100).normalize()
    return {
        "methodology": ctx.methodology,
        "now": now.strftime("%Y-%m-%d %H:%M"),
        "weekday": now.strftime("%A"),
        "decision_week": ctx.decision_week,
        "cash": fmt_money(ctx.cash),
        "max_bet": fmt_money(ctx.max_bet),
        "min_bet": fmt_money(ctx.min_bet),
        "max_bet_percent": f"{percent:f}",
        "starting_balance": fmt_money(ctx.starting_balance),
        "max_slippage": fmt_price(ctx.max_slippage),
        "positions": [position_row(p) for p in ordered_positions(ctx.positions)],
        "markets": [prompt_market(m) for m in ordered_markets(ctx.markets)],
        "panel": [panel_row(m) for m in ordered_markets(ctx.panel)],
    }


# --- templates --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptTemplates:
    """One prompt version's template sources (jinja2), handed in by the caller
    (:func:`arena.prompts.load_templates` reads them); rendering reads no file."""

    version: str
    system: str
    user: str
    repair: str

    @property
    def fingerprint(self) -> str:
        """sha256 of the templates, to detect an edit made without a new version."""
        digest = hashlib.sha256()
        for name, source in zip(TEMPLATE_NAMES, (self.system, self.user, self.repair), strict=True):
            digest.update(name.encode())
            digest.update(source.encode("utf-8"))
        return digest.hexdigest()


@functools.lru_cache(maxsize=64)
def _compiled(source: str) -> jinja2.Template:
    import jinja2  # loads when a prompt is rendered, not with every job that names a version

    environment = jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    return environment.from_string(source)


def render_messages(ctx: PromptContext, templates: PromptTemplates) -> list[dict[str, str]]:
    """The system and user chat messages of one decision (OpenAI message format)."""
    values = template_values(ctx)
    system = _compiled(templates.system).render(values).strip()
    user = _compiled(templates.user).render(values).strip()
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def render_repair(
    error: str, previous_content: str | None, templates: PromptTemplates
) -> list[dict[str, str]]:
    """Messages to append for a repair retry: the previous answer, then the exact error.

    An empty previous answer is not echoed (some providers refuse empty assistant messages).
    """
    previous = (previous_content or "").strip()
    if len(previous) > REPAIR_ECHO_LIMIT:
        previous = previous[:REPAIR_ECHO_LIMIT] + "\n[... answer cut here ...]"
    text = _compiled(templates.repair).render(error=error.strip(), empty=not previous).strip()
    messages = [{"role": "assistant", "content": previous}] if previous else []
    return [*messages, {"role": "user", "content": text}]
