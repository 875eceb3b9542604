"""Executable prices: pricing mode per cohort and universe, frozen books, fills recorded in
full, exit values, book marks and fee schedules. Cohorts and trades from before keep mode
gamma (the server default), so their numbers do not change.

Revision ID: 0004
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from arena.store.types import ExactDecimal, UTCDateTime

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None

GAMMA = sa.text("'gamma'")


def upgrade() -> None:
    # Plain ADD COLUMN (no batch copy): SQLite adds a column in place, so a database with
    # history upgrades without dropping and refilling tables its foreign keys point at.
    op.add_column("cohorts", sa.Column("pricing", sa.String(8), server_default=GAMMA, nullable=False))
    op.add_column("decision_universes", sa.Column("pricing", sa.String(8), server_default=GAMMA, nullable=False))
    op.add_column("markets", sa.Column("clob_token_ids", sa.JSON(), nullable=True))
    op.add_column("universe_markets", sa.Column("clob_token_ids", sa.JSON(), nullable=True))
    op.add_column("universe_markets", sa.Column("books", sa.JSON(), nullable=True))
    op.add_column("decisions", sa.Column("refusals", sa.JSON(), nullable=True))
    op.add_column("portfolio_snapshots", sa.Column("exit_value", ExactDecimal(18, 2), nullable=True))
    op.add_column("trades", sa.Column("pricing", sa.String(8), server_default=GAMMA, nullable=False))
    op.add_column("trades", sa.Column("requested_amount", ExactDecimal(18, 2), nullable=True))
    op.add_column("trades", sa.Column("requested_shares", ExactDecimal(24, 6), nullable=True))
    op.add_column("trades", sa.Column("fee", ExactDecimal(20, 10), nullable=True))
    op.add_column("trades", sa.Column("touch_price", ExactDecimal(14, 10), nullable=True))
    op.add_column("trades", sa.Column("mid_price", ExactDecimal(14, 10), nullable=True))
    op.add_column("trades", sa.Column("slippage_touch_bps", ExactDecimal(14, 2), nullable=True))
    op.add_column("trades", sa.Column("slippage_mid_bps", ExactDecimal(14, 2), nullable=True))
    op.add_column("trades", sa.Column("fill_ratio", ExactDecimal(14, 10), nullable=True))
    op.add_column("trades", sa.Column("book_hash", sa.String(64), nullable=True))
    op.add_column("trades", sa.Column("book_timestamp", sa.BigInteger(), nullable=True))
    op.add_column("trades", sa.Column("token_id", sa.String(100), nullable=True))
    op.add_column("trades", sa.Column("levels", sa.JSON(), nullable=True))
    op.create_table(
        "book_marks",
        sa.Column("token_id", sa.String(100), nullable=False),
        sa.Column("market_id", sa.String(32), nullable=False),
        sa.Column("mark", ExactDecimal(14, 10), nullable=False),
        sa.Column("best_bid", ExactDecimal(14, 10), nullable=True),
        sa.Column("best_ask", ExactDecimal(14, 10), nullable=True),
        sa.Column("book_hash", sa.String(64), nullable=False),
        sa.Column("book_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("observed_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["market_id"], ["markets.id"], name=op.f("fk_book_marks_market_id_markets")
        ),
        sa.PrimaryKeyConstraint("token_id", name=op.f("pk_book_marks")),
    )
    op.create_index(op.f("ix_book_marks_market_id"), "book_marks", ["market_id"])
    op.create_table(
        "market_fees",
        sa.Column("condition_id", sa.String(80), nullable=False),
        sa.Column("rate", ExactDecimal(14, 10), nullable=False),
        sa.Column("exponent", ExactDecimal(14, 10), nullable=False),
        sa.Column("fetched_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("condition_id", name=op.f("pk_market_fees")),
    )


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite 3.35+), for the same reason as the upgrade's ADD COLUMN.
    op.drop_table("market_fees")
    op.drop_index(op.f("ix_book_marks_market_id"), table_name="book_marks")
    op.drop_table("book_marks")
    for table, columns in (
        ("trades", ("levels", "token_id", "book_timestamp", "book_hash", "fill_ratio",
                    "slippage_mid_bps", "slippage_touch_bps", "mid_price", "touch_price", "fee",
                    "requested_shares", "requested_amount", "pricing")),
        ("portfolio_snapshots", ("exit_value",)),
        ("decisions", ("refusals",)),
        ("universe_markets", ("books", "clob_token_ids")),
        ("markets", ("clob_token_ids",)),
        ("decision_universes", ("pricing",)),
        ("cohorts", ("pricing",)),
    ):  # fmt: skip
        for column in columns:
            op.drop_column(table, column)
