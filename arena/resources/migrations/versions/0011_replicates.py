"""Replicates: ``agents.replicate`` (replicate n of its family in the cohort, 1 for every
existing agent) and the agents' unique key widened to (cohort_id, family_id, replicate).

SQLite cannot drop a unique constraint, and Alembic's batch copy (insert into a new table,
drop the old, rename) trips the foreign keys that point at ``agents`` from every other table.
So on SQLite the foreign keys are deferred to the commit and the table is rebuilt in the order
that leaves none dangling: copy the rows aside, drop ``agents``, create it anew, put the rows
back (which satisfies the referring rows again), drop the copy.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from arena.store.types import ExactDecimal, UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

OLD_KEY = "uq_agents_cohort_id_family_id"
NEW_KEY = "uq_agents_cohort_id_family_id_replicate"
COLUMNS = (
    "id, cohort_id, family_id, kind, display_name, provider, openrouter_id, strategy, "
    "prompt_version, methodology_version, web_search, starting_balance, cash, realized_pnl, "
    "created_at"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild(replicates=True)
        return
    op.add_column("agents", sa.Column("replicate", sa.Integer(), server_default="1", nullable=False))
    op.drop_constraint(OLD_KEY, "agents", type_="unique")
    op.create_unique_constraint(NEW_KEY, "agents", ["cohort_id", "family_id", "replicate"])


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild(replicates=False)
        return
    op.drop_constraint(NEW_KEY, "agents", type_="unique")
    op.create_unique_constraint(OLD_KEY, "agents", ["cohort_id", "family_id"])
    op.drop_column("agents", "replicate")


def _rebuild(*, replicates: bool) -> None:
    op.execute("PRAGMA defer_foreign_keys = ON")  # until the commit, which the rows satisfy
    op.execute("CREATE TABLE _agents_0011 AS SELECT * FROM agents")
    op.drop_table("agents")
    key = ["cohort_id", "family_id", "replicate"] if replicates else ["cohort_id", "family_id"]
    replicate = (
        [sa.Column("replicate", sa.Integer(), server_default="1", nullable=False)]
        if replicates
        else []
    )
    op.create_table(
        "agents",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("cohort_id", sa.Integer(), nullable=False),
        sa.Column("family_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=False),
        sa.Column("provider", sa.String(length=100), nullable=False),
        sa.Column("openrouter_id", sa.String(length=200), nullable=True),
        sa.Column("strategy", sa.String(length=32), nullable=True),
        sa.Column("prompt_version", sa.String(length=16), nullable=False),
        sa.Column("methodology_version", sa.String(length=16), nullable=False),
        sa.Column("web_search", sa.JSON(), nullable=True),
        sa.Column("starting_balance", ExactDecimal(precision=18, scale=2), nullable=False),
        sa.Column("cash", ExactDecimal(precision=18, scale=2), nullable=False),
        sa.Column("realized_pnl", ExactDecimal(precision=18, scale=2), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        *replicate,
        sa.ForeignKeyConstraint(["cohort_id"], ["cohorts.id"], name="fk_agents_cohort_id_cohorts"),
        sa.ForeignKeyConstraint(
            ["family_id"], ["families.id"], name="fk_agents_family_id_families"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_agents"),
        sa.UniqueConstraint(*key, name=NEW_KEY if replicates else OLD_KEY),
    )
    op.create_index("ix_agents_cohort_id", "agents", ["cohort_id"])
    op.create_index("ix_agents_family_id", "agents", ["family_id"])
    op.execute(f"INSERT INTO agents ({COLUMNS}) SELECT {COLUMNS} FROM _agents_0011")  # noqa: S608
    op.execute("DROP TABLE _agents_0011")
