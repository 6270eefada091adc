"""The Hive Metastore adapter: the ``Metastore`` port over Thrift, for tables Hive's writers own.

::

    acidflow ──Metastore port──> HiveMetastore ──HmsConnection──> HMS (thrift://h:9083[,..])
                                      │                            ├─ Hive 4: every call below
                                      │                            ├─ Hive 3: no worker calls
                                      │                            └─ Hive 2.3: no write IDs either
                                      └──HiveQueueSql──> HMS backend DB (ACIDFLOW_HMS_DB), 2.3 queue

What each port call becomes, by server (capabilities are probed once per connection: a Hive 4 call
an old server does not know answers UNKNOWN_METHOD and is not tried again)::

    catalog                 get_all_databases/get_database/get_all_tables/get_table/get_partitions
    get_valid_txns          get_open_txns_req(exclude READ_ONLY)  | get_open_txns_info (open+aborted)
    get_valid_write_ids     get_valid_write_ids (3+)              | 2.x: write IDs are txn IDs, the
                                                                    table's list is the txn list
    allocate_write_id       allocate_table_write_ids (3+)         | 2.x: the txn ID
    add_write_component     lock(SHARED_READ|SHARED_WRITE, isAcid, operationType): TXN_COMPONENTS
    open/commit/abort/heartbeat_txn     open_txns / commit_txn / abort_txn / heartbeat
    enqueue_compaction      compact2 (Hive's own queue: SHOW COMPACTIONS lists it)
    find_next_to_compact    find_next_compact2 (4)                | 2.3: claim by SQL (ACIDFLOW_HMS_DB)
    update_compactor_state, mark_compacted/failed/refused/cleaned   Thrift (4) | SQL (2.3)
    show_compactions        show_compact (+ the backend rows for the highest txn and acidflow's meta)
    find_ready_to_clean     'ready for cleaning' entries whose next txn ID <= the lowest open txn,
                            and with no HMS lock on the table/partition taken before the commit
                            (Hive 2.x readers hold SHARED_READ locks); the entries and their
                            columns come from the backend DB (Hive 4 too: no Thrift call lists
                            them; without ACIDFLOW_HMS_DB Hive 4's own Cleaner cleans)

On servers without ``_v`` visibility (before Hive 4: readers cannot parse ``base_N_vT``) every
claimed compaction carries ``acidflow.compactor.hive31-names=true``, so outputs are named as those
readers expect, unless the compaction or the table sets the property itself (``false``: a table
whose readers all know ``_v`` names, e.g. Trino's, which may then live on an object store). On 2.x the compactor's high watermark stays below its own (open) compaction txn;
on 3.x below the lowest open txn (a base above an open reader's snapshot would hide its history).

Not in the HMS (the HMS does them itself): ``abort_timed_out_txns`` (its AcidHouseKeeperService
reaps by ``hive.txn.timeout``) and ``housekeeping`` return nothing. A reader lease is an open HMS
transaction holding a SHARED_READ lock, with its snapshot recorded in acidflow's side store
(``hive.leases``); the side store also keeps the backlog history and the initiator's marks
(``list_partition_changes`` answers by write ID: exact per partition from the backend database,
per table by Thrift alone).

Concurrency: one adapter per thread (a Thrift client is not thread-safe); any number of processes.
Queue transitions on 2.3 are guarded UPDATEs (``hive.queue_sql``), so concurrent compactors,
acidflow's or Hive's, never claim one entry twice.

Invariants: every value returned is a port value (no Thrift object leaks); table names are
lower-cased as Hive normalizes; locations ``file:/x`` are returned as ``file:///x``.
Not here: the socket, retries and failover (``hive.thrift``), the 2.3 queue SQL (``hive.queue_sql``),
converting Thrift values and exceptions (``hive.values``), reader leases (``hive.leases``).
Errors: Thrift exceptions are translated (``NoSuchObjectException`` -> ``NoSuchTableError`` /
``NoSuchDatabaseError``, ``NoSuchTxnException`` -> ``NoSuchTxnError``, ``TxnAbortedException`` ->
``TxnNotOpenError`` or ``CommitConflictError`` for a write conflict, ``MetaException`` ->
``MetastoreError``); a call the server cannot do -> ``HiveMetastoreCapabilityError``; a server that
went away -> ``HiveMetastoreUnavailableError`` (one line naming the HMS and the call). A
``commit_txn`` whose answer was lost (the server killed or restarted) is never re-sent: once the
server answers again the transaction is read back; committed is done, still open is aborted
(``HiveMetastoreLostCommitAbortedError``), no answer within ``commit_check_seconds`` is
``CommitStateUnknownError``.
"""

from __future__ import annotations

