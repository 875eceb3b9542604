"""Snapshot job: value every agent of every unfinished cohort for one 10-minute slot.

Methodology, "Valuation and snapshots". Choices made here:

* **Mark**: a position is worth ``shares * side price`` at ``markets.prices``, which only ever
  holds the last *valid* prices (see :mod:`arena.jobs.prices`), so a closed-unsettled market or
  one whose fresh price is missing keeps its last valid mark, never 0 and never 0.5. A market
  that has never had a valid price is marked at the position's average entry price, i.e. its
  value is its cost basis (no gain, no loss); the report counts these positions.
* **Brier and resolved bets**: ``brier`` is the mean of the agent's ``brier_scores`` rows (NULL
  before the first), ``resolved_bets`` their number. VOID (50-50) and CANCELLED bets have no
  Brier row and are not counted: the count is the number of *scored* resolved bets, the
  denominator of the Brier mean and of the win rate.
* **Consistency and safety**: everything is read in one transaction (REPEATABLE READ on
  PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) with one query per table, whatever the number of
  agents or positions. The job writes only ``portfolio_snapshots`` (insert-or-nothing on
  ``(agent_id, taken_at)``, in a second short transaction), never ``agents`` or ``positions``,
  so it cannot overwrite what a concurrent SELL or settlement changed; rerunning a slot is a
  no-op.
* **Refresh**: with a ``source``, held markets are refreshed first. If Gamma fails, the
  snapshot is still taken on the last valid marks and the error is in the report.
* **Mode book** (methodology, "Executable prices", Marks): with ``books`` (the CLOB), the book
  of every token held by a mode-book cohort is fetched in batch first, a chunk of markets at
  a time, its mark stored and the exit proceeds of the chunk's positions summed per agent
  (:func:`arena.jobs.held_books.fetch_held_books`: no more than a chunk's books in memory); those
  positions are valued at their token's last valid mark (Gamma's mark only when the token
  never had one), and each mode-book agent's snapshot stores ``exit_value``: its cash plus
  the proceeds of selling every open position into the current bids, fees included. The
  proceeds count only when they were computed for exactly the positions the consistent read
  finds (same ids and shares, checked by a seal), so a trade between the two reads leaves
  that agent's ``exit_value`` unknown for the slot, never mixed. When the CLOB is
  unreachable the marks hold and ``exit_value`` is left empty (unknown), never guessed.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import Clock, iso_utc
from arena.config import Settings
from arena.domain.book import Pricing
from arena.domain.ledger import HUNDRED, ZERO
from arena.domain.markets import stored_prices
from arena.domain.states import CohortStatus, Job, PositionStatus
from arena.domain.valuation import position_mark, position_value
from arena.errors import ArenaError
from arena.jobs.held_books import HeldBooks, fetch_held_books, seal
from arena.jobs.prices import refresh_held_markets
from arena.jsonable import jsonable
from arena.slots import job_slot
from arena.sources.gamma import MarketSource
from arena.store import schema
from arena.store.db import transaction
from arena.store.models import (
    Agent,
    BookMark,
    BrierScore,
    Cohort,
    Market,
    Position,
)
from arena.store.queries import held_market_ids
from arena.store.upsert import dialect_insert

if TYPE_CHECKING:
    from arena.sources.clob import BookSource

log = logging.getLogger(__name__)

SCORE = Decimal("0.0000000001")  # the Price column's scale
PERCENT = Decimal("0.0001")
MAX_PERCENT = Decimal("9999.9999")  # pnl_pct is NUMERIC(14, 10); pnl itself is never clipped
STREAM_ROWS = 10_000  # positions fetched per batch


@dataclass(frozen=True)
class SnapshotReport:
    """What a snapshot did (a :class:`arena.jobs.report.JobReport`)."""

    taken_at: datetime
    agents: int  # agents valued
    written: int  # snapshots inserted (the rest already existed for this slot)
    positions: int  # open positions valued
    unpriced_positions: int  # valued at cost basis: their market never had a valid price
    refreshed_markets: int | None = None  # None: no refresh asked
    refresh_error: str | None = None
    books_fetched: int | None = None  # mode book: token books fetched (None: none asked)
    books_error: str | None = None

    def counts(self) -> dict[str, Any]:
        """The snapshot's figures."""
        figures = {
            "taken_at": self.taken_at,
            "agents": self.agents,
            "written": self.written,
            "positions": self.positions,
            "unpriced_positions": self.unpriced_positions,
            "refreshed_markets": self.refreshed_markets,
            "refresh_error": self.refresh_error,
            "books_fetched": self.books_fetched,
            "books_error": self.books_error,
        }
        return dict(jsonable(figures))

    def failure(self) -> None:
        """Never: a failed price refresh or book fetch is reported, and the snapshot values at
        the stored marks (methodology: a snapshot is never skipped)."""
        return None

    def summary(self) -> str:
        slot = iso_utc(self.taken_at)
        text = (
            f"snapshot {slot}: {self.written} written, {self.agents - self.written} already "
            f"there, {self.positions} open positions"
        )
        if self.unpriced_positions:
            text += f" ({self.unpriced_positions} never priced, valued at cost)"
        if self.refreshed_markets is not None:
            text += f", {self.refreshed_markets} markets refreshed"
        if self.refresh_error:
            text += f"; price refresh failed: {self.refresh_error}"
        if self.books_fetched is not None:
            text += f", {self.books_fetched} order books"
        if self.books_error:
            text += f"; order books unavailable: {self.books_error}"
        return text


