"""What Hive 4 does differently, for the adapter: its queue's cleaner columns, read from the backend.

::

    Hive4QueuePart (mixed into HiveQueueSql, same connection)
      hive4_ready_for_cleaning()   'r' rows with CQ_NEXT_TXN_ID, CQ_TXN_ID, CQ_COMMIT_TIME, ...
      hive4_queued() / hive4_get(id)
      hive4_mark_cleaned(id)       Hive 4's MarkCleanedFunction statements, when the server's
                                   mark_cleaned cannot (4.0.1 on PostgreSQL, unpartitioned tables)
    compaction_from_hive4_row(row) -> CompactionInfo  (CQ_NEXT_TXN_ID is the txn high water mark at
                                   commit on Hive 4: the port's next txn ID is one more)

Hive 4 has Thrift calls for every worker step (``find_next_compact2``, ``update_compactor_state``,
``mark_compacted``, ``mark_failed``, ``mark_cleaned``), used by ``metastore``; but no call lists the
entries ready for cleaning with the columns its cleaner's rules read, so they are read here, read
only (Hive 4's DDL quotes upper-case names: the table construct quotes them for each dialect).
Hive 2.3's and 3.1's queue (written by SQL: no worker calls there) is ``queue_sql``'s.

Invariants: nothing here writes Hive 4's queue except ``hive4_mark_cleaned``, one transaction,
guarded by the row's 'r' state.
Errors: ``MetastoreError`` (database errors, chained), ``NoSuchCompactionError``,
``CompactionStateError``, ``HiveMetastoreCapabilityError`` (the backend is not Hive 4's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import sqlalchemy as sa
from sqlalchemy import text

from acid_core.errors import CompactionStateError, HiveMetastoreCapabilityError, NoSuchCompactionError
from acid_core.metastore.hive.values import STATE_BY_CODE, TYPE_BY_CODE
from acid_core.metastore.port import CompactionInfo, CompactionState, CompactionType
from acid_core.types import TxnId, WriteId

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from contextlib import AbstractContextManager

    from sqlalchemy.engine import Connection, Engine

__all__ = ["Hive4QueuePart", "Hive4QueueRow", "compaction_from_hive4_row", "delete_cleaned_aborts"]

# TxnStore.ABORT_TXN_CLEANUP_TYPE: a queue entry of Hive 4's Initiator that only removes aborted
# writes' files; mark_cleaned of a compaction of the same table (partition) deletes it too.
_ABORT_TXN_CLEANUP = "c"


class _Backend(Protocol):
    """What ``Hive4QueuePart`` needs of the queue it is mixed into (``HiveQueueSql``)."""

    url: str
    _engine: Engine

    @property
    def is_hive4(self) -> bool: ...

    def _tx(self, operation: str) -> AbstractContextManager[Connection]: ...

    def _now_ms(self) -> int: ...

    def _hive4_rows(self, where: sa.ColumnElement[bool]) -> list[Hive4QueueRow]: ...


@dataclass(frozen=True, slots=True)
class Hive4QueueRow:
    """One row of Hive 4's COMPACTION_QUEUE as its ``findReadyToClean`` reads it (times in epoch ms)."""

    id: int
    database: str
    table: str
    partition: str | None
    state: str
    type: str
    highest_write_id: int | None
    next_txn_id: int | None
    txn_id: int | None
    commit_time_ms: int | None
    retry_retention_ms: int | None
    error_message: str | None


_HIVE4_QUEUE = sa.table(
    "COMPACTION_QUEUE",
    *(
        sa.column(name)
        for name in (
            "CQ_ID", "CQ_DATABASE", "CQ_TABLE", "CQ_PARTITION", "CQ_STATE", "CQ_TYPE", "CQ_HIGHEST_WRITE_ID",
            "CQ_NEXT_TXN_ID", "CQ_TXN_ID", "CQ_COMMIT_TIME", "CQ_RETRY_RETENTION", "CQ_ERROR_MESSAGE",
        )
    ),
)  # fmt: skip


