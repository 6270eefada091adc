"""Backlog samples: the sensor runs' measurements, the backlog page's history.

Revision ID: 0004
Revises: 0006
Create Date: 2026-11-25 15:30:00.000000

``ACIDFLOW_BACKLOG_SAMPLES`` is acidflow's own table (Hive keeps no backlog history): one row per
table/partition per measurement, with the delta and delete-delta counts and bytes, the aborted
directories and the modification time of the oldest live delta. Nothing else refers to it; a
downgrade drops it with its rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "ACIDFLOW_BACKLOG_SAMPLES",
        sa.Column("BS_ID", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("BS_DATABASE", sa.String(length=128), nullable=False),
        sa.Column("BS_TABLE", sa.String(length=256), nullable=False),
        sa.Column("BS_PARTITION", sa.String(length=767), nullable=True),
        sa.Column("BS_SAMPLED_AT", sa.BigInteger(), nullable=False),
        sa.Column("BS_DELTAS", sa.Integer(), nullable=False),
        sa.Column("BS_DELETE_DELTAS", sa.Integer(), nullable=False),
        sa.Column("BS_DELTA_BYTES", sa.BigInteger(), nullable=False),
        sa.Column("BS_DELETE_DELTA_BYTES", sa.BigInteger(), nullable=False),
        sa.Column("BS_ABORTED", sa.Integer(), nullable=False),
        sa.Column("BS_OLDEST_DELTA_TIME", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("BS_ID", name=op.f("pk_ACIDFLOW_BACKLOG_SAMPLES")),
    )
    op.create_index(
        "ix_ACIDFLOW_BACKLOG_SAMPLES_table",
        "ACIDFLOW_BACKLOG_SAMPLES",
        ["BS_DATABASE", "BS_TABLE", "BS_SAMPLED_AT"],
        unique=False,
    )
    op.create_index(
        op.f("ix_ACIDFLOW_BACKLOG_SAMPLES_BS_SAMPLED_AT"),
        "ACIDFLOW_BACKLOG_SAMPLES",
        ["BS_SAMPLED_AT"],
        unique=False,
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index(op.f("ix_ACIDFLOW_BACKLOG_SAMPLES_BS_SAMPLED_AT"), table_name="ACIDFLOW_BACKLOG_SAMPLES")
    op.drop_index("ix_ACIDFLOW_BACKLOG_SAMPLES_table", table_name="ACIDFLOW_BACKLOG_SAMPLES")
    op.drop_table("ACIDFLOW_BACKLOG_SAMPLES")
