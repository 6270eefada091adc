"""Initiator marks: when the last initiator cycle over each table started.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28 22:40:00.000000

``ACIDFLOW_INITIATOR_MARKS`` is acidflow's own table (Hive 4's Initiator keeps one time, in its
``AUX_TABLE`` mutex row): one row per table with the start of the last cycle that decided every
partition of it and the fingerprint of that cycle's settings. The next cycle lists only the
partitions with writes, aborts or compactions since. Nothing refers to it; a downgrade drops it
(the next cycle then lists everything, as a first cycle does).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "ACIDFLOW_INITIATOR_MARKS",
        sa.Column("IM_DATABASE", sa.String(length=128), nullable=False),
        sa.Column("IM_TABLE", sa.String(length=256), nullable=False),
        sa.Column("IM_STARTED_AT", sa.BigInteger(), nullable=False),
        sa.Column("IM_FINGERPRINT", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("IM_DATABASE", "IM_TABLE", name=op.f("pk_ACIDFLOW_INITIATOR_MARKS")),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("ACIDFLOW_INITIATOR_MARKS")
