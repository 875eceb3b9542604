"""The storage contract on both backends: migrations match models, money stays exact,
timestamps stay UTC, and the unique constraints that carry the methodology hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped

from arena.store import schema
from arena.store.db import current_revision, upgrade
from arena.store.models import (
    Agent,
    Base,
    BrierScore,
    Cohort,
    Decision,
    Family,
    Market,
    PortfolioSnapshot,
    Position,
    Trade,
)
from tests.conftest import Database
from tests.helpers import python_prints

NOW = datetime(2026, 11, 22, 0, 5, tzinfo=UTC)


def test_migration_head_matches_models(db: Database) -> None:
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    assert current_revision(db.engine) is not None


def test_every_orm_class_types_exactly_its_tables_columns() -> None:
    """The ORM classes are mapped onto the Core tables of ``arena.store.schema``; their
    annotations (what mypy checks attribute use against) name every column once, and say
    ``| None`` exactly where the column is nullable."""
    import typing

    import arena.store.models as models

    mapped = {m.class_.__name__: m.class_ for m in Base.registry.mappers}
    assert {c.__table__.name for c in mapped.values()} == set(schema.metadata.tables)
    for name, cls in mapped.items():
        annotations = typing.get_type_hints(cls, vars(models))
        typed = {
            key: "None" in str(hint)
            for key, hint in annotations.items()
            if typing.get_origin(hint) is Mapped
        }
        columns = {c.key: c.nullable for c in cls.__table__.columns}
        assert typed == columns, name


def test_upgrade_is_idempotent(db: Database) -> None:
    before = current_revision(db.engine)
    upgrade(db.engine)
    assert current_revision(db.engine) == before


def test_upgrade_of_a_database_at_head_does_not_load_alembic(db: Database) -> None:
    """Every command migrates first; at head (every start but the first) that is one query,
    and Alembic's 0.1 s of imports stay out of the process."""
    code = (
        "import sys; from arena.store.db import make_engine, upgrade; "
        f"upgrade(make_engine({db.url!r})); "
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'alembic'))"
    )
    assert python_prints(code) == ["[]"]


def test_sqlite_pragmas(sqlite_db: Database) -> None:
    with sqlite_db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def _seed(db: Database) -> tuple[int, int]:
    with db.factory() as session, session.begin():
        session.add(
            Family(
                id="f",
                kind="baseline",
                display_name="F",
                provider="",
                first_seen_at=NOW,
                updated_at=NOW,
            )
        )
        cohort = Cohort(
            week_start=NOW.replace(minute=0),
            created_at=NOW,
            methodology_version="v1",
            prompt_version="v1",
            starting_balance=Decimal("10000"),
        )
        session.add(cohort)
        session.flush()
        agent = Agent(
            cohort_id=cohort.id,
            family_id="f",
            kind="baseline",
            display_name="F",
            prompt_version="v1",
            methodology_version="v1",
            starting_balance=Decimal("10000"),
            cash=Decimal("10000"),
            created_at=NOW,
        )
        session.add(agent)
        session.add(
            Market(
                id="559651",
                question="Q?",
                outcomes=["Yes", "No"],
                prices=["0.0245", "0.9755"],
                yes_price=Decimal("0.0245"),
                first_seen_at=NOW,
                updated_at=NOW,
            )
        )
        session.flush()
        return cohort.id, agent.id


def test_money_and_time_round_trip_exactly(db: Database) -> None:
    cohort_id, agent_id = _seed(db)
    tricky = Decimal("1234567890123456.78")
    shares = Decimal("20408.163265")
    other_zone = datetime(2026, 11, 22, 5, 5, tzinfo=timezone(timedelta(hours=5)))
    with db.factory() as session, session.begin():
        session.add(
            Position(
                agent_id=agent_id,
                cohort_id=cohort_id,
                market_id="559651",
                side="YES",
                shares=shares,
                cost_basis=tricky,
                opened_at=other_zone,
                updated_at=NOW,
            )
        )
    with db.factory() as session:
        position = session.query(Position).one()
        assert position.cost_basis == tricky and isinstance(position.cost_basis, Decimal)
        assert position.shares == shares
        assert position.opened_at == NOW and position.opened_at.tzinfo is not None
        assert position.opened_at.utcoffset() == timedelta(0)
        market = session.get(Market, "559651")
        assert market is not None and market.yes_price == Decimal("0.0245")