class Hive4QueuePart:
    """Hive 4's queue rows and ``MarkCleanedFunction`` by SQL (mixed into ``HiveQueueSql``)."""

    def hive4_ready_for_cleaning(self: _Backend) -> list[Hive4QueueRow]:
        """Hive 4's 'ready for cleaning' rows with the columns its ``findReadyToClean`` reads.

        Hive 4 has no Thrift call for it (its Cleaner runs inside the HMS); the rules are applied
        by the caller. Read only: every transition on Hive 4 is a Thrift call.
        """
        return self._hive4_rows(_HIVE4_QUEUE.c.CQ_STATE == "r")

    def hive4_queued(self: _Backend) -> list[Hive4QueueRow]:
        """Every row of a Hive 4 backend's COMPACTION_QUEUE (initiated, working, ready for cleaning)."""
        return self._hive4_rows(sa.true())

    def hive4_get(self: _Backend, compaction_id: int) -> Hive4QueueRow | None:
        """One queued row of a Hive 4 backend, or None when it is no longer queued."""
        rows = self._hive4_rows(_HIVE4_QUEUE.c.CQ_ID.in_([compaction_id]))
        return rows[0] if rows else None

    def hive4_mark_cleaned(
        self: _Backend,
        compaction_id: int,
        *,
        has_uncompacted_aborts: bool,
        aborted_write_ids: Iterable[int] = (),
    ) -> None:
        """Hive 4's ``MarkCleanedFunction`` by SQL, for what the server's own call cannot do.

        Two cases. Hive 4.0.1's ``mark_cleaned`` fails on PostgreSQL for an unpartitioned table: its
        ``(:partition is NULL OR "TC_PARTITION" = :partition)`` binds an untyped NULL, which
        PostgreSQL refuses ("could not determine data type of parameter"), and the transaction is
        aborted (found on a real 4.0.1 server). And the Thrift struct cannot carry the cleaner's
        ``hasUncompactedAborts`` / ``writeIds``, which Hive's own Cleaner sets inside the server.
        The same statements as 4.0.1's, with the partition condition written for the value at
        hand, in one transaction: the row moves to history 's' (``CC_END`` now) and is deleted
        with the table's (partition's) abort-cleanup entries (type 'c'); COMPLETED_TXN_COMPONENTS
        up to its highest write ID are forgotten; the aborted TXN_COMPONENTS up to the highest
        write ID when no delta that stays holds aborted writes (``has_uncompacted_aborts`` False),
        else only those of ``aborted_write_ids`` (the aborted writes the cleaner removed). The
        row must still be 'r'.

        Raises:
            NoSuchCompactionError: the entry is not queued (any more).
            CompactionStateError: it is not 'ready for cleaning'.
        """
        q = self._engine.dialect.identifier_preparer.quote_identifier
        columns = [
            "ID", "DATABASE", "TABLE", "PARTITION", "STATE", "TYPE", "TBLPROPERTIES", "WORKER_ID", "START",
            "END", "RUN_AS", "HIGHEST_WRITE_ID", "META_INFO", "HADOOP_JOB_ID", "ERROR_MESSAGE", "ENQUEUE_TIME",
            "WORKER_VERSION", "INITIATOR_ID", "INITIATOR_VERSION", "NEXT_TXN_ID", "TXN_ID", "COMMIT_TIME",
            "POOL_NAME", "NUMBER_OF_BUCKETS", "ORDER_BY",
        ]  # fmt: skip
        values = {"STATE": ":succeeded", "END": ":end_ms"}
        select = ", ".join(values.get(c, q(f"CQ_{c}")) for c in columns)
        with self._tx("mark_cleaned") as c:
            row = c.execute(
                sa.select(*_HIVE4_QUEUE.c).where(_HIVE4_QUEUE.c.CQ_ID.in_([compaction_id])).with_for_update()
            ).first()
            if row is None:
                raise NoSuchCompactionError(compaction_id)
            entry = Hive4QueueRow(*row)
            if entry.state != "r":
                raise CompactionStateError(
                    compaction_id, entry.state, "mark cleaned", "'r' (ready for cleaning)"
                )
            c.execute(
                text(
                    f"INSERT INTO {q('COMPLETED_COMPACTIONS')} ({', '.join(q(f'CC_{c}') for c in columns)}) "
                    f"SELECT {select} FROM {q('COMPACTION_QUEUE')} WHERE {q('CQ_ID')} = :id"
                ),
                {"succeeded": "s", "end_ms": self._now_ms(), "id": compaction_id},
            )
            params: dict[str, object] = {
                "db": entry.database,
                "tbl": entry.table,
                "part": entry.partition,
                "state": "a",
            }
            completed = (
                f"DELETE FROM {q('COMPLETED_TXN_COMPONENTS')} WHERE {q('CTC_DATABASE')} = :db "
                f"AND {q('CTC_TABLE')} = :tbl"
            )
            if entry.partition is not None:
                completed += f" AND {q('CTC_PARTITION')} = :part"
            if entry.highest_write_id:
                completed += f" AND {q('CTC_WRITEID')} <= :hi"
                params["hi"] = int(entry.highest_write_id)
            c.execute(text(completed), params)
            aborted = (
                f"DELETE FROM {q('TXN_COMPONENTS')} WHERE {q('TC_TXNID')} IN (SELECT {q('TXN_ID')} FROM "
                f"{q('TXNS')} WHERE {q('TXN_STATE')} = :state) AND {q('TC_DATABASE')} = :db "
                f"AND {q('TC_TABLE')} = :tbl"
            )
            if entry.partition is not None:
                aborted += f" AND {q('TC_PARTITION')} = :part"
            delete_cleaned_aborts(
                c,
                aborted,
                q("TC_WRITEID"),
                params,
                has_uncompacted_aborts=has_uncompacted_aborts is not False,
                highest=entry.highest_write_id,
                removed=aborted_write_ids,
            )
            queue = (
                f"DELETE FROM {q('COMPACTION_QUEUE')} WHERE {q('CQ_ID')} = :id OR ({q('CQ_DATABASE')} = :db "
            )
            queue += f"AND {q('CQ_TABLE')} = :tbl AND {q('CQ_TYPE')} = :cleanup"
            queue += f" AND {q('CQ_PARTITION')} = :part)" if entry.partition is not None else ")"
            c.execute(text(queue), {**params, "id": compaction_id, "cleanup": _ABORT_TXN_CLEANUP})

    def _hive4_rows(self: _Backend, where: sa.ColumnElement[bool]) -> list[Hive4QueueRow]:
        if not self.is_hive4:
            raise HiveMetastoreCapabilityError(
                self.url,
                "read Hive 4's compaction queue",
                "its VERSION row does not say 4.x",
                "set ACIDFLOW_HMS_DB to the backend database of this Hive 4 metastore",
            )
        # Hive 4's DDL names are upper case (quoted on PostgreSQL, case-sensitive on MySQL): the
        # table construct quotes them for each dialect.
        query = sa.select(*_HIVE4_QUEUE.c).where(where).order_by(_HIVE4_QUEUE.c.CQ_ID)
        with self._tx("find_ready_to_clean") as c:
            return [Hive4QueueRow(*r) for r in c.execute(query)]


