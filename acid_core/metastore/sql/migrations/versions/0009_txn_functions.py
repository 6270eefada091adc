"""PostgreSQL: open, allocate a write ID and commit, one round trip each (server-side functions).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 21:55:00.000000

``acidflow_open_txn`` is ``SqlMetastore.open_txn``'s sequence path (Hive 4's ``openTxns``),
``acidflow_allocate_write_id`` is ``allocate_write_id`` and ``acidflow_commit_txn`` the commit of
an open transaction that wrote nothing (no TXN_COMPONENTS, not a compaction), statement for
statement as the client sent them before. Called as one
autocommit statement, each runs in its own database transaction and its row locks end with that
transaction's commit, as before; at READ COMMITTED every statement inside a (volatile) function
takes a fresh snapshot, so a statement after a lock sees what the lock waited for, as when the
client sent them one by one. ``acidflow_commit_txn`` returns NULL for any other transaction, and
``acidflow_allocate_write_id`` no write ID for a table without a write-ID counter; both then
have changed nothing and the client does it in a transaction as before. SQLite: nothing.
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_OPEN_TXN = """
CREATE OR REPLACE FUNCTION acidflow_open_txn(p_now BIGINT, p_user TEXT, p_host TEXT, p_type INTEGER)
RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_alone BIGINT;
    v_settled BIGINT;
    v_txn BIGINT;
BEGIN
    -- A share lock on the mutex row (writers' commits take it exclusively), then an ID from the
    -- sequence. When nobody holds the row, take it exclusively instead: no open is in flight, so
    -- every lower ID is settled and the settled mark moves up to this one.
    SELECT "NTXN_NEXT" INTO v_alone FROM "NEXT_TXN_ID" FOR UPDATE SKIP LOCKED;
    IF v_alone IS NULL THEN
        SELECT "NTXN_NEXT" INTO STRICT v_settled FROM "NEXT_TXN_ID" FOR SHARE;
    END IF;
    INSERT INTO "TXNS" ("TXN_ID", "TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER",
                        "TXN_HOST", "TXN_TYPE")
    VALUES (nextval('"TXN_ID_SEQ"'), 'o', p_now, p_now, p_user, p_host, p_type)
    RETURNING "TXN_ID" INTO v_txn;
    IF v_alone IS NOT NULL THEN
        v_settled := v_txn;
        IF v_alone <> v_txn THEN
            UPDATE "NEXT_TXN_ID" SET "NTXN_NEXT" = v_txn;
        END IF;
    END IF;
    -- Hive 3's MIN_HISTORY_LEVEL: the lowest txn open now (this one included), never above the
    -- settled mark (an open still in flight below this one is at or above it).
    INSERT INTO "MIN_HISTORY_LEVEL" ("MHL_TXNID", "MHL_MIN_OPEN_TXNID")
    SELECT v_txn, CASE WHEN min("TXN_ID") < v_settled THEN min("TXN_ID") ELSE v_settled END
    FROM "TXNS" WHERE "TXN_STATE" = 'o';
    RETURN v_txn;
END
$$
"""

_COMMIT_TXN = """
CREATE OR REPLACE FUNCTION acidflow_commit_txn(p_txn BIGINT)
RETURNS TEXT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_state TEXT;
    v_type INTEGER;
BEGIN
    SELECT "TXN_STATE", "TXN_TYPE" INTO v_state, v_type FROM "TXNS" WHERE "TXN_ID" = p_txn FOR UPDATE;
    -- Anything but an open, non-compaction txn that wrote nothing: the client's full commit.
    IF v_state IS DISTINCT FROM 'o' OR v_type = 3
       OR EXISTS (SELECT 1 FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = p_txn) THEN
        RETURN NULL;
    END IF;
    UPDATE "TXNS" SET "TXN_STATE" = 'c' WHERE "TXN_ID" = p_txn;
    DELETE FROM "MIN_HISTORY_LEVEL" WHERE "MHL_TXNID" = p_txn;
    RETURN 'c';
END
$$
"""

_ALLOCATE_WRITE_ID = """
CREATE OR REPLACE FUNCTION acidflow_allocate_write_id(
    p_txn BIGINT, p_database TEXT, p_table TEXT, OUT o_state TEXT, OUT o_write_id BIGINT
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    SELECT "TXN_STATE" INTO o_state FROM "TXNS" WHERE "TXN_ID" = p_txn FOR UPDATE;
    IF o_state IS DISTINCT FROM 'o' THEN
        RETURN;  -- no such txn (NULL) or not open: the client raises
    END IF;
    SELECT "T2W_WRITEID" INTO o_write_id FROM "TXN_TO_WRITE_ID"
    WHERE "T2W_TXNID" = p_txn AND "T2W_DATABASE" = p_database AND "T2W_TABLE" = p_table;
    IF FOUND THEN
        RETURN;
    END IF;
    -- Hive's allocateTableWriteIds: the table's counter row stays locked until the commit.
    UPDATE "NEXT_WRITE_ID" SET "NWI_NEXT" = "NWI_NEXT" + 1
    WHERE "NWI_DATABASE" = p_database AND "NWI_TABLE" = p_table
    RETURNING "NWI_NEXT" - 1 INTO o_write_id;
    IF NOT FOUND THEN
        RETURN;  -- no counter: the client checks the table and starts one
    END IF;
    INSERT INTO "TXN_TO_WRITE_ID" ("T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID", "T2W_TXNID")
    VALUES (p_database, p_table, o_write_id, p_txn);
END
$$
"""


def upgrade() -> None:
    """Apply this revision."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_OPEN_TXN)
    op.execute(_ALLOCATE_WRITE_ID)
    op.execute(_COMMIT_TXN)


def downgrade() -> None:
    """Revert this revision."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION IF EXISTS acidflow_commit_txn(BIGINT)")
    op.execute("DROP FUNCTION IF EXISTS acidflow_allocate_write_id(BIGINT, TEXT, TEXT)")
    op.execute("DROP FUNCTION IF EXISTS acidflow_open_txn(BIGINT, TEXT, TEXT, INTEGER)")
