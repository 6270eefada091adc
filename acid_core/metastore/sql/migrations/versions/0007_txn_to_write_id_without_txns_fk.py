"""TXN_TO_WRITE_ID rows outlive their TXNS row, as in Hive: the foreign key to TXNS goes.

Revision ID: 0007
Revises: 0003
Create Date: 2026-11-25 18:40:00.000000

Hive's ``TXN_TO_WRITE_ID`` has no foreign key: ``cleanEmptyAbortedAndCommittedTxns`` deletes an
empty aborted transaction from ``TXNS`` only, and ``cleanTxnToWriteIdTable`` deletes its write-ID
row later, once it is below the low water mark. Deleting the row together with the transaction
(what the foreign key forced) lowered the table's write-ID high watermark when that transaction
held the highest write ID, and readers then failed with NotEnoughHistoryError (issue 11).
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0003"
branch_labels = None
depends_on = None

_FK = "fk_TXN_TO_WRITE_ID_T2W_TXNID_TXNS"


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("TXN_TO_WRITE_ID") as batch:
        batch.drop_constraint(_FK, type_="foreignkey")


def downgrade() -> None:
    """Revert this revision: rows whose transaction was deleted go first (the key needs a TXNS row)."""
    op.execute('DELETE FROM "TXN_TO_WRITE_ID" WHERE "T2W_TXNID" NOT IN (SELECT "TXN_ID" FROM "TXNS")')
    with op.batch_alter_table("TXN_TO_WRITE_ID") as batch:
        batch.create_foreign_key(_FK, "TXNS", ["T2W_TXNID"], ["TXN_ID"])
