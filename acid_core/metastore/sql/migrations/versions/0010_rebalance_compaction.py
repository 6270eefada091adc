"""Rebalance compaction (Hive 4, HIVE-26716): the queue keeps the bucket count and ORDER BY.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28 01:50:00.000000

Hive 4's ``COMPACTION_QUEUE`` and ``COMPLETED_COMPACTIONS`` have ``CQ_NUMBER_OF_BUCKETS`` /
``CC_NUMBER_OF_BUCKETS`` (``CLUSTERED INTO n BUCKETS``) and ``CQ_ORDER_BY`` / ``CC_ORDER_BY``
(the ``ORDER BY`` clause); ``CQ_TYPE`` 'r' is a rebalance. Nullable columns: existing rows and
older clients are unaffected.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    for table, prefix in (("COMPACTION_QUEUE", "CQ"), ("COMPLETED_COMPACTIONS", "CC")):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column(f"{prefix}_NUMBER_OF_BUCKETS", sa.Integer(), nullable=True))
            batch.add_column(sa.Column(f"{prefix}_ORDER_BY", sa.String(4000), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    for table, prefix in (("COMPACTION_QUEUE", "CQ"), ("COMPLETED_COMPACTIONS", "CC")):
        with op.batch_alter_table(table) as batch:
            batch.drop_column(f"{prefix}_ORDER_BY")
            batch.drop_column(f"{prefix}_NUMBER_OF_BUCKETS")
