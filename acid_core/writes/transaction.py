"""Writes as transactions: a ``Warehouse`` session and its ``Transaction`` (Hive's DbTxnManager + writers).

::

    with Warehouse.open("./warehouse") as wh, wh.transaction() as txn:    open_txn, heartbeat thread
        txn.lock(StatementLocks(StatementKind.UPDATE, target=..., is_acid=True))   via the lock manager
        rows = txn.read("employee", with_row_id=True)                      own writes visible
        txn.update("employee", changed, statement_id=txn.next_statement_id())
    # commit on success; abort (and re-raise) on any error; locks released either way

What each write leaves in the table (or ``k=v`` partition) directory, for write ID ``w`` and
statement ``s`` (Hive's split-update layout, ``AcidUtils.deltaSubdir``)::

    insert   delta_w_w_s/        _orc_acid_version "2", bucket_N: insert events, rowId 0.. per bucket
    delete   delete_delta_w_w_s/ delete events (row null) keyed by the deleted rows' ROW__ID,
                                 in the bucket file of the deleted row's bucket
    update   both of the above with the same w and s: the old row's delete event plus the new row
             (in the old row's bucket, in the old rows' ROW__ID order), as Hive 3's split-update does

Insert-only (MM) tables get ``delta_w_w_s/000000_0`` plain ORC files; plain tables get
``000000_0`` (then ``000000_0_copy_N``) files in the table directory.

Buckets: a ``CLUSTERED BY (..) INTO n BUCKETS`` table puts each row in the bucket Hive's hash
picks (``bucketing``); an unbucketed table writes ``bucket_00000``.

Invariants: nothing a transaction writes is visible before its commit, and never after an abort
(the write ID stays invalid in every snapshot), whatever failed in between; each write records
``add_write_component`` (insert/update/delete per table or partition) before its files, so the
metastore's write-set check makes the second of two overlapping UPDATE/DELETE commits fail.

Locks: ``lock``/``acquire_locks`` take a statement's lock set for the rest of the transaction.
When it holds S on a partitioned table (an ACID write, DbTxnManager), each write first takes S on
the partitions it writes that the held locks do not cover (``lock_written_partitions``), so a
concurrent ``DROP PARTITION`` (X on the partition) cannot remove a partition being written. An
UPDATE/DELETE whose partition vanished before it was locked fails with ``NoSuchPartitionError``
instead of re-creating it.

Concurrency: one ``Transaction`` per thread; many processes may write one table at once (their
write IDs differ, so their directories do). A heartbeat thread keeps the transaction alive;
if the metastore reports it aborted (the reaper), the commit fails with ``TxnNotOpenError``.
Not here: SQL (``acid_core.sql``), choosing locks (``acid_core.locks.planner``).
Fencing (a lost ZooKeeper session): each write first checks that the transaction's locks are
still held, and the commit confirms it right before ``commit_txn`` (waiting out a disconnection
up to ``LOCK_CONFIRM_SECONDS``); a lost session raises ``LockLostError`` and the transaction is
aborted, so it never commits after another holder could have taken its locks.
Errors: ``CommitConflictError`` (another writer committed an overlapping update/delete first:
this transaction is already aborted), ``TxnNotOpenError``, ``LockLostError`` (aborted), and
whatever the writer, reader, metastore or lock manager raise; any error inside the ``with``
block aborts the transaction.
"""

from __future__ import annotations

import getpass
import logging
import socket
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as paorc

