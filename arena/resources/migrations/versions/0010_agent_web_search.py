"""Tracks: ``agents.web_search``, the family's web search settings frozen on its agent at
cohort start (null: no web search, and every agent created before this revision).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("agents", sa.Column("web_search", sa.JSON()))


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite 3.35+), as 0004 does.
    op.drop_column("agents", "web_search")
