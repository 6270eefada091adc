"""Every exception acidflow raises, in one place.

The tree::

    AcidError
    ├── InvalidPathError (ValueError)          a malformed ACID directory or file name
    │   └── InvalidWriteIdRangeError           delta_<min>_<max> with min > max
    ├── InvalidWriteIdListError (ValueError)   a malformed ValidTxnList / ValidWriteIdList string
    ├── InvalidBucketPropertyError (ValueError) a bucket column value no BucketCodec decodes
    ├── NotEnoughHistoryError                  only a compacted base that the snapshot cannot use
    ├── NoSuchTableError / TableAlreadyExistsError
    ├── NotAnAcidFileError                     a plain ORC file where an ACID event file must be
    ├── StorageError                           a filesystem operation failed
    │   ├── DiskFullError                      no space left (files or the metastore database)
    │   ├── ReadOnlyStorageError               a read-only file system under the metastore database
    │   └── ReadOnlyFileSystemError            a table's file system turned read-only (e.g. remounted ro)
    ├── CorruptDataError                       a truncated/corrupt ORC file, a bad name or version
    │   │                                      file inside a base or delta: never read as data
    │   └── ShiftedStructValuesError           a compaction input whose struct values were written
    │                                          shifted (pyarrow's writer, acidflow before the fix)
    ├── CommitConflictError                    refresh and retry
    ├── CommitStateUnknownError                never retry blindly
    ├── LockTimeoutError / LockLostError
    │   └── LockRefusedError                   (LockTimeoutError) refused after the last retry
    ├── InvalidLockRequestError (ValueError)   a bad lock object, mode or statement description
    ├── InvalidLockConfigError (ValueError)    a bad ACIDFLOW_LOCK_MANAGER / ACIDFLOW_ZOOKEEPER
    ├── LockServiceUnavailableError            ZooKeeper / the metastore cannot be reached
    ├── MetastoreError                         the metastore database failed (cause chained)
    │   ├── MetastoreDatabaseUnavailableError  PostgreSQL went away or refused the connection
    │   │   └── LostCommitAbortedError         ... during commit_txn, which had not happened: aborted
    │   └── HiveMetastoreUnavailableError      the HMS did not answer (connect, or a call's connection broke)
    │       └── HiveMetastoreLostCommitAbortedError  ... during commit_txn, which had not happened: aborted
    ├── InvalidTableNameError, InvalidTableDefinitionError, InvalidPartitionError,
    │   InvalidMetastoreRequestError (ValueError)   bad catalog input or metastore argument
    ├── InvalidTablePropertyError (ValueError) a SET/UNSET TBLPROPERTIES value or change Hive refuses
    ├── NoSuchTablePropertyError               UNSET TBLPROPERTIES (no IF EXISTS) of a missing key
    ├── NoSuchDatabaseError / DatabaseAlreadyExistsError / DatabaseNotEmptyError
    ├── NoSuchPartitionError / PartitionAlreadyExistsError
    ├── NoSuchTxnError / TxnNotOpenError       unknown txn; commit/write/heartbeat of a closed one
    ├── NoSuchCompactionError / CompactionStateError   a queue transition Hive does not allow
    ├── NothingToRestoreError                  a restore of a compaction with nothing in the trash
    ├── NoSuchLeaseError                       a reader lease that is gone (released or expired)
    ├── SnapshotLostError                      a live lease / open txn can no longer read its snapshot
    ├── UnknownTableLocationError              a directory no table or partition of the metastore owns
    ├── InvalidLocationError (ValueError)      a LOCATION that could make acidflow delete what is not
    │                                          the table's (a root, the warehouse, another table, ..)
    ├── InvalidObjectNameError (ValueError)    a name that cannot round-trip to a safe directory name
    ├── InvalidWarehouseError (ValueError)     an empty warehouse, an unknown scheme, a URI without bucket
    ├── EmbeddedMetastoreLocationError (ValueError)  the embedded SQLite metastore on an S3/HDFS warehouse
    ├── UnsafeDeleteError                      a DROP, purge or restore path outside what the table owns
    ├── DropDefaultDatabaseError               DROP DATABASE default (refused, as in Hive)
    └── MissingDependencyError (ImportError)   an optional extra is not installed

Invariants: every message names what failed, the offending value (``!r``), what was expected,
then a hint. Input errors also derive from the matching built-in so ``except ValueError`` works.
Not here: retries (the shell's ``RetryPolicy``), logging.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "one_line",
    "AcidError",
    "CommitConflictError",
    "CommitStateUnknownError",
    "CompactionStateError",
    "CorruptDataError",
    "ShiftedStructValuesError",
    "CompactionVerificationError",
    "DatabaseAlreadyExistsError",
    "DatabaseNotEmptyError",
    "DiskFullError",
    "DropDefaultDatabaseError",
    "EmbeddedMetastoreLocationError",
    "InvalidBucketPropertyError",
    "InvalidBucketingError",
    "InvalidCompactStatementError",
    "InvalidCompactionConfigError",
    "InvalidRebalanceError",
    "UnsupportedCompactionError",
    "InvalidDataSourceOptionError",
    "InvalidEventError",
    "InvalidLocationError",
    "InvalidMetastoreRequestError",
    "InvalidObjectNameError",
    "InvalidPartitionError",
    "InvalidPathError",
    "InvalidPlatformConfigError",
    "InvalidScanFilterError",
    "InvalidSchemaError",
    "InvalidTableDefinitionError",
    "InvalidTablePropertyError",
    "InvalidTableNameError",
    "InvalidWarehouseError",
    "InvalidWriteIdListError",
    "InvalidWriteIdRangeError",
    "InvalidWriterOptionError",
    "LeaseLostError",
    "LockLostError",
    "LostCommitAbortedError",
    "LockRefusedError",
    "LockServiceUnavailableError",
    "LockTimeoutError",
    "MetastoreDatabaseUnavailableError",
    "MetastoreError",
    "MissingDependencyError",
    "NoSuchColumnError",
    "NoSuchCompactionError",
    "NoSuchDatabaseError",
    "NoSuchLeaseError",
    "NoSuchPartitionError",
    "NoSuchTableError",
    "NoSuchTablePropertyError",
    "NoSuchTxnError",
    "NothingToRestoreError",
    "SnapshotLostError",
    "NotAnAcidFileError",
    "NotEnoughHistoryError",
    "PartitionAlreadyExistsError",
    "ReadOnlyStorageError",
    "SparkJobError",
    "SqlExecutionError",
    "SqlSyntaxError",
    "SqlTypeError",
    "StorageError",
    "TableAlreadyExistsError",
    "TxnNotOpenError",
    "UnknownTableLocationError",
    "UnsafeCleanError",
    "UnsafeDeleteError",
    "UnsafeFileOperationError",
    "UnsupportedDataSourceWriteError",
    "WriteLockError",
    "UnsupportedStatementError",
    "ValueOutOfRangeError",
    "failed_service",
    "ReadOnlyFileSystemError",
]


class AcidError(Exception):
    """The root of every error acidflow raises on purpose.

    ``service`` names the service whose fault the error reports (``"PostgreSQL"``, ``"Hive
    Metastore"``, ``"ZooKeeper"``, ``"storage"``), or None; ``failed_service`` reads it.
    """

    service: ClassVar[str | None] = None


class InvalidPathError(AcidError, ValueError):
    """A name that looks like an ACID directory or file but does not parse."""

    def __init__(self, name: str, problem: str, expected: str) -> None:
        self.name, self.problem, self.expected = name, problem, expected
        super().__init__(f"Invalid ACID name {name!r}: {problem}; expected {expected}")


class InvalidWriteIdRangeError(InvalidPathError):
    """A delta directory whose write-ID range is reversed."""

    def __init__(self, name: str, min_write_id: int, max_write_id: int) -> None:
        self.min_write_id, self.max_write_id = min_write_id, max_write_id
        super().__init__(
            name,
            f"min write ID {min_write_id} > max write ID {max_write_id}",
            "delta_<min>_<max>[_<stmt>] with min <= max",
        )


class InvalidWriteIdListError(AcidError, ValueError):
    """A ValidTxnList or ValidWriteIdList string that is not in Hive's format."""

    def __init__(self, value: str, expected: str, problem: str) -> None:
        self.value, self.expected, self.problem = value, expected, problem
        super().__init__(f"Invalid {expected} {value!r}: {problem}")


class InvalidBucketPropertyError(AcidError, ValueError):
    """A ``bucket`` column value that no BucketCodec version decodes, or an out-of-range part."""

    def __init__(self, value: int, problem: str) -> None:
        self.value, self.problem = value, problem
        super().__init__(f"Invalid bucket property {value!r}: {problem}")


class NotEnoughHistoryError(AcidError):
    """Only a compacted base exists that erased history the snapshot still needs.

    Hive raises ``ACID_NOT_ENOUGH_HISTORY`` here: the base holds write IDs that are open in the
    reader's snapshot, so no correct snapshot can be built from the files on disk.
    """

    def __init__(self, high_watermark: int, min_open_write_id: int | None, base_name: str) -> None:
        self.high_watermark, self.min_open_write_id, self.base_name = (
            high_watermark,
            min_open_write_id,
            base_name,
        )
        shown = "x" if min_open_write_id is None else str(min_open_write_id)
        super().__init__(
            f"Not enough history available for ({high_watermark},{shown}). Oldest available base: "
            f"{base_name!r}; expected a base at or below the snapshot's lowest open write ID; "
            "hint: retry the query, or wait for the compaction that produced the base to be cleaned"
        )


class NoSuchTableError(AcidError):
    """A table that the metastore does not know."""


class TableAlreadyExistsError(AcidError):
    """CREATE TABLE of a name that already exists."""


class NotAnAcidFileError(AcidError, ValueError):
    """A file in a base or delta directory that does not have the ACID event schema."""


class StorageError(AcidError):
    """A filesystem operation failed (missing directory, permission, remote store error)."""

    service: ClassVar[str | None] = "storage"


class UnsafeFileOperationError(StorageError):
    """A delete or move aimed at a filesystem root, a top-level directory or a path with ``..``.

    The last line of defence under every destructive call: whatever a caller validated, the
    filesystem layer itself never removes or moves ``/``, ``/etc``, a bucket or anything named
    through ``..``.
    """

    def __init__(self, operation: str, path: str) -> None:
        self.operation, self.path = operation, path
        super().__init__(
            f"Refusing to {operation} {path!r}: it is a filesystem root, a top-level directory or has a "
            "'..' component; expected a path at least two levels deep without '..'"
        )


class CommitConflictError(AcidError):
    """Another writer committed first; refresh the snapshot and retry."""


class CommitStateUnknownError(AcidError):
    """The commit may or may not have happened; never retry blindly, inspect first."""


class LockTimeoutError(AcidError):
    """A lock could not be acquired within its retries and wait time."""


class LockLostError(AcidError):
    """The session that held the locks was lost; stop writing and abort the transaction.

    ``service`` names the lock service whose session was lost (``ZooKeeper``), when it was its
    fault (``failed_service`` reads it: the Airflow alert and the soak name the service).
    """

    def __init__(self, message: str, *, service: str | None = None) -> None:
        super().__init__(message)
        self.lost_service = service


class MissingDependencyError(AcidError, ImportError):
    """An optional dependency (an extra) is not installed."""

    def __init__(self, package: str, needed_by: str, extra: str) -> None:
        self.package, self.needed_by, self.extra = package, needed_by, extra
        super().__init__(f"{package} is required for {needed_by}: pip install 'acidflow[{extra}]'")


class MetastoreError(AcidError):
    """The metastore database failed (connection, SQL or migration error); the cause is chained."""

    def __init__(self, operation: str, url: str, problem: str) -> None:
        self.operation, self.url, self.problem = operation, url, problem
        super().__init__(
            f"Metastore operation {operation!r} failed on {url!r}: {problem}; "
            "hint: check that the database is reachable and its schema is at the current revision"
        )


class MetastoreDatabaseUnavailableError(MetastoreError):
    """The metastore's PostgreSQL went away (restart, failover) or refused the connection during a call.

    ``service`` is ``"PostgreSQL"`` (see ``failed_service``).

    Nothing is retried in the call: the operation's database transaction was rolled back, or (the
    connection broke during its COMMIT) committed; every metastore step acidflow runs is either
    checked (``commit_txn``) or safe to repeat, so the next run starts from what the database holds.
    """

    service: ClassVar[str | None] = "PostgreSQL"

    def __init__(self, operation: str, url: str, problem: str) -> None:
        self.operation, self.url, self.problem = operation, url, problem
        AcidError.__init__(
            self,
            f"PostgreSQL (the metastore database {url!r}) could not be reached during {operation!r}: "
            f"{problem}; expected a server answering; acidflow stops this run and the next run starts "
            "from the state the database holds; hint: check the server (pg_isready) and rerun",
        )


class LostCommitAbortedError(MetastoreDatabaseUnavailableError):
    """PostgreSQL went away during ``commit_txn``; checked after reconnecting, the commit had not happened.

    The transaction is aborted then (its locks may have lapsed during the outage, so it is never
    committed late): nothing it wrote is visible.
    """

    def __init__(self, txn_id: int, url: str, problem: str) -> None:
        self.txn_id, self.operation, self.url, self.problem = txn_id, "commit_txn", url, problem
        AcidError.__init__(
            self,
            f"PostgreSQL (the metastore database {url!r}) went away during the commit of transaction "
            f"{txn_id} ({problem}); checked after reconnecting: the commit had not happened, so acidflow "
            "aborted the transaction and nothing it wrote is visible; expected the commit to be answered; "
            "hint: run it again",
        )


class InvalidTableNameError(AcidError, ValueError):
    """A table name that is not ``table`` or ``database.table``."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"Invalid table name {name!r}: expected 'table' or 'database.table' with non-empty parts "
            "and no more than one '.'"
        )


class InvalidTableDefinitionError(AcidError, ValueError):
    """CREATE TABLE with an inconsistent schema, partitioning or bucketing."""

    def __init__(self, table: str, problem: str, expected: str) -> None:
        self.table, self.problem, self.expected = table, problem, expected
        super().__init__(f"Invalid definition of table {table!r}: {problem}; expected {expected}")


class NoSuchDatabaseError(AcidError):
    """A database that the metastore does not know."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"No such database {name!r}; hint: create it first or check the spelling")


class DatabaseAlreadyExistsError(AcidError):
    """CREATE DATABASE of a name that already exists."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"Database {name!r} already exists; expected a new name")


class DatabaseNotEmptyError(AcidError):
    """DROP DATABASE of a database that still has tables, without cascade."""

    def __init__(self, name: str, tables: list[str]) -> None:
        self.name, self.tables = name, tables
        super().__init__(
            f"Database {name!r} is not empty: it holds {len(tables)} table(s) {tables!r}; "
            "expected an empty database; hint: drop the tables first or pass cascade=True"
        )


class InvalidPartitionError(AcidError, ValueError):
    """A partition spec that does not match the table's partition keys."""

    def __init__(self, table: str, partition: object, expected: str) -> None:
        self.table, self.partition, self.expected = table, partition, expected
        super().__init__(f"Invalid partition {partition!r} of table {table!r}: expected {expected}")


class NoSuchPartitionError(AcidError):
    """A partition that the metastore does not know."""

    def __init__(self, table: str, partition: str) -> None:
        self.table, self.partition = table, partition
        super().__init__(f"No such partition {partition!r} in table {table!r}; hint: list_partitions")


class PartitionAlreadyExistsError(AcidError):
    """ADD PARTITION of a partition that already exists."""

    def __init__(self, table: str, partition: str) -> None:
        self.table, self.partition = table, partition
        super().__init__(f"Partition {partition!r} of table {table!r} already exists")


class NoSuchTxnError(AcidError):
    """A transaction ID that was never opened."""

    def __init__(self, txn_id: int) -> None:
        self.txn_id = txn_id
        super().__init__(
            f"No such transaction {txn_id!r}; expected an ID returned by open_txn; "
            "hint: SHOW TRANSACTIONS lists the open ones"
        )


class TxnNotOpenError(AcidError):
    """An operation on a transaction that is already committed or aborted (Hive's TxnAbortedException)."""

    def __init__(self, txn_id: int, state: str, operation: str) -> None:
        self.txn_id, self.state, self.operation = txn_id, state, operation
        hint = (
            "the reaper aborts transactions that stop heartbeating; open a new transaction and retry"
            if state == "aborted"
            else "open a new transaction"
        )
        super().__init__(
            f"Cannot {operation} transaction {txn_id!r}: it is {state}; expected an open transaction; "
            f"hint: {hint}"
        )


class NoSuchCompactionError(AcidError):
    """A compaction ID that is not in the queue (or not in the expected place)."""

    def __init__(self, compaction_id: int) -> None:
        self.compaction_id = compaction_id
        super().__init__(
            f"No such compaction {compaction_id!r} in the compaction queue; hint: SHOW COMPACTIONS"
        )


class NothingToRestoreError(AcidError):
    """``clean --restore`` of a compaction that has nothing in the table's trash."""

    def __init__(self, table_location: str, compaction_id: int, problem: str) -> None:
        self.table_location, self.compaction_id, self.problem = table_location, compaction_id, problem
        super().__init__(
            f"Nothing to restore for compaction {compaction_id!r} of the table at {table_location!r}: "
            f"{problem}; expected a compaction whose directories `clean --quarantine` moved to the trash; "
            "hint: SHOW COMPACTIONS lists the compactions; <table>/_acidflow_cleaner/ledger what was quarantined"
        )


class CompactionStateError(AcidError):
    """A compaction state transition that Hive's queue does not allow."""

    def __init__(self, compaction_id: int, state: str, operation: str, expected: str) -> None:
        self.compaction_id, self.state, self.operation, self.expected = (
            compaction_id,
            state,
            operation,
            expected,
        )
        super().__init__(
            f"Cannot {operation} compaction {compaction_id!r} in state {state!r}; expected state {expected}"
        )


class SparkJobError(AcidError):
    """The Spark job running a compaction's bucket tasks failed (a task failed too often, executors lost)."""

    def __init__(self, compaction_id: int, reason: str) -> None:
        self.compaction_id, self.reason = compaction_id, reason
        super().__init__(
            f"The Spark job of compaction {compaction_id!r} failed: {reason}; expected every bucket task "
            "to finish; hint: the executors' stderr (Spark UI, or the worker's work directory)"
        )


class NoSuchLeaseError(AcidError):
    """A reader lease ID that does not exist (never taken, released or expired)."""

    def __init__(self, lease_id: int) -> None:
        self.lease_id = lease_id
        super().__init__(
            f"No such reader lease {lease_id!r}; expected a live lease ID; "
            "hint: it may have expired or been released, see `acidflow lease list`"
        )


class LeaseLostError(AcidError):
    """A reader lease on a Hive Metastore whose transaction is no longer open (it timed out or ended)."""

    def __init__(self, lease_id: int, state: str) -> None:
        self.lease_id, self.state = lease_id, state
        super().__init__(
            f"Reader lease {lease_id} lost its Hive Metastore transaction ({state}); expected an open "
            "transaction; hint: the HMS aborts one not heartbeated within hive.txn.timeout (300 s by "
            "default): take a new lease and run `acidflow lease renew` more often than that"
        )


class SnapshotLostError(AcidError):
    """A live reader lease or open transaction whose snapshot the files on disk no longer hold.

    The cleaner must keep every directory such a snapshot reads, so this is a bug to report, never
    "the reader needs nothing here": the cleaner deletes nothing in that directory while it lasts.
    """

    def __init__(self, holder: str, directory: str, write_ids: str, txns: str, cause: str) -> None:
        self.holder, self.directory, self.write_ids, self.txns = holder, directory, write_ids, txns
        super().__init__(
            f"The snapshot of {holder} (write IDs {write_ids!r}, txns {txns!r}) is no longer readable "
            f"in {directory!r}: {cause}; expected the cleaner to have kept every directory it reads; "
            "hint: this is a bug, please report it; nothing is deleted there while the snapshot lives"
        )


class UnknownTableLocationError(AcidError):
    """A directory that is neither the location of a table nor of a partition in the metastore."""

    def __init__(self, directory: str, metastore: str) -> None:
        self.directory, self.metastore = directory, metastore
        super().__init__(
            f"No table or partition of the metastore {metastore!r} is at {directory!r}; expected a "
            "table or partition directory the metastore knows; hint: pass --metastore/--warehouse, "
            "or an explicit snapshot with --write-ids and --txns"
        )


class InvalidLockRequestError(AcidError, ValueError):
    """A lock object, lock mode or statement description that does not parse or is inconsistent."""

    def __init__(self, value: str, problem: str, expected: str) -> None:
        self.value, self.problem, self.expected = value, problem, expected
        super().__init__(f"Invalid lock request {value!r}: {problem}; expected {expected}")


class InvalidLockConfigError(AcidError, ValueError):
    """A lock manager setting (``ACIDFLOW_LOCK_MANAGER``, ``ACIDFLOW_ZOOKEEPER``) with a bad value."""

    def __init__(self, key: str, value: str, expected: str, hint: str = "") -> None:
        self.key, self.value, self.expected = key, value, expected
        message = f"Invalid lock configuration {key}={value!r}; expected {expected}"
        super().__init__(f"{message}; hint: {hint}" if hint else message)


class LockRefusedError(LockTimeoutError):
    """A lock set refused by conflicting holders after its last retry; names the holders."""

    def __init__(self, requested: tuple[str, ...], holders: tuple[str, ...], attempts: int) -> None:
        self.requested, self.holders, self.attempts = requested, holders, attempts
        shown = "; ".join(holders) if holders else "holders unknown (they released before being read)"
        super().__init__(
            f"Could not lock {', '.join(requested)} after {attempts} attempt(s): {shown}; "
            "expected no conflicting holder; hint: raise --retries/--wait, or find the holders "
            "with `acidflow lock show --extended`"
        )


class LockServiceUnavailableError(AcidError):
    """The lock service (ZooKeeper, the metastore) could not be reached; nothing is locked."""


class InvalidSchemaError(AcidError, ValueError):
    """A Hive type string, row type or Arrow schema that does not fit the ACID event schema."""

    def __init__(self, value: str, problem: str, expected: str) -> None:
        self.value, self.problem, self.expected = value, problem, expected
        super().__init__(f"Invalid schema {value!r}: {problem}; expected {expected}")


class InvalidEventError(AcidError, ValueError):
    """ACID events the writer refuses: out of (originalTransaction, bucket, rowId) order, or bad values."""

    def __init__(self, path: str, problem: str, expected: str) -> None:
        self.path, self.problem, self.expected = path, problem, expected
        super().__init__(f"Invalid ACID events for {path!r}: {problem}; expected {expected}")


class InvalidWriterOptionError(AcidError, ValueError):
    """An ORC writer option (compression, stripe size) with a value the writer does not support."""

    def __init__(self, option: str, value: object, expected: str) -> None:
        self.option, self.value, self.expected = option, value, expected
        super().__init__(f"Invalid ORC writer option {option}={value!r}; expected {expected}")


class InvalidMetastoreRequestError(AcidError, ValueError):
    """A metastore call with an argument out of range (an ID below 1, a negative TTL or timeout)."""

    def __init__(self, what: str, value: object, expected: str) -> None:
        self.what, self.value, self.expected = what, value, expected
        super().__init__(f"Invalid {what} {value!r}: expected {expected}")


class NoSuchColumnError(AcidError, ValueError):
    """A projected or filtered column that is not one of the table's row columns."""

    def __init__(self, column: str, available: tuple[str, ...]) -> None:
        self.column, self.available = column, available
        super().__init__(
            f"No such column {column!r}; expected one of {list(available)!r} (case-insensitive); "
            "hint: `acidflow read TABLE_DIR --limit 1` shows the columns"
        )


class InvalidTablePropertyError(AcidError, ValueError):
    """ALTER TABLE .. SET/UNSET TBLPROPERTIES with a value or change that Hive (or acidflow) refuses."""

    def __init__(self, table: str, key: str, value: str | None, expected: str, hint: str) -> None:
        self.table, self.key, self.value, self.expected, self.hint = table, key, value, expected, hint
        shown = " (unset)" if value is None else f"={value!r}"
        super().__init__(
            f"Invalid table property {key}{shown} for table {table}; expected {expected}; hint: {hint}"
        )


class NoSuchTablePropertyError(AcidError):
    """ALTER TABLE .. UNSET TBLPROPERTIES (without IF EXISTS) of a key the table does not have."""

    def __init__(self, table: str, key: str, existing: tuple[str, ...]) -> None:
        self.table, self.key, self.existing = table, key, existing
        super().__init__(
            f"No table property {key!r} in table {table}; expected one of {sorted(existing)!r}; hint: "
            "ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS (..) ignores missing keys, as in Hive"
        )


class InvalidCompactionConfigError(AcidError, ValueError):
    """A compactor setting (TBLPROPERTIES override, threshold, option) with a value that does not parse."""

    def __init__(self, key: str, value: object, expected: str) -> None:
        self.key, self.value, self.expected = key, value, expected
        super().__init__(
            f"Invalid compaction setting {key}={value!r}; expected {expected}; hint: fix or unset it with "
            "ALTER TABLE ... SET/UNSET TBLPROPERTIES"
        )


class InvalidRebalanceError(AcidError, ValueError):
    """A rebalance compaction request Hive 4 would refuse: its bucket count, ORDER BY or table."""

    def __init__(self, what: str, value: object, expected: str) -> None:
        self.what, self.value, self.expected = what, value, expected
        super().__init__(
            f"Invalid rebalance compaction {what} {value!r}; expected {expected}; hint: ALTER TABLE t "
            "COMPACT 'rebalance' [ORDER BY c [ASC|DESC], ..] [CLUSTERED INTO n BUCKETS]"
        )


class UnsupportedCompactionError(AcidError, ValueError):
    """A compaction type this metastore or table cannot run (e.g. rebalance before Hive 4)."""

    def __init__(self, table: str, compaction_type: str, expected: str) -> None:
        self.table, self.compaction_type, self.expected = table, compaction_type, expected
        super().__init__(f"Cannot queue a {compaction_type!r} compaction of {table}; expected {expected}")


class CompactionVerificationError(AcidError):
    """Compactor output that does not match the merge of its inputs; nothing was committed."""

    def __init__(self, compaction_id: int, what: str, expected: object, actual: object) -> None:
        self.compaction_id, self.what, self.expected, self.actual = compaction_id, what, expected, actual
        super().__init__(
            f"Compaction {compaction_id} failed verification: {what} of the output is {actual!r}, "
            f"expected {expected!r} (the merge of the inputs); the output was discarded and the inputs "
            "are untouched; hint: report it with the table's directory listing"
        )


class UnsafeCleanError(AcidError):
    """A path the cleaner refuses to touch: it is not a direct child of the table's location."""

    def __init__(self, path: str, location: str) -> None:
        self.path, self.location = path, location
        super().__init__(
            f"Refusing to clean {path!r}: it is not inside the table location {location!r}; expected a "
            "base or delta directory of the table or one of its partitions"
        )


class InvalidLocationError(AcidError, ValueError):
    """A table, partition or database LOCATION acidflow refuses.

    A DROP or the cleaner deletes inside a table's location, so a location that is a filesystem
    root, the warehouse root (or an ancestor of it), another table's, partition's or database's
    location (or an ancestor of one), that escapes with ``..`` or whose scheme no filesystem serves
    would let them delete what is not the table's.
    """

    def __init__(self, location: str, problem: str, expected: str) -> None:
        self.location, self.problem, self.expected = location, problem, expected
        super().__init__(
            f"Refusing location {location!r}: {problem}; expected {expected}; nothing was created or changed"
        )


class InvalidWarehouseError(AcidError, ValueError):
    """A warehouse location (``--warehouse``, ``ACIDFLOW_WAREHOUSE``, ``warehouse:``) acidflow cannot use.

    An empty value, a scheme no filesystem serves, or a URI without its bucket or name node used to
    become a local directory named after the URI (``./s3:/bucket/...``) holding tables and metastore.
    """

    def __init__(self, source: str, value: str, problem: str, expected: str) -> None:
        self.source, self.value, self.problem, self.expected = source, value, problem, expected
        super().__init__(
            f"Invalid warehouse {value!r} ({source}): {problem}; expected {expected}; nothing was created"
        )


class EmbeddedMetastoreLocationError(AcidError, ValueError):
    """The embedded SQLite metastore asked for on a warehouse that is not on the local disk.

    SQLite needs a local file with POSIX locks; an object store or HDFS has neither, so the
    metastore of an ``s3://`` or ``hdfs://`` warehouse must be named explicitly. With a Hive
    Metastore (``thrift://``) the same file was the default of acidflow's side store (``purpose``
    ``"side store"``: reader-lease records, backlog history) and of the SQL lock manager's locks
    (``"lock store"``): the message then names the settings that place those, not the metastore.
    """

    def __init__(self, warehouse: str, purpose: str = "metastore") -> None:
        self.warehouse, self.purpose = warehouse, purpose
        embedded = "the embedded SQLite file <warehouse>/.acidflow/metastore.sqlite lives only in a local warehouse directory"
        if purpose == "lock store":
            super().__init__(
                f"No lock store for warehouse {warehouse!r} with a Hive Metastore: the SQL lock manager "
                f"keeps its locks in acidflow's side store, and {embedded}; expected ACIDFLOW_ZOOKEEPER "
                "(ZooKeeper locks, as Hive's) or ACIDFLOW_LEASE_STORE set for a warehouse on S3 or HDFS; "
                "hint: ACIDFLOW_LEASE_STORE=postgresql://host/db shared by every host (locks, leases and "
                "backlog history), sqlite:////local/path/acidflow.sqlite for one machine, or "
                "ACIDFLOW_LOCK_MANAGER=none"
            )
        elif purpose == "side store":
            super().__init__(
                f"No side store for warehouse {warehouse!r} with a Hive Metastore (reader-lease records, "
                f"backlog history): {embedded}; expected ACIDFLOW_LEASE_STORE set for a warehouse on S3 or "
                "HDFS; hint: ACIDFLOW_LEASE_STORE=postgresql://host/db shared by every host, "
                "sqlite:////local/path/acidflow.sqlite for one machine, or none to go without leases and "
                "backlog history"
            )
        else:
            super().__init__(
                f"No metastore for warehouse {warehouse!r}: the embedded SQLite metastore lives only in a "
                "local warehouse directory; expected --metastore / ACIDFLOW_METASTORE set for a warehouse "
                "on S3 or HDFS; hint: a PostgreSQL URL (postgresql://host/db), thrift://host:9083, "
                "or sqlite:////local/path/metastore.sqlite for one machine"
            )


class InvalidObjectNameError(AcidError, ValueError):
    """A database, table or column name, or a partition value, that cannot round-trip to a directory name."""

    def __init__(self, kind: str, name: str, expected: str) -> None:
        self.kind, self.name, self.expected = kind, name, expected
        super().__init__(f"Invalid {kind} name {name!r}: expected {expected}; nothing was created")


class UnsafeDeleteError(AcidError):
    """A delete or move acidflow refuses: the path is not inside what the table owns."""

    def __init__(self, path: str, problem: str, expected: str) -> None:
        self.path, self.problem, self.expected = path, problem, expected
        super().__init__(f"Refusing to delete or move {path!r}: {problem}; expected {expected}")


class DropDefaultDatabaseError(AcidError):
    """``DROP DATABASE default``: refused, as Hive's ``drop_database`` refuses it."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"Can not drop default database {name!r} (as Hive); expected another database; "
            "hint: DROP TABLE its tables instead"
        )


class InvalidBucketingError(AcidError, ValueError):
    """A bucketing setting or column type Hive's bucketing hash cannot use."""

    def __init__(self, value: str, problem: str, expected: str) -> None:
        self.value, self.problem, self.expected = value, problem, expected
        super().__init__(f"Invalid bucketing {value!r}: {problem}; expected {expected}")


class SqlSyntaxError(AcidError, ValueError):
    """A SQL statement the Hive dialect parser cannot parse."""

    def __init__(self, statement: str, problem: str) -> None:
        self.statement, self.problem = statement, problem
        super().__init__(
            f"Syntax error in {statement!r}: {problem}; expected a Hive SQL statement; "
            "hint: `acidflow sql --help` lists the supported statements"
        )


class UnsupportedStatementError(AcidError, ValueError):
    """A statement that parses but that acidflow does not execute (or not on this kind of table)."""

    def __init__(self, statement: str, problem: str, expected: str) -> None:
        self.statement, self.problem, self.expected = statement, problem, expected
        super().__init__(f"Cannot run {statement!r}: {problem}; expected {expected}")


class SqlTypeError(AcidError, ValueError):
    """A value whose type cannot go into a column (a string into an int column, ...)."""

    def __init__(self, table: str, column: str, actual: str, expected: str) -> None:
        self.table, self.column, self.actual, self.expected = table, column, actual, expected
        super().__init__(
            f"Type mismatch for column {column!r} of {table!r}: got a value of type {actual}, "
            f"expected {expected}; hint: CAST(... AS {expected}) converts explicitly"
        )


class ValueOutOfRangeError(AcidError, ValueError):
    """A value that does not fit its column's type (300 in a tinyint, 6 characters in varchar(5), ...)."""

    def __init__(self, table: str, column: str, value: str, hive_type: str) -> None:
        self.table, self.column, self.value, self.hive_type = table, column, value, hive_type
        super().__init__(
            f"Value {value!r} does not fit column {column!r} of {table!r}: expected a value of type "
            f"{hive_type}; nothing was written"
        )


class SqlExecutionError(AcidError):
    """A statement the SQL engine (DuckDB) could not evaluate: a bad expression, a failed cast."""

    def __init__(self, statement: str, problem: str) -> None:
        self.statement, self.problem = statement, problem
        super().__init__(
            f"Cannot evaluate {statement!r}: {problem}; expected expressions over the statement's "
            "tables and columns; hint: DESCRIBE <table> shows the columns"
        )


class InvalidScanFilterError(AcidError, ValueError):
    """A scan filter that cannot be evaluated on the table's row columns."""

    def __init__(self, expression: str, problem: str, columns: tuple[str, ...]) -> None:
        self.expression, self.problem, self.columns = expression, problem, columns
        super().__init__(
            f"Invalid scan filter {expression!r}: {problem}; expected a boolean pyarrow.compute "
            f"Expression over the row columns {list(columns)!r}"
        )


class InvalidPlatformConfigError(AcidError, ValueError):
    """A setting of the Airflow platform (``acidflow.yaml``, an ``ACIDFLOW_*`` variable) that is invalid."""

    def __init__(self, source: str, key: str, value: object, expected: str) -> None:
        self.source, self.key, self.value, self.expected = source, key, value, expected
        super().__init__(
            f"Invalid acidflow setting {key}={value!r} in {source}; expected {expected}; hint: see "
            "acidflow.yaml.example for every setting and its default"
        )


class InvalidCompactStatementError(AcidError, ValueError):
    """A manual compaction request (``ALTER TABLE ... COMPACT``, or table/partition/type) that is invalid."""

    def __init__(self, statement: str, problem: str) -> None:
        self.statement, self.problem = statement, problem
        super().__init__(
            f"Invalid compaction request {statement!r}: {problem}; expected ALTER TABLE db.t "
            "[PARTITION (k='v')] COMPACT 'minor'|'major'|'rebalance' [CLUSTERED INTO n BUCKETS] [ORDER BY ..], "
            "or a known table with type minor, major or rebalance; nothing was queued"
        )


class CorruptDataError(AcidError):
    """Data files that cannot be trusted: a corrupt ORC file, or a base/delta holding what Hive never writes."""

    def __init__(self, path: str, problem: str, expected: str) -> None:
        self.path, self.problem, self.expected = path, problem, expected
        super().__init__(
            f"Corrupt ACID data at {path!r}: {problem}; expected {expected}; the read stopped there and "
            "nothing was changed; hint: move the file or directory aside, or restore it from a backup"
        )


class ShiftedStructValuesError(CorruptDataError):
    """A compaction input written with pyarrow's nested-struct loss (``acid_core.orc.nested_nulls``).

    Every reader reads its struct values shifted; a compaction would write them so into a base that
    no check can tell from a correct one, and the cleaner would then delete the file, the only place
    still holding the values as they were written. So the compaction stops before it merges a row.
    """

    def __init__(self, path: str, columns: Sequence[str]) -> None:
        self.path, self.columns = path, tuple(columns)
        self.problem = f"its struct columns {', '.join(self.columns)} hold values written shifted"
        self.expected = "struct children that count the values a reader sees"
        AcidError.__init__(
            self,
            f"Corrupt ACID data at {path!r}: {self.problem} (pyarrow's ORC writer, acidflow before its "
            f"nested-struct fix); expected {self.expected}; the compaction stopped and nothing was "
            "changed, so the file keeps what was written; hint: `acidflow check` lists such files; "
            "rewrite their rows from their source, then compact",
        )


class TableDroppedError(AcidError):
    """The table was dropped while the cleaner worked on it: it stops and recreates nothing."""

    def __init__(self, table: str, location: str) -> None:
        self.table, self.location = table, location
        super().__init__(
            f"Table {table!r} was dropped while it was cleaned ({location!r} or its metastore entry is gone); "
            "expected the table to exist; nothing more was done and its directory was not recreated"
        )


class DiskFullError(StorageError):
    """No space left on the device holding ``path`` (data files or the metastore's database)."""

    def __init__(self, path: str, operation: str, detail: str) -> None:
        # pyarrow appends the Python traceback of a failed stream write to its message: keep one line.
        detail = (detail.strip().splitlines() or [""])[0].split(". Detail: Python exception", 1)[0]
        self.path, self.operation, self.detail = path, operation, detail
        super().__init__(
            f"Disk full: {operation} could not write {path!r} ({detail}); expected free space on that disk; "
            "hint: free space (or raise the quota) and rerun; nothing was committed"
        )


class ReadOnlyStorageError(StorageError):
    """The file system holding ``path`` (the embedded metastore's SQLite file) is read-only."""

    def __init__(self, path: str, operation: str, detail: str) -> None:
        self.path, self.operation, self.detail = path, operation, detail
        super().__init__(
            f"Read-only file system: {operation} could not open {path!r} for writing ({detail}); expected a "
            "writable file system (SQLite writes its journal next to the database even to read); hint: "
            "remount it read-write, or use a warehouse (--warehouse) or --metastore on a writable one"
        )


class ReadOnlyFileSystemError(StorageError):
    """A table's file system turned read-only (remounted ``ro`` after an I/O error, a full disk's guard).

    Nothing was changed by the failed call; what ran before it is kept (the cleaner's ledger says
    what it deleted, so its next run goes on from there).
    """

    def __init__(self, path: str, operation: str, detail: str) -> None:
        detail = (detail.strip().splitlines() or [""])[0].split(". Detail: Python exception", 1)[0]
        self.path, self.operation, self.detail = path, operation, detail
        super().__init__(
            f"Read-only file system: {operation} could not change {path!r} ({detail}); expected a writable "
            "file system under the table; acidflow stops this step and the next run goes on from what is "
            "on disk; hint: remount it read-write (check the kernel log for why it went read-only) and rerun"
        )


class InvalidDataSourceOptionError(AcidError, ValueError):
    """An option of the ``hiveacid`` Spark data source (``.option(k, v)``, ``OPTIONS (...)``) that is invalid."""

    def __init__(self, option: str, value: object, expected: str) -> None:
        self.option, self.value, self.expected = option, value, expected
        super().__init__(
            f"Invalid hiveacid option {option}={value!r}; expected {expected}; hint: see the README section "
            "'Read Hive ACID tables from PySpark'"
        )


class UnsupportedDataSourceWriteError(AcidError, ValueError):
    """A Spark write into a Hive ACID table that acidflow refuses (the transaction is aborted)."""

    def __init__(self, table: str, problem: str, expected: str) -> None:
        self.table, self.problem, self.expected = table, problem, expected
        super().__init__(
            f"Cannot write to {table!r} through hiveacid: {problem}; expected {expected}; nothing was "
            "committed"
        )


class WriteLockError(LockTimeoutError):
    """A Spark write through ``hiveacid`` that could not take its table locks (nothing was written)."""

    def __init__(self, table: str, txn_id: int, problem: str) -> None:
        self.table, self.txn_id, self.problem = table, txn_id, problem
        super().__init__(
            f"Cannot lock {table!r} for the hiveacid write of txn {txn_id}: {problem}; expected the "
            "locks Hive's writer takes (SHARED to append, EXCLUSIVE to overwrite); hint: retry when the "
            "holders are done; the transaction was aborted"
        )


class HiveMetastoreCapabilityError(AcidError):
    """A Hive Metastore that cannot do what acidflow asked (too old, or a setting is missing)."""

    def __init__(self, metastore: str, operation: str, problem: str, hint: str) -> None:
        self.metastore, self.operation, self.problem = metastore, operation, problem
        super().__init__(f"Cannot {operation} on the Hive Metastore {metastore!r}: {problem}; hint: {hint}")


class HiveMetastoreUnavailableError(MetastoreError):
    """The Hive Metastore cannot be reached: no URI answered, or the connection broke during a call.

    Nothing is re-sent blindly: a call that reads is retried (``hive.metastore.failure.retries``), a
    call that changes state is not, and ``commit_txn`` is checked (``HiveMetastoreLostCommitAbortedError``
    or ``CommitStateUnknownError``). Every step acidflow runs through the HMS is checked or safe to
    repeat, so the next run starts from what the metastore holds.
    """

    service: ClassVar[str | None] = "Hive Metastore"

    def __init__(self, uris: str, problem: str, operation: str = "connect") -> None:
        self.operation, self.url, self.problem = operation, uris, problem
        AcidError.__init__(
            self,
            f"Cannot reach the Hive Metastore {uris!r} during {operation!r}: {problem}; expected a "
            "HiveMetaStore answering on thrift://host:port; acidflow stops this run and the next run "
            "starts from the state the metastore holds; hint: check that the server runs, "
            "ACIDFLOW_METASTORE (hive.metastore.uris) and ACIDFLOW_HMS_TIMEOUT, then rerun",
        )


class HiveMetastoreLostCommitAbortedError(HiveMetastoreUnavailableError):
    """The Hive Metastore went away during ``commit_txn``; checked after reconnecting, it had not committed.

    The transaction is aborted then (its locks may have lapsed while the server was away, so it is
    never committed late): nothing it wrote is visible.
    """

    def __init__(self, txn_id: int, uris: str, problem: str) -> None:
        self.txn_id, self.operation, self.url, self.problem = txn_id, "commit_txn", uris, problem
        AcidError.__init__(
            self,
            f"The Hive Metastore {uris!r} went away during the commit of transaction {txn_id} ({problem}); "
            "checked after reconnecting: the commit had not happened, so acidflow aborted the transaction "
            "and nothing it wrote is visible; expected the commit to be answered; hint: run it again",
        )


# Where an error that is not acidflow's own comes from, by the top-level package of its class.
_SERVICE_OF_PACKAGE = {
    "kazoo": "ZooKeeper",
    "psycopg2": "PostgreSQL",
    "psycopg": "PostgreSQL",
    "thrift": "Hive Metastore",
    "hive_metastore": "Hive Metastore",
}
_STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EIO, errno.EDQUOT})


