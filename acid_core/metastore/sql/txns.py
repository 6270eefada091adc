"""``SqlMetastore``'s transactions: open, write IDs, commit/abort, the reaper and housekeeping.

Hive's TxnHandler: a writer calls ``open_txn`` -> ``allocate_write_id`` -> ``add_write_component`` ->
``commit_txn``; ``commit_txn`` checks write-write conflicts (WRITE_SET) under the exclusive
NEXT_TXN_ID lock; ``housekeeping`` is Hive's AcidHouseKeeperService.

A commit whose answer is lost (PostgreSQL restarted, failed over or dropped the connection while
the commit was on its way) is never re-sent: ``commit_txn`` reconnects and reads the transaction's
state under its row lock (which waits for a commit still running on the server). Committed: done,
exactly once. Still open: the commit never happened, and acidflow aborts it rather than commit late
(its locks may have lapsed during the outage). No answer within ``commit_check_seconds``: unknown.

Not here: the snapshot computation (``sql.base``). Errors: ``TxnNotOpenError``, ``NoSuchTxnError``,
``CommitConflictError`` (the transaction is already aborted when it is raised);
``LostCommitAbortedError`` and ``CommitStateUnknownError`` for a commit whose answer was lost.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import and_, delete, exists, func, insert, or_, select, update
from sqlalchemy.orm import Session, aliased

from acid_core.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    InvalidMetastoreRequestError,
    InvalidPartitionError,
    LostCommitAbortedError,
    MetastoreDatabaseUnavailableError,
    NoSuchTxnError,
    TxnNotOpenError,
)
from acid_core.metastore.sql.models import (
    CompactionQueueEntry,
    CompletedTxnComponent,
    MinHistoryLevel,
    NextWriteId,
    Txn,
    TxnComponent,
    TxnToWriteId,
    WriteSetEntry,
)
from acid_core.types import TxnId, WriteId
from acid_core.writeids import (
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
    to_compactor_write_id_list,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.sql.elements import ColumnElement

from acid_core.metastore.port import (
    DEFAULT_OPEN_TXN_TIMEOUT_SECONDS,
    CompactionState,
    HousekeepingResult,
    TxnInfo,
    TxnState,
    TxnType,
    WriteOperation,
    split_table_name,
)
from acid_core.metastore.sql.base import (
    _ABORTED,
    _COMMITTED,
    _COMPACT_OPERATION,
    _LOG,
    _OPEN,
    _OPERATION_CODE,
    _OPERATION_NAME,
    _TXN_STATE_BY_CODE,
    _TXN_TYPE_CODE,
    _UPDATE_DELETE_CODES,
    SqlMetastoreBase,
    _check_id,
    _current_user,
    _ms,
    _txn_info,
)

# The transaction path (open -> allocate a write ID -> commit) in plain SQL on a connection, no
# ORM session: a ``text()`` statement is compiled once. On PostgreSQL each of the three is one
# autocommit call of a server-side function (alembic 0009: the same statements, run by the server,
# one round trip and one commit each); SQLite (no row locks: every transaction is BEGIN
# IMMEDIATE) and the rarer cases (a commit with writes, a table without a counter) run the
# statements below in a database transaction.
_TXN_COLUMNS = (
    '"TXN_ID", "TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER", "TXN_HOST", "TXN_TYPE"'
)
_TXN_VALUES = f"'{_OPEN}', :now, :now, :user, :host, :kind"
_OPEN_TXN_PG = sa.text("SELECT acidflow_open_txn(:now, :user, :host, :kind)")
_ALLOCATE_WRITE_ID_PG = sa.text("SELECT * FROM acidflow_allocate_write_id(:txn_id, :database, :table)")
_COMMIT_TXN_PG = sa.text("SELECT acidflow_commit_txn(:txn_id)")
# The counter (SQLite; Hive 3): the row lock on NEXT_TXN_ID is held through the commit.
_BUMP_NEXT_TXN_ID = sa.text(
    'UPDATE "NEXT_TXN_ID" SET "NTXN_NEXT" = "NTXN_NEXT" + 1 RETURNING "NTXN_NEXT" - 1'
)
_INSERT_TXN = sa.text(f'INSERT INTO "TXNS" ({_TXN_COLUMNS}) VALUES (:txn_id, {_TXN_VALUES})')
_INSERT_HISTORY = sa.text(
    'INSERT INTO "MIN_HISTORY_LEVEL" ("MHL_TXNID", "MHL_MIN_OPEN_TXNID") '
    f'SELECT :txn_id, coalesce(min("TXN_ID"), :txn_id) FROM "TXNS" WHERE "TXN_STATE" = \'{_OPEN}\''
)
_TXN_STATE = 'SELECT "TXN_STATE", "TXN_TYPE" FROM "TXNS" WHERE "TXN_ID" = :txn_id'
# SQLite has no row locks (and no FOR UPDATE): BEGIN IMMEDIATE already serializes writers.
_LOCK_TXN = {True: sa.text(_TXN_STATE + " FOR UPDATE"), False: sa.text(_TXN_STATE)}
_SAME_WRITE_TABLE = '"T2W_DATABASE" = :database AND "T2W_TABLE" = :table'
_SAME_COUNTER = '"NWI_DATABASE" = :database AND "NWI_TABLE" = :table'
_EXISTING_WRITE_ID = (
    f'SELECT "T2W_WRITEID" FROM "TXN_TO_WRITE_ID" WHERE "T2W_TXNID" = :txn_id AND {_SAME_WRITE_TABLE}'
)
_BUMP_WRITE_ID = f'UPDATE "NEXT_WRITE_ID" SET "NWI_NEXT" = "NWI_NEXT" + 1 WHERE {_SAME_COUNTER}'
_INSERT_WRITE_ID = 'INSERT INTO "TXN_TO_WRITE_ID" ("T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID", "T2W_TXNID") '
_EXISTING_WRITE_ID_SQL = sa.text(_EXISTING_WRITE_ID)
_BUMP_WRITE_ID_SQL = sa.text(_BUMP_WRITE_ID + ' RETURNING "NWI_NEXT" - 1')
_INSERT_WRITE_ID_SQL = sa.text(_INSERT_WRITE_ID + "VALUES (:database, :table, :write_id, :txn_id)")
_COMPONENTS = sa.text(
    'SELECT "TC_DATABASE", "TC_TABLE", "TC_PARTITION", "TC_OPERATION_TYPE", "TC_WRITEID" '
    'FROM "TXN_COMPONENTS" WHERE "TC_TXNID" = :txn_id'
)
_END_TXN_SQL = sa.text('UPDATE "TXNS" SET "TXN_STATE" = :state WHERE "TXN_ID" = :txn_id')
_FORGET_HISTORY_SQL = sa.text('DELETE FROM "MIN_HISTORY_LEVEL" WHERE "MHL_TXNID" = :txn_id')
_CHECK_INTERVAL_SECONDS = 0.25  # between read-backs of a lost commit while PostgreSQL is away


class SqlTxnPart(SqlMetastoreBase):
    """``SqlMetastore``'s transactions."""

    def open_txn(
        self,
        user: str | None = None,
        host: str | None = None,
        txn_type: TxnType = TxnType.DEFAULT,
        now: float | None = None,
    ) -> TxnId:
        """See ``Metastore.open_txn``."""
        kind = TxnType(txn_type)
        now_ms = self._now_ms(now)
        if self._txn_id_sequence:
            with self._autocommit("open_txn") as c:
                return self._open_txn_in(c, user, host, kind, now_ms)
        with self._connection("open_txn") as c:
            return self._open_txn_in(c, user, host, kind, now_ms)

    def open_compaction_txn(
        self, compaction_id: int, user: str | None = None, host: str | None = None, now: float | None = None
    ) -> TxnId:
        """See ``Metastore.open_compaction_txn``: one database transaction opens and records it."""
        now_ms = self._now_ms(now)
        with self._transaction("open_compaction_txn") as s:
            row = self._queue_row(s, compaction_id)
            self._require_state(row, "open a compaction transaction for", (CompactionState.WORKING,))
            txn_id = self._open_txn_in(s.connection(), user, host, TxnType.COMPACTION, now_ms)
            row.txn_id = txn_id
            return txn_id

    def _open_txn_in(
        self, c: sa.Connection, user: str | None, host: str | None, kind: TxnType, now_ms: int
    ) -> TxnId:
        values = {
            "now": now_ms,
            "user": user if user is not None else _current_user(),
            "host": host if host is not None else socket.gethostname(),
            "kind": _TXN_TYPE_CODE[kind],
        }
        if not self._txn_id_sequence:
            # Hive 3: the counter's row lock (SQLite: the database's) is held through the commit.
            txn_id = int(c.execute(_BUMP_NEXT_TXN_ID).scalar_one())
            c.execute(_INSERT_TXN, {"txn_id": txn_id, **values})
            c.execute(_INSERT_HISTORY, {"txn_id": txn_id})
            return TxnId(txn_id)
        # Hive 4's openTxns (acidflow_open_txn): IDs from TXN_ID_SEQ under a share lock on
        # NEXT_TXN_ID, so opens do not queue behind each other's disk sync.
        return TxnId(int(c.execute(_OPEN_TXN_PG, values).scalar_one()))

    def get_txn(self, txn_id: int) -> TxnInfo:
        """See ``Metastore.get_txn``."""
        _check_id("transaction ID", txn_id)
        with self._transaction("get_txn") as s:
            row = s.get(Txn, txn_id)
            if row is None:
                raise NoSuchTxnError(txn_id)
            return _txn_info(row)

    def get_valid_txns(self, current_txn_id: int | None = None) -> ValidTxnList:
        """See ``Metastore.get_valid_txns``."""
        if current_txn_id is not None:
            _check_id("transaction ID", current_txn_id)
        with self._transaction("get_valid_txns") as s:
            return self._valid_txns(s, current_txn_id)

    def _locked_txn(self, c: sa.Connection, txn_id: int) -> tuple[str, int]:
        """The state and type code of a transaction, its row locked until the end of ``c``'s transaction."""
        _check_id("transaction ID", txn_id)
        row = c.execute(_LOCK_TXN[self.dialect != "sqlite"], {"txn_id": txn_id}).first()
        if row is None:
            raise NoSuchTxnError(txn_id)
        return str(row[0]), int(row[1])

    def _locked_open_txn(self, c: sa.Connection, txn_id: int, operation: str) -> None:
        state, _ = self._locked_txn(c, txn_id)
        if state != _OPEN:
            raise TxnNotOpenError(txn_id, _TXN_STATE_BY_CODE[state].value, operation)

    def _allocate(self, c: sa.Connection, txn_id: int, database: str, table: str) -> WriteId:
        """The txn's write ID of the table, allocated from NEXT_WRITE_ID (row-locked) if it has none.

        The caller holds the txn's TXNS row lock, so the existing-ID check and the allocation are
        one step for this txn.
        """
        key = {"txn_id": txn_id, "database": database, "table": table}
        existing = c.execute(_EXISTING_WRITE_ID_SQL, key).scalar_one_or_none()
        if existing is not None:
            return WriteId(int(existing))
        write_id = c.execute(_BUMP_WRITE_ID_SQL, key).scalar_one_or_none()
        if write_id is not None:
            c.execute(_INSERT_WRITE_ID_SQL, {"write_id": write_id, **key})
            return WriteId(int(write_id))
        # create_table makes the counter and drop_table removes it, so this is a missing table
        # (raises), or one whose counter was lost: start it as Hive does, at 1.
        with Session(bind=c) as s:
            self._table_row(s, database, table)
        c.execute(insert(NextWriteId).values(database=database, table=table, next_write_id=2))
        c.execute(_INSERT_WRITE_ID_SQL, {"write_id": 1, **key})
        return WriteId(1)

    def allocate_write_id(self, txn_id: int, table: str) -> WriteId:
        """See ``Metastore.allocate_write_id``."""
        database, name = split_table_name(table)
        operation = "allocate a write ID in"
        if self._postgresql:
            _check_id("transaction ID", txn_id)
            with self._autocommit("allocate_write_id") as c:
                key = {"txn_id": txn_id, "database": database, "table": name}
                state, write_id = c.execute(_ALLOCATE_WRITE_ID_PG, key).one()
            if state is None:
                raise NoSuchTxnError(txn_id)
            if state != _OPEN:
                raise TxnNotOpenError(txn_id, _TXN_STATE_BY_CODE[state].value, operation)
            if write_id is not None:
                return WriteId(int(write_id))
        # SQLite; on PostgreSQL a table with no write-ID counter (the function changed nothing).
        with self._connection("allocate_write_id") as c:
            self._locked_open_txn(c, txn_id, operation)
            return self._allocate(c, txn_id, database, name)

    def get_valid_write_ids(self, table: str, valid_txns: ValidTxnList) -> ValidWriteIdList:
        """See ``Metastore.get_valid_write_ids``."""
        database, name = split_table_name(table)
        with self._transaction("get_valid_write_ids") as s:
            self._table_row(s, database, name)
            return self._valid_write_ids(s, database, name, valid_txns)

    def get_compactor_write_ids(self, table: str, valid_txns: ValidTxnList) -> ValidCompactorWriteIdList:
        """See ``Metastore.get_compactor_write_ids``."""
        return to_compactor_write_id_list(self.get_valid_write_ids(table, valid_txns))

    def add_write_component(
        self, txn_id: int, table: str, partition: str | None, operation: WriteOperation
    ) -> WriteId:
        """See ``Metastore.add_write_component``."""
        database, name = split_table_name(table)
        code = _OPERATION_CODE[WriteOperation(operation)]
        with self._transaction("add_write_component") as s:
            self._lock_open_txn(s, txn_id, "record a write in")
            row = self._table_row(s, database, name)
            if partition is not None and not row.partition_keys:
                raise InvalidPartitionError(
                    f"{database}.{name}", partition, "None: the table is unpartitioned"
                )
            write_id = self._allocate(s.connection(), txn_id, database, name)
            s.add(
                TxnComponent(
                    txn_id=txn_id,
                    database=database,
                    table=name,
                    partition=partition,
                    operation=code,
                    write_id=write_id,
                )
            )
            return write_id

    def commit_txn(self, txn_id: int, now: float | None = None) -> None:
        """See ``Metastore.commit_txn``; a lost answer is checked, never re-sent (module docstring).

        Raises:
            LostCommitAbortedError: PostgreSQL went away before the commit happened; now aborted.
            CommitStateUnknownError: PostgreSQL went away and did not answer the check in time.
        """
        try:
            self._commit_txn(txn_id, now)
        except MetastoreDatabaseUnavailableError as lost:
            self._settle_lost_commit(txn_id, lost)

    def _settle_lost_commit(self, txn_id: int, lost: MetastoreDatabaseUnavailableError) -> None:
        """Read back (and, still open, abort) a transaction whose commit lost its answer."""
        _LOG.warning("commit of txn %s lost its answer (%s); checking its state", txn_id, lost.problem)
        deadline = time.monotonic() + self._commit_check_seconds
        while True:
            try:
                with self._connection("check a lost commit_txn") as c:
                    # FOR UPDATE: a commit still running on the server (the client's socket broke,
                    # not the server) finishes before this reads the row.
                    state, _ = self._locked_txn(c, txn_id)
                    if state == _OPEN:
                        self._end_txn(c, txn_id, _ABORTED)
                break
            except MetastoreDatabaseUnavailableError:
                # The check's own COMMIT may lose its answer too: the next round reads the row again.
                if time.monotonic() >= deadline:
                    raise CommitStateUnknownError(
                        f"PostgreSQL (the metastore database {self._shown_url!r}) went away during the "
                        f"commit of transaction {txn_id} ({lost.problem}) and did not answer for "
                        f"{self._commit_check_seconds:g} s; the transaction may or may not be committed; "
                        "expected an answer; acidflow does not re-send the commit: it stays committed, or "
                        "the reaper aborts it once its heartbeats time out; hint: when the server is back, "
                        f"SHOW TRANSACTIONS lists {txn_id} if it did not commit (then run the statement again)"
                    ) from lost
                time.sleep(_CHECK_INTERVAL_SECONDS)
        if state == _COMMITTED:
            _LOG.warning("commit of txn %s lost its answer; checked after reconnecting: committed", txn_id)
            return
        raise LostCommitAbortedError(txn_id, self._shown_url, lost.problem) from lost

    def _commit_txn(self, txn_id: int, now: float | None) -> None:
        now_ms = self._now_ms(now)
        if self._postgresql:
            _check_id("transaction ID", txn_id)
            with self._autocommit("commit_txn") as c:
                if c.execute(_COMMIT_TXN_PG, {"txn_id": txn_id}).scalar_one() is not None:
                    return  # an open txn that wrote nothing: committed (acidflow_commit_txn)
        conflict: str | None = None
        with self._connection("commit_txn") as c:
            state, txn_type = self._locked_txn(c, txn_id)
            if state == _COMMITTED:
                return  # Hive: a repeated commit is a retry; succeed quietly
            if state == _ABORTED:
                raise TxnNotOpenError(txn_id, TxnState.ABORTED.value, "commit")
            components = c.execute(_COMPONENTS, {"txn_id": txn_id}).all()
            footprint = sorted(
                {(db, tbl, part, op) for db, tbl, part, op, _ in components if op in _UPDATE_DELETE_CODES},
                key=lambda item: (item[0], item[1], item[2] or "", item[3]),
            )
            commit_id: int | None = None
            if txn_type != _TXN_TYPE_CODE[TxnType.READ_ONLY] and footprint:
                commit_id = self._next_txn_id_locked(c) - 1
                conflict = self._find_write_conflict(c, txn_id, commit_id, footprint)
                if conflict is not None:
                    self._end_txn(c, txn_id, _ABORTED)
                else:
                    c.execute(
                        insert(WriteSetEntry),
                        [
                            {
                                "WS_DATABASE": db,
                                "WS_TABLE": tbl,
                                "WS_PARTITION": part,
                                "WS_TXNID": txn_id,
                                "WS_COMMIT_ID": commit_id,
                                "WS_OPERATION_TYPE": op,
                            }
                            for db, tbl, part, op in footprint
                        ],
                    )
            elif txn_type == _TXN_TYPE_CODE[TxnType.COMPACTION]:
                commit_id = self._next_txn_id_locked(c) - 1
            if conflict is None:
                self._complete_txn(c, txn_id, components, "Y" if footprint else "N", now_ms)
                if txn_type == _TXN_TYPE_CODE[TxnType.COMPACTION] and commit_id is not None:
                    # CompactionTxnHandler.updateWSCommitIdAndCleanUpMetadata records the cleaner's
                    # rule data at commit. Hive 4 stores the high watermark there; we store the next
                    # txn ID (hwm + 1), so "next_txn_id <= min open txn" also waits for the newest
                    # txn open at commit time, which Hive 4's off-by-one would let through.
                    c.execute(
                        update(CompactionQueueEntry)
                        .where(CompactionQueueEntry.txn_id == txn_id)
                        .values(next_txn_id=commit_id + 1, commit_time=now_ms)
                    )
        if conflict is not None:
            raise CommitConflictError(conflict)

    @staticmethod
    def _find_write_conflict(
        c: sa.Connection, txn_id: int, commit_id: int, footprint: Sequence[tuple[str, str, str | None, str]]
    ) -> str | None:
        # TxnHandler.checkForWriteConflict: an update/delete committed at or after our start
        # (committed.WS_COMMIT_ID >= our TXN_ID) on the same table and partition wins.
        for database, table, partition, operation in footprint:
            same_partition = (
                WriteSetEntry.partition.is_(None)
                if partition is None
                else WriteSetEntry.partition == partition
            )
            hit = c.execute(
                select(WriteSetEntry.txn_id, WriteSetEntry.commit_id, WriteSetEntry.operation)
                .where(
                    WriteSetEntry.database == database,
                    WriteSetEntry.table == table,
                    same_partition,
                    WriteSetEntry.commit_id >= txn_id,
                    WriteSetEntry.txn_id != txn_id,
                    WriteSetEntry.operation.in_(_UPDATE_DELETE_CODES),
                )
                .order_by(WriteSetEntry.commit_id)
                .limit(1)
            ).first()
            if hit is not None:
                other_txn, other_commit, other_op = hit
                resource = f"{database}.{table}" + ("" if partition is None else f"/{partition}")
                return (
                    f"Transaction {txn_id} (commit {commit_id}) was aborted: write conflict on {resource!r} "
                    f"with transaction {other_txn} (committed at {other_commit}), operations "
                    f"{_OPERATION_NAME[operation]}/{_OPERATION_NAME[other_op]}; expected no concurrent "
                    "update or delete of the same table or partition; hint: open a new transaction, "
                    "re-read the snapshot and retry"
                )
        return None

    @staticmethod
    def _end_txn(c: sa.Connection, txn_id: int, state: str) -> None:
        """Set the txn's final state and drop its MIN_HISTORY_LEVEL row."""
        c.execute(_END_TXN_SQL, {"txn_id": txn_id, "state": state})
        c.execute(_FORGET_HISTORY_SQL, {"txn_id": txn_id})

    def _complete_txn(
        self,
        c: sa.Connection,
        txn_id: int,
        components: Sequence[Any],
        update_delete: str,
        now_ms: int,
    ) -> None:
        # TxnHandler.commitTxn: the compactor's own footprint ('p') only guards an abort of the
        # compaction txn; it is not a write, so it is not copied to COMPLETED_TXN_COMPONENTS.
        writes = [
            {
                "CTC_TXNID": txn_id,
                "CTC_DATABASE": db,
                "CTC_TABLE": tbl,
                "CTC_PARTITION": part,
                "CTC_TIMESTAMP": now_ms,
                "CTC_WRITEID": write_id,
                "CTC_UPDATE_DELETE": update_delete,
            }
            for db, tbl, part, op, write_id in components
            if op != _COMPACT_OPERATION
        ]
        if writes:
            c.execute(insert(CompletedTxnComponent), writes)
        if components:
            c.execute(delete(TxnComponent).where(TxnComponent.txn_id == txn_id))
        self._end_txn(c, txn_id, _COMMITTED)

    def abort_txn(self, txn_id: int) -> None:
        """See ``Metastore.abort_txn``."""
        with self._connection("abort_txn") as c:
            state, _ = self._locked_txn(c, txn_id)
            if state == _ABORTED:
                return
            if state == _COMMITTED:
                raise TxnNotOpenError(txn_id, TxnState.COMMITTED.value, "abort")
            self._end_txn(c, txn_id, _ABORTED)

    def heartbeat(self, txn_id: int, now: float | None = None) -> None:
        """See ``Metastore.heartbeat``."""
        now_ms = self._now_ms(now)
        with self._transaction("heartbeat") as s:
            self._lock_open_txn(s, txn_id, "heartbeat")
            s.execute(update(Txn).where(Txn.txn_id == txn_id).values(last_heartbeat=now_ms))

    def abort_timed_out_txns(self, timeout_seconds: float, now: float | None = None) -> list[TxnId]:
        """See ``Metastore.abort_timed_out_txns``."""
        if timeout_seconds < 0:
            raise InvalidMetastoreRequestError("reaper timeout", timeout_seconds, "seconds >= 0")
        cutoff = self._now_ms(now) - _ms(timeout_seconds)
        with self._transaction("abort_timed_out_txns") as s:
            # Rows locked in ID order, so two reapers never deadlock; a txn committing right now
            # holds its row, and PostgreSQL re-checks the WHERE clause once it is released.
            ids = list(
                s.scalars(
                    select(Txn.txn_id)
                    .where(Txn.state == _OPEN, Txn.last_heartbeat < cutoff)
                    .order_by(Txn.txn_id)
                    .with_for_update()
                )
            )
            if ids:
                s.execute(update(Txn).where(Txn.txn_id.in_(ids), Txn.state == _OPEN).values(state=_ABORTED))
                s.execute(delete(MinHistoryLevel).where(MinHistoryLevel.txn_id.in_(ids)))
        if ids:
            _LOG.info("Aborted %d transaction(s) that stopped heartbeating: %s", len(ids), ids)
        return [TxnId(i) for i in ids]

    def show_transactions(self) -> list[TxnInfo]:
        """See ``Metastore.show_transactions``."""
        with self._transaction("show_transactions") as s:
            rows = s.scalars(select(Txn).where(Txn.state.in_((_OPEN, _ABORTED))).order_by(Txn.txn_id))
            return [_txn_info(r) for r in rows]

    def min_open_txn_id(self) -> TxnId:
        """See ``Metastore.min_open_txn_id``."""
        with self._transaction("min_open_txn_id") as s:
            return TxnId(self._min_open_txn_id(s))

    def housekeeping(
        self, now: float | None = None, *, open_txn_timeout_seconds: float = DEFAULT_OPEN_TXN_TIMEOUT_SECONDS
    ) -> HousekeepingResult:
        """Delete transactions and write-ID rows no snapshot needs, so snapshots stop growing.

        Hive's AcidHouseKeeperService, in one database transaction:

        1. ``cleanEmptyAbortedAndCommittedTxns``: an aborted transaction with no
           ``TXN_COMPONENTS`` left is deleted from ``TXNS`` (it wrote nothing, or
           ``mark_cleaned`` forgot its writes once the cleaner had removed them): no file can hold
           its events, so its write IDs turn valid. Its ``TXN_TO_WRITE_ID`` rows stay, as in
           Hive, until step 2 reaches them: deleting the row of a table's highest write ID would
           lower the high watermark readers compute below the newest base. Only transactions
           below the newest one started more than ``open_txn_timeout_seconds`` ago (Hive's
           ``getOpenTxnTimeoutLowBoundaryTxnId``), which also keeps a just-finished
           transaction's record for its client's retry.
        2. ``cleanTxnToWriteIdTable``: ``TXN_TO_WRITE_ID`` rows of transactions below the low water
           mark (``MinUncommittedTxnIdHandler``: the next txn ID, the lowest open or aborted txn;
           and ``findMinTxnIdSeenOpen``: the lowest ``MIN_HISTORY_LEVEL`` of an open txn) are
           committed writes every snapshot an open transaction can take sees as valid. Unlike
           Hive, per table only the rows below every kept row are deleted: write IDs are not
           allocated in txn order, and deleting a row above a kept one would lower the write-ID
           high watermark readers compute (``GetValidWriteIdsForTableFunction``). For the same
           reason, when every row a table keeps is open or aborted, its newest deleted row is
           spared (``_newest_rows_to_spare``).
        3. Committed transactions below the boundary of step 1 that no write-ID row refers to.

        Idempotent: a second run with the same ``now`` deletes nothing. Snapshots held inside an
        open transaction (and reader leases, which store their write-ID lists) read exactly the
        same rows before and after; a ``ValidTxnList`` taken outside any transaction must be
        turned into write-ID lists promptly (as ``Warehouse.read`` and the cleaner do).

        Args:
            now: epoch seconds (default: the store's clock).
            open_txn_timeout_seconds: transactions started this recently are never deleted.

        Returns:
            What was deleted.

        Raises:
            InvalidMetastoreRequestError: a negative timeout.
            MetastoreError: the database failed (nothing was deleted).
        """
        if not open_txn_timeout_seconds >= 0:
            raise InvalidMetastoreRequestError("open txn timeout", open_txn_timeout_seconds, "seconds >= 0")
        cutoff = self._now_ms(now) - _ms(open_txn_timeout_seconds)
        with self._transaction("housekeeping") as s:
            # The NEXT_TXN_ID lock is open_txn's mutex: no txn opens (and registers its
            # MIN_HISTORY_LEVEL) while the low water mark is computed and applied.
            next_txn_id = self._next_txn_id_locked(s)
            boundary = s.scalar(select(func.max(Txn.txn_id)).where(Txn.started < cutoff))
            boundary = 0 if boundary is None else int(boundary)
            no_components = ~exists().where(TxnComponent.txn_id == Txn.txn_id)
            empty_aborted = list(
                s.scalars(
                    select(Txn.txn_id)
                    .where(Txn.state == _ABORTED, Txn.txn_id < boundary, no_components)
                    .order_by(Txn.txn_id)
                    .with_for_update()
                )
            )
            if empty_aborted:
                s.execute(delete(Txn).where(Txn.txn_id.in_(empty_aborted), no_components))
            # A MIN_HISTORY_LEVEL row whose txn has ended protects nothing (commit/abort delete it;
            # this only catches rows left by a crash between statements of another client).
            open_ids = select(Txn.txn_id).where(Txn.state == _OPEN)
            s.execute(delete(MinHistoryLevel).where(MinHistoryLevel.txn_id.not_in(open_ids)))
            candidates = [
                next_txn_id,
                s.scalar(select(func.min(Txn.txn_id)).where(Txn.state.in_((_OPEN, _ABORTED)))),
                s.scalar(select(func.min(MinHistoryLevel.min_open_txn_id))),
            ]
            low_water_mark = min(int(c) for c in candidates if c is not None)
            kept = aliased(TxnToWriteId)
            below_a_kept_row = exists().where(
                kept.database == TxnToWriteId.database,
                kept.table == TxnToWriteId.table,
                kept.txn_id >= low_water_mark,
                kept.write_id < TxnToWriteId.write_id,
            )
            goes = and_(TxnToWriteId.txn_id < low_water_mark, ~below_a_kept_row)
            spared = self._newest_rows_to_spare(s, goes)
            if spared:
                goes = and_(
                    goes,
                    ~or_(
                        *(
                            and_(
                                TxnToWriteId.database == database,
                                TxnToWriteId.table == table,
                                TxnToWriteId.write_id == write_id,
                            )
                            for database, table, write_id in spared
                        )
                    ),
                )
            result = s.execute(delete(TxnToWriteId).where(goes))
            deleted_rows = int(result.rowcount)  # type: ignore[attr-defined]
            no_write_ids = ~exists().where(TxnToWriteId.txn_id == Txn.txn_id)
            done_committed = list(
                s.scalars(
                    select(Txn.txn_id)
                    .where(Txn.state == _COMMITTED, Txn.txn_id < boundary, no_components, no_write_ids)
                    .order_by(Txn.txn_id)
                )
            )
            if done_committed:
                s.execute(delete(Txn).where(Txn.txn_id.in_(done_committed)))
        deleted = sorted([*empty_aborted, *done_committed])
        if deleted or deleted_rows:
            _LOG.info(
                "Housekeeping deleted %d transaction(s) and %d write-ID row(s); low water mark %d",
                len(deleted),
                deleted_rows,
                low_water_mark,
            )
        return HousekeepingResult(tuple(TxnId(t) for t in deleted), deleted_rows, TxnId(low_water_mark))

    @staticmethod
    def _newest_rows_to_spare(s: Session, goes: ColumnElement[bool]) -> list[tuple[str, str, int]]:
        """Per table, the newest going write-ID row when rows stay and all are open or aborted.

        ``GetValidWriteIdsForTableFunction`` reports the lowest invalid write ID as the high
        watermark when no row under it reads as committed ("compacted writes"); with only aborted
        rows left above the deleted ones, readers' hwm would drop below a base the compactor wrote
        over those aborted writes. One committed row left per table keeps the hwm where it was.
        """
        invalid_txns = select(Txn.txn_id).where(Txn.state.in_((_OPEN, _ABORTED)))
        spared: list[tuple[str, str, int]] = []
        newest_going = s.execute(
            select(TxnToWriteId.database, TxnToWriteId.table, func.max(TxnToWriteId.write_id))
            .where(goes)
            .group_by(TxnToWriteId.database, TxnToWriteId.table)
        ).all()
        for database, table, write_id in newest_going:
            same_table = (TxnToWriteId.database == database, TxnToWriteId.table == table, ~goes)
            stays = s.scalar(select(TxnToWriteId.write_id).where(*same_table).limit(1))
            stays_valid = s.scalar(
                select(TxnToWriteId.write_id)
                .where(*same_table, TxnToWriteId.txn_id.not_in(invalid_txns))
                .limit(1)
            )
            # With no row left at all, NEXT_WRITE_ID gives the same hwm (every write ID is done).
            if stays is not None and stays_valid is None:
                spared.append((str(database), str(table), int(write_id)))
        return spared