import logging
import socket
import time
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from acid_core.errors import (
    AcidError,
    CommitStateUnknownError,
    CompactionStateError,
    DatabaseAlreadyExistsError,
    HiveMetastoreCapabilityError,
    HiveMetastoreLostCommitAbortedError,
    HiveMetastoreUnavailableError,
    InvalidMetastoreRequestError,
    InvalidTablePropertyError,
    MetastoreError,
    NoSuchCompactionError,
    NoSuchDatabaseError,
    NoSuchPartitionError,
    NoSuchTableError,
    NoSuchTxnError,
    PartitionAlreadyExistsError,
    TableAlreadyExistsError,
    TxnNotOpenError,
    UnsupportedCompactionError,
)
from acid_core.metastore.hive.leases import HiveLeases
from acid_core.metastore.hive.thrift import UNSUPPORTED, HmsConnection, ThriftValue
from acid_core.metastore.hive.v4 import compaction_from_hive4_row
from acid_core.metastore.hive.values import (
    LOCK_ACQUIRED,
    LOCK_LEVEL_PARTITION,
    LOCK_LEVEL_TABLE,
    LOCK_SHARED_READ,
    LOCK_SHARED_WRITE,
    OP_DELETE,
    OP_INSERT,
    OP_UPDATE,
    ORC_INPUT,
    ORC_OUTPUT,
    ORC_SERDE,
    THRIFT_BY_TYPE,
    TXN_ABORTED,
    TXN_OPEN,
    TXN_TYPE_COMPACTION,
    TXN_TYPE_DEFAULT,
    TXN_TYPE_READ_ONLY,
    ThriftErrors,
    bitset_has,
    compaction_from_queue_row,
    compaction_from_show_element,
    compaction_from_struct,
    current_user,
    hadoop_location,
    table_from_thrift,
    thrift_types,
    txn_from_thrift,
)
from acid_core.metastore.port import (
    DEFAULT_DATABASE,
    DEFAULT_OPEN_TXN_TIMEOUT_SECONDS,
    BacklogSample,
    Clock,
    CompactionInfo,
    CompactionType,
    Database,
    HousekeepingResult,
    InitiatorMark,
    Lease,
    Metastore,
    Partition,
    PartitionChanges,
    Table,
    TableDefinition,
    TxnInfo,
    TxnState,
    TxnType,
    WriteOperation,
    _valid_read_txn_list,
    format_partition_name,
    split_table_name,
)
from acid_core.types import TxnId, WriteId
from acid_core.writeids import (
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
    newly_valid_write_ids,
    to_compactor_write_id_list,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from acid_core.metastore.hive.queue_sql import HiveQueueRow, HiveQueueSql
    from acid_core.metastore.sql.metastore import SqlMetastore

__all__ = ["HIVE31_NAMES_PROPERTY", "HiveMetastore"]

_LOG = logging.getLogger(__name__)

HMS_COMMIT_CHECK_SECONDS: Final = 120.0
"""How long a commit whose answer was lost waits for the HMS to answer again (a restart takes ~30 s)."""
_CHECK_INTERVAL_SECONDS: Final = 0.5

HIVE31_NAMES_PROPERTY: Final = "acidflow.compactor.hive31-names"
# What Hive's own writers declare to a Hive 4 metastore (HiveMetaStoreClient.setProcessorCapabilities).
_PROCESSOR_CAPABILITIES: Final = (
    "HIVEFULLACIDREAD",
    "HIVEFULLACIDWRITE",
    "HIVEMANAGEDINSERTREAD",
    "HIVEMANAGEDINSERTWRITE",
)


def _names_hive31(properties: Mapping[str, str]) -> str | None:
    """The value of ``HIVE31_NAMES_PROPERTY`` in ``properties`` (key case-insensitive), or None."""
    return next((v for k, v in properties.items() if k.lower() == HIVE31_NAMES_PROPERTY), None)


def _below_lowest_open_txn(valid_txns: ValidTxnList) -> ValidTxnList:
    """The list with its high watermark just below its lowest open txn (aborted ones below kept)."""
    if not valid_txns.open_ids:
        return valid_txns
    high_watermark = min(valid_txns.open_ids) - 1
    return ValidTxnList(
        high_watermark=high_watermark,
        aborted_ids=tuple(txn for txn in valid_txns.aborted_ids if txn <= high_watermark),
    )


class HiveMetastore(Metastore):
    """The ``Metastore`` port on a Hive Metastore (see the module docstring).

    Args:
        connection: the Thrift connection (``ThriftHmsConnection``, or a recorded one in tests).
        queue_sql: the HMS backend database, for the compaction queue on servers without the
            Hive 4 worker calls (``ACIDFLOW_HMS_DB``); None: those calls raise
            ``HiveMetastoreCapabilityError``.
        lease_store: acidflow's own SQL store for lease records, backlog history and (with
            nothing better) nothing else: a store, a function opening it on first use, or None.
        warehouse: the warehouse directory of tables created through this adapter (default: the
            server's ``hive.metastore.warehouse.dir``).
        user: the user recorded on transactions and locks.
        clock: epoch seconds.
        commit_check_seconds: how long ``commit_txn`` waits for a server that went away during the
            commit to answer again (a restart) before the outcome is reported unknown.
        sleep: the pause between read-backs of a lost commit (tests may pass their own).
    """

    def __init__(
        self,
        connection: HmsConnection,
        *,
        queue_sql: HiveQueueSql | None = None,
        lease_store: SqlMetastore | Callable[[], SqlMetastore] | None = None,
        warehouse: str | None = None,
        user: str | None = None,
        clock: Clock = time.time,
        commit_check_seconds: float = HMS_COMMIT_CHECK_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._hms = connection
        self._commit_check_seconds, self._sleep = commit_check_seconds, sleep
        self._queue = queue_sql
        self._warehouse = warehouse
        self._user = user or current_user()
        self._host = socket.gethostname()
        self._clock = clock
        self._leases = HiveLeases(self, connection, lease_store, clock=clock)
        self._write_ids_supported: bool | None = None
        self._worker_calls_supported: bool | None = None
        self._marks_unavailable = False

    # -- plumbing ------------------------------------------------------------------------------
    def __enter__(self) -> HiveMetastore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def description(self) -> str:
        """The metastore URIs."""
        return self._hms.description

    @property
    def user(self) -> str:
        """The user recorded on transactions and locks."""
        return self._user

    @property
    def host(self) -> str:
        """The host name recorded on transactions and locks."""
        return self._host

    def close(self) -> None:
        """See ``Metastore.close``."""
        self._hms.close()
        if self._queue is not None:
            self._queue.close()
        self._leases.close()

    def _errors(
        self, operation: str, subject: str = "", *, txn_id: int | None = None, txn_operation: str = ""
    ) -> ThriftErrors:
        return ThriftErrors(self.description, operation, subject, txn_id, txn_operation or operation)

    def is_hive2(self) -> bool:
        """Whether the server predates write IDs (Hive 2.x: ``get_valid_write_ids`` is unknown)."""
        if self._write_ids_supported is None:
            t = thrift_types()
            probe = t.GetValidWriteIdsRequest(
                fullTableNames=["acidflow_probe.no_such_table"], validTxnList="0:9223372036854775807::"
            )
            try:
                answer = self._hms.call_optional("get_valid_write_ids", probe)
            except (t.NoSuchObjectException, t.MetaException, t.NoSuchTxnException):
                answer = None  # the method exists; the probe table does not
            self._write_ids_supported = answer is not UNSUPPORTED
        return not self._write_ids_supported

    def has_worker_calls(self) -> bool:
        """Whether the server has Hive 4's compactor-worker calls (``find_next_compact2`` ...).

        Probed with ``get_latest_committed_compaction_info`` on a table that does not exist (it
        changes nothing), never with ``find_next_compact2`` (which would claim an entry).
        """
        if self._worker_calls_supported is None:
            t = thrift_types()
            request = t.GetLatestCommittedCompactionInfoRequest(
                dbname="acidflow_probe", tablename="no_such_table"
            )
            try:
                answer = self._hms.call_optional("get_latest_committed_compaction_info", request)
            except (t.NoSuchObjectException, t.MetaException):
                answer = None
            self._worker_calls_supported = answer is not UNSUPPORTED
        return self._worker_calls_supported

    # -- catalog -----------------------------------------------------------------------------------
    def create_database(
        self, name: str, location: str | None = None, description: str | None = None, owner: str | None = None
    ) -> Database:
        """See ``Metastore.create_database`` (``create_database`` over Thrift)."""
        t = thrift_types()
        database = name.strip().lower()
        if location is None and self._warehouse is not None:
            location = f"{self._warehouse.rstrip('/')}/{database}.db"
        request = t.Database(
            name=database, description=description, locationUri=location, parameters={}, ownerName=owner
        )
        with self._errors("create_database", database):
            try:
                self._hms.call("create_database", request)
            except t.AlreadyExistsException as e:
                raise DatabaseAlreadyExistsError(database) from e
        return self.get_database(database)

    def get_database(self, name: str) -> Database:
        """See ``Metastore.get_database``."""
        t = thrift_types()
        with self._errors("get_database", name):
            try:
                d = self._hms.call("get_database", name.strip().lower())
            except t.NoSuchObjectException as e:
                raise NoSuchDatabaseError(name) from e
        return Database(d.name, hadoop_location(d.locationUri), d.description, d.ownerName)

    def list_databases(self) -> list[str]:
        """See ``Metastore.list_databases``."""
        with self._errors("list_databases"):
            return sorted(str(n).lower() for n in self._hms.call("get_all_databases"))

    def drop_database(self, name: str, cascade: bool = False) -> None:
        """See ``Metastore.drop_database`` (the HMS deletes managed data, as Hive does)."""
        t = thrift_types()
        with self._errors("drop_database", name):
            try:
                self._hms.call("drop_database", name.strip().lower(), True, cascade)
            except t.NoSuchObjectException as e:
                raise NoSuchDatabaseError(name) from e

    def create_table(self, definition: TableDefinition) -> Table:
        """See ``Metastore.create_table``: an ORC table (Hive 2.3 needs ACID tables bucketed)."""
        t = thrift_types()
        database, name = split_table_name(definition.name)
        sd = t.StorageDescriptor(
            cols=[t.FieldSchema(c.name, c.type, "") for c in definition.columns],
            location=definition.location,
            inputFormat=ORC_INPUT,
            outputFormat=ORC_OUTPUT,
            compressed=False,
            numBuckets=definition.num_buckets,
            serdeInfo=t.SerDeInfo(name=name, serializationLib=ORC_SERDE, parameters={}),
            bucketCols=list(definition.bucket_columns),
            sortCols=[],
            parameters={},
        )
        table = t.Table(
            tableName=name,
            dbName=database,
            owner=definition.owner or self._user,
            createTime=int(self._clock()),
            lastAccessTime=0,
            retention=0,
            sd=sd,
            partitionKeys=[t.FieldSchema(c.name, c.type, "") for c in definition.partition_keys],
            parameters=dict(definition.properties) | ({"EXTERNAL": "TRUE"} if definition.external else {}),
            tableType="EXTERNAL_TABLE" if definition.external else "MANAGED_TABLE",
        )
        with self._errors("create_table", f"{database}.{name}"):
            try:
                if self.has_worker_calls():
                    # Hive 4's MetastoreDefaultTransformer refuses an ACID table from a client that
                    # declares no capabilities ("Processor has no capabilities, cannot create an ACID
                    # table", found on a real 4.0.1 server): create_table_req with Hive's own.
                    request = t.CreateTableRequest(
                        table=table,
                        processorCapabilities=list(_PROCESSOR_CAPABILITIES),
                        processorIdentifier="acidflow",
                    )
                    self._hms.call("create_table_req", request)
                else:
                    self._hms.call("create_table", table)
            except t.AlreadyExistsException as e:
                raise TableAlreadyExistsError(
                    f"Table {f'{database}.{name}'!r} already exists in the Hive Metastore; expected a new name"
                ) from e
            except t.InvalidObjectException as e:
                raise MetastoreError("create_table", self.description, str(e.message)) from e
        return self.get_table(f"{database}.{name}")

    def get_table(self, name: str) -> Table:
        """See ``Metastore.get_table``."""
        database, table = split_table_name(name)
        with self._errors("get_table", f"{database}.{table}"):
            return table_from_thrift(self._raw_table(database, table))

    def _raw_table(self, database: str, table: str) -> ThriftValue:
        """The Thrift ``Table``: ``get_table_req`` on Hive 4, ``get_table`` before.

        A real 4.0.1 server no longer knows ``get_table`` ("Invalid method name").
        """
        if self.has_worker_calls():
            t = thrift_types()
            request = t.GetTableRequest(
                dbName=database,
                tblName=table,
                processorCapabilities=list(_PROCESSOR_CAPABILITIES),
                processorIdentifier="acidflow",
            )
            return self._hms.call("get_table_req", request).table
        return self._hms.call("get_table", database, table)

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        """See ``Metastore.list_tables``."""
        t = thrift_types()
        with self._errors("list_tables", database):
            try:
                self._hms.call("get_database", database.strip().lower())
            except t.NoSuchObjectException as e:
                raise NoSuchDatabaseError(database) from e
            return sorted(str(n).lower() for n in self._hms.call("get_all_tables", database.strip().lower()))

    def drop_table(self, name: str) -> None:
        """See ``Metastore.drop_table``."""
        database, table = split_table_name(name)
        with self._errors("drop_table", f"{database}.{table}"):
            self._hms.call("drop_table", database, table, True)

    def add_partition(
        self, table: str, values: Mapping[str, str | None], location: str | None = None
    ) -> Partition:
        """See ``Metastore.add_partition``."""
        t = thrift_types()
        definition = self.get_table(table)
        keys = [k.name for k in definition.partition_keys]
        ordered = [values[k] if values.get(k) is not None else "" for k in keys]
        name = format_partition_name(keys, [values.get(k) for k in keys])
        raw = self._raw_table(definition.database, definition.name)
        sd = raw.sd
        sd.location = location or f"{definition.location.rstrip('/')}/{name}"
        partition = t.Partition(
            values=ordered,
            dbName=definition.database,
            tableName=definition.name,
            createTime=int(self._clock()),
            lastAccessTime=0,
            sd=sd,
            parameters={},
        )
        with self._errors("add_partition", definition.full_name):
            try:
                self._hms.call("add_partition", partition)
            except t.AlreadyExistsException as e:
                raise PartitionAlreadyExistsError(definition.full_name, name) from e
        return next(p for p in self.list_partitions(definition.full_name) if p.name == name)

    def drop_partition(self, table: str, values: Mapping[str, str | None]) -> None:
        """See ``Metastore.drop_partition``."""
        t = thrift_types()
        definition = self.get_table(table)
        keys = [k.name for k in definition.partition_keys]
        name = format_partition_name(keys, [values.get(k) for k in keys])
        with self._errors("drop_partition", definition.full_name):
            try:
                self._hms.call("drop_partition_by_name", definition.database, definition.name, name, True)
            except t.NoSuchObjectException as e:
                raise NoSuchPartitionError(definition.full_name, name) from e

    def set_location(self, table: str, partition: str | None, location: str) -> None:
        """See ``Metastore.set_location``: ``alter_table`` / ``alter_partition`` with the new ``sd.location``."""
        t = thrift_types()
        database, name = split_table_name(table)
        with self._errors("set_location", f"{database}.{name}"):
            if partition is None:
                raw = self._raw_table(database, name)
                raw.sd.location = location
                self._hms.call("alter_table", database, name, raw)
                return
            try:
                raw_partition = self._hms.call("get_partition_by_name", database, name, partition)
            except t.NoSuchObjectException as e:
                raise NoSuchPartitionError(f"{database}.{name}", partition) from e
            raw_partition.sd.location = location
            self._hms.call("alter_partition", database, name, raw_partition)

    def alter_table_properties(
        self, table: str, set_properties: Mapping[str, str], unset: Iterable[str] = ()
    ) -> Table:
        """See ``Metastore.alter_table_properties``: ``alter_table`` with the new ``parameters``.

        The server validates too (its ``TransactionalValidationListener``); a refusal becomes
        ``InvalidTablePropertyError`` with the server's reason.
        """
        t = thrift_types()
        database, name = split_table_name(table)
        removed = set(unset)
        with self._errors("alter_table_properties", f"{database}.{name}"):
            raw = self._raw_table(database, name)  # Hive 4 no longer knows get_table
            parameters = {k: v for k, v in (raw.parameters or {}).items() if k not in removed}
            raw.parameters = parameters | dict(set_properties)
            try:
                if self.has_worker_calls():
                    # Hive 4: the request form, with the capabilities its ACID tables ask for
                    request = t.AlterTableRequest(
                        dbName=database,
                        tableName=name,
                        table=raw,
                        processorCapabilities=list(_PROCESSOR_CAPABILITIES),
                        processorIdentifier="acidflow",
                    )
                    self._hms.call("alter_table_req", request)
                else:
                    self._hms.call("alter_table", database, name, raw)
            except (t.InvalidOperationException, t.MetaException) as e:
                keys = ", ".join([*set_properties, *sorted(removed)])
                raise InvalidTablePropertyError(
                    f"{database}.{name}",
                    keys,
                    None if not set_properties else ", ".join(set_properties.values()),
                    "a change the Hive Metastore accepts",
                    f"the server refused it: {e.message}",
                ) from e
        return self.get_table(f"{database}.{name}")

    def list_partitions(self, table: str) -> list[Partition]:
        """See ``Metastore.list_partitions`` (one ``get_partitions`` call)."""
        database, name = split_table_name(table)
        with self._errors("list_partitions", f"{database}.{name}"):
            raw_table = self._raw_table(database, name)
            keys = [k.name for k in raw_table.partitionKeys or ()]
            if not keys:
                return []
            rows = self._hms.call("get_partitions", database, name, -1)
        partitions = [
            Partition(
                table=f"{database}.{name}",
                name=format_partition_name(keys, list(p.values)),
                values=tuple(p.values),
                location=hadoop_location(p.sd.location if p.sd is not None else None),
                create_time=float(p.createTime or 0),
            )
            for p in rows
        ]
        return sorted(partitions, key=lambda p: p.name)

    # -- transactions ------------------------------------------------------------------------------
    def _open_and_aborted(self) -> tuple[int, list[tuple[int, bool]], list[Any]]:
        """(high watermark, [(txn, aborted)], TxnInfo structs or []) from the best call the server has."""
        t = thrift_types()
        response = self._hms.call_optional(
            "get_open_txns_req", t.GetOpenTxnsRequest(excludeTxnTypes=[TXN_TYPE_READ_ONLY])
        )
        if response is not UNSUPPORTED and response.open_txns is not None:
            pairs = [
                (int(txn), bitset_has(response.abortedBits, i)) for i, txn in enumerate(response.open_txns)
            ]
            return int(response.txn_high_water_mark), sorted(pairs), []
        # Hive 2.x/3.x: get_open_txns_info lists open and aborted txns with their state (2.3's
        # get_open_txns sends a set<i64> the Hive 4 IDL does not decode, and cannot tell them apart).
        info = self._hms.call("get_open_txns_info")
        infos = list(info.open_txns or ())
        pairs = sorted((int(i.id), int(i.state) == TXN_ABORTED) for i in infos)
        return int(info.txn_high_water_mark), pairs, infos

    def open_txn(
        self,
        user: str | None = None,
        host: str | None = None,
        txn_type: TxnType = TxnType.DEFAULT,
        now: float | None = None,
    ) -> TxnId:
        """See ``Metastore.open_txn`` (``open_txns``; the type is sent, old servers ignore it)."""
        t = thrift_types()
        code = {
            TxnType.DEFAULT: TXN_TYPE_DEFAULT,
            TxnType.READ_ONLY: TXN_TYPE_READ_ONLY,
            TxnType.COMPACTION: TXN_TYPE_COMPACTION,
        }[TxnType(txn_type)]
        request = t.OpenTxnRequest(
            num_txns=1,
            user=user or self._user,
            hostname=host or self._host,
            agentInfo="acidflow",
            txn_type=code,
        )
        with self._errors("open_txn"):
            return TxnId(int(self._hms.call("open_txns", request).txn_ids[0]))

    def get_txn(self, txn_id: int) -> TxnInfo:
        """See ``Metastore.get_txn``: open/aborted from the HMS's list; below its watermark, committed.

        A committed transaction's user, host and times are not kept by the HMS: they are empty.
        """
        with self._errors("get_txn"):
            info = self._hms.call("get_open_txns_info")
        for i in info.open_txns or ():
            if int(i.id) == txn_id:
                return txn_from_thrift(i)
        if 0 < txn_id <= int(info.txn_high_water_mark):
            return TxnInfo(TxnId(txn_id), TxnState.COMMITTED, TxnType.DEFAULT, "", "", 0.0, 0.0)
        raise NoSuchTxnError(txn_id)

    def get_valid_txns(self, current_txn_id: int | None = None) -> ValidTxnList:
        """See ``Metastore.get_valid_txns`` (Hive's ``createValidReadTxnList``)."""
        with self._errors("get_valid_txns"):
            high_watermark, pairs, _ = self._open_and_aborted()
        return _valid_read_txn_list(high_watermark, pairs, current_txn_id)

    def allocate_write_id(self, txn_id: int, table: str) -> WriteId:
        """See ``Metastore.allocate_write_id``; on Hive 2.x the write ID is the txn ID (as 2.x writes)."""
        database, name = split_table_name(table)
        if self.is_hive2():
            state = self.get_txn(txn_id).state
            if state is not TxnState.OPEN:
                raise TxnNotOpenError(txn_id, state.value, "allocate a write ID in")
            return WriteId(txn_id)
        t = thrift_types()
        request = t.AllocateTableWriteIdsRequest(dbName=database, tableName=name, txnIds=[txn_id])
        with self._errors("allocate_write_id", table, txn_id=txn_id, txn_operation="allocate a write ID in"):
            response = self._hms.call("allocate_table_write_ids", request)
        return WriteId(int(response.txnToWriteIds[0].writeId))

    def get_valid_write_ids(self, table: str, valid_txns: ValidTxnList) -> ValidWriteIdList:
        """See ``Metastore.get_valid_write_ids``; on Hive 2.x the table's list is the txn list."""
        database, name = split_table_name(table)
        full = f"{database}.{name}"
        if self.is_hive2():
            return ValidWriteIdList(
                high_watermark=valid_txns.high_watermark,
                open_ids=valid_txns.open_ids,
                aborted_ids=valid_txns.aborted_ids,
                min_open_id=valid_txns.min_open_id,
                table_name=full,
            )
        t = thrift_types()
        # Every ID on its own: Hive 3.1's TxnHandler.getValidWriteIds parses the list with
        # storage-api 2.7's ValidReadTxnList, whose Long.parseLong throws on Hive 4's "a-b" runs
        # (an unchecked NumberFormatException: the server drops the connection, "TSocket read 0
        # bytes", on every call once 5 consecutive txns are open or aborted). Hive 4 reads both.
        request = t.GetValidWriteIdsRequest(
            fullTableNames=[full], validTxnList=valid_txns.to_string(ranges=False)
        )
        with self._errors("get_valid_write_ids", full):
            response = self._hms.call("get_valid_write_ids", request)
        entry = response.tblValidWriteIds[0]
        invalid = [int(w) for w in entry.invalidWriteIds or ()]
        aborted = [w for i, w in enumerate(invalid) if bitset_has(entry.abortedBits, i)]
        return ValidWriteIdList(
            high_watermark=int(entry.writeIdHighWaterMark),
            open_ids=tuple(w for w in invalid if w not in set(aborted)),
            aborted_ids=tuple(aborted),
            min_open_id=None if entry.minOpenWriteId is None else int(entry.minOpenWriteId),
            table_name=full,
        )

    def get_compactor_write_ids(self, table: str, valid_txns: ValidTxnList) -> ValidCompactorWriteIdList:
        """See ``Metastore.get_compactor_write_ids``.

        On Hive 2.x the write IDs are txn IDs, so the compaction's own (open) txn counts as open
        here: the compacted range stays below it, as Hive 2.3's Worker (which opens no txn) does.
        """
        if self.is_hive2():
            return to_compactor_write_id_list(self.get_valid_write_ids(table, self.get_valid_txns()))
        if not self.has_worker_calls():
            # Hive 3.x names bases without _v, so a base holding a write committed after an open
            # reader's snapshot hides the deltas that reader still needs (AcidUtils.getAcidState:
            # "Not enough history available"; fixed by _v in Hive 4, HIVE-20823). Found on a real
            # 3.1.3 server: a lease taken before the last write could not read after a major
            # compaction. So the compactor stops below the lowest open txn, as Hive's
            # createValidCompactTxnList (and Hive 2.3's Worker) do.
            valid_txns = _below_lowest_open_txn(valid_txns)
        return to_compactor_write_id_list(self.get_valid_write_ids(table, valid_txns))

    def add_write_component(
        self, txn_id: int, table: str, partition: str | None, operation: WriteOperation
    ) -> WriteId:
        """See ``Metastore.add_write_component``: an ACID lock, which records TXN_COMPONENTS."""
        t = thrift_types()
        database, name = split_table_name(table)
        write_id = self.allocate_write_id(txn_id, table)
        op = {WriteOperation.INSERT: OP_INSERT, WriteOperation.UPDATE: OP_UPDATE}.get(
            WriteOperation(operation), OP_DELETE
        )
        component = t.LockComponent(
            type=LOCK_SHARED_READ if op == OP_INSERT else LOCK_SHARED_WRITE,
            level=LOCK_LEVEL_TABLE if partition is None else LOCK_LEVEL_PARTITION,
            dbname=database,
            tablename=name,
            partitionname=partition,
            operationType=op,
            isTransactional=True,
        )
        request = t.LockRequest(
            component=[component], txnid=txn_id, user=self._user, hostname=self._host, agentInfo="acidflow"
        )
        with self._errors("lock", table, txn_id=txn_id, txn_operation="record a write in"):
            response = self._hms.call("lock", request)
        if int(response.state) != LOCK_ACQUIRED:
            _LOG.info(
                "lock %s of txn %d is %s; it is granted when the holders finish",
                response.lockid,
                txn_id,
                response.state,
            )
        return write_id

    def commit_txn(self, txn_id: int, now: float | None = None) -> None:
        """See ``Metastore.commit_txn``; committing a committed txn is a no-op (Hive's retries).

        A commit whose connection broke (the server killed or restarted, the answer lost) is never
        re-sent: once the server answers again the transaction is read back (``get_open_txns_info``).
        Committed: done, exactly once. Still open: the commit never happened, and it is aborted
        rather than committed late (its locks may have lapsed). No answer within
        ``commit_check_seconds``: unknown.

        Raises:
            HiveMetastoreLostCommitAbortedError: the commit had not happened; the txn is now aborted.
            CommitStateUnknownError: the server did not answer the check in time.
        """
        t = thrift_types()
        try:
            with self._errors("commit_txn", txn_id=txn_id, txn_operation="commit"):
                self._hms.call("commit_txn", t.CommitTxnRequest(txnid=txn_id))
        except NoSuchTxnError:
            if self.get_txn(txn_id).state is not TxnState.COMMITTED:
                raise
        except (CommitStateUnknownError, HiveMetastoreUnavailableError) as lost:
            self._settle_lost_commit(txn_id, lost)

    def _settle_lost_commit(self, txn_id: int, lost: AcidError) -> None:
        """Read back (and, still open, abort) a transaction whose ``commit_txn`` was not answered."""
        cause = lost.__cause__
        problem = (
            lost.problem
            if isinstance(lost, HiveMetastoreUnavailableError)
            else f"{type(cause).__name__}: {cause}"
        )
        _LOG.warning("commit of txn %s was not answered (%s); checking its state", txn_id, problem)
        deadline = time.monotonic() + self._commit_check_seconds
        while True:
            try:
                state = self.get_txn(txn_id).state
                if state is TxnState.OPEN:
                    self.abort_txn(txn_id)
                    state = TxnState.ABORTED
                break
            except HiveMetastoreUnavailableError:
                # Still away (a restart takes a while), or the abort lost its answer: read it again.
                if time.monotonic() >= deadline:
                    raise CommitStateUnknownError(
                        f"The Hive Metastore {self.description!r} went away during the commit of transaction "
                        f"{txn_id} ({problem}) and did not answer for {self._commit_check_seconds:g} s; the "
                        "transaction may or may not be committed; expected an answer; acidflow does not "
                        "re-send the commit: it stays committed, or the HMS aborts it once its heartbeats "
                        f"time out (hive.txn.timeout); hint: when the server is back, SHOW TRANSACTIONS lists "
                        f"{txn_id} if it did not commit (then run the statement again)"
                    ) from lost
                self._sleep(_CHECK_INTERVAL_SECONDS)
        if state is TxnState.COMMITTED:
            _LOG.warning("commit of txn %s was not answered; checked after reconnecting: committed", txn_id)
            return
        raise HiveMetastoreLostCommitAbortedError(txn_id, self.description, problem) from lost

    def abort_txn(self, txn_id: int) -> None:
        """See ``Metastore.abort_txn``; aborting an aborted txn is a no-op."""
        t = thrift_types()
        try:
            with self._errors("abort_txn", txn_id=txn_id, txn_operation="abort"):
                self._hms.call("abort_txn", t.AbortTxnRequest(txnid=txn_id))
        except NoSuchTxnError:
            state = self.get_txn(txn_id).state
            if state is TxnState.COMMITTED:
                raise TxnNotOpenError(txn_id, "committed", "abort") from None
        except TxnNotOpenError:
            return

    def heartbeat(self, txn_id: int, now: float | None = None) -> None:
        """See ``Metastore.heartbeat`` (``heartbeat(txnid)``)."""
        t = thrift_types()
        # a txn without locks answers NoSuchLockException after the txn itself was heartbeaten
        with (
            self._errors("heartbeat", txn_id=txn_id, txn_operation="heartbeat"),
            suppress(t.NoSuchLockException),
        ):
            self._hms.call("heartbeat", t.HeartbeatRequest(txnid=txn_id))

    def abort_timed_out_txns(self, timeout_seconds: float, now: float | None = None) -> list[TxnId]:
        """Nothing: the HMS reaps silent transactions itself (``hive.txn.timeout``)."""
        return []

    def show_transactions(self) -> list[TxnInfo]:
        """See ``Metastore.show_transactions`` (``get_open_txns_info``)."""
        with self._errors("show_transactions"):
            info = self._hms.call("get_open_txns_info")
        return sorted((txn_from_thrift(i) for i in info.open_txns or ()), key=lambda i: i.txn_id)

    def min_open_txn_id(self) -> TxnId:
        """See ``Metastore.min_open_txn_id``."""
        with self._errors("min_open_txn_id"):
            info = self._hms.call("get_open_txns_info")
        open_ids = [int(i.id) for i in info.open_txns or () if int(i.state) == TXN_OPEN]
        return TxnId(min(open_ids) if open_ids else int(info.txn_high_water_mark) + 1)

    # -- compaction queue ------------------------------------------------------------------------
    def _require_queue(self, operation: str) -> HiveQueueSql:
        if self._queue is None:
            raise HiveMetastoreCapabilityError(
                self.description,
                operation,
                "this server has no compactor-worker Thrift calls (they came with Hive 4) and no "
                "backend database is configured",
                "set ACIDFLOW_HMS_DB to the HMS backend database (a SQLAlchemy URL, e.g. "
                "postgresql://hive@dbhost/metastore) so acidflow updates COMPACTION_QUEUE as Hive's "
                "TxnHandler does",
            )
        return self._queue

    def _use_sql_queue(self) -> bool:
        return not self.has_worker_calls()

    def _sql_queue(self) -> HiveQueueSql | None:
        # The SQL is Hive 2.3's schema; a Hive 4 server is driven through its worker calls only.
        return self._queue if self._queue is not None and self._use_sql_queue() else None

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
        """See ``Metastore.enqueue_compaction`` (``compact2``; a queued one for the target is reused).

        A rebalance goes to Hive 4 as ``CompactionType.REBALANCE`` with ``numberOfBuckets`` and
        ``orderByClause`` (HIVE-26716), as Hive's own ``ALTER TABLE .. COMPACT 'rebalance'`` sends it.

        Raises:
            UnsupportedCompactionError: a rebalance on Hive 2.3 or 3.1, which have no such type.
        """
        kind = CompactionType(compaction_type)
        if kind is CompactionType.REBALANCE and not self.has_worker_calls():
            raise UnsupportedCompactionError(
                table,
                "rebalance",
                "'minor' or 'major' on this Hive Metastore (rebalance compaction exists from Hive 4 on)",
            )
        t = thrift_types()
        database, name = split_table_name(table)
        request = t.CompactionRequest(
            dbname=database,
            tablename=name,
            partitionname=partition,
            type=THRIFT_BY_TYPE[kind],
            runas=run_as,
            properties=dict(properties or {}),
            initiatorId=initiator_id,
            initiatorVersion=initiator_version,
        )
        if kind is CompactionType.REBALANCE:
            request.numberOfBuckets = number_of_buckets or None
            request.orderByClause = order_by
        with self._errors("compact2", f"{database}.{name}"):
            response = self._hms.call("compact2", request)
        return int(response.id)

    def _hive31_names(self, info: CompactionInfo) -> CompactionInfo:
        # Readers before Hive 4 cannot parse base_N_vT / delta_a_b_vT: name outputs as they expect,
        # unless the compaction or the table says otherwise (a table read only by readers that
        # know _v names, e.g. Trino's, on an object store where names without _v are refused).
        if self.has_worker_calls() or _names_hive31(info.properties):
            return info
        try:
            explicit = _names_hive31(self.get_table(info.table).properties)
        except NoSuchTableError:
            explicit = None
        value = "true" if explicit is None else explicit
        return replace(info, properties={**info.properties, HIVE31_NAMES_PROPERTY: value})

    def find_next_to_compact(
        self, worker_id: str, worker_version: str | None = None, now: float | None = None
    ) -> CompactionInfo | None:
        """See ``Metastore.find_next_to_compact`` (``find_next_compact2``, or SQL on 2.3)."""
        if self._use_sql_queue():
            row = self._require_queue("claim a compaction").claim(worker_id)
            return None if row is None else self._info_from_row(row)
        t = thrift_types()
        request = t.FindNextCompactRequest(workerId=worker_id, workerVersion=worker_version)
        with self._errors("find_next_compact2"):
            response = self._hms.call("find_next_compact2", request)
        ci = getattr(response, "ci", None)
        return None if ci is None else self._info_from_struct(ci)

    def claim_compaction(
        self, compaction_id: int, worker_id: str, worker_version: str | None = None, now: float | None = None
    ) -> CompactionInfo:
        """See ``Metastore.claim_compaction`` (SQL on the backend database; Hive has no such call)."""
        queue = self._require_queue("claim one given compaction")
        row = queue.claim(worker_id, compaction_id)
        if row is None:
            current = self.get_compaction(compaction_id)
            raise CompactionStateError(compaction_id, current.state.value, "claim", "'initiated'")
        return self._info_from_row(row)

    def _struct(self, compaction_id: int, **fields: ThriftValue) -> ThriftValue:
        t = thrift_types()
        info = self.get_compaction(compaction_id)
        database, name = split_table_name(info.table)
        return t.CompactionInfoStruct(
            id=compaction_id,
            dbname=database,
            tablename=name,
            partitionname=info.partition,
            type=THRIFT_BY_TYPE[info.compaction_type],
            **fields,
        )

    def open_compaction_txn(
        self, compaction_id: int, user: str | None = None, host: str | None = None, now: float | None = None
    ) -> TxnId:
        """See ``Metastore.open_compaction_txn``: ``open_txns``, then the queue learns it.

        The HMS has no call that opens a transaction and names it on a queue entry at once (Hive's
        own Worker opens it, then calls ``update_compactor_state``); a worker killed in between
        leaves a transaction that the HMS's reaper aborts after ``hive.txn.timeout``.
        """
        return self.open_txn(user, host, TxnType.COMPACTION, now)

    def update_compactor_state(self, compaction_id: int, txn_id: int, highest_write_id: int) -> None:
        """See ``Metastore.update_compactor_state``."""
        if self._use_sql_queue():
            self._require_queue("update the compactor state").set_compactor_state(
                compaction_id, txn_id, highest_write_id
            )
            return
        with self._errors("update_compactor_state"):
            self._hms.call(
                "update_compactor_state", self._struct(compaction_id, highestWriteId=highest_write_id), txn_id
            )

    def mark_compacted(self, compaction_id: int, now: float | None = None) -> None:
        """See ``Metastore.mark_compacted``; records the next txn ID (the cleaner's rule) on 2.3."""
        if self._use_sql_queue():
            queue = self._require_queue("mark a compaction compacted")
            with self._errors("mark_compacted"):
                next_txn_id = int(self._hms.call("get_open_txns_info").txn_high_water_mark) + 1
            queue.mark_compacted(compaction_id, next_txn_id)
            return
        with self._errors("mark_compacted"):
            self._hms.call("mark_compacted", self._struct(compaction_id))

    def set_cleaner_retry_retention(
        self, compaction_id: int, retry_retention_seconds: float, error_message: str
    ) -> None:
        """See ``Metastore.set_cleaner_retry_retention``; kept in CQ_META_INFO on 2.3/3.1 (no column).

        Hive 4 without a backend database cleans with its own cleaner (``find_ready_to_clean``
        returns nothing), which keeps its own back-off: there the reason is only logged.
        """
        if not retry_retention_seconds >= 0:
            raise InvalidMetastoreRequestError(
                "cleaner retry retention", retry_retention_seconds, "a number of seconds >= 0"
            )
        queue = self._sql_queue()
        if queue is None:
            _LOG.warning("cleaning compaction %s failed: %s", compaction_id, error_message)
            return
        queue.set_retry_retention(compaction_id, round(retry_retention_seconds * 1000), error_message)

    def find_ready_to_clean(
        self, min_open_txn_id: int | None = None, retention_seconds: float = 0, now: float | None = None
    ) -> list[CompactionInfo]:
        """See ``Metastore.find_ready_to_clean``; also waits for HMS locks taken before the commit.

        Ready: 'ready for cleaning'; its next txn ID (recorded at ``mark_compacted``) is at or below
        the lowest open txn, so every txn that could read the obsolete files has ended; committed
        more than ``retention_seconds`` ago; no lock on the table/partition held by a txn below its
        next txn ID, or (txn-less) acquired before the commit. On Hive 4 without a backend database
        the HMS's own Cleaner cleans, and this returns nothing.
        """
        candidates = self._ready_for_cleaning_rows()
        if candidates is None:
            return []
        now_s = self._clock() if now is None else now
        water_mark = self.min_open_txn_id() if min_open_txn_id is None else min_open_txn_id
        ready: list[CompactionInfo] = []
        lowest: dict[tuple[str, str | None], int] = {}
        for info in candidates:
            if info.next_txn_id is None or info.next_txn_id > water_mark:
                continue
            # Hive 4's rule: CQ_COMMIT_TIME < now - retention - CQ_RETRY_RETENTION
            if (
                info.commit_time is not None
                and info.commit_time > now_s - retention_seconds - info.retry_retention
            ):
                continue
            if self._blocking_locks(info):
                continue
            key = (info.table, info.partition)
            highest = info.highest_write_id if info.highest_write_id is not None else 2**63 - 1
            lowest[key] = min(lowest.get(key, highest), highest)
            ready.append(info)
        return [
            i
            for i in ready
            if (i.highest_write_id if i.highest_write_id is not None else 2**63 - 1)
            == lowest[(i.table, i.partition)]
        ]

    def _ready_for_cleaning_rows(self) -> list[CompactionInfo] | None:
        """'ready for cleaning' entries with their cleaner columns; None: no backend DB to read them.

        Hive 4 keeps CQ_NEXT_TXN_ID / CQ_COMMIT_TIME / CQ_RETRY_RETENTION in its own columns and has
        no Thrift call that lists them (``show_compact`` of the IDL acidflow speaks does not carry
        them): they are read from the backend; 2.3/3.1 keep them in CQ_META_INFO (``hive.queue_sql``).
        """
        if self._queue is None:
            return None
        if self._use_sql_queue():
            return [self._info_from_row(row) for row in self._queue.list_all() if row.state == "r"]
        return [compaction_from_hive4_row(row) for row in self._queue.hive4_ready_for_cleaning()]

    def _blocking_locks(self, info: CompactionInfo) -> list[int]:
        t = thrift_types()
        database, name = split_table_name(info.table)
        with self._errors("show_locks", info.table):
            response = self._hms.call("show_locks", t.ShowLocksRequest(dbname=database, tablename=name))
        commit_ms = None if info.commit_time is None else info.commit_time * 1000
        blocking = []
        for lock in response.locks or ():
            if info.partition is not None and lock.partname not in (None, info.partition):
                continue
            txn = int(lock.txnid or 0)
            if txn > 0:
                if info.next_txn_id is not None and txn < info.next_txn_id:
                    blocking.append(int(lock.lockid))
            elif int(lock.state) == LOCK_ACQUIRED and (
                commit_ms is None or lock.acquiredat is None or int(lock.acquiredat) <= commit_ms
            ):
                blocking.append(int(lock.lockid))
        return blocking

    def mark_cleaned(
        self,
        compaction_id: int,
        now: float | None = None,
        *,
        has_uncompacted_aborts: bool | None = None,
        aborted_write_ids: Iterable[int] = (),
    ) -> None:
        """See ``Metastore.mark_cleaned`` (Hive 2.3's ``markCleaned`` by SQL, or ``mark_cleaned``)."""
        if self._use_sql_queue():
            self._require_queue("mark a compaction cleaned").mark_cleaned(
                compaction_id,
                has_uncompacted_aborts=has_uncompacted_aborts,
                aborted_write_ids=aborted_write_ids,
            )
            return
        # Hive 4's markCleaned forgets COMPLETED_TXN_COMPONENTS up to the struct's highestWriteId:
        # without it (show_compact does not carry it) nothing would be forgotten.
        row = None if self._queue is None else self._queue.hive4_get(compaction_id)
        if has_uncompacted_aborts is not False:
            # Hive 4's own Cleaner (inside the HMS) tells MarkCleanedFunction that a live delta
            # still holds aborted writes (hasUncompactedAborts) and which aborted writes it removed
            # (writeIds); the Thrift struct has neither field, so the server would forget every
            # aborted write up to the highest write ID, and a live delta's aborted rows would turn
            # visible once the housekeeper drops those transactions. Run Hive's statements with
            # what this cleaner saw instead (the backend database is what lists the entry).
            if self._queue is None or row is None:
                raise HiveMetastoreCapabilityError(
                    self.description,
                    f"mark compaction {compaction_id} cleaned",
                    "a delta that stays holds aborted writes, which Hive 4's mark_cleaned call cannot be told",
                    "set ACIDFLOW_HMS_DB to the backend database of this Hive 4 metastore",
                )
            self._queue.hive4_mark_cleaned(
                compaction_id, has_uncompacted_aborts=True, aborted_write_ids=aborted_write_ids
            )
            return
        fields: dict[str, ThriftValue] = {}
        if row is not None and row.highest_write_id is not None:
            fields["highestWriteId"] = int(row.highest_write_id)
        try:
            with self._errors("mark_cleaned"):
                self._hms.call("mark_cleaned", self._struct(compaction_id, **fields))
        except MetastoreError:
            # Hive 4.0.1 on PostgreSQL cannot mark an unpartitioned table's entry cleaned (an
            # untyped NULL in its MarkCleanedFunction): with the backend database at hand, run
            # the same statements there (``HiveQueueSql.hive4_mark_cleaned``); else the cleaner's
            # back-off retries the call.
            if self._queue is None or row is None or row.partition is not None or row.state != "r":
                raise
            _LOG.info("mark_cleaned of compaction %d failed on the server; done by SQL", compaction_id)
            self._queue.hive4_mark_cleaned(compaction_id, has_uncompacted_aborts=False)

    def mark_failed(self, compaction_id: int, error_message: str, now: float | None = None) -> None:
        """See ``Metastore.mark_failed``."""
        if self._use_sql_queue():
            self._require_queue("mark a compaction failed").mark_failed(compaction_id, error_message)
            return
        with self._errors("mark_failed"):
            self._hms.call("mark_failed", self._struct(compaction_id, errorMessage=error_message))

    def mark_refused(self, compaction_id: int, error_message: str, now: float | None = None) -> None:
        """See ``Metastore.mark_refused``; Hive 2.3 has no 'refused' state: it is recorded as failed."""
        if self._use_sql_queue():
            self._require_queue("mark a compaction refused").mark_failed(compaction_id, error_message, "iw")
            return
        with self._errors("mark_refused"):
            self._hms.call("mark_refused", self._struct(compaction_id, errorMessage=error_message))

    def abort_compaction(self, compaction_id: int, now: float | None = None) -> None:
        """See ``Metastore.abort_compaction``; recorded as failed (Hive 2.3 has no 'aborted' state)."""
        self._require_queue("abort a compaction").mark_failed(compaction_id, "aborted by the user", "i")

    def record_did_not_initiate(
        self,
        table: str,
        partition: str | None,
        compaction_type: CompactionType,
        error_message: str,
        now: float | None = None,
    ) -> int:
        """See ``Metastore.record_did_not_initiate`` (history 'a', by SQL); 0 without a backend DB."""
        queue = self._sql_queue()
        if queue is None:
            _LOG.warning("did not initiate %s %s: %s", table, partition or "", error_message)
            return 0
        database, name = split_table_name(table)
        code = "a" if CompactionType(compaction_type) is CompactionType.MAJOR else "i"
        return queue.record_attempted(database, name, partition, code)

    def get_compaction(self, compaction_id: int) -> CompactionInfo:
        """See ``Metastore.get_compaction``."""
        queue = self._sql_queue()
        if queue is not None:
            return self._info_from_row(queue.get(compaction_id))
        for info in self.show_compactions():
            if info.id == compaction_id:
                return info
        raise NoSuchCompactionError(compaction_id)

    def show_compactions(self, table: str | None = None) -> list[CompactionInfo]:
        """See ``Metastore.show_compactions`` (backend rows when configured, else ``show_compact``)."""
        wanted = None if table is None else "{}.{}".format(*split_table_name(table))
        queue = self._sql_queue()
        if queue is not None:
            infos = [self._info_from_row(r) for r in queue.list_all()]
        else:
            t = thrift_types()
            with self._errors("show_compact"):
                response = self._hms.call("show_compact", t.ShowCompactRequest())
            infos = [compaction_from_show_element(e) for e in response.compacts or ()]
            if self._queue is not None:
                infos = self._with_hive4_columns(infos, self._queue)
        return sorted((i for i in infos if wanted is None or i.table == wanted), key=lambda i: i.id)

    @staticmethod
    def _with_hive4_columns(infos: list[CompactionInfo], queue: HiveQueueSql) -> list[CompactionInfo]:
        """Queued entries with Hive 4's CQ_TXN_ID, CQ_NEXT_TXN_ID, CQ_COMMIT_TIME, CQ_HIGHEST_WRITE_ID.

        ``show_compact`` of the IDL acidflow speaks does not carry them; recovering a killed worker
        needs the compaction's txn (abort it, or mark a committed one compacted).
        """
        rows = {row.id: compaction_from_hive4_row(row) for row in queue.hive4_queued()}
        merged = []
        for info in infos:
            row = rows.get(info.id)
            if row is not None:
                info = replace(
                    info,
                    highest_write_id=row.highest_write_id,
                    next_txn_id=row.next_txn_id,
                    txn_id=row.txn_id,
                    commit_time=row.commit_time,
                    retry_retention=row.retry_retention,
                    error_message=info.error_message or row.error_message,
                )
            merged.append(info)
        return merged

    def _info_from_row(self, row: HiveQueueRow) -> CompactionInfo:
        info = compaction_from_queue_row(row)
        if row.state in ("i", "w"):
            return self._hive31_names(info)
        return info

    def _info_from_struct(self, ci: ThriftValue) -> CompactionInfo:
        return self._hive31_names(compaction_from_struct(ci))

    # -- leases and housekeeping -------------------------------------------------------------------
    def take_lease(
        self, table: str, ttl_seconds: float, owner: str | None = None, now: float | None = None
    ) -> Lease:
        """See ``Metastore.take_lease``: an open HMS transaction with a read lock (``hive.leases``)."""
        return self._leases.take(table, ttl_seconds, owner, now)

    def get_lease(self, lease_id: int) -> Lease:
        """See ``Metastore.get_lease`` (the side store's record)."""
        return self._leases.get(lease_id)

    def renew_lease(self, lease_id: int, ttl_seconds: float, now: float | None = None) -> Lease:
        """See ``Metastore.renew_lease``: heartbeat the lease's transaction and move its expiry."""
        return self._leases.renew(lease_id, ttl_seconds, now)

    def release_lease(self, lease_id: int) -> None:
        """See ``Metastore.release_lease``: commit the lease's transaction and drop its record."""
        self._leases.release(lease_id)

    def list_leases(self, table: str | None = None) -> list[Lease]:
        """See ``Metastore.list_leases`` (the side store's records; none without one)."""
        return self._leases.list_all(table)

    def expire_leases(self, now: float | None = None) -> list[int]:
        """See ``Metastore.expire_leases``: drop expired records and abort their transactions."""
        return self._leases.expire(now)

    def record_backlog_samples(
        self, samples: Sequence[BacklogSample], prune_before: float | None = None
    ) -> None:
        """Keep the sensor's backlog history in the side store (acidflow's own SQL store).

        On by default (``<warehouse>/.acidflow/metastore.sqlite``, or ``ACIDFLOW_LEASE_STORE``); the
        Hive Metastore has no table for it, so with ``ACIDFLOW_LEASE_STORE=none`` it is dropped
        (logged) and the backlog page shows no trend.
        """
        store = self._leases.store()
        if store is None:
            _LOG.info("no side store (ACIDFLOW_LEASE_STORE=none): %d backlog sample(s) dropped", len(samples))
            return
        store.record_backlog_samples(samples, prune_before)

    def list_backlog_samples(self, since: float, table: str | None = None) -> list[BacklogSample]:
        """The history kept in the side store, else none."""
        store = self._leases.store()
        return [] if store is None else store.list_backlog_samples(since, table)

    def _marks_store(self, operation: str) -> SqlMetastore | None:
        """The side store for the initiator's marks; None (logged) when there is none or it fails to open.

        Losing the marks only costs listings (the next cycle lists every partition), so a side
        store that cannot be opened does not stop the initiator.
        """
        if self._marks_unavailable:
            return None
        try:
            return self._leases.store()
        except AcidError as error:
            # Once per adapter: a cycle over 10,000 tables would say it 10,000 times.
            self._marks_unavailable = True
            _LOG.warning("%s: acidflow's side store is not available (%s)", operation, error)
            return None

    def load_initiator_marks(self) -> dict[str, InitiatorMark]:
        """See ``Metastore.load_initiator_marks``: from acidflow's side store (none without one).

        The Hive Metastore has no place for them (Hive 4's Initiator keeps one time, for the whole
        metastore, in AUX_TABLE): they live where the lease records and the backlog history do,
        ``ACIDFLOW_LEASE_STORE`` or ``<warehouse>/.acidflow/metastore.sqlite``, so they survive
        a restart of acidflow. With ``ACIDFLOW_LEASE_STORE=none`` every cycle lists everything.
        """
        operation = "load the initiator's marks"
        store = self._marks_store(operation)
        try:
            return {} if store is None else store.load_initiator_marks()
        except AcidError as error:
            _LOG.warning("%s: %s; every partition is listed", operation, error)
            return {}

    def commit_initiator_mark(self, mark: InitiatorMark) -> None:
        """See ``Metastore.commit_initiator_mark``: into the side store (dropped without one).

        A mark that cannot be written is logged and dropped: the table's older mark (or none)
        stays, and the next cycle lists more, never less.
        """
        operation = f"keep the initiator's mark of {mark.table}"
        store = self._marks_store(operation)
        try:
            if store is not None:
                store.commit_initiator_mark(mark)
        except AcidError as error:
            _LOG.warning("%s: %s; its next cycle lists more", operation, error)

    def list_partition_changes(
        self,
        table: str,
        since: float,
        *,
        previous_write_ids: ValidWriteIdList | None = None,
        write_ids: ValidWriteIdList | None = None,
    ) -> PartitionChanges:
        """See ``Metastore.list_partition_changes``: by write ID, exact with the backend database.

        What changed since the previous cycle is what the compactor sees now and did not then:
        the write IDs ``newly_valid_write_ids(previous_write_ids, write_ids)`` (on Hive 2.x the
        write IDs are txn IDs, and the lists are the txn lists). ``since`` is not used: the
        HMS's clock, its database's and acidflow's need not agree, write IDs do.

        * With ``ACIDFLOW_HMS_DB``: the partitions of COMPLETED_TXN_COMPONENTS rows under those
          IDs (CTC_WRITEID; 2.3: CTC_TXNID), and those with TXN_COMPONENTS of aborted
          transactions (whatever their time), as Hive's ``findPotentialCompactions`` reads them.
        * Thrift only: no call says which partition a write went to, so either nothing changed
          (the same write-ID list, no aborted write in it) or ``whole_table``.
        * Either list missing, or not in order: ``whole_table``.
        """
        everything = PartitionChanges(frozenset(), frozenset(), whole_table=True)
        if previous_write_ids is None or write_ids is None:
            return everything
        newly_valid = newly_valid_write_ids(previous_write_ids, write_ids)
        if newly_valid is None:
            return everything
        if self._queue is None:
            # The aborted rules (count, age) may change with time alone and the list does not say
            # where the aborted writes are: a table with any is listed whole, as the SQL store
            # lists each partition with an aborted write.
            unchanged = newly_valid.is_empty and not write_ids.aborted_ids
            return PartitionChanges(frozenset(), frozenset(), whole_table=not unchanged)
        database, name = split_table_name(table)
        written, aborted = self._queue.partition_changes(database, name, newly_valid)
        return PartitionChanges(written, aborted)

    def housekeeping(
        self, now: float | None = None, *, open_txn_timeout_seconds: float = DEFAULT_OPEN_TXN_TIMEOUT_SECONDS
    ) -> HousekeepingResult:
        """Expire acidflow's leases (their records, and their transactions are aborted); nothing else.

        The HMS's AcidHouseKeeperService (and ``mark_cleaned``) own the transaction tables.
        """
        expired = self._leases.expire(now)
        if expired:
            _LOG.info("expired reader lease(s) %s", ", ".join(map(str, expired)))
        return HousekeepingResult((), 0, self.min_open_txn_id())
