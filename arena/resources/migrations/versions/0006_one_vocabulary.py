"""One vocabulary: a decision's claim and a job run say who holds them and until when in the
same words. ``decisions.claimed_by`` becomes ``decisions.holder``, and
``decisions.lease_expires_at`` and ``job_runs.lease_expires_at`` become ``lease_until``. The
settlement job's runs, stored as ``resolution``, are rewritten as ``settlement``
(``arena.domain.states.Job.SETTLEMENT``).

No attempt kind changes: the decision run always stored ``retry`` for a transient retry, which
is now the value of ``AttemptKind.RETRY`` too.

The columns are renamed in place (``ALTER TABLE ... RENAME COLUMN``, which SQLite has since
3.25): batch mode with ``recreate="never"``, so SQLite does not copy ``decisions``, a table
that ``decision_attempts`` and ``trades`` point at.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

RENAMES = {
    "decisions": (("claimed_by", "holder"), ("lease_expires_at", "lease_until")),
    "job_runs": (("lease_expires_at", "lease_until"),),
}
"""Per table, each column's (old name, new name)."""

_RENAME_JOB = sa.text(
    "UPDATE job_runs SET job = :new WHERE job = :old AND NOT EXISTS "
    "(SELECT 1 FROM job_runs AS other WHERE other.job = :new AND other.slot = job_runs.slot)"
)
"""Rename a job in its runs; a slot that already has a run under the new name keeps it (the
unique key on (job, slot) allows one)."""


def _rename(forward: bool) -> None:
    for table, pairs in RENAMES.items():
        with op.batch_alter_table(table, recreate="never") as batch:
            for old, new in pairs:
                before, after = (old, new) if forward else (new, old)
                batch.alter_column(before, new_column_name=after)


def upgrade() -> None:
    _rename(forward=True)
    op.get_bind().execute(_RENAME_JOB, {"old": "resolution", "new": "settlement"})


def downgrade() -> None:
    op.get_bind().execute(_RENAME_JOB, {"old": "settlement", "new": "resolution"})
    _rename(forward=False)