from acid_core.bucket_codec import decode_bucket_property
from acid_core.errors import (
    AcidError,
    CommitConflictError,
    LockLostError,
    NoSuchPartitionError,
    PartitionAlreadyExistsError,
    TxnNotOpenError,
    UnsupportedStatementError,
    one_line,
)
from acid_core.fs import file_io_for, resolve_warehouse
from acid_core.locks import (
    DEFAULT_RETRIES,
    DEFAULT_WAIT_SECONDS,
    LockManager,
    LockMode,
    LockObject,
    LockRequest,
    NoLockManager,
    plan_lock_set,
)
from acid_core.locks.planner import StatementLocks, plan_statement_locks
from acid_core.metastore import (
    Metastore,
    Partition,
    Table,
    TableType,
    TxnType,
    WriteOperation,
    format_partition_name,
    open_metastore,
)
from acid_core.orc.nested_nulls import with_struct_nulls_in_children
from acid_core.orc.schema import ROW_ID_COLUMN
from acid_core.orc.writer import (
    DEFAULT_COMPRESSION,
    DEFAULT_STRIPE_SIZE,
    delete_events,
    insert_events,
    sort_events,
    write_acid_dir,
)
from acid_core.paths import DeleteDeltaDir, DeltaDir
from acid_core.types import TxnId
from acid_core.writes.reading import PartitionPrefix, in_row_id_order, read_table
from acid_core.writes.rows import (
    HIVE_DEFAULT_PARTITION,
    assign_buckets,
    group_indices,
    partition_values_of,
    row_type_of,
)

if TYPE_CHECKING:
    import types
    from collections.abc import Iterator, Mapping, Sequence

    from acid_core.fs import FileIO
    from acid_core.locks import LockHandle
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["DEFAULT_HEARTBEAT_SECONDS", "Transaction", "Warehouse"]

_LOG = logging.getLogger(__name__)


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (some containers)
        return "unknown"


LOCK_CONFIRM_SECONDS: Final = 30.0
"""How long a commit waits for a disconnected lock session (a ZooKeeper restart) before it aborts."""
DEFAULT_HEARTBEAT_SECONDS: Final = 150.0
"""Half of Hive's ``hive.txn.timeout`` default (300 s), as DbTxnManager heartbeats."""
_PLAIN_COMPRESSION: Final[dict[str, Any]] = {
    "none": "UNCOMPRESSED",
    "zlib": "ZLIB",
    "snappy": "SNAPPY",
    "lz4": "LZ4",
    "zstd": "ZSTD",
}


