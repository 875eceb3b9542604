"""The record chain: ``records`` (every completed decision, settled position and started cohort
as canonical JSON, hash-chained), ``record_head`` (the one row every append locks, so the chain
never forks), ``commitments`` (signed heads) and ``anchor_deliveries`` (each commitment's
delivery to each anchor); ``decision_universes.content_sha256``, the hash of each universe as
shown, set when it is frozen so a decision's record does not hash it again.

What was stored before this revision is chained by the genesis pass that ``arena db upgrade``
runs after migrating (``arena.record.chain.chain_backlog``), marked "chained after the fact".

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from arena.store.types import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

GENESIS_HASH = "0" * 64


def upgrade() -> None:
    # Plain ADD COLUMN: SQLite adds it in place (no copy of a table foreign keys point at).
    op.add_column("decision_universes", sa.Column("content_sha256", sa.String(64), nullable=True))
    op.create_table(
        "records",
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("subject_id", sa.BigInteger(), nullable=False),
        sa.Column("recorded_at", UTCDateTime(), nullable=False),
        sa.Column("after_the_fact", sa.Boolean(), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_records")),
        sa.UniqueConstraint("hash", name=op.f("uq_records_hash")),
        sa.UniqueConstraint("kind", "subject_id", name=op.f("uq_records_kind_subject_id")),
    )
    head = op.create_table(
        "record_head",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_record_head")),
    )
    op.bulk_insert(head, [{"id": 1, "seq": 0, "hash": GENESIS_HASH}])
    op.create_table(
        "commitments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("head_hash", sa.String(64), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("committed_at", UTCDateTime(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("signature", sa.Text(), nullable=True),
        sa.Column("key_id", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_commitments")),
    )
    op.create_index(op.f("ix_commitments_seq"), "commitments", ["seq"])
    op.create_table(
        "anchor_deliveries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("commitment_id", sa.Integer(), nullable=False),
        sa.Column("anchor", sa.String(300), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("delivered_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["commitment_id"],
            ["commitments.id"],
            name=op.f("fk_anchor_deliveries_commitment_id_commitments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_anchor_deliveries")),
        sa.UniqueConstraint(
            "commitment_id", "anchor", name=op.f("uq_anchor_deliveries_commitment_id_anchor")
        ),
    )
    op.create_index(
        op.f("ix_anchor_deliveries_commitment_id"), "anchor_deliveries", ["commitment_id"]
    )


def downgrade() -> None:
    op.drop_table("anchor_deliveries")
    op.drop_table("commitments")
    op.drop_table("record_head")
    op.drop_table("records")
    # Plain DROP COLUMN (SQLite 3.35+): no batch copy of a table foreign keys point at.
    op.drop_column("decision_universes", "content_sha256")
