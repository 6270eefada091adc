"""The metastore port: the values a metastore speaks in and the ``Metastore`` protocol.

Two adapters implement it side by side: ``acid_core.metastore.sql.metastore.SqlMetastore`` (SQLAlchemy:
the embedded SQLite file, or PostgreSQL) and, for tables that live in a Hive Metastore, the Thrift
adapter. ``acid_core.metastore.factory.open_metastore`` picks one from a URL.

What a writer and a reader do with it, following Hive's ``TxnHandler``::

    txn = open_txn(user, host)                      TXNS row 'o'; ID from NEXT_TXN_ID (+1)
    snapshot = get_valid_txns(txn)                  ValidTxnList: hwm = txn, exceptions below it
    write_id = allocate_write_id(txn, "db.t")       NEXT_WRITE_ID[db.t] (+1); same txn, same ID
    add_write_component(txn, "db.t", part, UPDATE) TXN_COMPONENTS; updates/deletes feed WRITE_SET
    heartbeat(txn) ...                              or the reaper aborts it (abort_timed_out_txns)
    commit_txn(txn)                                 first committer wins; a later overlapping
                                                    update/delete of the same table/partition
                                                    raises CommitConflictError and is aborted
    get_valid_write_ids("db.t", snapshot)           ValidWriteIdList for readers (Hive's
                                                    getValidWriteIdsForTable), and the compactor's

The compaction queue follows Hive's states (``CompactionState``)::

    enqueue ─> initiated 'i' ─find_next_to_compact─> working 'w' ─mark_compacted─> ready for cleaning 'r'
                  │  └─abort_compaction─> aborted 'x'        │                          │
                  └──────────────mark_failed / mark_refused──┴─> failed 'f' / refused 'c'
                                                                      mark_cleaned ─> succeeded 's'
    record_did_not_initiate ─> did not initiate 'a' (history only)

Invariants: transaction IDs and per-table write IDs are unique and increasing under any
concurrency (one database transaction each: ``SELECT ... FOR UPDATE`` on PostgreSQL, ``BEGIN
IMMEDIATE`` on SQLite); aborted transactions are never deleted, so their write IDs stay invalid in
every later snapshot; ``commit_txn`` of a committed transaction and ``abort_txn`` of an aborted one
are no-ops (Hive's idempotent retries). The values are frozen; ``split_table_name`` lower-cases as
Hive normalizes.
Not here: any I/O (see the adapters), retries, sleeping.
Errors: the port's methods raise ``AcidError`` subclasses only (see each adapter for its mapping).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from acid_core.errors import InvalidMetastoreRequestError, InvalidTableNameError
from acid_core.writeids import (
    LONG_MAX,
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
)

if TYPE_CHECKING:
    from acid_core.types import TxnId, WriteId

__all__ = [
    "DEFAULT_DATABASE",
    "MAX_LEASE_TTL_SECONDS",
    "DEFAULT_OPEN_TXN_TIMEOUT_SECONDS",
    "METASTORE_DIR_NAME",
    "BacklogSample",
    "Clock",
    "Column",
    "CompactionInfo",
    "CompactionState",
    "CompactionType",
    "Database",
    "HousekeepingResult",
    "InitiatorMark",
    "Lease",
    "Metastore",
    "Partition",
    "PartitionChanges",
    "Table",
    "TableDefinition",
    "TableType",
    "TxnInfo",
    "TxnState",
    "TxnType",
    "WriteOperation",
    "format_partition_name",
    "check_lease_ttl",
    "split_table_name",
    "table_type_from_properties",
]

DEFAULT_DATABASE = "default"
# Hive's listing rules skip names starting with '.' or '_', so the embedded store is invisible there.
METASTORE_DIR_NAME = ".acidflow"
_HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
DEFAULT_OPEN_TXN_TIMEOUT_SECONDS = 1.0
"""Hive's ``metastore.txn.opentxn.timeout`` default: ``housekeeping`` spares transactions this young."""

Clock = Callable[[], float]
"""Returns the current time in epoch seconds (``time.time`` by default)."""


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


class TxnState(StrEnum):
    """A transaction's state (Hive's ``TxnStatus``: 'o', 'c', 'a')."""

    OPEN = "open"
    COMMITTED = "committed"
    ABORTED = "aborted"