def delete_cleaned_aborts(
    c: Connection,
    statement: str,
    column: str,
    params: Mapping[str, object],
    *,
    has_uncompacted_aborts: bool,
    highest: int | None,
    removed: Iterable[int],
) -> None:
    """Forget the aborted writes a clean removed (Hive 4's ``MarkCleanedFunction.removeTxnComponents``).

    ``statement`` deletes the table's (partition's) TXN_COMPONENTS of aborted txns; ``column``
    holds what the cleaner's IDs are (the write ID; 2.3: the txn ID). Every aborted write up to
    ``highest`` when no delta that stays holds aborted writes, else only ``removed``, else none.
    """
    ids = sorted({int(i) for i in removed})
    if not has_uncompacted_aborts and highest:
        c.execute(text(f"{statement} AND {column} <= :hi"), {**params, "hi": int(highest)})
    elif ids:
        expanding = text(f"{statement} AND {column} IN :ids").bindparams(sa.bindparam("ids", expanding=True))
        c.execute(expanding, {**params, "ids": ids})


def compaction_from_hive4_row(row: Hive4QueueRow) -> CompactionInfo:
    """The port's ``CompactionInfo`` of a Hive 4 COMPACTION_QUEUE row (its own cleaner columns)."""
    return CompactionInfo(
        id=int(row.id),
        table=f"{row.database}.{row.table}",
        partition=row.partition,
        state=STATE_BY_CODE.get(str(row.state), CompactionState.FAILED),
        compaction_type=TYPE_BY_CODE.get(str(row.type), CompactionType.MAJOR),
        properties={},
        enqueue_time=None,
        highest_write_id=None if row.highest_write_id is None else WriteId(int(row.highest_write_id)),
        # Hive 4's commitTxn records the txn high water mark at the commit (MAX(TXN_ID), the
        # compaction's own txn when nothing newer began) and its cleaner waits for
        # CQ_NEXT_TXN_ID <= the lowest open txn; the port's next_txn_id is the next txn ID (2.3's
        # meaning, and how the cleaner caps its view: txns below it), so one more.
        next_txn_id=None if row.next_txn_id is None else TxnId(int(row.next_txn_id) + 1),
        txn_id=None if row.txn_id is None else TxnId(int(row.txn_id)),
        commit_time=None if row.commit_time_ms is None else int(row.commit_time_ms) / 1000,
        error_message=row.error_message,
        retry_retention=int(row.retry_retention_ms or 0) / 1000,
    )
