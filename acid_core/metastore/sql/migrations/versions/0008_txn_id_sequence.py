"""PostgreSQL takes transaction IDs from a sequence; NEXT_TXN_ID becomes the open/commit mutex.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 18:45:00.000000

Hive 4 (``TxnHandler.openTxns``) draws IDs from the ``TXNS`` identity column under a *share* lock
and takes the lock exclusively only to commit a writer (``acquireTxnLock``), so opens no longer
queue behind one another's disk sync on the ``NEXT_TXN_ID`` row. ``TXN_ID_SEQ`` starts at the
current ``NTXN_NEXT``; from then on that column is the "settled" mark (every lower ID is a TXNS row
or a rolled-back open). SQLite serializes writers anyway and keeps the counter row.

Upgrade with every metastore client of the older revision stopped: an old client would still
count on ``NTXN_NEXT``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    next_txn_id = bind.execute(sa.text('SELECT "NTXN_NEXT" FROM "NEXT_TXN_ID"')).scalar()
    op.execute(sa.schema.CreateSequence(sa.Sequence("TXN_ID_SEQ", start=int(next_txn_id or 1))))


def downgrade() -> None:
    """Revert this revision: the counter row continues after the highest ID handed out."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute(
        sa.text(
            'UPDATE "NEXT_TXN_ID" SET "NTXN_NEXT" = GREATEST("NTXN_NEXT", '
            '(SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM "TXN_ID_SEQ"))'
        )
    )
    op.execute(sa.schema.DropSequence(sa.Sequence("TXN_ID_SEQ")))