def failed_service(error: BaseException) -> str | None:
    """The service whose fault ``error`` reports, from it or the errors it was raised from.

    The first error of the chain (``error``, then its ``__cause__``/``__context__``) that names a
    service wins: an ``AcidError``'s ``service``, a client library's exception (kazoo: ZooKeeper,
    psycopg: PostgreSQL, thrift: Hive Metastore), an ``OSError`` of a full or read-only disk.

    >>> failed_service(MetastoreDatabaseUnavailableError("open_txn", "postgresql://h/db", "refused"))
    'PostgreSQL'
    >>> failed_service(ValueError("bad")) is None
    True
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        service = getattr(type(current), "service", None) if isinstance(current, AcidError) else None
        if service is None and isinstance(current, LockLostError):
            service = current.lost_service
        if service is None:
            service = _SERVICE_OF_PACKAGE.get(type(current).__module__.split(".", 1)[0])
        if service is None and isinstance(current, OSError) and current.errno in _STORAGE_ERRNOS:
            service = "storage"
        if service is not None:
            return service
        current = current.__cause__ or current.__context__
    return None


def one_line(text: object) -> str:
    r"""``text`` (an error, say) on one line: a log line users read has no traceback and no breaks.

    >>> one_line(OSError(30, "Read-only file system\n(remounted)"))
    '[Errno 30] Read-only file system (remounted)'
    """
    return " ".join(str(text).split())
