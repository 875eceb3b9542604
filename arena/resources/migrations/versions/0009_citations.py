"""Web search: ``citations`` (the web sources an attempt's answer cites, one row each) and
``decision_attempts.search_cost_usd`` / ``search_note``.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from arena.store.types import ExactDecimal, UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("decision_attempts", sa.Column("search_cost_usd", ExactDecimal(20, 10)))
    op.add_column("decision_attempts", sa.Column("search_note", sa.String(200)))
    op.create_table(
        "citations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("title", sa.String(500)),
        sa.Column("content", sa.Text()),
        sa.Column("cited_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["decision_attempts.id"],
            name=op.f("fk_citations_attempt_id_decision_attempts"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_citations")),
        sa.UniqueConstraint("attempt_id", "position", name="uq_citations_attempt_position"),
    )


def downgrade() -> None:
    op.drop_table("citations")
    # Plain DROP COLUMN (SQLite 3.35+), as 0004 does.
    op.drop_column("decision_attempts", "search_note")
    op.drop_column("decision_attempts", "search_cost_usd")
