"""Claim holders, and several universes per decision week (fresh prices).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("claimed_by", sa.String(length=100), nullable=True))
    with op.batch_alter_table("decision_universes") as batch:
        batch.drop_constraint("uq_decision_universes_run_slot", type_="unique")
        batch.create_unique_constraint(
            "uq_decision_universes_run_slot_frozen_at", ["run_slot", "frozen_at"]
        )


def downgrade() -> None:
    with op.batch_alter_table("decision_universes") as batch:
        batch.drop_constraint("uq_decision_universes_run_slot_frozen_at", type_="unique")
        batch.create_unique_constraint("uq_decision_universes_run_slot", ["run_slot"])
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("claimed_by")
