"""Positions are found by agent and status through one index: (agent_id, status) replaces the
index on agent_id alone (its leading column serves every lookup by agent). Without it, SQLite
(which keeps no statistics unless ANALYZE runs) read an agent's open positions through the
index on status, every agent's open positions, for each agent page.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(op.f("ix_positions_agent_id_status"), "positions", ["agent_id", "status"])
    op.drop_index(op.f("ix_positions_agent_id"), table_name="positions")


def downgrade() -> None:
    op.create_index(op.f("ix_positions_agent_id"), "positions", ["agent_id"])
    op.drop_index(op.f("ix_positions_agent_id_status"), table_name="positions")
