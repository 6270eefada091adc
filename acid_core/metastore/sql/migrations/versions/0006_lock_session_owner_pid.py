"""Lock sessions record their owner's process ID: a session of a dead local process is reaped at once.

Revision ID: 0006
Revises: 0002
Create Date: 2026-11-25 15:30:00.000000

``ACIDFLOW_LOCK_SESSIONS.LS_PID`` is the operating-system process ID of the session's owner on
``LS_HOST``. A lock session otherwise lives until its heartbeat times out; with the owner's process
ID, a process on the same host can see that the owner is gone (``kill -9``) and free its locks at
once, as Hive's reaper frees the locks of a dead session (``TxnHandler.performTimeOuts``). Sessions
opened before this revision keep NULL and expire by heartbeat only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("ACIDFLOW_LOCK_SESSIONS") as batch:
        batch.add_column(sa.Column("LS_PID", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("ACIDFLOW_LOCK_SESSIONS") as batch:
        batch.drop_column("LS_PID")
