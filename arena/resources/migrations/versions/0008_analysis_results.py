"""``analysis_results``: the latest full v2 analysis the daemon computed after a write
(:func:`arena.analytics.stored.refresh_analysis`), which the dashboard serves instead of computing
it inside a request. Operational state: neither exported nor recorded.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from arena.store.types import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analysis_results",
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("data_version", sa.String(64), nullable=False),
        sa.Column("as_of", UTCDateTime(), nullable=False),
        sa.Column("computed_at", UTCDateTime(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("resamples", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_analysis_results")),
    )


def downgrade() -> None:
    op.drop_table("analysis_results")
