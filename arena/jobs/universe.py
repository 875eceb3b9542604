"""The frozen decision universe: the market set and prices every agent of a run sees.

A universe is written once and never changed. Runs of the same week reuse the newest universe
of the week while it is fresh (frozen at most ``max_price_age_minutes`` before), so every agent
of a run, whichever process decides it, sees and trades at the same prices; a decision prompted
later (a retry on Thursday, a late catch-up) gets a universe frozen for it then, so no model is
ever shown stale prices (methodology: "Fresh prices, open markets only"). A universe with fewer
tradable markets than ``benchmark.universe_floor`` is refused (:class:`UniverseUnavailable`).
It holds the top-N open, tradable markets by volume (ranked) plus, as ``held_only``, every
market held in an open position of the cohorts being decided (for valuation and SELL, not
offered for new bets).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import week_start
from arena.config import V2, Settings
from arena.domain.book import OrderBook, Touch
from arena.domain.markets import MarketView, stored_prices, valid_prices
from arena.domain.states import Job, MarketStatus
from arena.errors import ClobError, UniverseUnavailable
from arena.jobs.books import fee_schedules, record_hash_mismatches, record_outage, store_marks
from arena.record.chain import seal_universe
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import DecisionUniverse, Market, UniverseMarket
from arena.store.queries import held_market_ids
from arena.store.upsert import insert_ignore

if TYPE_CHECKING:
    from arena.domain.book import FeeSchedule
    from arena.sources.clob import BookBatch, BookSource, FeeBatch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FrozenUniverse:
    id: int
    frozen_at: datetime
    ranked: list[MarketView]  # new opportunities, by rank
    by_id: dict[str, MarketView]  # every market of the universe, held-only ones included
    panel: list[MarketView] = field(default_factory=list)  # methodology v2 forecast panel, by rank
    pricing: str = "gamma"  # "book" when each market's touch was frozen with it

    def stale(self, now: datetime, max_age_minutes: int) -> bool:
        """Whether its prices are too old to show a model at ``now``."""
        return now - self.frozen_at > timedelta(minutes=max_age_minutes)


def fresh_universe_id(
    session: Session, slot: datetime, now: datetime, max_age_minutes: int
) -> int | None:
    """The newest universe of the week starting ``slot`` still fresh at ``now``, if any."""
    return session.execute(
        select(DecisionUniverse.id)
        .where(
            DecisionUniverse.run_slot == slot,
            DecisionUniverse.frozen_at <= now,
            DecisionUniverse.frozen_at >= now - timedelta(minutes=max_age_minutes),
        )
        .order_by(DecisionUniverse.frozen_at.desc(), DecisionUniverse.id.desc())
        .limit(1)
    ).scalar_one_or_none()


def market_from_row(row: Market) -> MarketView:
    return MarketView(
        id=row.id,
        question=row.question,
        outcomes=tuple(row.outcomes),
        prices=stored_prices(row.prices),
        slug=row.slug,
        category=row.category,
        volume=row.volume,
        volume_24h=row.volume_24h,
        liquidity=row.liquidity,
        end_date=row.end_date,
        closed_time=row.closed_time,
        active=row.active,
        closed=row.closed,
        accepting_orders=row.accepting_orders,
        uma_resolution_status=row.uma_resolution_status,
        condition_id=row.condition_id,
        clob_token_ids=tuple(str(t) for t in row.clob_token_ids or ()),
        neg_risk=row.neg_risk,
        neg_risk_market_id=row.neg_risk_market_id,
        group_item_title=row.group_item_title,
        event_id=row.event_id,
        event_slug=row.event_slug,
        event_title=row.event_title,
    )


def freeze_universe(
    factory: sessionmaker[Session],
    settings: Settings,
    now: datetime,
    cohort_ids: Sequence[int],
    listed: Sequence[str] | None = None,
    books: BookSource | None = None,
) -> int:
    """Freeze (or reuse a fresh) universe for a decision at ``now``; returns its id.

    Raises :class:`UniverseUnavailable`, writing nothing, when fewer than
    ``benchmark.universe_floor`` tradable markets can be offered.

    ``listed`` is the ranking Gamma just returned (the market sync's ``top_ids``): when given,
    only those markets can be offered, so a market Gamma no longer lists (or no longer knows)
    is never frozen from a stale stored row. Without it (``arena decide`` on its own), the
    stored open markets are ranked by volume.

    ``books`` (mode book) is the CLOB: the universe then keeps only markets with a book for
    every outcome token (``POST /books``, 500 tokens a request) and freezes each token's touch
    and hash; an unreachable CLOB raises :class:`UniverseUnavailable` (never a fallback to
    Gamma's prices). The fee schedules of the panel's markets are then fetched too
    (:func:`store_panel_fees`), before this returns; or, when ``books`` is the decision run's
    :class:`BooksAhead`, as it says.
    """
    slot = week_start(now)
    size = settings.benchmark.universe_size
    max_age = settings.benchmark.max_price_age_minutes
    with factory() as session:
        existing = fresh_universe_id(session, slot, now, max_age)
        if existing is not None:
            return existing
        candidates = _tradable(session, listed, None if books is not None else size)
        held_ids = set(session.scalars(held_market_ids(list(cohort_ids))))
        held = list(session.scalars(select(Market).where(Market.id.in_(held_ids))))
        session.expunge_all()
    touches: dict[str, list[dict[str, str | int | None]]] = {}
    if books is not None:
        candidates, touches = _booked(books, candidates, held, size, factory, now)
    ranked = candidates[:size]
    ranked.sort(key=lambda r: (-(r.volume or Decimal(0)), r.id))
    floor = settings.benchmark.universe_floor
    if len(ranked) < floor:
        raise UniverseUnavailable(
            f"only {len(ranked)} tradable markets{' with an order book' if books else ''} "
            f"for a universe of {size} (at least {floor} needed); no decision stored"
        )
    chosen = {row.id for row in ranked}
    held = [row for row in held if row.id not in chosen]
    with transaction(factory) as session:
        inserted = insert_ignore(
            session,
            schema.decision_universes,
            {
                "run_slot": slot,
                "frozen_at": now,
                "universe_size": size,
                "market_count": len(ranked) + len(held),
                "pricing": "book" if books is not None else "gamma",
            },
            conflict=["run_slot", "frozen_at"],
        )
        universe_id = session.execute(
            select(DecisionUniverse.id).where(
                DecisionUniverse.run_slot == slot, DecisionUniverse.frozen_at == now
            )
        ).scalar_one()
        if not inserted:
            return universe_id
        panel = {m.id for m in panel_markets([market_from_row(r) for r in ranked], settings.v2)}
        rows = [
            _universe_row(universe_id, row, rank, False, row.id in panel, touches.get(row.id))
            for rank, row in enumerate(ranked, start=1)
        ]
        rows += [
            _universe_row(universe_id, row, None, True, False, touches.get(row.id))
            for row in held
            if row.prices is not None
        ]
        if rows:
            session.execute(insert(UniverseMarket), rows)
        seal_universe(session, universe_id)  # its hash, for the records of its decisions
    if books is not None:
        fees = functools.partial(
            store_panel_fees, factory, books, [row for row in ranked if row.id in panel], now
        )
        if isinstance(books, BooksAhead):
            books.after_freeze(fees)
        else:
            fees()
    return universe_id


def store_panel_fees(
    factory: sessionmaker[Session], source: BookSource, panel: Sequence[Market], now: datetime
) -> None:
    """Mode book: fetch (and store) the fee schedule of every panel market with the universe,
    so the after-fee return against the odds is known for every panel question, not only for
    the traded ones (methodology, "Skill against the market"). Best effort, through the
    schedules' cache (:func:`~arena.jobs.books.fee_schedules`): a schedule the CLOB does not
    give is logged as a CLOB outage and stays unknown (never "no fee"); the freeze goes on."""
    wanted = [row.condition_id for row in panel if row.condition_id]
    try:
        known = fee_schedules(factory, source, wanted, now)
    except (ClobError, ValueError) as exc:  # ValueError: a stored id the client refuses
        record_outage(factory, now, Job.DECISION_RUN, f"fee schedules of the panel: {exc}")
        return
    missing = [cid for cid in wanted if cid not in known]
    if missing:
        record_outage(
            factory,
            now,
            Job.DECISION_RUN,
            f"fee schedules of the panel: none for {len(missing)} of {len(wanted)} panel "
            f"markets (condition {missing[0]})",
        )


def _tradable(session: Session, listed: Sequence[str] | None, limit: int | None) -> list[Market]:
    """Open, tradable stored markets by volume (only those Gamma just listed, when given)."""
    query = select(Market).where(
        Market.closed.is_(False), Market.active.is_(True), Market.status == MarketStatus.OPEN
    )
    if listed is not None:
        query = query.where(Market.id.in_(list(listed)))
    ranked: list[Market] = []
    for row in session.scalars(query.order_by(Market.volume.desc().nulls_last(), Market.id)):
        if market_from_row(row).is_tradable:
            ranked.append(row)
            if limit is not None and len(ranked) >= limit:
                break
    return ranked


def _booked(
    source: BookSource,
    candidates: list[Market],
    held: list[Market],
    size: int,
    factory: sessionmaker[Session],
    now: datetime,
) -> tuple[list[Market], dict[str, list[dict[str, str | int | None]]]]:
    """Keep the candidates (in order, up to ``size``) whose every outcome token has a usable
    book (the client leaves out an unusable one: unreadable, unstorable, crossed or locked),
    fetching books a batch of candidates at a time; freeze the touch of each kept market's
    tokens and of the held markets' tokens. Stores the marks of every book fetched and
    counts the books whose served hash differs from the computed one."""
    kept: list[Market] = []
    touches: dict[str, list[dict[str, str | int | None]]] = {}
    fetched: list[tuple[str, OrderBook]] = []
    received: list[OrderBook] = []
    todo = [row for row in candidates if _tokens(row)]
    pending_held = [row for row in held if _tokens(row)]
    while (len(kept) < size and todo) or pending_held:
        batch, todo = todo[: size - len(kept)], todo[size - len(kept) :]
        batch_ids = {row.id for row in batch}
        batch_rows = batch + [row for row in pending_held if row.id not in batch_ids]
        pending_held = []
        tokens = [token for row in batch_rows for token in _tokens(row)]
        try:
            answer = source.books(tokens)
        except ClobError as exc:
            record_outage(factory, now, Job.DECISION_RUN, str(exc))
            raise UniverseUnavailable(
                f"order books unavailable: {exc}; no decision stored"
            ) from exc
        received += answer.books.values()
        for row in batch_rows:
            row_books = [answer.books.get(token) for token in _tokens(row)]
            if any(book is None for book in row_books):
                continue
            complete = [book for book in row_books if book is not None]
            touches[row.id] = [Touch.of(book).to_json() for book in complete]
            fetched += [(row.id, book) for book in complete]
            if row.id in batch_ids:
                kept.append(row)
    with transaction(factory) as session:
        store_marks(session, fetched, now)
    record_hash_mismatches(factory, now, Job.DECISION_RUN, received)
    return kept, touches


def _tokens(row: Market | MarketView) -> list[str]:
    """The CLOB token ids of a market, aligned with its outcomes (none if unknown)."""
    tokens = [str(token) for token in row.clob_token_ids or []]
    return tokens if tokens and len(tokens) == len(row.outcomes) else []


def _universe_row(
    universe_id: int,
    row: Market,
    rank: int | None,
    held_only: bool,
    in_panel: bool,
    books: list[dict[str, str | int | None]] | None,
) -> dict[str, object]:
    return {
        "universe_id": universe_id,
        "market_id": row.id,
        "rank": rank,
        "held_only": held_only,
        "in_panel": in_panel,
        "question": row.question,
        "category": row.category,
        "outcomes": list(row.outcomes),
        "prices": list(row.prices or []),
        "yes_price": row.yes_price,
        "volume": row.volume,
        "end_date": row.end_date,
        "event_id": row.event_id,
        "books": books,
        "clob_token_ids": list(row.clob_token_ids or []) or None,
    }


def load_universe(session: Session, universe_id: int) -> FrozenUniverse:
    frozen_at, pricing = session.execute(
        select(DecisionUniverse.frozen_at, DecisionUniverse.pricing).where(
            DecisionUniverse.id == universe_id
        )
    ).one()
    rows = session.scalars(
        select(UniverseMarket)
        .where(UniverseMarket.universe_id == universe_id)
        .order_by(UniverseMarket.rank.asc().nulls_last(), UniverseMarket.market_id)
    )
    ranked: list[MarketView] = []
    by_id: dict[str, MarketView] = {}
    panel: list[MarketView] = []
    for row in rows:
        market = MarketView(
            id=row.market_id,
            question=row.question,
            outcomes=tuple(row.outcomes),
            prices=stored_prices(row.prices),
            category=row.category,
            volume=row.volume,
            end_date=row.end_date,
            event_id=row.event_id,
            clob_token_ids=tuple(str(t) for t in row.clob_token_ids or ()),
            books=tuple(Touch.from_json(raw) for raw in row.books or ()),
        )
        by_id[market.id] = market
        if not row.held_only:
            ranked.append(market)
        if row.in_panel:
            panel.append(market)
    return FrozenUniverse(universe_id, frozen_at, ranked, by_id, panel, pricing)


def panel_markets(ranked: Sequence[MarketView], v2: V2) -> list[MarketView]:
    """Methodology v2 forecast panel: the top-K ranked markets that are not near-certain
    (every outcome price within [panel_min_price, panel_max_price]). Frozen with the universe
    (``in_panel``), so every agent of the run forecasts the same markets."""
    panel: list[MarketView] = []
    for market in ranked:
        if not valid_prices(market.outcomes, market.prices) or market.prices is None:
            continue
        if all(v2.panel_min_price <= p <= v2.panel_max_price for p in market.prices):
            panel.append(market)
            if len(panel) >= v2.panel_size:
                break
    return panel


class BooksAhead:
    """The CLOB for one universe freeze, with the books of the listing Gamma just returned
    fetched ahead: :meth:`fetch` asks for them on a thread while the market sync stores the
    listing, and :meth:`books` answers the freeze from them, asking the CLOB only for tokens
    it did not ask ahead (the held markets'). The freeze then waits for the CLOB and the
    store at once instead of one after the other.

    The tokens asked ahead are those of the listing's first ``size`` tradable markets by
    volume, the ones the freeze ranks first. A token asked ahead that had no book is missing,
    as it would have been asked directly a moment later. A CLOB failure ahead is the freeze's
    failure (:class:`ClobError`, as a direct request would raise after the same retries); any
    other failure ahead is logged and the freeze asks the CLOB itself.

    ``later`` takes the fetch of the panel's fee schedules that follows the freeze
    (:meth:`after_freeze`): the decision run does it while a model call is in flight
    (:meth:`arena.jobs.decide.DecisionRun.defer`), as nothing a decision does needs them.
    Without it, they are fetched at once.
    """

    def __init__(
        self,
        source: BookSource,
        size: int,
        later: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        self._source = source
        self._size = size
        self._later = later
        self._asked: frozenset[str] = frozenset()
        self._ahead: Future[BookBatch] | None = None

    def fetch(self, listing: Sequence[MarketView]) -> None:
        """Start fetching the books of the listing's first ``size`` tradable markets."""
        tradable = sorted(
            (market for market in listing if market.is_tradable and _tokens(market)),
            key=lambda market: (-(market.volume or Decimal(0)), market.id),
        )[: self._size]
        tokens = [token for market in tradable for token in _tokens(market)]
        if not tokens:
            return
        self._asked = frozenset(tokens)
        pool = ThreadPoolExecutor(1, thread_name_prefix="arena-books")
        self._ahead = pool.submit(self._source.books, tokens)
        pool.shutdown(wait=False)  # the thread ends with the fetch

    def books(self, token_ids: Sequence[str]) -> BookBatch:
        from arena.sources.clob import BookBatch

        ahead = self._answer_ahead()
        if ahead is None:
            return self._source.books(token_ids)
        wanted = list(dict.fromkeys(token_ids))
        found = {token: ahead.books[token] for token in wanted if token in ahead.books}
        rest = [token for token in wanted if token not in self._asked]
        if rest:
            found.update(self._source.books(rest).books)
        return BookBatch(found, tuple(token for token in wanted if token not in found))

    def _answer_ahead(self) -> BookBatch | None:
        """The answer to the fetch ahead, once it has come (None: nothing was asked ahead, or
        asking failed for a reason other than the CLOB's)."""
        if self._ahead is None:
            return None
        try:
            return self._ahead.result()
        except ClobError:
            raise
        except Exception:
            log.exception("books fetched ahead of the freeze failed; asking the CLOB directly")
            self._ahead = None
            return None

    def after_freeze(self, fees: Callable[[], None]) -> None:
        """Fetch the panel's fee schedules: handed to ``later``, or now."""
        if self._later is None:
            fees()
        else:
            self._later(fees)

    def book(self, token_id: str) -> OrderBook:
        return self._source.book(token_id)

    def fee_schedule(self, condition_id: str) -> FeeSchedule:
        return self._source.fee_schedule(condition_id)

    def fee_schedules(self, condition_ids: Sequence[str]) -> FeeBatch:
        return self._source.fee_schedules(condition_ids)

    def close(self) -> None:
        """Wait for a fetch still running (the CLOB client itself is its owner's to close)."""
        if self._ahead is not None:
            self._ahead.exception()
