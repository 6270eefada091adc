"""Streaming ingest as Hive Streaming V2 does it: many small transactions, one ``delta_x_y`` per batch.

::

    with StreamingConnection(warehouse, "db.events", txns_per_batch=3) as conn:
        conn.begin_transaction(); conn.write(rows); conn.commit_transaction()    write ID 11
        conn.begin_transaction(); conn.write(rows); conn.abort_transaction()     write ID 12
        conn.begin_transaction(); conn.write(rows); conn.commit_transaction()    write ID 13

    events/delta_0000011_0000013/          no statement suffix (AcidUtils.deltaSubdir(min, max))
        _orc_acid_version                  "2"
        bucket_00000                       events of write IDs 11, 12, 13 (currentTransaction);
                                           rowId restarts at 0 for each write ID, as
                                           OrcRecordUpdater.insert resets it per transaction
        bucket_00000_flush_length          while the batch is open: big-endian longs, the last is
                                           the readable length (OrcAcidUtils.getLastFlushLength)

A batch opens ``txns_per_batch`` transactions and allocates their write IDs up front (Hive's
``openTxns`` + ``allocateTableWriteIds``), so the directory name is known before the first row.
Write IDs are allocated one by one; if another writer's allocation falls in between, the batch is
split into one directory per contiguous run (a directory must never span a write ID it does not
own, or ``getAcidState`` would hide the other writer's delta as covered).

How a commit becomes readable without a half-written ORC file ever being visible: the ORC writer
cannot write Hive's intermediate footers, so each commit rewrites the bucket file with every event
of the batch so far into a hidden temporary file, records its length in the side file, then
renames it over ``bucket_N`` (atomic on POSIX). Readers use ``min(file size, last flush length)``,
which is always a complete file. The cost is a rewrite per commit: batches are meant to be small.
Events of aborted transactions stay in the file; readers skip them (aborted write ID).

Invariants: ``close`` aborts the batch's unused transactions and removes the side files.
Concurrency: one connection per thread; many connections may stream into one table.
Not here: SQL, bucketing rules (``transaction.assign_buckets``).
Errors: ``UnsupportedStatementError`` (a non-ACID table, a partitioned table without a static
partition, a call out of order), and whatever the metastore or writer raise.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

from acid_core.errors import AcidError, PartitionAlreadyExistsError, UnsupportedStatementError
from acid_core.metastore import TableType, WriteOperation, format_partition_name
from acid_core.orc.writer import insert_events, write_acid_version_file, write_event_file
from acid_core.paths import DeltaDir, format_bucket_file, side_file_name
from acid_core.writes.rows import assign_buckets, row_type_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from acid_core.fs import FileIO
    from acid_core.metastore import Table
    from acid_core.writes.transaction import Warehouse

__all__ = ["DEFAULT_TXNS_PER_BATCH", "StreamingConnection"]

DEFAULT_TXNS_PER_BATCH: Final = 10


@dataclass
class _Directory:
    delta: DeltaDir
    path: str
    events: dict[int, list[pa.RecordBatch]] = field(default_factory=dict)
    flushes: dict[int, list[int]] = field(default_factory=dict)
    generation: int = 0


class StreamingConnection:
    """A Hive Streaming V2 connection to one table (or one static partition).

    Args:
        warehouse: the warehouse.
        table_name: a full ACID table.
        static_partition: the partition written (required for partitioned tables).
        txns_per_batch: transactions opened per batch (Hive's ``transactionBatchSize``).
    """

    def __init__(
        self,
        warehouse: Warehouse,
        table_name: str,
        *,
        static_partition: Mapping[str, str] | None = None,
        txns_per_batch: int = DEFAULT_TXNS_PER_BATCH,
    ) -> None:
        self.warehouse = warehouse
        self.table: Table = warehouse.metastore.get_table(table_name)
        if self.table.table_type is not TableType.ACID:
            raise UnsupportedStatementError(
                f"streaming into {self.table.full_name}",
                "the table is not full ACID",
                "'transactional'='true'",
            )
        keys = [k.name for k in self.table.partition_keys]
        values = {k.lower(): v for k, v in (static_partition or {}).items()}
        if sorted(values) != sorted(keys):
            raise UnsupportedStatementError(
                f"streaming into {self.table.full_name}",
                f"partition {dict(values)!r}",
                f"a value for each partition key {keys!r}"
                if keys
                else "no partition (the table is unpartitioned)",
            )
        self._partition_values = [values[k] for k in keys]
        self._partition: str | None = format_partition_name(keys, self._partition_values) if keys else None
        self._location = self.table.location
        if txns_per_batch < 1:
            raise UnsupportedStatementError("streaming", f"txns_per_batch={txns_per_batch}", "at least 1")
        self._batch_size = txns_per_batch
        self._pending: list[tuple[int, int]] = []  # (txn ID, write ID) not started yet
        self._current: tuple[int, int] | None = None
        self._directories: dict[int, _Directory] = {}  # write ID -> its directory
        self._row_ids: dict[int, int] = {}  # bucket -> next row ID of the current transaction
        self._file_io: FileIO | None = None
        self.committed: list[int] = []
        self.aborted: list[int] = []

    def __enter__(self) -> StreamingConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _register_partition(self) -> None:
        if self._partition is None:
            return
        metastore = self.warehouse.metastore
        found = {p.name: p for p in metastore.list_partitions(self.table.full_name)}
        if self._partition not in found:
            keys = [k.name for k in self.table.partition_keys]
            values = dict(zip(keys, self._partition_values, strict=True))
            with contextlib.suppress(PartitionAlreadyExistsError):  # a concurrent writer registered it
                metastore.add_partition(self.table.full_name, values)
            found = {p.name: p for p in metastore.list_partitions(self.table.full_name)}
        self._location = found[self._partition].location

    def _open_batch(self) -> None:
        self._finish_directories()
        self._register_partition()
        metastore = self.warehouse.metastore
        allocated: list[tuple[int, int]] = []
        for _ in range(self._batch_size):
            txn_id = metastore.open_txn(user=self.warehouse.user, host=socket.gethostname())
            allocated.append((txn_id, metastore.allocate_write_id(txn_id, self.table.full_name)))
        file_io, path = self.warehouse.table_dir(self._location)
        self._file_io = file_io
        runs: list[list[int]] = []
        for _, write_id in allocated:
            if runs and runs[-1][-1] + 1 == write_id:
                runs[-1].append(write_id)
            else:
                runs.append([write_id])
        for run in runs:
            delta = DeltaDir(run[0], run[-1])
            directory = _Directory(delta, file_io.join(path, delta.to_name()))
            file_io.mkdirs(directory.path)
            write_acid_version_file(file_io, directory.path)
            for write_id in run:
                self._directories[write_id] = directory
        self._pending = allocated

    def begin_transaction(self) -> int:
        """Start the next transaction of the batch (opening a new batch when needed); its txn ID."""
        if self._current is not None:
            raise UnsupportedStatementError(
                "begin_transaction", "a transaction is already open", "commit or abort it first"
            )
        if not self._pending:
            self._open_batch()
        self._current = self._pending.pop(0)
        self._row_ids = {}
        txn_id, _ = self._current
        self.warehouse.metastore.add_write_component(
            txn_id, self.table.full_name, self._partition, WriteOperation.INSERT
        )
        return txn_id

    def _require_current(self, what: str) -> tuple[int, int]:
        if self._current is None:
            raise UnsupportedStatementError(what, "no open transaction", "begin_transaction() first")
        return self._current

    def write(self, rows: pa.Table) -> None:
        """Add rows (the table's data columns, in order) to the current transaction."""
        _, write_id = self._require_current("write")
        directory = self._directories[write_id]
        row_type = row_type_of(self.table)
        rows = rows.select([c.name for c in self.table.columns]).cast(pa.schema(list(row_type.to_arrow())))
        buckets = assign_buckets(self.table, rows)
        for bucket in sorted(set(buckets)):
            indices = [i for i, b in enumerate(buckets) if b == bucket]
            part = rows.take(pa.array(indices, pa.int64())).combine_chunks()
            events = insert_events(
                part.to_batches()[0],
                write_id=write_id,
                bucket_id=bucket,
                first_row_id=self._row_ids.get(bucket, 0),
                row_type=row_type,
            )
            self._row_ids[bucket] = self._row_ids.get(bucket, 0) + part.num_rows
            directory.events.setdefault(bucket, []).append(events)

    def _flush(self, directory: _Directory) -> None:
        file_io = self._file_io
        assert file_io is not None  # noqa: S101 - set when the batch opened
        row_type = row_type_of(self.table)
        directory.generation += 1
        for bucket in sorted(directory.events):
            name = format_bucket_file(bucket)
            temporary = file_io.join(directory.path, f".{name}.stream-{directory.generation}")
            write_event_file(
                file_io,
                temporary,
                directory.events[bucket],
                row_type,
                compression=self.warehouse.compression,
                stripe_size=self.warehouse.stripe_size,
                bucket_id=bucket,
            )
            info = file_io.info(temporary)
            length = 0 if info is None else info.size
            flushes = directory.flushes.setdefault(bucket, [])
            flushes.append(length)
            # Side file first: until the rename, readers still see the old, shorter, complete file.
            file_io.write_bytes_atomic(
                file_io.join(directory.path, side_file_name(name)),
                b"".join(struct.pack(">q", n) for n in flushes),
            )
            target = file_io.join(directory.path, name)
            file_io.delete_file(target) if not _rename_replaces(file_io) else None
            file_io.rename(temporary, target)

    def commit_transaction(self) -> None:
        """Make the current transaction's rows durable (flush) and commit it."""
        txn_id, write_id = self._require_current("commit_transaction")
        self._current = None
        try:
            self._flush(self._directories[write_id])
            self.warehouse.metastore.commit_txn(txn_id)
        except BaseException:
            self._best_effort_abort(txn_id)
            raise
        self.committed.append(txn_id)

    def abort_transaction(self) -> None:
        """Abort the current transaction; its events stay in the file, invisible to every reader."""
        txn_id, _ = self._require_current("abort_transaction")
        self._current = None
        self.warehouse.metastore.abort_txn(txn_id)
        self.aborted.append(txn_id)

    def heartbeat(self) -> None:
        """Heartbeat every open transaction of the batch (Hive's ``TransactionBatch.heartbeat``)."""
        for txn_id, _ in ([self._current] if self._current else []) + self._pending:
            self.warehouse.metastore.heartbeat(txn_id)

    def _best_effort_abort(self, txn_id: int) -> None:
        with contextlib.suppress(
            AcidError
        ):  # already aborted, or the metastore is gone: the reaper aborts it
            self.warehouse.metastore.abort_txn(txn_id)

    def _finish_directories(self) -> None:
        file_io = self._file_io
        for directory in {id(d): d for d in self._directories.values()}.values():
            for bucket in directory.flushes:
                if file_io is not None:
                    file_io.delete_file(
                        file_io.join(directory.path, side_file_name(format_bucket_file(bucket)))
                    )
        self._directories = {}

    def close(self) -> None:
        """Abort the current and unused transactions of the batch; remove the side files."""
        if self._current is not None:
            self._best_effort_abort(self._current[0])
            self.aborted.append(self._current[0])
            self._current = None
        for txn_id, _ in self._pending:
            self._best_effort_abort(txn_id)
            self.aborted.append(txn_id)
        self._pending = []
        self._finish_directories()


def _rename_replaces(file_io: Any) -> bool:  # noqa: ANN401 - any FileIO
    # Local renames replace the target atomically; object stores may refuse an existing target.
    from acid_core.fs import LocalFileIO

    return isinstance(file_io, LocalFileIO)
