"""Thrift values of the Hive Metastore, as port values: tables, transactions, compactions, errors.

::

    hive_metastore.ttypes.Table / TxnInfo / ShowCompactResponseElement  --table_from_thrift, txn_from_thrift,
                                                                           compaction_from_show_element-->  port values
    Thrift exceptions (NoSuchObjectException, TxnAbortedException ...)  --ThriftErrors-->  AcidError

The Thrift enums are fixed by Hive's IDL and written here by value; the bindings are imported
lazily (``ttypes``), so importing this module needs no ``pyiceberg[hive]``.

Invariants: no Thrift object leaks out of a conversion; table names are lower-cased as Hive
normalizes; locations ``file:/x`` come back as ``file:///x``.
Not here: calling the server (``hive``, ``hive.thrift``).
Errors: ``ThriftErrors`` translates as listed in ``acid_core.metastore.hive.metastore``.
"""

from __future__ import annotations

import getpass
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Literal

from acid_core.errors import (
    AcidError,
    CommitConflictError,
    MetastoreError,
    NoSuchDatabaseError,
    NoSuchTableError,
    NoSuchTxnError,
    TxnNotOpenError,
)
from acid_core.metastore.port import (
    Column,
    CompactionInfo,
    CompactionState,
    CompactionType,
    Table,
    TxnInfo,
    TxnState,
    TxnType,
    table_type_from_properties,
)
from acid_core.types import TxnId, WriteId

if TYPE_CHECKING:
    from acid_core.metastore.hive.queue_sql import HiveQueueRow
    from acid_core.metastore.hive.thrift import ThriftValue

__all__ = [
    "COMPACT_MAJOR",
    "COMPACT_MINOR",
    "COMPACT_REBALANCE",
    "THRIFT_BY_TYPE",
    "LOCK_ACQUIRED",
    "LOCK_LEVEL_PARTITION",
    "LOCK_LEVEL_TABLE",
    "LOCK_SHARED_READ",
    "LOCK_SHARED_WRITE",
    "OP_DELETE",
    "OP_INSERT",
    "OP_UPDATE",
    "ORC_INPUT",
    "ORC_OUTPUT",
    "ORC_SERDE",
    "STATE_BY_CODE",
    "STATE_BY_HIVE_NAME",
    "TXN_ABORTED",
    "TXN_OPEN",
    "TXN_TYPE_COMPACTION",
    "TXN_TYPE_DEFAULT",
    "TXN_TYPE_READ_ONLY",
    "TYPE_BY_CODE",
    "ThriftErrors",
    "bitset_has",
    "compaction_from_queue_row",
    "compaction_from_show_element",
    "compaction_from_struct",
    "current_user",
    "hadoop_location",
    "parse_compaction_properties",
    "table_from_thrift",
    "thrift_types",
    "txn_from_thrift",
]

ORC_INPUT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUTPUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"

# Thrift enums (hive_metastore.ttypes), by value: the IDL fixes them.
TXN_ABORTED, TXN_OPEN = 2, 3
LOCK_SHARED_READ, LOCK_SHARED_WRITE = 1, 2
LOCK_LEVEL_TABLE, LOCK_LEVEL_PARTITION = 2, 3
LOCK_ACQUIRED = 1
OP_INSERT, OP_UPDATE, OP_DELETE = 2, 3, 4
TXN_TYPE_DEFAULT, TXN_TYPE_READ_ONLY, TXN_TYPE_COMPACTION = 0, 2, 3
COMPACT_MINOR, COMPACT_MAJOR, COMPACT_REBALANCE = 1, 2, 3
_TYPE_BY_THRIFT: Final = {
    COMPACT_MINOR: CompactionType.MINOR,
    COMPACT_MAJOR: CompactionType.MAJOR,
    COMPACT_REBALANCE: CompactionType.REBALANCE,
}
THRIFT_BY_TYPE: Final = {kind: code for code, kind in _TYPE_BY_THRIFT.items()}

