"""Initiator marks: the compactor's write-ID list each table's last cycle decided at.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29 02:10:00.000000

``ACIDFLOW_INITIATOR_MARKS.IM_WRITE_IDS`` (nullable text): the table's ``ValidCompactorWriteIdList``
in Hive's string form. In HMS mode (this store is then the side store) the next cycle asks which
writes are new by write ID, as Hive's COMPLETED_TXN_COMPONENTS records them, not by clock. A row
from before this revision has none: its table's next cycle in HMS mode lists every partition once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("ACIDFLOW_INITIATOR_MARKS") as batch:
        batch.add_column(sa.Column("IM_WRITE_IDS", sa.Text(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("ACIDFLOW_INITIATOR_MARKS") as batch:
        batch.drop_column("IM_WRITE_IDS")
