"""Reader leases store the full snapshot: the ValidTxnList next to the ValidWriteIdList.

Revision ID: 0003
Revises: 0004
Create Date: 2026-11-25 15:30:00.000000

A lease used to store only the table's ValidWriteIdList; the cleaner then guessed which ``_vT``
compactor outputs its reader could see, and guessed wrong after a second compaction (issue 11).
``RL_TXN_LIST`` holds the ValidTxnList taken in the same metastore transaction. Leases taken before
this revision keep ``NULL`` there; the cleaner protects them conservatively and refuses to clean
when it cannot tell what they read.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("READER_LEASES", sa.Column("RL_TXN_LIST", sa.Text(), nullable=True))


def downgrade() -> None:
    """Revert this revision (leases keep their write-ID lists)."""
    with op.batch_alter_table("READER_LEASES") as batch:
        batch.drop_column("RL_TXN_LIST")