STATE_BY_HIVE_NAME: Final = {
    "initiated": CompactionState.INITIATED,
    "working": CompactionState.WORKING,
    "ready for cleaning": CompactionState.READY_FOR_CLEANING,
    "cleaning": CompactionState.READY_FOR_CLEANING,
    "succeeded": CompactionState.SUCCEEDED,
    "failed": CompactionState.FAILED,
    "attempted": CompactionState.DID_NOT_INITIATE,
    "did not initiate": CompactionState.DID_NOT_INITIATE,
    "refused": CompactionState.REFUSED,
    "aborted": CompactionState.ABORTED,
}
STATE_BY_CODE: Final = {
    "i": CompactionState.INITIATED,
    "w": CompactionState.WORKING,
    "r": CompactionState.READY_FOR_CLEANING,
    "s": CompactionState.SUCCEEDED,
    "f": CompactionState.FAILED,
    "a": CompactionState.DID_NOT_INITIATE,
    "c": CompactionState.REFUSED,
    "x": CompactionState.ABORTED,
}
TYPE_BY_CODE: Final = {"a": CompactionType.MAJOR, "i": CompactionType.MINOR}

_LOG = logging.getLogger(__name__)


def thrift_types() -> ThriftValue:
    """The generated ``hive_metastore.ttypes`` module (imported on first use), with Hive 4's rebalance fields.

    The bindings (``pyiceberg[hive]``) predate HIVE-26716: ``CompactionRequest`` lacks fields 9-11
    (``poolName``, ``numberOfBuckets``, ``orderByClause``) and ``CompactionInfoStruct`` fields
    17-19 (the same three). They are added to both specs once, written and read by Thrift's
    generic ``writeStruct``/``readStruct`` (the same wire format as generated code); unset fields
    are not sent, so older servers see exactly what they saw before.
    """
    from hive_metastore import ttypes

    if not getattr(ttypes, "_acidflow_rebalance_fields", False):
        _add_fields(ttypes.CompactionRequest, 9, write=True)
        _add_fields(ttypes.CompactionInfoStruct, 17, write=False)
        ttypes._acidflow_rebalance_fields = True
    return ttypes


def _add_fields(struct: ThriftValue, first_id: int, *, write: bool) -> None:
    from thrift.Thrift import TType

    spec = tuple(struct.thrift_spec)
    names = ("poolName" if write else "poolname", "numberOfBuckets", "orderByClause")
    if len(spec) != first_id:
        # A newer IDL: its generated code has the fields already (nothing to add), or the struct
        # changed in a way this patch does not know (leave the generated code alone, and say so:
        # rebalance compactions on Hive 4 would lose their bucket count).
        known = {field[2] for field in spec if field}
        if not set(names) <= known:
            _LOG.warning(
                "hive_metastore.ttypes.%s has %d fields, expected %d: Hive 4's rebalance fields not added",
                struct.__name__,
                len(spec) - 1,
                first_id - 1,
            )
        return
    types = (TType.STRING, TType.I32, TType.STRING)
    extra = tuple(
        (first_id + i, kind, name, "UTF8" if kind == TType.STRING else None, None)
        for i, (name, kind) in enumerate(zip(names, types, strict=True))
    )
    struct.thrift_spec = spec + extra
    for name in names:
        setattr(struct, name, None)
    if write:
        struct.write = lambda self, oprot: oprot.writeStruct(self, self.thrift_spec)
    else:
        struct.read = lambda self, iprot: iprot.readStruct(self, self.thrift_spec)


def hadoop_location(location: str | None) -> str:
    """A location as acidflow opens it: Hadoop's ``file:/x`` becomes ``file:///x``; None becomes ``""``."""
    # Hive stores file:/x (Hadoop's Path.toString); acidflow's file_io_for expects file:///x.
    if location is None:
        return ""
    if location.startswith("file:") and not location.startswith("file://"):
        return "file://" + location[len("file:") :]
    return location


def table_from_thrift(t: ThriftValue) -> Table:
    """The port's ``Table`` of a Thrift ``Table``."""
    sd = t.sd
    properties = dict(t.parameters or {})
    return Table(
        database=str(t.dbName).lower(),
        name=str(t.tableName).lower(),
        location=hadoop_location(sd.location if sd is not None else None),
        columns=tuple(Column(c.name, c.type) for c in (sd.cols or ())) if sd is not None else (),
        partition_keys=tuple(Column(c.name, c.type) for c in (t.partitionKeys or ())),
        bucket_columns=tuple(sd.bucketCols or ()) if sd is not None else (),
        num_buckets=int(sd.numBuckets) if sd is not None and sd.numBuckets is not None else -1,
        properties=properties,
        table_type=table_type_from_properties(properties),
        external=str(t.tableType or "").upper() == "EXTERNAL_TABLE",
        owner=t.owner,
        create_time=float(t.createTime or 0),
    )