class TxnType(StrEnum):
    """A transaction's type (Hive's ``TxnType``); read-only ones are left out of snapshots."""

    DEFAULT = "default"
    READ_ONLY = "read_only"
    COMPACTION = "compaction"


class WriteOperation(StrEnum):
    """What a transaction did to a table or partition (Hive's ``OperationType``)."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


class TableType(StrEnum):
    """Full ACID, insert-only (MM) or plain, from TBLPROPERTIES as Hive's ``AcidUtils`` decides."""

    ACID = "acid"
    INSERT_ONLY = "insert_only"
    PLAIN = "plain"


class CompactionType(StrEnum):
    """Hive's compaction types ('a' major, 'i' minor, 'r' rebalance (Hive 4) in ``CQ_TYPE``)."""

    MAJOR = "major"
    MINOR = "minor"
    REBALANCE = "rebalance"


class CompactionState(StrEnum):
    """Hive's compaction states (``CQ_STATE`` / ``CC_STATE`` codes in comments)."""

    INITIATED = "initiated"  # 'i'
    WORKING = "working"  # 'w'
    READY_FOR_CLEANING = "ready_for_cleaning"  # 'r'
    SUCCEEDED = "succeeded"  # 's'
    FAILED = "failed"  # 'f'
    DID_NOT_INITIATE = "did_not_initiate"  # 'a'
    REFUSED = "refused"  # 'c'
    ABORTED = "aborted"  # 'x'


@dataclass(frozen=True, slots=True)
class Column:
    """A column or partition key: its name and Hive type string (``int``, ``string``, ...)."""

    name: str
    type: str


@dataclass(frozen=True, slots=True)
class Database:
    """A database of the catalog."""

    name: str
    location: str
    description: str | None = None
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class TableDefinition:
    """What CREATE TABLE says; ``name`` is ``table`` (in ``default``) or ``database.table``.

    ``num_buckets`` is -1 when the table is not bucketed, as Hive stores it.
    """

    name: str
    columns: tuple[Column, ...]
    partition_keys: tuple[Column, ...] = ()
    bucket_columns: tuple[str, ...] = ()
    num_buckets: int = -1
    properties: Mapping[str, str] = field(default_factory=dict)
    location: str | None = None
    external: bool = False
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class Table:
    """A table of the catalog, as stored."""

    database: str
    name: str
    location: str
    columns: tuple[Column, ...]
    partition_keys: tuple[Column, ...]
    bucket_columns: tuple[str, ...]
    num_buckets: int
    properties: Mapping[str, str]
    table_type: TableType
    external: bool
    owner: str | None
    create_time: float

    @property
    def full_name(self) -> str:
        """``database.table``."""
        return f"{self.database}.{self.name}"


@dataclass(frozen=True, slots=True)
class Partition:
    """A partition: ``name`` is Hive's escaped ``k1=v1/k2=v2``; ``values`` in key order."""

    table: str
    name: str
    values: tuple[str, ...]
    location: str
    create_time: float


@dataclass(frozen=True, slots=True)
class TxnInfo:
    """One transaction, as SHOW TRANSACTIONS prints it (times in epoch seconds)."""

    txn_id: TxnId
    state: TxnState
    txn_type: TxnType
    user: str
    host: str
    started: float
    last_heartbeat: float


@dataclass(frozen=True, slots=True)
class CompactionInfo:
    """One compaction, queued or historical (Hive's ``CompactionInfo`` / SHOW COMPACTIONS row)."""

    id: int
    table: str
    partition: str | None
    state: CompactionState
    compaction_type: CompactionType
    properties: Mapping[str, str]
    enqueue_time: float | None
    worker_id: str | None = None
    start_time: float | None = None
    end_time: float | None = None
    highest_write_id: WriteId | None = None
    next_txn_id: TxnId | None = None
    txn_id: TxnId | None = None
    commit_time: float | None = None
    error_message: str | None = None
    initiator_id: str | None = None
    initiator_version: str | None = None
    worker_version: str | None = None
    run_as: str | None = None
    retry_retention: float = 0.0
    """Seconds a failed cleaning attempt added before the next one (``CQ_RETRY_RETENTION``)."""
    number_of_buckets: int = 0
    """A rebalance's ``CLUSTERED INTO n BUCKETS`` (``CQ_NUMBER_OF_BUCKETS``); 0: as many as today."""
    order_by: str | None = None
    """A rebalance's ``ORDER BY ...`` clause (``CQ_ORDER_BY``), normalized; None: ``ROW__ID`` order."""


