"""``ix_decision_attempts_usage``: an index on each attempt's decision, outcome, cost and
tokens, so the leaderboard's pass over every attempt reads the index alone. On SQLite those
columns sit behind the prompt's overflow pages, so a table scan reads every prompt again: at
scale 1 (20,000 attempts of ~45 KB prompts) 0.7 s, 0.05 s through the index.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

COLUMNS = ["decision_id", "outcome", "cost_usd", "prompt_tokens", "completion_tokens"]


def upgrade() -> None:
    op.create_index("ix_decision_attempts_usage", "decision_attempts", COLUMNS)


def downgrade() -> None:
    op.drop_index("ix_decision_attempts_usage", table_name="decision_attempts")