@dataclass
class Warehouse:
    """A warehouse root, its metastore and its lock manager: what every statement runs against.

    Args:
        location: the warehouse root (a local path or a URI); the ``default`` database lives here.
        metastore: the transaction authority.
        lock_manager: takes the statement locks (``NoLockManager`` when locking is off).
        user: recorded with transactions and locks.
        heartbeat_seconds: how often an open transaction heartbeats (None: never).
        compression: ORC compression of written files.
        stripe_size: ORC stripe size of written files.
    """

    location: str
    metastore: Metastore
    lock_manager: LockManager = field(default_factory=NoLockManager)
    user: str = field(default_factory=_current_user)
    heartbeat_seconds: float | None = DEFAULT_HEARTBEAT_SECONDS
    compression: str = DEFAULT_COMPRESSION
    stripe_size: int = DEFAULT_STRIPE_SIZE
    lock_retries: int = DEFAULT_RETRIES
    lock_wait_seconds: float = DEFAULT_WAIT_SECONDS

    def acquire_locks(self, requests: Sequence[LockRequest], txn_id: int | None = None) -> LockHandle:
        """Take locks through the lock manager with this warehouse's retry settings.

        Raises:
            LockRefusedError: still refused after ``lock_retries`` retries.
        """
        return self.lock_manager.acquire(
            requests,
            holder=f"{self.user}@{socket.gethostname()}",
            txn_id=None if txn_id is None else TxnId(txn_id),
            retries=self.lock_retries,
            wait_seconds=self.lock_wait_seconds,
        )

    @classmethod
    def open(
        cls,
        location: str = "./warehouse",
        metastore_url: str | None = None,
        lock_manager: LockManager | None = None,
        **options: object,
    ) -> Warehouse:
        """Open the warehouse at ``location`` with the metastore at ``metastore_url`` (default: embedded).

        Raises:
            InvalidWarehouseError: ``location`` is empty or has a scheme no filesystem serves.
            EmbeddedMetastoreLocationError: no ``metastore_url`` for a warehouse on S3 or HDFS.
            MetastoreError: the metastore cannot be opened.
        """
        location = resolve_warehouse(location, source="warehouse")
        metastore = open_metastore(metastore_url, location)
        return cls(location, metastore, lock_manager or NoLockManager(), **options)  # type: ignore[arg-type]

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the metastore connections (the lock manager belongs to the caller)."""
        self.metastore.close()

    def transaction(self, *, heartbeat_seconds: float | None = -1.0, read_only: bool = False) -> Transaction:
        """A new transaction (opened by ``with`` or ``begin``); ``read_only``: see ``Transaction``."""
        interval = self.heartbeat_seconds if heartbeat_seconds == -1.0 else heartbeat_seconds
        return Transaction(self, heartbeat_seconds=interval, read_only=read_only)

    def table_dir(self, location: str) -> tuple[FileIO, str]:
        """The FileIO and store path of a table or partition location."""
        return file_io_for(location)

    def read(
        self,
        table_name: str,
        valid_txns: ValidTxnList | None = None,
        *,
        with_row_id: bool = False,
        with_partition_columns: bool = True,
        partitions: Sequence[PartitionPrefix] | None = None,
    ) -> pa.Table:
        """Rows of a table at a snapshot (default: everything committed now); see ``Transaction.read``."""
        txns = self.metastore.get_valid_txns() if valid_txns is None else valid_txns
        table = self.metastore.get_table(table_name)
        write_ids = self.metastore.get_valid_write_ids(table.full_name, txns)
        return read_table(self, table, write_ids, txns, with_row_id, with_partition_columns, partitions)


class Transaction:
    """One metastore transaction: its snapshot, statement IDs, locks and writes.

    Use it as a context manager (commit on success, abort on error), or call ``begin`` then
    ``commit``/``abort``. See the module docstring.

    ``read_only`` opens a read-only transaction (Hive's ``TxnType.READ_ONLY``, what a query runs
    in): SHOW TRANSACTIONS lists it and the lowest open transaction ID counts it, so the cleaner
    keeps what its snapshot reads until it ends; no snapshot treats it as open (it writes nothing),
    and a write in it raises ``UnsupportedStatementError``.
    """

    def __init__(
        self, warehouse: Warehouse, *, heartbeat_seconds: float | None = None, read_only: bool = False
    ) -> None:
        self.warehouse = warehouse
        self.read_only = read_only
        self._heartbeat_seconds = heartbeat_seconds
        self.txn_id: int | None = None
        self.valid_txns: ValidTxnList | None = None
        self._next_statement = 0
        self._locks: list[LockHandle] = []
        self._held: dict[LockObject, LockMode] = {}
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._lost: AcidError | None = None
        self._done = False
        self.written: list[str] = []
        """Directories and files written, in order (for reports and tests)."""

    # -- lifecycle -------------------------------------------------------------------------------

    def begin(self) -> Transaction:
        """Open the transaction and take its snapshot; start heartbeating."""
        if self.txn_id is not None:
            return self
        metastore = self.warehouse.metastore
        txn_type = TxnType.READ_ONLY if self.read_only else TxnType.DEFAULT
        self.txn_id = metastore.open_txn(
            user=self.warehouse.user, host=socket.gethostname(), txn_type=txn_type
        )
        self.valid_txns = metastore.get_valid_txns(self.txn_id)
        if self._heartbeat_seconds:
            self._heartbeat = threading.Thread(
                target=self._beat, name=f"acidflow-heartbeat-{self.txn_id}", daemon=True
            )
            self._heartbeat.start()
        return self

    def _beat(self) -> None:
        interval = self._heartbeat_seconds or DEFAULT_HEARTBEAT_SECONDS
        while not self._stop.wait(interval):
            try:
                self.warehouse.metastore.heartbeat(self._id)
            except TxnNotOpenError as e:
                self._lost = e
                return
            except AcidError as e:  # a metastore hiccup: the next beat retries; the reaper's timeout is long
                # One line naming the service (its traceback at debug level), as the CLI's errors.
                _LOG.warning(
                    "heartbeat of txn %s failed; the next one retries: %s",
                    self.txn_id,
                    one_line(f"{type(e).__name__}: {e}"),
                )
                _LOG.debug("heartbeat of txn %s failed", self.txn_id, exc_info=True)

    @property
    def _id(self) -> int:
        if self.txn_id is None:
            raise UnsupportedStatementError("<transaction>", "the transaction is not open", "begin() first")
        return self.txn_id

    def __enter__(self) -> Transaction:
        return self.begin()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: types.TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def _finish(self) -> None:
        self._done = True
        self._stop.set()
        if self._heartbeat is not None and self._heartbeat is not threading.current_thread():
            self._heartbeat.join(timeout=5)
        for handle in reversed(self._locks):
            try:
                self.warehouse.lock_manager.release(handle)
            except AcidError as e:  # a lost lock session: the transaction is over either way
                _LOG.warning(
                    "releasing locks of txn %s failed: %s", self.txn_id, one_line(f"{type(e).__name__}: {e}")
                )
                _LOG.debug("releasing locks of txn %s failed", self.txn_id, exc_info=True)
        self._locks.clear()
        self._held.clear()

    def commit(self) -> None:
        """Commit: every write becomes visible at once.

        Raises:
            CommitConflictError: a concurrent transaction committed an update/delete of the same
                table/partition first; this transaction is aborted.
            TxnNotOpenError: the transaction was aborted meanwhile (by the reaper or ABORT
                TRANSACTIONS).
            LockLostError: its lock session was lost (or stayed disconnected past
                ``LOCK_CONFIRM_SECONDS``) before the commit; this transaction is aborted.
        """
        if self._done:
            return
        try:
            if self._lost is not None:
                raise self._lost
            self._fence()
            try:
                self.warehouse.metastore.commit_txn(self._id)
            except CommitConflictError as e:
                raise CommitConflictError(
                    f"Transaction {self.txn_id} was aborted: {e}; hint: run the statement again "
                    "(first committer wins)"
                ) from e
        finally:
            self._finish()

    def _fence(self) -> None:
        """Abort and raise ``LockLostError`` unless every lock is held right now (kazoo's fencing advice).

        Once a ZooKeeper session expired, another holder may hold the locks and write: a commit
        after that would interleave with it. A session in doubt (disconnected) is waited for.
        """
        try:
            for handle in self._locks:
                handle.confirm(LOCK_CONFIRM_SECONDS)
        except LockLostError as e:
            self.abort()
            raise LockLostError(
                f"Transaction {self.txn_id} was aborted before its commit: {e}", service=e.lost_service
            ) from e

    def _check_locks(self) -> None:
        for handle in self._locks:
            handle.check()  # LockLostError: the with-block aborts the transaction

    def abort(self) -> None:
        """Abort: nothing written is ever visible (idempotent; best effort if already aborted)."""
        if self._done:
            return
        try:
            if self.txn_id is not None:
                self.warehouse.metastore.abort_txn(self.txn_id)
        except AcidError as e:  # already aborted (reaper) or the metastore is gone: the reaper will do it
            _LOG.warning(
                "abort of txn %s failed; the reaper aborts it: %s",
                self.txn_id,
                one_line(f"{type(e).__name__}: {e}"),
            )
            _LOG.debug("abort of txn %s failed", self.txn_id, exc_info=True)
        finally:
            self._finish()

    # -- statements ------------------------------------------------------------------------------

    def next_statement_id(self) -> int:
        """The next statement ID of this transaction: 0, 1, 2, ..."""
        statement_id = self._next_statement
        self._next_statement += 1
        return statement_id

    def lock(self, statement: StatementLocks) -> None:
        """Take the statement's locks (planned by ``plan_statement_locks``) until the transaction ends.

        Raises:
            LockRefusedError: a conflicting holder did not release in time.
        """
        self.acquire_locks(plan_statement_locks(statement))

    def acquire_locks(self, requests: Sequence[LockRequest]) -> None:
        """Take ``requests`` (completed by ``plan_lock_set``) until the transaction ends.

        All or nothing, with the warehouse's retries. Locks are not re-entrant, so callers ask
        only for what this transaction does not hold yet (``lock_written_partitions`` checks).

        Raises:
            LockRefusedError: a conflicting holder did not release in time.
        """
        planned = plan_lock_set(requests)
        if not planned:
            return
        self._locks.append(self.warehouse.acquire_locks(planned, self.txn_id))
        for request in planned:
            if self._held.get(request.object) is not LockMode.EXCLUSIVE:
                self._held[request.object] = request.mode

    def lock_written_partitions(self, table: Table, partitions: Sequence[tuple[str | None, ...]]) -> None:
        """Take S on each partition about to be written that this transaction's locks do not cover.

        An ACID write holds S on its table (DbTxnManager: MVCC isolates writers); when its
        partitions are only known once its rows are computed (dynamic partitions, UPDATE/DELETE/
        MERGE not pinned to one partition), this adds S on each partition written, before its
        files are written, so ``ALTER TABLE .. DROP PARTITION`` (X on that partition) waits for
        the writer and cannot remove a partition while it is being written. Nothing is taken when
        this transaction holds no lock on the table (locking left to the caller), holds X on the
        table or a partition prefix (a non-ACID write: the X covers it), or holds the partition.

        Args:
            table: the table written.
            partitions: partition values in key order (None: Hive's default partition).

        Raises:
            LockRefusedError: a conflicting holder (a DROP PARTITION) did not release in time.
        """
        if not table.partition_keys or self._held.get(LockObject(table.database, table.name)) is None:
            return
        keys = [k.name for k in table.partition_keys]
        missing: list[LockRequest] = []
        for values in partitions:
            # Hive writes NULL and '' partition values to its default partition.
            shown = [HIVE_DEFAULT_PARTITION if v is None or v == "" else v for v in values]
            target = LockObject(table.database, table.name, tuple(zip(keys, shown, strict=True)))
            covered = target in self._held or any(
                self._held.get(parent) is LockMode.EXCLUSIVE for parent in target.parents()
            )
            if not covered:
                missing.append(LockRequest(target, LockMode.SHARED))
        if missing:
            self.acquire_locks(missing)

    def write_ids(self, table_name: str) -> ValidWriteIdList:
        """The snapshot of a table this transaction reads (its own writes included)."""
        self._id  # noqa: B018 - raises when not open
        assert self.valid_txns is not None  # noqa: S101 - set by begin
        return self.warehouse.metastore.get_valid_write_ids(table_name, self.valid_txns)

    def read(
        self,
        table_name: str,
        *,
        with_row_id: bool = False,
        with_partition_columns: bool = True,
        partitions: Sequence[PartitionPrefix] | None = None,
    ) -> pa.Table:
        """Rows of a table as this transaction sees them.

        Args:
            table_name: ``t`` or ``db.t``.
            with_row_id: add the ``row__id`` column.
            with_partition_columns: add the partition columns.
            partitions: read only the partitions whose values start with one of these
                ``((key, value), ..)`` prefixes (partition pruning: the other partitions' files are
                never opened); None reads every partition. Ignored for an unpartitioned table.

        Raises:
            InvalidPartitionError: a prefix that is not a leading prefix of the partition keys.

        Returns:
            ``row__id`` (when asked; null for non-ACID tables), the data columns, then the
            partition columns (typed as declared).
        """
        table = self.warehouse.metastore.get_table(table_name)
        assert self.valid_txns is not None  # noqa: S101 - write_ids checked it is open
        write_ids = self.write_ids(table.full_name)
        return read_table(
            self.warehouse, table, write_ids, self.valid_txns, with_row_id, with_partition_columns, partitions
        )

    # -- writes ----------------------------------------------------------------------------------

    def _partition(
        self, table: Table, values: tuple[str | None, ...], cache: dict[str, Partition]
    ) -> Partition:
        keys = [k.name for k in table.partition_keys]
        name = format_partition_name(keys, list(values))
        if name in cache:
            return cache[name]
        found = {p.name: p for p in self.warehouse.metastore.list_partitions(table.full_name)}
        if name not in found:
            try:
                found[name] = self.warehouse.metastore.add_partition(
                    table.full_name, dict(zip(keys, values, strict=True))
                )
            except PartitionAlreadyExistsError:  # a concurrent writer registered it
                found = {p.name: p for p in self.warehouse.metastore.list_partitions(table.full_name)}
        cache.update(found)
        return cache[name]

    def _split_by_partition(
        self, table: Table, rows: pa.Table, static_partition: Mapping[str, str | None] | None
    ) -> list[tuple[str | None, str, pa.Table]]:
        """``[(partition name or None, location, rows)]``; partition columns dropped from rows."""
        if not table.partition_keys:
            return [(None, table.location, rows)]
        static = {k.lower(): v for k, v in (static_partition or {}).items()}
        for key in table.partition_keys:
            if key.name in static and key.name not in rows.column_names:
                rows = rows.append_column(key.name, pa.array([static[key.name]] * rows.num_rows, pa.string()))
        groups = group_indices(partition_values_of(table, rows))
        self.lock_written_partitions(table, list(groups))
        data = rows.select([c.name for c in table.columns])
        cache: dict[str, Partition] = {}
        out: list[tuple[str | None, str, pa.Table]] = []
        for part_values, indices in groups.items():
            partition = self._partition(table, part_values, cache)
            out.append((partition.name, partition.location, data.take(pa.array(indices, pa.int64()))))
        return out

    def insert(
        self,
        table_name: str,
        rows: pa.Table,
        *,
        statement_id: int | None = None,
        static_partition: Mapping[str, str | None] | None = None,
    ) -> int:
        """Insert rows: one ``delta_w_w_s`` per partition, row IDs from 0 in each bucket.

        Args:
            table_name: the target table.
            rows: the data columns (table order, table types) plus the partition columns not in
                ``static_partition`` (dynamic partitioning).
            statement_id: default: ``next_statement_id()``.
            static_partition: partition key -> value given in ``PARTITION (k='v')``.

        Returns:
            The number of rows written.
        """
        self._check_writable("INSERT", table_name)
        table = self.warehouse.metastore.get_table(table_name)
        statement = self.next_statement_id() if statement_id is None else statement_id
        if rows.num_rows == 0:
            return 0
        for partition, location, data in self._split_by_partition(table, rows, static_partition):
            write_id = self.warehouse.metastore.add_write_component(
                self._id, table.full_name, partition, WriteOperation.INSERT
            )
            self._write_inserts(table, location, write_id, statement, data)
        return rows.num_rows

    def _write_inserts(
        self, table: Table, location: str, write_id: int, statement: int, data: pa.Table
    ) -> None:
        file_io, path = self.warehouse.table_dir(location)
        delta = DeltaDir(write_id, write_id, statement)
        if table.table_type is TableType.PLAIN:
            self._write_plain(file_io, path, data)
            return
        if table.table_type is TableType.INSERT_ONLY:
            directory = file_io.join(path, delta.to_name())
            file_io.mkdirs(directory)
            self._write_plain(file_io, directory, data)
            return
        row_type = row_type_of(table)
        if table.num_buckets <= 0 or not table.bucket_columns:
            parts = {0: data}  # one writer, bucket_00000 (no per-row work)
        else:
            parts = {
                bucket: data.take(pa.array(indices, pa.int64()))
                for bucket, indices in group_indices(assign_buckets(table, data)).items()
            }
        batches: dict[int, list[pa.RecordBatch]] = {}
        for bucket, part in sorted(parts.items()):
            events, first_row_id = [], 0
            for batch in part.to_batches():
                if batch.num_rows:
                    events.append(
                        insert_events(
                            batch,
                            write_id=write_id,
                            bucket_id=bucket,
                            statement_id=statement,
                            first_row_id=first_row_id,
                            row_type=row_type,
                        )
                    )
                    first_row_id += batch.num_rows
            if events:
                batches[bucket] = events
        self.written.append(file_io.join(path, delta.to_name()))
        write_acid_dir(
            file_io,
            path,
            delta,
            batches,
            row_type,
            compression=self.warehouse.compression,
            stripe_size=self.warehouse.stripe_size,
        )

    def _write_plain(self, file_io: FileIO, directory: str, data: pa.Table) -> None:
        file_io.mkdirs(directory)
        existing = {info.name for info in file_io.list_dir(directory)}
        name, copy = "000000_0", 0
        while name in existing:
            copy += 1
            name = f"000000_0_copy_{copy}"
        target = file_io.join(directory, name)
        temporary = file_io.join(directory, f".{name}.acidflow-tmp")
        # Null structs' children null and no sliced struct: what pyarrow's ORC writer writes right.
        data = pa.Table.from_batches(
            [with_struct_nulls_in_children(batch) for batch in data.to_batches()], schema=data.schema
        )
        with file_io.open_output(temporary) as out:
            paorc.write_table(
                data, out, compression=_PLAIN_COMPRESSION.get(self.warehouse.compression.lower(), "ZLIB")
            )
        file_io.rename(temporary, target)
        self.written.append(target)

    def delete(self, table_name: str, rows: pa.Table, *, statement_id: int | None = None) -> int:
        """Delete rows by ``row__id``: one ``delete_delta_w_w_s`` per partition touched.

        Args:
            table_name: the target (full ACID) table.
            rows: a ``row__id`` column plus, for partitioned tables, the partition columns.
            statement_id: default: ``next_statement_id()``.

        Returns:
            The number of rows deleted.
        """
        self._check_writable("DELETE", table_name)
        table = self._acid_table(table_name, "DELETE")
        statement = self.next_statement_id() if statement_id is None else statement_id
        self._write_deletes(table, rows, statement, WriteOperation.DELETE)
        return rows.num_rows

    def update(self, table_name: str, rows: pa.Table, *, statement_id: int | None = None) -> int:
        """Update rows (split-update): delete events for ``row__id`` plus the new rows, same write ID.

        Args:
            table_name: the target (full ACID) table.
            rows: ``row__id``, the new data columns and, for partitioned tables, the partition
                columns (a partition key cannot change, as in Hive).
            statement_id: default: ``next_statement_id()``; both directories get it.

        Returns:
            The number of rows updated.
        """
        self._check_writable("UPDATE", table_name)
        table = self._acid_table(table_name, "UPDATE")
        statement = self.next_statement_id() if statement_id is None else statement_id
        self._write_deletes(table, rows, statement, WriteOperation.UPDATE)
        if rows.num_rows == 0:
            return 0
        rows = in_row_id_order(rows)
        buckets = [
            decode_bucket_property(v).bucket_id
            for v in pc.struct_field(rows.column(ROW_ID_COLUMN), [1]).to_pylist()
        ]
        for partition, location, indices in self._partition_groups(table, rows):
            data = rows.take(pa.array(indices, pa.int64())).select([c.name for c in table.columns])
            write_id = self.warehouse.metastore.allocate_write_id(self._id, table.full_name)
            self._write_updated_rows(
                table, location, write_id, statement, data, [buckets[i] for i in indices]
            )
            del partition
        return rows.num_rows

    def _write_updated_rows(
        self, table: Table, location: str, write_id: int, statement: int, data: pa.Table, buckets: list[int]
    ) -> None:
        file_io, path = self.warehouse.table_dir(location)
        row_type = row_type_of(table)
        delta = DeltaDir(write_id, write_id, statement)
        batches: dict[int, list[pa.RecordBatch]] = {}
        for bucket, indices in group_indices(buckets).items():
            part = data.take(pa.array(indices, pa.int64())).combine_chunks()
            events = insert_events(
                part.to_batches()[0],
                write_id=write_id,
                bucket_id=int(bucket),
                statement_id=statement,
                row_type=row_type,
            )
            batches[int(bucket)] = [events]
        self.written.append(file_io.join(path, delta.to_name()))
        write_acid_dir(
            file_io,
            path,
            delta,
            batches,
            row_type,
            compression=self.warehouse.compression,
            stripe_size=self.warehouse.stripe_size,
        )

    def _check_writable(self, what: str, table_name: str) -> None:
        self._check_locks()
        if self.read_only:
            raise UnsupportedStatementError(
                f"{what} {table_name}",
                f"a write in read-only transaction {self.txn_id}",
                "a default transaction (Warehouse.transaction()) for writes",
            )

    def _acid_table(self, table_name: str, what: str) -> Table:
        table = self.warehouse.metastore.get_table(table_name)
        if table.table_type is not TableType.ACID:
            raise UnsupportedStatementError(
                f"{what} {table.full_name}",
                f"the table is {table.table_type.value.replace('_', '-')}, not full ACID",
                "a table with TBLPROPERTIES ('transactional'='true') (Hive refuses UPDATE/DELETE/MERGE "
                "on other tables)",
            )
        return table

    def _partition_groups(self, table: Table, rows: pa.Table) -> Iterator[tuple[str | None, str, list[int]]]:
        if not table.partition_keys:
            yield None, table.location, list(range(rows.num_rows))
            return
        groups = group_indices(partition_values_of(table, rows))
        self.lock_written_partitions(table, list(groups))
        keys = [k.name for k in table.partition_keys]
        existing = {p.name: p for p in self.warehouse.metastore.list_partitions(table.full_name)}
        for part_values, indices in groups.items():
            name = format_partition_name(keys, list(part_values))
            partition = existing.get(name)
            if partition is None:
                # The rows were read from this partition, and it is gone: dropped before this
                # statement locked it. Re-creating it would resurrect a dropped partition.
                raise NoSuchPartitionError(table.full_name, name)
            yield partition.name, partition.location, indices

    def _write_deletes(self, table: Table, rows: pa.Table, statement: int, operation: WriteOperation) -> None:
        if rows.num_rows == 0 and not table.partition_keys:
            # Hive records the write component of an UPDATE/DELETE even when no row matched.
            self.warehouse.metastore.add_write_component(self._id, table.full_name, None, operation)
            return
        row_type = row_type_of(table)
        for partition, location, indices in self._partition_groups(table, rows):
            write_id = self.warehouse.metastore.add_write_component(
                self._id, table.full_name, partition, operation
            )
            keys = rows.column(ROW_ID_COLUMN).take(pa.array(indices, pa.int64())).combine_chunks()
            events = sort_events(
                delete_events(cast("pa.StructArray", keys), write_id=write_id, row_type=row_type)
            )
            buckets = [
                decode_bucket_property(int(v or 0)).bucket_id for v in events.column("bucket").to_pylist()
            ]
            by_bucket: dict[int, list[pa.RecordBatch]] = {}
            for bucket, positions in group_indices(buckets).items():
                part = events.take(pa.array(positions, pa.int64())).combine_chunks()
                by_bucket[int(bucket)] = part.to_batches()
            file_io, path = self.warehouse.table_dir(location)
            delta = DeleteDeltaDir(write_id, write_id, statement)
            self.written.append(file_io.join(path, delta.to_name()))
            write_acid_dir(
                file_io,
                path,
                delta,
                by_bucket,
                row_type,
                compression=self.warehouse.compression,
                stripe_size=self.warehouse.stripe_size,
            )