@dataclass(frozen=True, slots=True)
class HousekeepingResult:
    """What one ``housekeeping`` run deleted.

    Attributes:
        deleted_txn_ids: ``TXNS`` rows deleted: aborted transactions with nothing left on disk, and
            committed ones no write-ID row refers to any more.
        deleted_write_id_rows: ``TXN_TO_WRITE_ID`` rows deleted.
        low_water_mark: the transaction ID below which write-ID rows were eligible (the lowest of
            the next txn ID, every open or remaining aborted txn, and every open txn's
            ``MIN_HISTORY_LEVEL``).
    """

    deleted_txn_ids: tuple[TxnId, ...]
    deleted_write_id_rows: int
    low_water_mark: TxnId


@dataclass(frozen=True, slots=True)
class Lease:
    """A reader lease: a full snapshot of ``table`` that stays readable until ``expires``.

    A reader (a Spark job, an external engine) holding a lease reads with exactly ``write_ids``
    and ``txns``, the table's ValidWriteIdList and the global ValidTxnList taken in one metastore
    transaction when the lease was taken. ``txns`` decides which ``_vT`` compactor outputs the
    reader sees: none committed after the lease was taken, however many compactions ran since.
    The cleaner keeps every directory this snapshot reads until the lease is released or expires.

    Attributes:
        lease_id: the lease's ID.
        table: ``db.table``.
        write_ids: the table's ValidWriteIdList (Hive's string via ``to_string()``).
        owner: who holds it.
        created: when it was taken (epoch seconds).
        expires: when it stops protecting anything (epoch seconds).
        txns: the ValidTxnList of the same moment; None only for leases taken before metastore
            revision 0003 (the cleaner protects those conservatively).
    """

    lease_id: int
    table: str
    write_ids: ValidWriteIdList
    owner: str
    created: float
    expires: float
    txns: ValidTxnList | None = None


@dataclass(frozen=True, slots=True)
class BacklogSample:
    """One measurement of a table's or partition's backlog (what the sensor saw at ``sampled_at``).

    Attributes:
        table: ``db.table``.
        partition: Hive's partition name ``k=v[/k2=v2]``, or None for an unpartitioned table.
        sampled_at: epoch seconds.
        deltas: live (uncompacted) delta directories a reader merges.
        delete_deltas: live delete-delta directories.
        delta_bytes: bytes in those deltas.
        delete_delta_bytes: bytes in those delete deltas.
        aborted: directories of aborted writes still on disk.
        oldest_delta_time: epoch seconds of the oldest file in a live delta, None when there is none.
    """

    table: str
    partition: str | None
    sampled_at: float
    deltas: int
    delete_deltas: int
    delta_bytes: int
    delete_delta_bytes: int
    aborted: int = 0
    oldest_delta_time: float | None = None


@dataclass(frozen=True, slots=True)
class InitiatorMark:
    """The last initiator cycle over one table (acidflow's own, like Hive 4's Initiator mutex time).

    Attributes:
        table: ``db.table``.
        started_at: epoch seconds when that cycle started (before its snapshot was taken).
        fingerprint: ``compaction.initiator.initiator_fingerprint`` of that cycle's settings.
        write_ids: the compactor's ``ValidWriteIdList`` of the table that cycle decided at (Hive's
            string form), or None when not recorded. A Hive Metastore's changes are asked by
            write ID, not by time (``list_partition_changes``).
    """

    table: str
    started_at: float
    fingerprint: str
    write_ids: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionChanges:
    """What the transaction tables say changed in one table (Hive's ``findPotentialCompactions``).

    Attributes:
        written: partitions (None: the unpartitioned table) with a write committed at or after
            the time asked for (``COMPLETED_TXN_COMPONENTS.CTC_TIMESTAMP``).
        aborted: partitions with a write of an aborted transaction not cleaned yet
            (``TXN_COMPONENTS`` of ``TXNS`` in state 'a'), whatever its time.
        whole_table: the table changed (or may have) and the metastore cannot tell which
            partitions: every partition is to be listed (a Hive Metastore reached by Thrift only).
    """

    written: frozenset[str | None]
    aborted: frozenset[str | None]
    whole_table: bool = False