def take_snapshots(
    factory: sessionmaker[Session],
    settings: Settings,
    clock: Clock,
    source: MarketSource | None = None,
    books: BookSource | None = None,
) -> SnapshotReport:
    """Write one portfolio snapshot per agent of every unfinished cohort for the current slot.

    The slot is the one the job started in (read before the price refresh, which may take long
    enough to reach the next one)."""
    now = clock.now()
    slot = job_slot(settings, Job.SNAPSHOT, now)
    refreshed: int | None = None
    refresh_error: str | None = None
    if source is not None:
        try:
            refreshed = refresh_held_markets(factory, source, clock)
        except ArenaError as exc:
            refresh_error = str(exc)
            log.warning("snapshot: price refresh failed, valuing at last marks: %s", exc)
    held = fetch_held_books(factory, books, now) if books is not None else None
    rows, positions, unpriced = value_agents(factory, now, slot, held)
    written = 0
    if rows:
        with transaction(factory) as session:
            written = insert_snapshots(session, rows)
    log.info(
        "snapshot %s: %d agents, %d written, %d open positions (%d at cost basis)",
        iso_utc(slot),
        len(rows),
        written,
        positions,
        unpriced,
    )
    return SnapshotReport(
        taken_at=slot,
        agents=len(rows),
        written=written,
        positions=positions,
        unpriced_positions=unpriced,
        refreshed_markets=refreshed,
        refresh_error=refresh_error,
        books_fetched=None if held is None else held.fetched,
        books_error=None if held is None else held.error,
    )