def test_naive_datetimes_are_refused(db: Database) -> None:
    _seed(db)
    with db.factory() as session:
        session.add(
            Family(
                id="g",
                kind="baseline",
                display_name="G",
                provider="",
                first_seen_at=datetime(2026, 1, 1),
                updated_at=NOW,
            )
        )
        with pytest.raises(Exception, match="naive datetime"):
            session.commit()


def test_one_cohort_per_week_start(db: Database) -> None:
    _seed(db)
    with pytest.raises(IntegrityError), db.factory() as session, session.begin():
        session.add(
            Cohort(
                week_start=NOW.replace(minute=0),
                created_at=NOW,
                methodology_version="v1",
                prompt_version="v1",
                starting_balance=Decimal("10000"),
            )
        )


def _position(cohort_id: int, agent_id: int, status: str = "OPEN") -> Position:
    return Position(
        agent_id=agent_id,
        cohort_id=cohort_id,
        market_id="559651",
        side="YES",
        shares=Decimal(1),
        cost_basis=Decimal(1),
        status=status,
        opened_at=NOW,
        updated_at=NOW,
    )


def test_one_open_position_per_agent_market_side(db: Database) -> None:
    cohort_id, agent_id = _seed(db)
    with db.factory() as session, session.begin():
        session.add(_position(cohort_id, agent_id))
        session.add(_position(cohort_id, agent_id, "CLOSED"))
        session.add(_position(cohort_id, agent_id, "SETTLED"))
    with pytest.raises(IntegrityError), db.factory() as session, session.begin():
        session.add(_position(cohort_id, agent_id))


def test_one_decision_per_agent_week_one_snapshot_per_slot_one_brier_per_trade(
    db: Database,
) -> None:
    cohort_id, agent_id = _seed(db)

    def decision() -> Decision:
        return Decision(
            agent_id=agent_id,
            cohort_id=cohort_id,
            decision_week=1,
            status="claimed",
            prompt_version="v1",
            methodology_version="v1",
            created_at=NOW,
            updated_at=NOW,
        )

    def snapshot() -> PortfolioSnapshot:
        zero = Decimal(0)
        return PortfolioSnapshot(
            agent_id=agent_id,
            cohort_id=cohort_id,
            taken_at=NOW,
            cash=zero,
            positions_value=zero,
            total_value=zero,
            pnl=zero,
            pnl_pct=zero,
            realized_pnl=zero,
            unrealized_pnl=zero,
            resolved_bets=0,
            open_positions=0,
        )

    with db.factory() as session, session.begin():
        first = decision()
        session.add(first)
        session.add(snapshot())
        position = _position(cohort_id, agent_id)
        session.add(position)
        session.flush()
        trade = Trade(
            decision_id=first.id,
            agent_id=agent_id,
            cohort_id=cohort_id,
            position_id=position.id,
            market_id="559651",
            side="YES",
            trade_type="BUY",
            amount=Decimal(50),
            shares=Decimal(100),
            price=Decimal("0.5"),
            cash_after=Decimal(9950),
            executed_at=NOW,
        )
        session.add(trade)
        session.flush()
        trade_id = trade.id

    def brier() -> BrierScore:
        return BrierScore(
            trade_id=trade_id,
            agent_id=agent_id,
            cohort_id=cohort_id,
            family_id="f",
            market_id="559651",
            side="YES",
            implied_confidence=Decimal("0.02"),
            price_paid=Decimal("0.5"),
            won=True,
            brier=Decimal("0.9604"),
            market_brier=Decimal("0.25"),
            scored_at=NOW,
        )

    with db.factory() as session, session.begin():
        session.add(brier())
    for make in (decision, snapshot, brier):
        with pytest.raises(IntegrityError), db.factory() as session, session.begin():
            session.add(make())


def test_foreign_keys_enforced(db: Database) -> None:
    with pytest.raises(IntegrityError), db.factory() as session, session.begin():
        session.execute(
            text(
                "INSERT INTO agents (cohort_id, family_id, kind, display_name, provider, "
                "prompt_version, methodology_version, starting_balance, cash, realized_pnl, "
                "created_at) VALUES (999, 'nope', 'x', 'x', '', 'v1', 'v1', '1', '1', '0', "
                "'2026-01-01 00:00:00')"
            )
        )


def test_schema_revision_is_the_head_of_the_shipped_migrations() -> None:
    """Read-only commands check the schema against SCHEMA_REVISION without loading Alembic."""
    from arena.store.db import SCHEMA_REVISION, migrations_head

    assert migrations_head() == SCHEMA_REVISION
