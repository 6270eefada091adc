"""``SqlMetastore``'s compaction queue: enqueue, claim, compacted, ready to clean, cleaned, history.

Hive's CompactionTxnHandler: COMPACTION_QUEUE rows move initiated -> working -> ready for
cleaning -> succeeded (to COMPLETED_COMPACTIONS), or failed / refused / aborted.

Not here: the decisions (``compaction``). Errors: ``NoSuchCompactionError``, ``CompactionStateError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import delete, or_, select, update

from acid_core.errors import (
    InvalidMetastoreRequestError,
    MetastoreError,
    NoSuchCompactionError,
)
from acid_core.metastore.sql.models import (
    CompactionQueueEntry,
    CompletedCompaction,
    CompletedTxnComponent,
    InitiatorMarkRow,
    NextCompactionQueueId,
    Txn,
    TxnComponent,
)
from acid_core.writeids import (
    LONG_MAX,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from sqlalchemy.orm import Session

    from acid_core.writeids import ValidWriteIdList

from acid_core.metastore.port import (
    CompactionInfo,
    CompactionState,
    CompactionType,
    InitiatorMark,
    PartitionChanges,
    split_table_name,
)
from acid_core.metastore.sql.base import (
    _ABORTED,
    _COMMITTED,
    _COMPACT_OPERATION,
    _COMPACTION_STATE_CODE,
    _COMPACTION_TYPE_CODE,
    SqlMetastoreBase,
    _check_id,
    _compaction_info,
    _ms,
    _same_partition,
)


class SqlCompactionQueuePart(SqlMetastoreBase):
    """``SqlMetastore``'s compaction queue."""

    def enqueue_compaction(
        self,
        table: str,
        partition: str | None,
        compaction_type: CompactionType,
        *,
        properties: Mapping[str, str] | None = None,
        initiator_id: str | None = None,
        initiator_version: str | None = None,
        run_as: str | None = None,
        now: float | None = None,
        number_of_buckets: int = 0,
        order_by: str | None = None,
    ) -> int:
        """See ``Metastore.enqueue_compaction``."""
        database, name = split_table_name(table)
        code = _COMPACTION_TYPE_CODE[CompactionType(compaction_type)]
        now_ms = self._now_ms(now)
        with self._transaction("enqueue_compaction") as s:
            self._table_row(s, database, name)
            # TxnHandler.compact: an initiated or working compaction of the same target is returned.
            existing = s.scalar(
                select(CompactionQueueEntry.id)
                .where(
                    CompactionQueueEntry.database == database,
                    CompactionQueueEntry.table == name,
                    _same_partition(CompactionQueueEntry.partition, partition),
                    CompactionQueueEntry.state.in_(("i", "w")),
                )
                .order_by(CompactionQueueEntry.id)
                .limit(1)
            )
            if existing is not None:
                return int(existing)
            compaction_id = self._next_compaction_id(s)
            s.add(
                CompactionQueueEntry(
                    id=compaction_id,
                    database=database,
                    table=name,
                    partition=partition,
                    state=_COMPACTION_STATE_CODE[CompactionState.INITIATED],
                    compaction_type=code,
                    properties=dict(properties) if properties else None,
                    enqueue_time=now_ms,
                    run_as=run_as,
                    initiator_id=initiator_id,
                    initiator_version=initiator_version,
                    retry_retention=0,
                    number_of_buckets=number_of_buckets or None,
                    order_by=order_by,
                )
            )
            return compaction_id

    @staticmethod
    def _next_compaction_id(s: Session) -> int:
        next_id = int(s.execute(select(NextCompactionQueueId.next_id).with_for_update()).scalar_one())
        s.execute(update(NextCompactionQueueId).values(next_id=next_id + 1))
        return next_id

    def find_next_to_compact(
        self, worker_id: str, worker_version: str | None = None, now: float | None = None
    ) -> CompactionInfo | None:
        """See ``Metastore.find_next_to_compact``."""
        now_ms = self._now_ms(now)
        with self._transaction("find_next_to_compact") as s:
            candidates = s.scalars(
                select(CompactionQueueEntry.id)
                .where(CompactionQueueEntry.state == "i")
                .order_by(CompactionQueueEntry.enqueue_time, CompactionQueueEntry.id)
            ).all()
            for compaction_id in candidates:
                # Claim with a state check, as Hive does: a concurrent worker may have taken it.
                claimed = s.execute(
                    update(CompactionQueueEntry)
                    .where(CompactionQueueEntry.id == compaction_id, CompactionQueueEntry.state == "i")
                    .values(state="w", worker_id=worker_id, worker_version=worker_version, start=now_ms)
                )
                if claimed.rowcount == 1:  # type: ignore[attr-defined]
                    row = s.get(CompactionQueueEntry, compaction_id, populate_existing=True)
                    return None if row is None else _compaction_info(row)
            return None

    def claim_compaction(
        self, compaction_id: int, worker_id: str, worker_version: str | None = None, now: float | None = None
    ) -> CompactionInfo:
        """See ``Metastore.claim_compaction``."""
        now_ms = self._now_ms(now)
        with self._transaction("claim_compaction") as s:
            row = self._queue_row(s, compaction_id)  # locked FOR UPDATE: one claimer wins
            self._require_state(row, "claim", (CompactionState.INITIATED,))
            row.state, row.worker_id, row.worker_version, row.start = "w", worker_id, worker_version, now_ms
            s.flush()
            return _compaction_info(row)

    def update_compactor_state(self, compaction_id: int, txn_id: int, highest_write_id: int) -> None:
        """See ``Metastore.update_compactor_state``."""
        with self._transaction("update_compactor_state") as s:
            row = self._queue_row(s, compaction_id)
            self._require_state(row, "attach a transaction to", (CompactionState.WORKING,))
            self._lock_open_txn(s, txn_id, "attach a compaction to")
            row.txn_id = txn_id
            row.highest_write_id = highest_write_id
            # CompactionTxnHandler.updateCompactorState: should the compaction txn abort, this row
            # keeps its TXNS row (and so its half-written base_N_vT, invalid by its visibility
            # suffix) until a later compaction's cleaner has removed what it may have written.
            footprint = select(TxnComponent.id).where(
                TxnComponent.txn_id == txn_id, TxnComponent.operation == _COMPACT_OPERATION
            )
            if s.scalar(footprint) is None:
                s.add(
                    TxnComponent(
                        txn_id=txn_id,
                        database=row.database,
                        table=row.table,
                        partition=row.partition,
                        operation=_COMPACT_OPERATION,
                        write_id=highest_write_id,
                    )
                )

    def mark_compacted(self, compaction_id: int, now: float | None = None) -> None:
        """See ``Metastore.mark_compacted``."""
        now_ms = self._now_ms(now)
        with self._transaction("mark_compacted") as s:
            row = self._queue_row(s, compaction_id)
            self._require_state(row, "mark compacted", (CompactionState.WORKING,))
            row.state = _COMPACTION_STATE_CODE[CompactionState.READY_FOR_CLEANING]
            row.worker_id = None
            if row.txn_id is None:
                # No compaction txn: this moment is its commit; record the next txn ID now.
                row.next_txn_id = self._next_txn_id_locked(s)
                row.commit_time = now_ms
            else:
                txn = s.get(Txn, row.txn_id)
                if txn is not None and txn.state == _COMMITTED and row.next_txn_id is None:
                    row.next_txn_id = self._next_txn_id_locked(s)
                    row.commit_time = now_ms

    def find_ready_to_clean(
        self, min_open_txn_id: int | None = None, retention_seconds: float = 0, now: float | None = None
    ) -> list[CompactionInfo]:
        """See ``Metastore.find_ready_to_clean``.

        Hive's ReadyToCleanHandler: state 'r'; committed more than ``retention_seconds`` (plus the
        entry's retry retention) ago; ``next_txn_id <= min_open_txn_id`` so every transaction that
        could still read the compacted deltas has finished; and per table/partition only the entry
        with the lowest highest-write-ID of all those past their retention, so a newer compaction
        is never cleaned before an older one that still waits for readers. Unlike Hive, an entry whose compaction txn has not
        committed yet (``next_txn_id`` unset) is never ready: there is no legacy HMS to honour.
        """
        now_ms = self._now_ms(now)
        with self._transaction("find_ready_to_clean") as s:
            water_mark = self._min_open_txn_id(s) if min_open_txn_id is None else min_open_txn_id
            # Hive's ReadyToCleanHandler: the lowest CQ_HIGHEST_WRITE_ID per partition is taken over
            # every 'r' entry past its retention (an entry in retry back-off does not block newer
            # ones), and only then must that entry's txns have ended (CQ_NEXT_TXN_ID <= water mark).
            # An entry whose compaction txn never committed has no output to clean and blocks nothing.
            rows = s.scalars(
                select(CompactionQueueEntry)
                .where(
                    CompactionQueueEntry.state == "r",
                    CompactionQueueEntry.next_txn_id.is_not(None),
                    or_(
                        CompactionQueueEntry.commit_time.is_(None),
                        CompactionQueueEntry.commit_time
                        < now_ms - _ms(retention_seconds) - CompactionQueueEntry.retry_retention,
                    ),
                )
                .order_by(CompactionQueueEntry.id)
            ).all()
            lowest: dict[tuple[str, str, str | None], int] = {}
            for row in rows:
                key = (row.database, row.table, row.partition)
                highest = row.highest_write_id if row.highest_write_id is not None else LONG_MAX
                lowest[key] = min(lowest.get(key, LONG_MAX), highest)
            return [
                _compaction_info(row)
                for row in rows
                if (row.highest_write_id if row.highest_write_id is not None else LONG_MAX)
                == lowest[(row.database, row.table, row.partition)]
                and row.next_txn_id is not None  # for mypy: the query excluded NULL
                and row.next_txn_id <= water_mark
            ]

    def _to_history(self, s: Session, row: CompactionQueueEntry, state: CompactionState, end_ms: int) -> None:
        s.add(
            CompletedCompaction(
                id=row.id,
                database=row.database,
                table=row.table,
                partition=row.partition,
                state=_COMPACTION_STATE_CODE[state],
                compaction_type=row.compaction_type,
                properties=row.properties,
                worker_id=row.worker_id,
                enqueue_time=row.enqueue_time,
                start=row.start,
                end=end_ms,
                run_as=row.run_as,
                highest_write_id=row.highest_write_id,
                error_message=row.error_message,
                next_txn_id=row.next_txn_id,
                txn_id=row.txn_id,
                commit_time=row.commit_time,
                initiator_id=row.initiator_id,
                initiator_version=row.initiator_version,
                worker_version=row.worker_version,
                number_of_buckets=row.number_of_buckets,
                order_by=row.order_by,
            )
        )
        s.delete(row)

    def mark_cleaned(
        self,
        compaction_id: int,
        now: float | None = None,
        *,
        has_uncompacted_aborts: bool | None = None,
        aborted_write_ids: Iterable[int] = (),
    ) -> None:
        """See ``Metastore.mark_cleaned``."""
        now_ms = self._now_ms(now)
        removed = sorted({int(w) for w in aborted_write_ids})
        with self._transaction("mark_cleaned") as s:
            row = self._queue_row(s, compaction_id)
            self._require_state(row, "mark cleaned", (CompactionState.READY_FOR_CLEANING,))
            self._forget_cleaned_aborts(s, row, has_uncompacted_aborts, removed)
            if row.highest_write_id is not None:
                # CompactionTxnHandler.markCleaned: the compacted writes need no more tracking.
                s.execute(
                    delete(CompletedTxnComponent).where(
                        CompletedTxnComponent.database == row.database,
                        CompletedTxnComponent.table == row.table,
                        _same_partition(CompletedTxnComponent.partition, row.partition),
                        CompletedTxnComponent.write_id <= row.highest_write_id,
                    )
                )
            self._to_history(s, row, CompactionState.SUCCEEDED, now_ms)

    @staticmethod
    def _forget_cleaned_aborts(
        s: Session, row: CompactionQueueEntry, has_uncompacted_aborts: bool | None, removed: Sequence[int]
    ) -> None:
        # MarkCleanedFunction.removeTxnComponents: the cleaner removed the aborted writes up to the
        # highest write ID (no delta still mixes aborted and valid writes), or exactly `removed`.
        if row.next_txn_id is None:
            return
        if has_uncompacted_aborts is False and row.highest_write_id is not None:
            which = TxnComponent.write_id <= row.highest_write_id
        elif removed:
            which = TxnComponent.write_id.in_(removed)
        else:
            return
        # Unlike Hive, only txns below the compaction's next txn ID: find_ready_to_clean made sure
        # they had all ended before the cleaner listed the directory, so it saw their files as
        # aborted. A compaction txn that began and aborted later (its own 'p' footprint may carry
        # a write ID <= ours) wrote a directory this cleaner never saw.
        aborted = select(Txn.txn_id).where(Txn.state == _ABORTED, Txn.txn_id < row.next_txn_id)
        s.execute(
            delete(TxnComponent).where(
                TxnComponent.txn_id.in_(aborted),
                TxnComponent.database == row.database,
                TxnComponent.table == row.table,
                _same_partition(TxnComponent.partition, row.partition),
                which,
            )
        )

    def _fail(
        self,
        compaction_id: int,
        state: CompactionState,
        allowed: tuple[CompactionState, ...],
        error_message: str | None,
        now: float | None,
    ) -> None:
        now_ms = self._now_ms(now)
        with self._transaction(f"mark {state.value}") as s:
            row = self._queue_row(s, compaction_id)
            self._require_state(row, f"mark {state.value}", allowed)
            if error_message is not None:
                row.error_message = error_message
            self._to_history(s, row, state, now_ms)

    def mark_failed(self, compaction_id: int, error_message: str, now: float | None = None) -> None:
        """See ``Metastore.mark_failed``."""
        allowed = (CompactionState.INITIATED, CompactionState.WORKING, CompactionState.READY_FOR_CLEANING)
        self._fail(compaction_id, CompactionState.FAILED, allowed, error_message, now)

    def set_cleaner_retry_retention(
        self, compaction_id: int, retry_retention_seconds: float, error_message: str
    ) -> None:
        """See ``Metastore.set_cleaner_retry_retention``."""
        if not retry_retention_seconds >= 0:
            raise InvalidMetastoreRequestError(
                "cleaner retry retention", retry_retention_seconds, "a number of seconds >= 0"
            )
        with self._transaction("set_cleaner_retry_retention") as s:
            row = self._queue_row(s, compaction_id)
            self._require_state(row, "retry cleaning", (CompactionState.READY_FOR_CLEANING,))
            row.retry_retention = _ms(retry_retention_seconds)
            row.error_message = error_message
            row.cleaner_start = None

    def mark_refused(self, compaction_id: int, error_message: str, now: float | None = None) -> None:
        """See ``Metastore.mark_refused``."""
        allowed = (CompactionState.INITIATED, CompactionState.WORKING)
        self._fail(compaction_id, CompactionState.REFUSED, allowed, error_message, now)

    def abort_compaction(self, compaction_id: int, now: float | None = None) -> None:
        """See ``Metastore.abort_compaction``."""
        self._fail(compaction_id, CompactionState.ABORTED, (CompactionState.INITIATED,), None, now)

    def record_did_not_initiate(
        self,
        table: str,
        partition: str | None,
        compaction_type: CompactionType,
        error_message: str,
        now: float | None = None,
    ) -> int:
        """See ``Metastore.record_did_not_initiate``."""
        database, name = split_table_name(table)
        code = _COMPACTION_TYPE_CODE[CompactionType(compaction_type)]
        now_ms = self._now_ms(now)
        with self._transaction("record_did_not_initiate") as s:
            compaction_id = self._next_compaction_id(s)
            s.add(
                CompletedCompaction(
                    id=compaction_id,
                    database=database,
                    table=name,
                    partition=partition,
                    state=_COMPACTION_STATE_CODE[CompactionState.DID_NOT_INITIATE],
                    compaction_type=code,
                    enqueue_time=now_ms,
                    start=now_ms,
                    end=now_ms,
                    error_message=error_message,
                )
            )
            return compaction_id

    def get_compaction(self, compaction_id: int) -> CompactionInfo:
        """See ``Metastore.get_compaction``."""
        _check_id("compaction ID", compaction_id)
        with self._transaction("get_compaction") as s:
            row: CompactionQueueEntry | CompletedCompaction | None = s.get(
                CompactionQueueEntry, compaction_id
            )
            if row is None:
                row = s.get(CompletedCompaction, compaction_id)
            if row is None:
                raise NoSuchCompactionError(compaction_id)
            return _compaction_info(row)

    def show_compactions(self, table: str | None = None) -> list[CompactionInfo]:
        """See ``Metastore.show_compactions``."""
        with self._transaction("show_compactions") as s:
            queue = select(CompactionQueueEntry)
            history = select(CompletedCompaction)
            if table is not None:
                database, name = split_table_name(table)
                queue = queue.where(
                    CompactionQueueEntry.database == database, CompactionQueueEntry.table == name
                )
                history = history.where(
                    CompletedCompaction.database == database, CompletedCompaction.table == name
                )
            rows: list[CompactionQueueEntry | CompletedCompaction] = [*s.scalars(queue), *s.scalars(history)]
            return sorted((_compaction_info(r) for r in rows), key=lambda c: c.id)

    # Initiator cycles ------------------------------------------------------------------------
    def load_initiator_marks(self) -> dict[str, InitiatorMark]:
        """See ``Metastore.load_initiator_marks``: one query for the whole cycle."""
        with self._transaction("load_initiator_marks") as s:
            rows = s.execute(
                select(
                    InitiatorMarkRow.database,
                    InitiatorMarkRow.table,
                    InitiatorMarkRow.started_at,
                    InitiatorMarkRow.fingerprint,
                    InitiatorMarkRow.write_ids,
                )
            ).all()
        return {
            f"{db}.{tbl}": InitiatorMark(f"{db}.{tbl}", started_at / 1000, fingerprint, write_ids)
            for db, tbl, started_at, fingerprint, write_ids in rows
        }

    def commit_initiator_mark(self, mark: InitiatorMark) -> None:
        """See ``Metastore.commit_initiator_mark``: an update, or an insert for a table's first mark.

        Two initiators racing on a table's first mark: the loser's insert fails and is dropped
        (the winner's mark is just as true: its cycle also decided every partition).
        """
        database, name = split_table_name(mark.table)
        values = {
            "started_at": _ms(mark.started_at),
            "fingerprint": mark.fingerprint,
            "write_ids": mark.write_ids,
        }
        try:
            with self._transaction("commit_initiator_mark") as s:
                updated = s.execute(
                    update(InitiatorMarkRow)
                    .where(InitiatorMarkRow.database == database, InitiatorMarkRow.table == name)
                    .values(**values)
                )
                if updated.rowcount == 0:  # type: ignore[attr-defined]
                    s.add(InitiatorMarkRow(database=database, table=name, **values))
        except MetastoreError:
            if mark.table not in self.load_initiator_marks():
                raise

    def list_partition_changes(
        self,
        table: str,
        since: float,
        *,
        previous_write_ids: ValidWriteIdList | None = None,
        write_ids: ValidWriteIdList | None = None,
    ) -> PartitionChanges:
        """See ``Metastore.list_partition_changes`` (Hive's ``findPotentialCompactions``, one table).

        By time (``CTC_TIMESTAMP``, written by acidflow's own clock here); the write-ID lists
        are not needed.
        """
        database, name = split_table_name(table)
        with self._transaction("list_partition_changes") as s:
            written = s.execute(
                select(CompletedTxnComponent.partition)
                .where(
                    CompletedTxnComponent.database == database,
                    CompletedTxnComponent.table == name,
                    CompletedTxnComponent.timestamp >= _ms(since),
                )
                .distinct()
            ).scalars()
            written_set = frozenset(written)
            aborted = s.execute(
                select(TxnComponent.partition)
                .join(Txn, Txn.txn_id == TxnComponent.txn_id)
                .where(
                    TxnComponent.database == database,
                    TxnComponent.table == name,
                    Txn.state == _ABORTED,
                )
                .distinct()
            ).scalars()
            return PartitionChanges(written_set, frozenset(aborted))