def value_agents(
    factory: sessionmaker[Session], now: datetime, slot: datetime, held: HeldBooks | None = None
) -> tuple[list[dict[str, Any]], int, int]:
    """Snapshot rows for ``slot``, read in one consistent transaction (no writes).

    Returns (rows, open positions valued, positions valued at cost basis). Positions are
    streamed and folded into per-agent sums as they arrive, so memory does not grow with them.
    """
    with factory() as session, session.begin():
        options: dict[str, Any] = {}
        if session.get_bind().dialect.name == "postgresql":
            options = {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
        # Core rows on the session's connection: no ORM row processing for 10^5 positions.
        conn = session.connection(execution_options=options)
        unfinished = (Cohort.status != CohortStatus.COMPLETED, Cohort.week_start <= now)
        agents = conn.execute(
            select(
                Agent.id,
                Agent.cohort_id,
                Agent.starting_balance,
                Agent.cash,
                Agent.realized_pnl,
                Cohort.pricing,
            )
            .join(Cohort, Cohort.id == Agent.cohort_id)
            .where(*unfinished)
            .order_by(Agent.id)
        ).all()
        if not agents:
            return [], 0, 0
        markets = {
            market_id: (outcomes, prices, tokens)
            for market_id, outcomes, prices, tokens in conn.execute(
                select(Market.id, Market.outcomes, Market.prices, Market.clob_token_ids).where(
                    Market.id.in_(held_market_ids())
                )
            )
        }
        briers = _brier_totals(conn, unfinished)
        token_marks = dict(
            conn.execute(
                select(BookMark.token_id, BookMark.mark).where(
                    BookMark.market_id.in_(held_market_ids())
                )
            ).all()
        )
        book = _Book(markets, token_marks, held)
        # one stream per pricing mode (a mode-book position is valued at its token's mark), so
        # no row carries its cohort's mode
        for mode in Pricing:
            positions = conn.execution_options(yield_per=STREAM_ROWS).execute(
                select(
                    Position.id,
                    Position.agent_id,
                    Position.market_id,
                    Position.side,
                    Position.shares,
                    Position.cost_basis,
                )
                .join(Cohort, Cohort.id == Position.cohort_id)
                .where(Position.status == PositionStatus.OPEN, Cohort.pricing == mode, *unfinished)
            )
            in_book = mode is Pricing.BOOK
            for position_id, agent_id, market_id, side, shares, cost_basis in positions:
                book.add(agent_id, market_id, side, shares, cost_basis, in_book)
                if in_book:
                    book.seal_exit(agent_id, position_id, market_id, side, shares)

    rows: list[dict[str, Any]] = []
    for agent_id, cohort_id, starting, cash, realized, pricing in agents:
        positions_value = book.value[agent_id]
        total = cash + positions_value
        pnl = total - starting
        scored, brier_sum = briers.get(agent_id, (0, ZERO))
        rows.append(
            {
                "agent_id": agent_id,
                "cohort_id": cohort_id,
                "taken_at": slot,
                "cash": cash,
                "positions_value": positions_value,
                "total_value": total,
                "pnl": pnl,
                "pnl_pct": _percent(agent_id, pnl, starting),
                "realized_pnl": realized,
                "unrealized_pnl": positions_value - book.basis[agent_id],
                "brier": (brier_sum / scored).quantize(SCORE, ROUND_HALF_EVEN) if scored else None,
                "resolved_bets": scored,
                "open_positions": book.count[agent_id],
                "exit_value": book.exit_value(agent_id, cash)
                if pricing == Pricing.BOOK and held is not None
                else None,
            }
        )
    return rows, book.positions, book.unpriced


class _Book:
    """Per-agent sums of marked value, open cost basis, position count and exit proceeds."""

    def __init__(
        self,
        markets: dict[str, tuple[list[str], list[Any] | None, list[Any] | None]],
        token_marks: dict[str, Decimal],
        held: HeldBooks | None,
    ) -> None:
        self.markets = markets
        self.token_marks = token_marks
        self.held = held
        self.marks: dict[tuple[str, str, bool], Decimal | None] = {}
        self.value: dict[int, Decimal] = defaultdict(Decimal)
        self.basis: dict[int, Decimal] = defaultdict(Decimal)
        self.count: dict[int, int] = defaultdict(int)
        self.exit_count: dict[int, int] = defaultdict(int)
        self.exit_seal: dict[int, int] = defaultdict(int)
        self.exit_unknown: set[int] = set()
        self.positions = 0
        self.unpriced = 0

    def add(
        self,
        agent_id: int,
        market_id: str,
        side: str,
        shares: Decimal,
        cost_basis: Decimal,
        book: bool = False,
    ) -> None:
        key = (market_id, side, book)
        if key not in self.marks:
            self.marks[key] = self._mark(market_id, side, book)
        mark = self.marks[key]
        self.unpriced += mark is None
        self.value[agent_id] += position_value(shares, cost_basis, mark)
        self.basis[agent_id] += cost_basis
        self.count[agent_id] += 1
        self.positions += 1

    def seal_exit(
        self, agent_id: int, position_id: int, market_id: str, side: str, shares: Decimal
    ) -> None:
        """Seal a mode-book position into the agent's exit check (see :meth:`exit_value`)."""
        if self.held is None:
            return
        if (market_id, side) not in self.held.tokens:
            self.exit_unknown.add(agent_id)  # no token to sell it on: its exit is unknown
        self.exit_count[agent_id] += 1
        self.exit_seal[agent_id] = seal(self.exit_seal[agent_id], position_id, shares)

    def exit_value(self, agent_id: int, cash: Decimal) -> Decimal | None:
        """Cash plus the proceeds computed chunk by chunk before this read
        (:func:`~arena.jobs.held_books.fetch_held_books`), when they were computed for exactly the
        positions read here; else unknown."""
        if self.held is None or agent_id in self.exit_unknown:
            return None
        return self.held.exit_value(
            agent_id, cash, self.exit_count[agent_id], self.exit_seal[agent_id]
        )

    def _mark(self, market_id: str, side: str, book: bool) -> Decimal | None:
        """Mode book: the token's last valid mark; else (or when it never had one) the side's
        price at the market's last valid Gamma mark."""
        outcomes, prices, tokens = self.markets.get(market_id, (None, None, None))
        return position_mark(outcomes, stored_prices(prices), tokens, self.token_marks, side, book)


def _percent(agent_id: int, pnl: Decimal, starting: Decimal) -> Decimal:
    """P/L in percent of the starting balance, to 1e-4, within what the column can hold."""
    percent = (pnl / starting * HUNDRED).quantize(PERCENT, ROUND_HALF_EVEN)
    if percent > MAX_PERCENT:
        log.warning(
            "agent %s: P/L %s%% exceeds the pnl_pct column; stored as %s",
            agent_id,
            percent,
            MAX_PERCENT,
        )
        return MAX_PERCENT
    return percent


def insert_snapshots(session: Session, rows: list[dict[str, Any]]) -> int:
    """Insert-or-nothing on ``(agent_id, taken_at)``; returns the number of rows inserted.

    One statement compiled once and executed for all rows (SQLAlchemy batches the VALUES and
    the RETURNING), instead of compiling a fresh multi-row VALUES per chunk.
    """
    table = schema.portfolio_snapshots
    insert = dialect_insert(session, table)
    statement = insert.on_conflict_do_nothing(index_elements=["agent_id", "taken_at"]).returning(
        table.c.id
    )
    return len(session.execute(statement, rows).all())


def _brier_totals(conn: Connection, unfinished: tuple[Any, ...]) -> dict[int, tuple[int, Decimal]]:
    """Per agent: (number of Brier rows, exact sum of their scores).

    PostgreSQL sums NUMERIC exactly in SQL; SQLite stores decimals as text (its SUM would go
    through floats), so there the rows are summed in Python. Either way: one query.
    """
    scope = BrierScore.cohort_id.in_(select(Cohort.id).where(*unfinished))
    totals: dict[int, tuple[int, Decimal]] = {}
    if conn.dialect.name == "postgresql":
        statement = (
            select(BrierScore.agent_id, func.count(), func.sum(BrierScore.brier))
            .where(scope)
            .group_by(BrierScore.agent_id)
        )
        for agent_id, scored, total in conn.execute(statement).all():
            totals[agent_id] = (int(scored), Decimal(total))
        return totals
    for agent_id, brier in conn.execute(
        select(BrierScore.agent_id, BrierScore.brier).where(scope)
    ).all():
        scored, total = totals.get(agent_id, (0, ZERO))
        totals[agent_id] = (scored + 1, total + brier)
    return totals