# --------------------------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------------------------


MAX_LEASE_TTL_SECONDS = 100 * 365 * 86400.0
"""The longest lease: a century (finite, and its milliseconds fit a BIGINT)."""


def check_lease_ttl(ttl_seconds: float) -> None:
    """Refuse a lease TTL that is not a positive number of seconds below ``MAX_LEASE_TTL_SECONDS``.

    Raises:
        InvalidMetastoreRequestError: naming the TTL.
    """
    if not 0 < ttl_seconds < MAX_LEASE_TTL_SECONDS:
        raise InvalidMetastoreRequestError(
            "lease TTL", ttl_seconds, f"a positive number of seconds below {MAX_LEASE_TTL_SECONDS:.0f}"
        )


def split_table_name(name: str) -> tuple[str, str]:
    """Split ``db.table`` (or ``table``, in ``default``) into lower-cased parts, as Hive normalizes.

    Raises:
        InvalidTableNameError: empty parts or more than one dot.

    >>> split_table_name("Sales.Orders")
    ('sales', 'orders')
    >>> split_table_name("employee")
    ('default', 'employee')
    """
    if not isinstance(name, str):
        raise InvalidTableNameError(repr(name))
    parts = name.strip().lower().split(".")
    if len(parts) == 1:
        parts = [DEFAULT_DATABASE, *parts]
    if len(parts) != 2 or not all(part and part.strip() == part for part in parts):
        raise InvalidTableNameError(name)
    return parts[0], parts[1]


def table_type_from_properties(properties: Mapping[str, str]) -> TableType:
    """Hive's rule (``AcidUtils.isTransactionalTable`` / ``isInsertOnlyTable``) on TBLPROPERTIES.

    >>> table_type_from_properties({"transactional": "true"})
    <TableType.ACID: 'acid'>
    >>> table_type_from_properties({"transactional": "TRUE", "transactional_properties": "insert_only"})
    <TableType.INSERT_ONLY: 'insert_only'>
    """
    lowered = {str(key).lower(): str(value) for key, value in properties.items()}
    if lowered.get("transactional", "").lower() != "true":
        return TableType.PLAIN
    if lowered.get("transactional_properties", "").lower() == "insert_only":
        return TableType.INSERT_ONLY
    return TableType.ACID


# FileUtils.charToEscape: control characters and the characters that mean something in a path.
_ESCAPED = frozenset([chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))


def _escape_path_name(value: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in value)


def format_partition_name(keys: Sequence[str], values: Sequence[str | None]) -> str:
    """Hive's ``FileUtils.makePartName``: ``k1=v1/k2=v2`` with path characters %-escaped.

    A null or empty value becomes ``__HIVE_DEFAULT_PARTITION__``.

    >>> format_partition_name(["ds", "hr"], ["2024-01-01", "12:00"])
    'ds=2024-01-01/hr=12%3A00'
    """
    parts = []
    for key, value in zip(keys, values, strict=True):
        shown = _HIVE_DEFAULT_PARTITION if value is None or value == "" else _escape_path_name(value)
        parts.append(f"{_escape_path_name(key.lower())}={shown}")
    return "/".join(parts)


def _valid_read_txn_list(
    high_watermark: int, open_or_aborted: Sequence[tuple[int, bool]], current_txn_id: int | None
) -> ValidTxnList:
    # TxnCommonUtils.createValidReadTxnList: a txn sees nothing at or above itself except itself.
    current = current_txn_id if current_txn_id is not None and current_txn_id > 0 else None
    hwm = high_watermark if current is None else min(current, high_watermark)
    open_ids: list[int] = []
    aborted_ids: list[int] = []
    min_open: int | None = None
    for txn_id, aborted in open_or_aborted:
        if current is not None and txn_id >= current:
            break
        if aborted:
            aborted_ids.append(txn_id)
        else:
            open_ids.append(txn_id)
            if min_open is None:
                min_open = txn_id
    return ValidTxnList(hwm, tuple(open_ids), tuple(aborted_ids), min_open)


