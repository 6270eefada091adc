"""Lock tables join the metastore schema; MIN_HISTORY_LEVEL for housekeeping.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 07:00:00.000000

``ACIDFLOW_LOCK_SESSIONS`` and ``ACIDFLOW_LOCKS`` (the SQL lock manager's tables) used to be
created by ``sql.lock_store`` itself (``CREATE TABLE IF NOT EXISTS``), outside this history. A database
that already has them keeps them as they are, rows included (a lock held by a running process must
survive the upgrade): their columns and index names are the same; only the primary key's name
differs on PostgreSQL (``..._pkey`` instead of ``pk_...``), which nothing refers to.

``MIN_HISTORY_LEVEL`` (Hive 3's table) records, per open transaction, the lowest transaction open
when it opened. Transactions already open at upgrade time get the lowest ID in ``TXNS``, which keeps
every write-ID row they could need (nothing was ever deleted before this revision).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# lock_store's pg_advisory_xact_lock key: an older acidflow process may be creating the lock tables
# right now; wait for it so the check below sees its tables.
_LOCK_STORE_SERIALIZE_KEY = 0x41C1D10C
_LOCK_INDEXES = {
    "IX_ACIDFLOW_LOCKS_OBJECT": ["L_OBJECT"],
    "IX_ACIDFLOW_LOCKS_TABLE": ["L_DB", "L_TABLE"],
    "IX_ACIDFLOW_LOCKS_SESSION": ["L_SESSION_ID"],
    "IX_ACIDFLOW_LOCKS_TOKEN": ["L_TOKEN"],
}


def upgrade() -> None:
    """Apply this revision."""
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_STORE_SERIALIZE_KEY})
    inspector = sa.inspect(bind)
    existing = set(inspector.get_table_names())

    if "ACIDFLOW_LOCK_SESSIONS" not in existing:
        op.create_table(
            "ACIDFLOW_LOCK_SESSIONS",
            sa.Column("LS_SESSION_ID", sa.String(length=64), nullable=False),
            sa.Column("LS_HOST", sa.String(length=255), nullable=False),
            sa.Column("LS_STARTED", sa.BigInteger(), nullable=False),
            sa.Column("LS_LAST_HEARTBEAT", sa.BigInteger(), nullable=False),
            sa.Column("LS_TIMEOUT_MS", sa.BigInteger(), nullable=False),
            sa.PrimaryKeyConstraint("LS_SESSION_ID", name=op.f("pk_ACIDFLOW_LOCK_SESSIONS")),
        )
    if "ACIDFLOW_LOCKS" not in existing:
        op.create_table(
            "ACIDFLOW_LOCKS",
            sa.Column("L_ID", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
            sa.Column("L_SESSION_ID", sa.String(length=64), nullable=False),
            sa.Column("L_TOKEN", sa.String(length=64), nullable=False),
            sa.Column("L_OBJECT", sa.String(length=1024), nullable=False),
            sa.Column("L_DB", sa.String(length=128), nullable=False),
            sa.Column("L_TABLE", sa.String(length=256), nullable=False),
            sa.Column("L_MODE", sa.String(length=1), nullable=False),
            sa.Column("L_WAITING", sa.Boolean(), nullable=False),
            sa.Column("L_HOLDER", sa.String(length=256), nullable=False),
            sa.Column("L_HOST", sa.String(length=255), nullable=False),
            sa.Column("L_TXN_ID", sa.BigInteger(), nullable=True),
            sa.Column("L_ACQUIRED_AT", sa.BigInteger(), nullable=False),
            sa.PrimaryKeyConstraint("L_ID", name=op.f("pk_ACIDFLOW_LOCKS")),
        )
        have_indexes: set[str] = set()
    else:
        have_indexes = {str(i["name"]) for i in inspector.get_indexes("ACIDFLOW_LOCKS")}
    for name, columns in _LOCK_INDEXES.items():
        if name not in have_indexes:
            op.create_index(name, "ACIDFLOW_LOCKS", columns, unique=False)

    op.create_table(
        "MIN_HISTORY_LEVEL",
        sa.Column("MHL_TXNID", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("MHL_MIN_OPEN_TXNID", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("MHL_TXNID", name=op.f("pk_MIN_HISTORY_LEVEL")),
    )
    op.create_index(
        op.f("ix_MIN_HISTORY_LEVEL_MHL_MIN_OPEN_TXNID"),
        "MIN_HISTORY_LEVEL",
        ["MHL_MIN_OPEN_TXNID"],
        unique=False,
    )
    op.execute(
        'INSERT INTO "MIN_HISTORY_LEVEL" ("MHL_TXNID", "MHL_MIN_OPEN_TXNID") '
        'SELECT "TXN_ID", (SELECT MIN("TXN_ID") FROM "TXNS") FROM "TXNS" WHERE "TXN_STATE" = \'o\''
    )


def downgrade() -> None:
    """Revert this revision (drops the lock tables: stop every lock manager first)."""
    op.drop_index(op.f("ix_MIN_HISTORY_LEVEL_MHL_MIN_OPEN_TXNID"), table_name="MIN_HISTORY_LEVEL")
    op.drop_table("MIN_HISTORY_LEVEL")
    for name in _LOCK_INDEXES:
        op.drop_index(name, table_name="ACIDFLOW_LOCKS")
    op.drop_table("ACIDFLOW_LOCKS")
    op.drop_table("ACIDFLOW_LOCK_SESSIONS")