def bitset_has(raw: bytes | None, index: int) -> bool:
    """Whether bit ``index`` is set in a ``java.util.BitSet.toByteArray`` (Hive's ``abortedBits``)."""
    # java.util.BitSet.toByteArray: little-endian, bit i in byte i // 8.
    if not raw or index // 8 >= len(raw):
        return False
    return bool(raw[index // 8] >> (index % 8) & 1)


class ThriftErrors:
    """Translates the server's Thrift exceptions into ``AcidError``.

    A class, not a ``contextlib`` generator: the generated exceptions are immutable, and
    ``contextlib`` would set their ``__traceback__`` (a TypeError instead of the real error).
    """

    def __init__(
        self, where: str, operation: str, subject: str, txn_id: int | None, txn_operation: str
    ) -> None:
        self.where, self.operation, self.subject = where, operation, subject
        self.txn_id, self.txn_operation = txn_id, txn_operation

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> Literal[False]:
        if exc is None or isinstance(exc, AcidError):
            return False
        t = thrift_types()
        from thrift.Thrift import TException

        message = str(getattr(exc, "message", "") or exc)
        if self.txn_id is not None and isinstance(exc, t.NoSuchTxnException):
            raise NoSuchTxnError(self.txn_id) from exc
        if self.txn_id is not None and isinstance(exc, t.TxnAbortedException):
            if "conflict" in message.lower():
                raise CommitConflictError(
                    f"Transaction {self.txn_id} lost a write conflict in the Hive Metastore: {message}; "
                    "expected no concurrent update of the same table/partition; hint: retry in a new transaction"
                ) from exc
            raise TxnNotOpenError(self.txn_id, "aborted", self.txn_operation) from exc
        if isinstance(exc, t.NoSuchObjectException):
            if "database" in message.lower() and "table" not in message.lower():
                raise NoSuchDatabaseError(self.subject.split(".")[0]) from exc
            raise NoSuchTableError(
                f"No such table {self.subject!r} in the Hive Metastore {self.where!r}; expected an existing "
                f"table; hint: SHOW TABLES in Hive lists them ({message})"
            ) from exc
        if isinstance(exc, TException):
            raise MetastoreError(self.operation, self.where, f"{type(exc).__name__}: {message}") from exc
        return False


def compaction_from_show_element(e: ThriftValue) -> CompactionInfo:
    """The port's ``CompactionInfo`` of one ``ShowCompactResponseElement``."""
    return CompactionInfo(
        id=int(e.id or 0),
        table=f"{str(e.dbname).lower()}.{str(e.tablename).lower()}",
        partition=e.partitionname,
        state=STATE_BY_HIVE_NAME.get(str(e.state).lower(), CompactionState.FAILED),
        compaction_type=_TYPE_BY_THRIFT.get(e.type, CompactionType.MINOR),
        properties={},
        enqueue_time=None if e.enqueueTime is None else int(e.enqueueTime) / 1000,
        worker_id=e.workerid,
        start_time=None if e.start is None else int(e.start) / 1000,
        end_time=None if e.endTime is None else int(e.endTime) / 1000,
        highest_write_id=None if e.hightestTxnId is None else WriteId(int(e.hightestTxnId)),
        error_message=e.errorMessage,
        initiator_id=e.initiatorId,
        initiator_version=e.initiatorVersion,
        worker_version=e.workerVersion,
        run_as=e.runAs,
    )


def compaction_from_queue_row(row: HiveQueueRow) -> CompactionInfo:
    """The port's ``CompactionInfo`` of a COMPACTION_QUEUE / COMPLETED_COMPACTIONS row (2.3/3.1).

    The Hive 4 columns those schemas lack (txn, commit time, next txn, retry retention, error) come
    from acidflow's JSON in CQ_META_INFO (``hive.queue_sql``).
    """
    meta = row.meta
    commit_ms = meta.get("commit_time_ms")
    return CompactionInfo(
        id=row.id,
        table=f"{row.database}.{row.table}",
        partition=row.partition,
        state=STATE_BY_CODE.get(row.state, CompactionState.FAILED),
        compaction_type=TYPE_BY_CODE.get(row.type, CompactionType.MAJOR),
        properties=parse_compaction_properties(row.properties),
        enqueue_time=None,
        worker_id=row.worker_id,
        start_time=None if row.start_ms is None else row.start_ms / 1000,
        end_time=None if row.end_ms is None else row.end_ms / 1000,
        highest_write_id=None if row.highest_txn_id is None else WriteId(row.highest_txn_id),
        next_txn_id=None if meta.get("next_txn_id") is None else TxnId(int(meta["next_txn_id"])),
        txn_id=None if meta.get("txn_id") is None else TxnId(int(meta["txn_id"])),
        commit_time=None if commit_ms is None else int(commit_ms) / 1000,
        error_message=meta.get("error_message"),
        run_as=row.run_as,
        retry_retention=int(meta.get("retry_retention_ms", 0)) / 1000,
    )


def compaction_from_struct(ci: ThriftValue) -> CompactionInfo:
    """The port's ``CompactionInfo`` of the ``CompactionInfoStruct`` Hive 4's ``find_next_compact2`` claims."""
    return CompactionInfo(
        id=int(ci.id),
        table=f"{str(ci.dbname).lower()}.{str(ci.tablename).lower()}",
        partition=ci.partitionname,
        state=CompactionState.WORKING,
        compaction_type=_TYPE_BY_THRIFT.get(ci.type, CompactionType.MINOR),
        properties=parse_compaction_properties(ci.properties),
        number_of_buckets=int(getattr(ci, "numberOfBuckets", None) or 0),
        order_by=getattr(ci, "orderByClause", None) or None,
        enqueue_time=None if ci.enqueueTime is None else int(ci.enqueueTime) / 1000,
        worker_id=ci.workerId,
        start_time=None if ci.start is None else int(ci.start) / 1000,
        highest_write_id=None if ci.highestWriteId is None else WriteId(int(ci.highestWriteId)),
        error_message=ci.errorMessage,
        run_as=ci.runas,
    )


def parse_compaction_properties(text: str | Mapping[str, str] | None) -> dict[str, str]:
    """CQ_TBLPROPERTIES as a dict: JSON (acidflow's) or Hive's StringableMap; ``{}`` if neither."""
    # Hive stores CQ_TBLPROPERTIES as StringableMap ("k=v" pairs with lengths); acidflow only needs
    # its own keys, so anything it cannot parse is kept out rather than guessed.
    if text is None:
        return {}
    if isinstance(text, Mapping):
        return {str(k): str(v) for k, v in text.items()}
    try:
        parsed = json.loads(text)
    except ValueError:
        return _parse_stringable_map(text)
    return {str(k): str(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {}


def _parse_stringable_map(text: str) -> dict[str, str]:
    # org.apache.hadoop.hive.common.StringableMap: "<n>:" then per entry "<len>:<key><len>:<value>".
    result: dict[str, str] = {}
    try:
        count_text, rest = text.split(":", 1)
        for _ in range(int(count_text)):
            pair: list[str] = []
            for _part in range(2):
                length_text, rest = rest.split(":", 1)
                length = int(length_text)
                pair.append(rest[:length])
                rest = rest[length:]
            result[pair[0]] = pair[1]
    except ValueError:
        return {}
    return result


def txn_from_thrift(i: ThriftValue) -> TxnInfo:
    """The port's ``TxnInfo`` of a Thrift ``TxnInfo`` (open or aborted: the HMS lists only those)."""
    return TxnInfo(
        txn_id=TxnId(int(i.id)),
        state=TxnState.ABORTED if int(i.state) == TXN_ABORTED else TxnState.OPEN,
        txn_type=TxnType.DEFAULT,
        user=str(i.user or ""),
        host=str(i.hostname or ""),
        started=int(i.startedTime or 0) / 1000,
        last_heartbeat=int(i.lastHeartbeatTime or 0) / 1000,
    )


def current_user() -> str:
    """The OS user, or ``acidflow`` where the password database has no entry."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "acidflow"