def _valid_write_id_list(
    table: str,
    valid_txns: ValidTxnList,
    high_watermark: int,
    allocations: Sequence[tuple[int, int]],
) -> ValidWriteIdList:
    # GetValidWriteIdsForTableFunction.execute, after its two high-watermark queries.
    invalid: list[int] = []
    aborted_flags: list[bool] = []
    min_open = LONG_MAX
    found_valid = False
    for txn_id, write_id in allocations:
        if valid_txns.is_txn_valid(txn_id):
            found_valid = True
            continue
        invalid.append(write_id)
        aborted = valid_txns.is_txn_aborted(txn_id)
        aborted_flags.append(aborted)
        if not aborted:
            min_open = min(min_open, write_id)
    if not found_valid:
        # Hive: with no committed write left under the watermark, report only the lowest invalid one.
        lowest = invalid[0] if invalid else None
        invalid, aborted_flags = [], []
        if lowest is not None:
            invalid, high_watermark = [lowest], lowest
            aborted_flags = [lowest != min_open]
    return ValidWriteIdList(
        high_watermark=high_watermark,
        open_ids=tuple(w for w, a in zip(invalid, aborted_flags, strict=True) if not a),
        aborted_ids=tuple(w for w, a in zip(invalid, aborted_flags, strict=True) if a),
        min_open_id=None if min_open == LONG_MAX else min_open,
        table_name=table,
    )


# --------------------------------------------------------------------------------------------
# The port
# --------------------------------------------------------------------------------------------


class Metastore(Protocol):
    """The transaction authority: catalog, transactions, write IDs, compaction queue, leases.

    Every ``now`` argument is epoch seconds; ``None`` asks the store's clock.
    """

    # Catalog ---------------------------------------------------------------------------------
    def create_database(
        self, name: str, location: str | None = None, description: str | None = None, owner: str | None = None
    ) -> Database:
        """Create a database; its location defaults to ``<warehouse>/<name>.db`` as in Hive.

        Raises:
            DatabaseAlreadyExistsError: the name is taken.
        """
        ...

    def get_database(self, name: str) -> Database:
        """Load a database. Raises ``NoSuchDatabaseError``."""
        ...

    def list_databases(self) -> list[str]:
        """All database names, sorted."""
        ...

    def drop_database(self, name: str, cascade: bool = False) -> None:
        """Drop a database; with tables only when ``cascade``. Raises ``DatabaseNotEmptyError``."""
        ...

    def create_table(self, definition: TableDefinition) -> Table:
        """Create a table and its write-ID counter; location defaults to ``<db location>/<table>``.

        Raises:
            TableAlreadyExistsError: the name is taken.
            NoSuchDatabaseError: the database does not exist.
            InvalidTableDefinitionError: bad columns, keys or bucketing.
        """
        ...

    def get_table(self, name: str) -> Table:
        """Load a table. Raises ``NoSuchTableError``."""
        ...

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        """Table names of a database, sorted. Raises ``NoSuchDatabaseError``."""
        ...

    def drop_table(self, name: str) -> None:
        """Drop a table, its partitions and its transaction records (Hive's ``cleanupRecords``).

        Raises:
            NoSuchTableError: no such table.
        """
        ...

    def add_partition(
        self, table: str, values: Mapping[str, str | None], location: str | None = None
    ) -> Partition:
        """Add a partition; ``values`` must name exactly the table's partition keys.

        Raises:
            InvalidPartitionError: keys do not match.
            PartitionAlreadyExistsError: it exists.
        """
        ...

    def drop_partition(self, table: str, values: Mapping[str, str | None]) -> None:
        """Drop a partition. Raises ``NoSuchPartitionError``."""
        ...

    def list_partitions(self, table: str) -> list[Partition]:
        """Partitions of a table, sorted by name."""
        ...

    def set_location(self, table: str, partition: str | None, location: str) -> None:
        """Point a table (or one partition) at another directory: metadata only, no file moves.

        Hive's ``ALTER TABLE t [PARTITION (..)] SET LOCATION``: the table's existing partitions
        keep their own locations. The caller validates ``location`` (``acid_core.locations``).
        Raises ``NoSuchTableError`` / ``NoSuchPartitionError``.
        """
        ...

    def alter_table_properties(
        self, table: str, set_properties: Mapping[str, str], unset: Iterable[str] = ()
    ) -> Table:
        """Remove the ``unset`` keys from a table's TBLPROPERTIES, then store ``set_properties``.

        Hive's ``ALTER TABLE t SET|UNSET TBLPROPERTIES``; the caller validates the change
        (``acid_core.table_properties``), and the table type follows the new ``transactional``
        properties. Returns the altered table.
        Raises ``NoSuchTableError``; ``InvalidTablePropertyError`` for a change the store refuses.
        """
        ...

    # Transactions ----------------------------------------------------------------------------
    def open_txn(
        self,
        user: str | None = None,
        host: str | None = None,
        txn_type: TxnType = TxnType.DEFAULT,
        now: float | None = None,
    ) -> TxnId:
        """Open a transaction; IDs are unique and increasing across all clients."""
        ...

    def get_txn(self, txn_id: int) -> TxnInfo:
        """One transaction's record. Raises ``NoSuchTxnError``."""
        ...

    def get_valid_txns(self, current_txn_id: int | None = None) -> ValidTxnList:
        """The snapshot of global transactions (Hive's ``createValidReadTxnList``).

        Read-only transactions are left out. With ``current_txn_id`` the high watermark is that
        transaction and only transactions below it are exceptions, so it sees its own writes.
        """
        ...

    def allocate_write_id(self, txn_id: int, table: str) -> WriteId:
        """The transaction's write ID for a table; the same transaction always gets the same ID.

        Raises:
            NoSuchTxnError / TxnNotOpenError: the transaction is unknown or not open.
            NoSuchTableError: no such table.
        """
        ...

    def get_valid_write_ids(self, table: str, valid_txns: ValidTxnList) -> ValidWriteIdList:
        """A reader's write-ID snapshot of a table (Hive's ``getValidWriteIdsForTable``)."""
        ...

    def get_compactor_write_ids(self, table: str, valid_txns: ValidTxnList) -> ValidCompactorWriteIdList:
        """The compactor's list (Hive's ``createValidCompactWriteIdList`` of the reader's list)."""
        ...

    def add_write_component(
        self, txn_id: int, table: str, partition: str | None, operation: WriteOperation
    ) -> WriteId:
        """Record that the transaction wrote a table/partition; allocates its write ID if needed."""
        ...

    def commit_txn(self, txn_id: int, now: float | None = None) -> None:
        """Commit; first committer wins on overlapping updates/deletes of one table/partition.

        Raises:
            CommitConflictError: a concurrent transaction committed an update/delete of the same
                table/partition first; this transaction is aborted.
            TxnNotOpenError: the transaction was aborted (for example by the reaper).
            NoSuchTxnError: unknown ID.
        """
        ...

    def abort_txn(self, txn_id: int) -> None:
        """Abort; its write IDs stay invalid forever. Raises ``TxnNotOpenError`` if committed."""
        ...

    def heartbeat(self, txn_id: int, now: float | None = None) -> None:
        """Keep an open transaction alive. Raises ``TxnNotOpenError`` if it was aborted."""
        ...

    def abort_timed_out_txns(self, timeout_seconds: float, now: float | None = None) -> list[TxnId]:
        """The reaper (Hive's ``performTimeOuts``): abort open txns silent for ``timeout_seconds``."""
        ...

    def show_transactions(self) -> list[TxnInfo]:
        """Open and aborted transactions, by ID (Hive's ``getOpenTxnsInfo`` / SHOW TRANSACTIONS)."""
        ...

    def min_open_txn_id(self) -> TxnId:
        """The lowest open transaction ID, or the next ID when none is open (Hive's water mark)."""
        ...

    # Compaction queue --------------------------------------------------------------------------
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
        """Queue a compaction ('i'); an initiated or working one for the same target is reused.

        ``number_of_buckets`` and ``order_by`` are a rebalance's (Hive 4's ``CQ_NUMBER_OF_BUCKETS``,
        ``CQ_ORDER_BY``); a metastore that cannot store them refuses a rebalance in one line.
        """
        ...

    def find_next_to_compact(
        self, worker_id: str, worker_version: str | None = None, now: float | None = None
    ) -> CompactionInfo | None:
        """Claim the oldest initiated compaction ('i' -> 'w'), or None."""
        ...

    def claim_compaction(
        self, compaction_id: int, worker_id: str, worker_version: str | None = None, now: float | None = None
    ) -> CompactionInfo:
        """Claim one given initiated compaction ('i' -> 'w'); ``CompactionStateError`` otherwise."""
        ...

    def open_compaction_txn(
        self, compaction_id: int, user: str | None = None, host: str | None = None, now: float | None = None
    ) -> TxnId:
        """Open a COMPACTION transaction for a claimed ('working') entry and record it there.

        Opening and recording are one step where the store allows it, so a worker killed right
        after leaves no transaction that no queue entry names: ``recover_abandoned_compactions``
        aborts it at once instead of the reaper after ``hive.txn.timeout``. Raises
        ``CompactionStateError`` when the entry is not 'working'.
        """
        ...

    def update_compactor_state(self, compaction_id: int, txn_id: int, highest_write_id: int) -> None:
        """Attach the worker's compaction transaction and highest write ID (Hive's same name)."""
        ...

    def mark_compacted(self, compaction_id: int, now: float | None = None) -> None:
        """'w' -> 'r'. Without a compaction txn, records the next txn ID and commit time now.

        With one, ``commit_txn`` of that txn records them: the next txn ID at commit time.
        """
        ...

    def find_ready_to_clean(
        self, min_open_txn_id: int | None = None, retention_seconds: float = 0, now: float | None = None
    ) -> list[CompactionInfo]:
        """Compactions the cleaner may clean now (Hive's ``findReadyToClean``)."""
        ...

    def mark_cleaned(
        self,
        compaction_id: int,
        now: float | None = None,
        *,
        has_uncompacted_aborts: bool | None = None,
        aborted_write_ids: Iterable[int] = (),
    ) -> None:
        """'r' -> history 's'; forget the aborted writes the cleaner removed (Hive's ``markCleaned``).

        ``has_uncompacted_aborts=False`` (the cleaner's directory state found no delta that still
        holds aborted writes) forgets every aborted write of the table/partition up to the
        compaction's highest write ID; otherwise only ``aborted_write_ids`` (those of the aborted
        directories it deleted) are forgotten. Left unset, no aborted write is forgotten (the safe
        default). Only transactions below the compaction's next txn ID count: they had all ended
        before the cleaner listed the directory. ``housekeeping`` then deletes the transactions
        that have nothing left to track.
        """
        ...

    def mark_failed(self, compaction_id: int, error_message: str, now: float | None = None) -> None:
        """'i'/'w'/'r' -> history 'f'."""
        ...

    def set_cleaner_retry_retention(
        self, compaction_id: int, retry_retention_seconds: float, error_message: str
    ) -> None:
        """Record a failed cleaning attempt: the entry stays 'r', not ready for a while.

        Hive's ``setCleanerRetryRetentionTimeOnError``: ``CQ_RETRY_RETENTION`` becomes
        ``retry_retention_seconds`` (added to the retention ``find_ready_to_clean`` waits after the
        commit) and ``CQ_ERROR_MESSAGE`` the reason.

        Raises:
            NoSuchCompactionError / CompactionStateError: not an entry ready for cleaning.
        """
        ...

    def mark_refused(self, compaction_id: int, error_message: str, now: float | None = None) -> None:
        """'i'/'w' -> history 'c'."""
        ...

    def abort_compaction(self, compaction_id: int, now: float | None = None) -> None:
        """'i' -> history 'x' (Hive aborts only initiated compactions)."""
        ...

    def record_did_not_initiate(
        self,
        table: str,
        partition: str | None,
        compaction_type: CompactionType,
        error_message: str,
        now: float | None = None,
    ) -> int:
        """Write history 'a' for a compaction the initiator could not start."""
        ...

    def get_compaction(self, compaction_id: int) -> CompactionInfo:
        """A queued or historical compaction. Raises ``NoSuchCompactionError``."""
        ...

    def show_compactions(self, table: str | None = None) -> list[CompactionInfo]:
        """Queue and history, by ID."""
        ...

    # Reader leases -----------------------------------------------------------------------------
    def take_lease(
        self, table: str, ttl_seconds: float, owner: str | None = None, now: float | None = None
    ) -> Lease:
        """Register the current snapshot of a table for ``ttl_seconds``.

        Returns:
            The lease: its ID and the full snapshot (``write_ids`` and ``txns``, taken together)
            that its holder reads with (``acidflow read TABLE_DIR --lease ID``).

        Raises:
            NoSuchTableError: no such table.
            InvalidMetastoreRequestError: ``ttl_seconds`` is not positive.
        """
        ...

    def get_lease(self, lease_id: int) -> Lease:
        """One lease, live or expired but not yet deleted. Raises ``NoSuchLeaseError``."""
        ...

    def renew_lease(self, lease_id: int, ttl_seconds: float, now: float | None = None) -> Lease:
        """Keep a lease's snapshot for ``ttl_seconds`` more from ``now``.

        On a Hive Metastore this also heartbeats the lease's transaction (``hive.txn.timeout``).

        Raises:
            NoSuchLeaseError: no such lease, or it has expired (the cleaner may have deleted what it read).
            LeaseLostError: (Hive Metastore) its transaction was aborted or ended.
            InvalidMetastoreRequestError: ``ttl_seconds`` is not positive.
        """
        ...

    def release_lease(self, lease_id: int) -> None:
        """Drop a lease. Raises ``NoSuchLeaseError``."""
        ...

    def list_leases(self, table: str | None = None) -> list[Lease]:
        """Leases (of one table or all), by ID; expired ones stay until ``expire_leases``."""
        ...

    def expire_leases(self, now: float | None = None) -> list[int]:
        """Delete leases whose expiry is at or before ``now``; returns their IDs."""
        ...

    # Backlog history (acidflow's own) ----------------------------------------------------------
    def record_backlog_samples(
        self, samples: Sequence[BacklogSample], prune_before: float | None = None
    ) -> None:
        """Store ``samples``; with ``prune_before``, first delete every sample older than it."""
        ...

    def list_backlog_samples(self, since: float, table: str | None = None) -> list[BacklogSample]:
        """Samples taken at or after ``since`` (of one table or all), by table, partition and time."""
        ...

    # Initiator cycles (acidflow's own) ---------------------------------------------------------
    def load_initiator_marks(self) -> dict[str, InitiatorMark]:
        """The last initiator cycle of every table that has one, by ``db.table`` (empty: none known)."""
        ...

    def commit_initiator_mark(self, mark: InitiatorMark) -> None:
        """Record that a cycle started at ``mark.started_at`` has decided every partition of the table.

        A store that cannot keep marks ignores this (every cycle then lists every partition).
        """
        ...

    def list_partition_changes(
        self,
        table: str,
        since: float,
        *,
        previous_write_ids: ValidWriteIdList | None = None,
        write_ids: ValidWriteIdList | None = None,
    ) -> PartitionChanges:
        """Partitions of ``table`` written since the previous cycle or with uncleaned aborts.

        Args:
            table: ``db.table``.
            since: epoch seconds (acidflow's SQL store: writes committed at or after it).
            previous_write_ids: the compactor's list of the previous cycle (``InitiatorMark.write_ids``).
            write_ids: the compactor's list of this cycle. A Hive Metastore answers by these two
                (writes under a write ID valid in ``write_ids`` and not in ``previous_write_ids``),
                and with ``whole_table`` when either is None.
        """
        ...

    # Housekeeping ------------------------------------------------------------------------------
    def housekeeping(
        self, now: float | None = None, *, open_txn_timeout_seconds: float = DEFAULT_OPEN_TXN_TIMEOUT_SECONDS
    ) -> HousekeepingResult:
        """Delete transactions and write-ID rows that no snapshot needs (Hive's AcidHouseKeeperService).

        See ``SqlMetastore.housekeeping``.
        """
        ...

    def close(self) -> None:
        """Release connections."""
        ...
