"""SQLAlchemy 2 models of the metastore, modelled on Hive's metastore and TxnHandler schema.

The tables and what they hold (Hive's names, from hive-schema-4.0.0 and TxnDbUtil)::

    DBS ─< TBLS ─< PARTITIONS          catalog: databases, tables (schema, partitioning,
                                       bucketing, TBLPROPERTIES, transactional type), partitions
    NEXT_TXN_ID (one row)              SQLite: the next global transaction ID. PostgreSQL: IDs come
                                       from the TXN_ID_SEQ sequence (Hive 4); the row is the mutex
                                       (share-locked by opens, exclusively by writers' commits) and
                                       records the "settled" mark: no open below it is in flight
    TXNS                               one row per transaction: state o/c/a, type, user, host, times
    NEXT_WRITE_ID                      per table: the next write ID to allocate
    TXN_TO_WRITE_ID                    which transaction got which write ID of which table
    TXN_COMPONENTS                     what an open (or aborted) transaction wrote
    COMPLETED_TXN_COMPONENTS           the same, moved here on commit (the initiator reads it)
    WRITE_SET                          update/delete footprints of committed transactions, for
                                       write-write conflict detection at commit
    NEXT_COMPACTION_QUEUE_ID           the next compaction ID
    COMPACTION_QUEUE                   compactions in flight: initiated / working / ready for cleaning
    COMPLETED_COMPACTIONS              history: succeeded / failed / did not initiate / refused / aborted
    READER_LEASES                      acidflow's own: an external reader's ValidWriteIdList with a TTL
    MIN_HISTORY_LEVEL                  per open transaction, the lowest transaction open when it
                                       opened (Hive 3's table): what housekeeping must keep
    ACIDFLOW_LOCK_SESSIONS             acidflow's own: live sessions of the SQL lock manager
    ACIDFLOW_LOCKS                     acidflow's own: held locks and fair-mode waiting markers
    ACIDFLOW_BACKLOG_SAMPLES           acidflow's own: backlog measurements of the sensor runs
                                       (the backlog page's history and trends)
    ACIDFLOW_INITIATOR_MARKS           acidflow's own: per table, when the last initiator cycle over
                                       it started and its settings' fingerprint (the next cycle
                                       lists only partitions changed since; Hive 4 keeps one time)

Column names are Hive's (``TXN_ID``, ``CQ_STATE``...); attribute names are snake_case. Times are
epoch milliseconds in ``BIGINT`` columns, as Hive stores them. Single-character codes are Hive's:
``TXN_STATE`` o/c/a, ``TC_OPERATION_TYPE`` i/u/d (p: a compactor's footprint), ``CQ_TYPE`` a (major) / i (minor) / r (rebalance), ``CQ_STATE``
i/w/r/s/f/a/c/x.

Deviations from Hive, on purpose: tables without a natural key get a surrogate primary key (the ORM
needs one); JSON columns replace Hive's COLUMNS_V2 / PARTITION_KEYS / TABLE_PARAMS child tables;
READER_LEASES and the two lock tables are new. The lock tables are Core ``Table`` objects (their
columns carry snake_case keys) because ``sql.lock_store`` queries them with Core statements on a
``Connection``; they live on the same ``Base.metadata`` so the Alembic history owns them.

Not here: queries and rules (see ``sql``, ``sql.lock_store``), the DDL history (see ``migrations/``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Sequence,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import Column as SqlColumn
from sqlalchemy import Table as SqlTable
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "LOCKS",
    "LOCK_SESSIONS",
    "NAMING_CONVENTION",
    "BacklogSampleRow",
    "Base",
    "CompactionQueueEntry",
    "CompletedCompaction",
    "CompletedTxnComponent",
    "DatabaseRow",
    "InitiatorMarkRow",
    "MinHistoryLevel",
    "NextCompactionQueueId",
    "NextTxnId",
    "NextWriteId",
    "PartitionRow",
    "ReaderLease",
    "TXN_ID_SEQUENCE",
    "TableRow",
    "Txn",
    "TxnComponent",
    "TxnToWriteId",
    "WriteSetEntry",
]

# Alembic's recommended convention (docs/build/naming.rst): every constraint gets a stable name,
# so later migrations can drop or alter it on every backend, SQLite batch mode included.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base with the naming convention and JSON for dict/list attributes."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}  # noqa: RUF012


class DatabaseRow(Base):
    """A database (Hive's ``DBS``)."""

    __tablename__ = "DBS"

    db_id: Mapped[int] = mapped_column(
        "DB_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True
    )
    name: Mapped[str] = mapped_column("NAME", String(128), unique=True)
    description: Mapped[str | None] = mapped_column("DESC", String(4000))
    location: Mapped[str] = mapped_column("DB_LOCATION_URI", String(4000))
    owner: Mapped[str | None] = mapped_column("OWNER_NAME", String(128))
    create_time: Mapped[int] = mapped_column("CREATE_TIME", BigInteger)


class TableRow(Base):
    """A table (Hive's ``TBLS`` with its columns, keys and parameters folded into JSON)."""

    __tablename__ = "TBLS"
    __table_args__ = (UniqueConstraint("DB_ID", "TBL_NAME"),)

    tbl_id: Mapped[int] = mapped_column(
        "TBL_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True
    )
    db_id: Mapped[int] = mapped_column("DB_ID", ForeignKey("DBS.DB_ID", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column("TBL_NAME", String(256))
    # MANAGED_TABLE or EXTERNAL_TABLE, as Hive's TBL_TYPE.
    tbl_type: Mapped[str] = mapped_column("TBL_TYPE", String(128))
    # acid / insert_only / plain, derived from TBLPROPERTIES at creation.
    transactional_type: Mapped[str] = mapped_column("TBL_TRANSACTIONAL_TYPE", String(16))
    location: Mapped[str] = mapped_column("LOCATION", String(4000))
    # [{"name": ..., "type": ...}, ...] in declaration order (Hive's COLUMNS_V2).
    columns: Mapped[list[Any]] = mapped_column("COLUMNS")
    # Same shape (Hive's PARTITION_KEYS).
    partition_keys: Mapped[list[Any]] = mapped_column("PARTITION_KEYS")
    bucket_columns: Mapped[list[Any]] = mapped_column("BUCKET_COLS")
    num_buckets: Mapped[int] = mapped_column("NUM_BUCKETS", Integer)
    # TBLPROPERTIES (Hive's TABLE_PARAMS).
    properties: Mapped[dict[str, Any]] = mapped_column("TABLE_PARAMS")
    owner: Mapped[str | None] = mapped_column("OWNER", String(767))
    create_time: Mapped[int] = mapped_column("CREATE_TIME", BigInteger)


class PartitionRow(Base):
    """A partition (Hive's ``PARTITIONS``); ``PART_NAME`` is ``k1=v1/k2=v2``, escaped as Hive does."""

    __tablename__ = "PARTITIONS"
    __table_args__ = (UniqueConstraint("TBL_ID", "PART_NAME"),)

    part_id: Mapped[int] = mapped_column(
        "PART_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True
    )
    tbl_id: Mapped[int] = mapped_column("TBL_ID", ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column("PART_NAME", String(767))
    # The values in partition-key order (Hive's PARTITION_KEY_VALS).
    values: Mapped[list[Any]] = mapped_column("PART_KEY_VALS")
    location: Mapped[str] = mapped_column("LOCATION", String(4000))
    create_time: Mapped[int] = mapped_column("CREATE_TIME", BigInteger)


# PostgreSQL only (SQLite ignores sequences): transaction IDs without a row lock (Hive 4's TXNS
# identity column), so opens do not serialize on one row through their disk sync.
TXN_ID_SEQUENCE = Sequence("TXN_ID_SEQ", start=1, metadata=Base.metadata)


class NextTxnId(Base):
    """The single-row counter of global transaction IDs (Hive's ``NEXT_TXN_ID``)."""

    __tablename__ = "NEXT_TXN_ID"

    next_txn_id: Mapped[int] = mapped_column("NTXN_NEXT", BigInteger, primary_key=True, autoincrement=False)


class Txn(Base):
    """A transaction (Hive's ``TXNS``).

    An aborted row stays until nothing it wrote can be on disk any more (its TXN_COMPONENTS are
    gone: it wrote nothing, or the cleaner removed its writes); only then may housekeeping delete it.
    """

    __tablename__ = "TXNS"
    __table_args__ = (Index("ix_TXNS_TXN_STATE_TXN_ID", "TXN_STATE", "TXN_ID"),)

    txn_id: Mapped[int] = mapped_column("TXN_ID", BigInteger, primary_key=True, autoincrement=False)
    # 'o' open, 'c' committed, 'a' aborted (Hive's TxnStatus).
    state: Mapped[str] = mapped_column("TXN_STATE", String(1))
    started: Mapped[int] = mapped_column("TXN_STARTED", BigInteger)
    last_heartbeat: Mapped[int] = mapped_column("TXN_LAST_HEARTBEAT", BigInteger)
    user: Mapped[str] = mapped_column("TXN_USER", String(128))
    host: Mapped[str] = mapped_column("TXN_HOST", String(128))
    # Hive's TxnType ordinal: 0 default, 2 read-only, 3 compaction.
    txn_type: Mapped[int] = mapped_column("TXN_TYPE", Integer)


class NextWriteId(Base):
    """Per table, the next write ID to allocate (Hive's ``NEXT_WRITE_ID``)."""

    __tablename__ = "NEXT_WRITE_ID"

    database: Mapped[str] = mapped_column("NWI_DATABASE", String(128), primary_key=True)
    table: Mapped[str] = mapped_column("NWI_TABLE", String(256), primary_key=True)
    next_write_id: Mapped[int] = mapped_column("NWI_NEXT", BigInteger)


class TxnToWriteId(Base):
    """Which transaction holds which write ID of a table (Hive's ``TXN_TO_WRITE_ID``)."""

    __tablename__ = "TXN_TO_WRITE_ID"
    __table_args__ = (UniqueConstraint("T2W_TXNID", "T2W_DATABASE", "T2W_TABLE"),)

    database: Mapped[str] = mapped_column("T2W_DATABASE", String(128), primary_key=True)
    table: Mapped[str] = mapped_column("T2W_TABLE", String(256), primary_key=True)
    write_id: Mapped[int] = mapped_column("T2W_WRITEID", BigInteger, primary_key=True, autoincrement=False)
    # No foreign key to TXNS, as in Hive: housekeeping deletes an empty aborted txn's TXNS row
    # first and its write-ID row only below the low water mark (cleanTxnToWriteIdTable), so the
    # write-ID high watermark never drops (alembic 0007).
    txn_id: Mapped[int] = mapped_column("T2W_TXNID", BigInteger)


class TxnComponent(Base):
    """Something an open or aborted transaction wrote (Hive's ``TXN_COMPONENTS``)."""

    __tablename__ = "TXN_COMPONENTS"

    id: Mapped[int] = mapped_column("TC_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    txn_id: Mapped[int] = mapped_column("TC_TXNID", ForeignKey("TXNS.TXN_ID"), index=True)
    database: Mapped[str] = mapped_column("TC_DATABASE", String(128))
    table: Mapped[str] = mapped_column("TC_TABLE", String(256))
    partition: Mapped[str | None] = mapped_column("TC_PARTITION", String(767))
    # 'i' insert, 'u' update, 'd' delete (Hive's OperationType).
    operation: Mapped[str] = mapped_column("TC_OPERATION_TYPE", String(1))
    write_id: Mapped[int | None] = mapped_column("TC_WRITEID", BigInteger)


class CompletedTxnComponent(Base):
    """What a committed transaction wrote (Hive's ``COMPLETED_TXN_COMPONENTS``)."""

    __tablename__ = "COMPLETED_TXN_COMPONENTS"
    __table_args__ = (
        Index("ix_COMPLETED_TXN_COMPONENTS_table", "CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION"),
    )

    id: Mapped[int] = mapped_column("CTC_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    txn_id: Mapped[int] = mapped_column("CTC_TXNID", BigInteger)
    database: Mapped[str] = mapped_column("CTC_DATABASE", String(128))
    table: Mapped[str] = mapped_column("CTC_TABLE", String(256))
    partition: Mapped[str | None] = mapped_column("CTC_PARTITION", String(767))
    timestamp: Mapped[int] = mapped_column("CTC_TIMESTAMP", BigInteger)
    write_id: Mapped[int | None] = mapped_column("CTC_WRITEID", BigInteger)
    # 'Y' when the transaction updated or deleted anything, else 'N' (Hive's CTC_UPDATE_DELETE).
    update_delete: Mapped[str] = mapped_column("CTC_UPDATE_DELETE", String(1))


class WriteSetEntry(Base):
    """An update/delete footprint of a committed transaction (Hive's ``WRITE_SET``).

    ``WS_COMMIT_ID`` is the high watermark at commit, so two transactions overlap when the
    committing one's ID is <= the other's commit ID.
    """

    __tablename__ = "WRITE_SET"
    __table_args__ = (Index("ix_WRITE_SET_table", "WS_DATABASE", "WS_TABLE", "WS_PARTITION"),)

    id: Mapped[int] = mapped_column("WS_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    database: Mapped[str] = mapped_column("WS_DATABASE", String(128))
    table: Mapped[str] = mapped_column("WS_TABLE", String(256))
    partition: Mapped[str | None] = mapped_column("WS_PARTITION", String(767))
    txn_id: Mapped[int] = mapped_column("WS_TXNID", BigInteger, index=True)
    commit_id: Mapped[int] = mapped_column("WS_COMMIT_ID", BigInteger)
    operation: Mapped[str] = mapped_column("WS_OPERATION_TYPE", String(1))


class NextCompactionQueueId(Base):
    """The single-row counter of compaction IDs (Hive's ``NEXT_COMPACTION_QUEUE_ID``)."""

    __tablename__ = "NEXT_COMPACTION_QUEUE_ID"

    next_id: Mapped[int] = mapped_column("NCQ_NEXT", BigInteger, primary_key=True, autoincrement=False)


class CompactionQueueEntry(Base):
    """A compaction in flight (Hive's ``COMPACTION_QUEUE``): states i, w, r."""

    __tablename__ = "COMPACTION_QUEUE"
    __table_args__ = (Index("ix_COMPACTION_QUEUE_table", "CQ_DATABASE", "CQ_TABLE", "CQ_PARTITION"),)

    id: Mapped[int] = mapped_column("CQ_ID", BigInteger, primary_key=True, autoincrement=False)
    database: Mapped[str] = mapped_column("CQ_DATABASE", String(128))
    table: Mapped[str] = mapped_column("CQ_TABLE", String(256))
    partition: Mapped[str | None] = mapped_column("CQ_PARTITION", String(767))
    state: Mapped[str] = mapped_column("CQ_STATE", String(1), index=True)
    compaction_type: Mapped[str] = mapped_column("CQ_TYPE", String(1))
    properties: Mapped[dict[str, Any] | None] = mapped_column("CQ_TBLPROPERTIES")
    worker_id: Mapped[str | None] = mapped_column("CQ_WORKER_ID", String(128))
    enqueue_time: Mapped[int] = mapped_column("CQ_ENQUEUE_TIME", BigInteger)
    start: Mapped[int | None] = mapped_column("CQ_START", BigInteger)
    run_as: Mapped[str | None] = mapped_column("CQ_RUN_AS", String(128))
    highest_write_id: Mapped[int | None] = mapped_column("CQ_HIGHEST_WRITE_ID", BigInteger)
    error_message: Mapped[str | None] = mapped_column("CQ_ERROR_MESSAGE", Text)
    next_txn_id: Mapped[int | None] = mapped_column("CQ_NEXT_TXN_ID", BigInteger)
    txn_id: Mapped[int | None] = mapped_column("CQ_TXN_ID", BigInteger, index=True)
    commit_time: Mapped[int | None] = mapped_column("CQ_COMMIT_TIME", BigInteger)
    initiator_id: Mapped[str | None] = mapped_column("CQ_INITIATOR_ID", String(128))
    initiator_version: Mapped[str | None] = mapped_column("CQ_INITIATOR_VERSION", String(128))
    worker_version: Mapped[str | None] = mapped_column("CQ_WORKER_VERSION", String(128))
    cleaner_start: Mapped[int | None] = mapped_column("CQ_CLEANER_START", BigInteger)
    retry_retention: Mapped[int] = mapped_column("CQ_RETRY_RETENTION", BigInteger, default=0)
    number_of_buckets: Mapped[int | None] = mapped_column("CQ_NUMBER_OF_BUCKETS", Integer)
    order_by: Mapped[str | None] = mapped_column("CQ_ORDER_BY", String(4000))


class CompletedCompaction(Base):
    """Compaction history (Hive's ``COMPLETED_COMPACTIONS``): states s, f, a, c, x."""

    __tablename__ = "COMPLETED_COMPACTIONS"
    __table_args__ = (Index("ix_COMPLETED_COMPACTIONS_table", "CC_DATABASE", "CC_TABLE", "CC_PARTITION"),)

    id: Mapped[int] = mapped_column("CC_ID", BigInteger, primary_key=True, autoincrement=False)
    database: Mapped[str] = mapped_column("CC_DATABASE", String(128))
    table: Mapped[str] = mapped_column("CC_TABLE", String(256))
    partition: Mapped[str | None] = mapped_column("CC_PARTITION", String(767))
    state: Mapped[str] = mapped_column("CC_STATE", String(1))
    compaction_type: Mapped[str] = mapped_column("CC_TYPE", String(1))
    properties: Mapped[dict[str, Any] | None] = mapped_column("CC_TBLPROPERTIES")
    worker_id: Mapped[str | None] = mapped_column("CC_WORKER_ID", String(128))
    enqueue_time: Mapped[int | None] = mapped_column("CC_ENQUEUE_TIME", BigInteger)
    start: Mapped[int | None] = mapped_column("CC_START", BigInteger)
    end: Mapped[int | None] = mapped_column("CC_END", BigInteger)
    run_as: Mapped[str | None] = mapped_column("CC_RUN_AS", String(128))
    highest_write_id: Mapped[int | None] = mapped_column("CC_HIGHEST_WRITE_ID", BigInteger)
    error_message: Mapped[str | None] = mapped_column("CC_ERROR_MESSAGE", Text)
    next_txn_id: Mapped[int | None] = mapped_column("CC_NEXT_TXN_ID", BigInteger)
    txn_id: Mapped[int | None] = mapped_column("CC_TXN_ID", BigInteger)
    commit_time: Mapped[int | None] = mapped_column("CC_COMMIT_TIME", BigInteger)
    initiator_id: Mapped[str | None] = mapped_column("CC_INITIATOR_ID", String(128))
    initiator_version: Mapped[str | None] = mapped_column("CC_INITIATOR_VERSION", String(128))
    worker_version: Mapped[str | None] = mapped_column("CC_WORKER_VERSION", String(128))
    number_of_buckets: Mapped[int | None] = mapped_column("CC_NUMBER_OF_BUCKETS", Integer)
    order_by: Mapped[str | None] = mapped_column("CC_ORDER_BY", String(4000))


class ReaderLease(Base):
    """An external reader's registered snapshot of one table, honoured by the cleaner until it expires."""

    __tablename__ = "READER_LEASES"
    __table_args__ = (Index("ix_READER_LEASES_table", "RL_DATABASE", "RL_TABLE"),)

    id: Mapped[int] = mapped_column("RL_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    database: Mapped[str] = mapped_column("RL_DATABASE", String(128))
    table: Mapped[str] = mapped_column("RL_TABLE", String(256))
    # The ValidWriteIdList string, in Hive's format, that the lease protects.
    write_id_list: Mapped[str] = mapped_column("RL_WRITE_ID_LIST", Text)
    # The ValidTxnList string of the same moment (revision 0003); NULL for leases taken before it.
    txn_list: Mapped[str | None] = mapped_column("RL_TXN_LIST", Text)
    owner: Mapped[str] = mapped_column("RL_OWNER", String(256))
    created: Mapped[int] = mapped_column("RL_CREATED", BigInteger)
    expires: Mapped[int] = mapped_column("RL_EXPIRES", BigInteger, index=True)


class MinHistoryLevel(Base):
    """Per open transaction, the lowest transaction ID open when it opened (Hive 3's ``MIN_HISTORY_LEVEL``).

    Every snapshot a transaction takes lists as open only transactions at or above this ID, so
    housekeeping keeps the ``TXN_TO_WRITE_ID`` rows of every transaction from the lowest of these
    on. The row goes when its transaction commits or aborts.
    """

    __tablename__ = "MIN_HISTORY_LEVEL"

    txn_id: Mapped[int] = mapped_column("MHL_TXNID", BigInteger, primary_key=True, autoincrement=False)
    min_open_txn_id: Mapped[int] = mapped_column("MHL_MIN_OPEN_TXNID", BigInteger, index=True)


class BacklogSampleRow(Base):
    """One backlog measurement of a table or partition (acidflow's own; no Hive counterpart).

    Written by the sensor runs, read by the backlog page for its trends; rows older than the
    configured retention are deleted when new ones are recorded.
    """

    __tablename__ = "ACIDFLOW_BACKLOG_SAMPLES"
    __table_args__ = (Index("ix_ACIDFLOW_BACKLOG_SAMPLES_table", "BS_DATABASE", "BS_TABLE", "BS_SAMPLED_AT"),)

    id: Mapped[int] = mapped_column("BS_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    database: Mapped[str] = mapped_column("BS_DATABASE", String(128))
    table: Mapped[str] = mapped_column("BS_TABLE", String(256))
    partition: Mapped[str | None] = mapped_column("BS_PARTITION", String(767))
    sampled_at: Mapped[int] = mapped_column("BS_SAMPLED_AT", BigInteger, index=True)
    deltas: Mapped[int] = mapped_column("BS_DELTAS", Integer)
    delete_deltas: Mapped[int] = mapped_column("BS_DELETE_DELTAS", Integer)
    delta_bytes: Mapped[int] = mapped_column("BS_DELTA_BYTES", BigInteger)
    delete_delta_bytes: Mapped[int] = mapped_column("BS_DELETE_DELTA_BYTES", BigInteger)
    aborted: Mapped[int] = mapped_column("BS_ABORTED", Integer)
    # Modification time (epoch ms) of the oldest file in a live (uncompacted) delta; NULL: none.
    oldest_delta_time: Mapped[int | None] = mapped_column("BS_OLDEST_DELTA_TIME", BigInteger)


class InitiatorMarkRow(Base):
    """The last initiator cycle over one table (acidflow's own; Hive 4 keeps one time in AUX_TABLE)."""

    __tablename__ = "ACIDFLOW_INITIATOR_MARKS"

    database: Mapped[str] = mapped_column("IM_DATABASE", String(128), primary_key=True)
    table: Mapped[str] = mapped_column("IM_TABLE", String(256), primary_key=True)
    # Epoch ms when that cycle started, before its snapshot.
    started_at: Mapped[int] = mapped_column("IM_STARTED_AT", BigInteger)
    fingerprint: Mapped[str] = mapped_column("IM_FINGERPRINT", String(64))
    # The compactor's ValidWriteIdList of the table at that cycle (Hive's string form); NULL: none.
    write_ids: Mapped[str | None] = mapped_column("IM_WRITE_IDS", Text)


# SQLite autoincrements INTEGER PRIMARY KEY only.
_LOCK_ID = BigInteger().with_variant(Integer(), "sqlite")

LOCK_SESSIONS = SqlTable(
    "ACIDFLOW_LOCK_SESSIONS",
    Base.metadata,
    SqlColumn("LS_SESSION_ID", String(64), primary_key=True, key="session_id"),
    SqlColumn("LS_HOST", String(255), nullable=False, key="host"),
    SqlColumn("LS_STARTED", BigInteger, nullable=False, key="started"),
    SqlColumn("LS_LAST_HEARTBEAT", BigInteger, nullable=False, key="last_heartbeat"),
    SqlColumn("LS_TIMEOUT_MS", BigInteger, nullable=False, key="timeout_ms"),
    # The owner's process ID on LS_HOST (revision 0006): a dead local owner's session is reaped at once.
    SqlColumn("LS_PID", BigInteger, nullable=True, key="pid"),
)
"""Live SQL lock-manager sessions (times in epoch ms); see ``acid_core.metastore.sql.lock_store``."""

LOCKS = SqlTable(
    "ACIDFLOW_LOCKS",
    Base.metadata,
    SqlColumn("L_ID", _LOCK_ID, primary_key=True, autoincrement=True, key="lock_id"),
    SqlColumn("L_SESSION_ID", String(64), nullable=False, key="session_id"),
    SqlColumn("L_TOKEN", String(64), nullable=False, key="token"),
    SqlColumn("L_OBJECT", String(1024), nullable=False, key="object_name"),
    SqlColumn("L_DB", String(128), nullable=False, key="db"),
    SqlColumn("L_TABLE", String(256), nullable=False, key="table_name"),
    SqlColumn("L_MODE", String(1), nullable=False, key="mode"),
    SqlColumn("L_WAITING", Boolean, nullable=False, key="waiting"),
    SqlColumn("L_HOLDER", String(256), nullable=False, key="holder"),
    SqlColumn("L_HOST", String(255), nullable=False, key="host"),
    SqlColumn("L_TXN_ID", BigInteger, nullable=True, key="txn_id"),
    SqlColumn("L_ACQUIRED_AT", BigInteger, nullable=False, key="acquired_at"),
    # The names the tables had when lock_store created them itself (before revision 0002), so
    # revision 0002 can adopt such tables as they are.
    Index("IX_ACIDFLOW_LOCKS_OBJECT", "object_name"),
    Index("IX_ACIDFLOW_LOCKS_TABLE", "db", "table_name"),
    Index("IX_ACIDFLOW_LOCKS_SESSION", "session_id"),
    Index("IX_ACIDFLOW_LOCKS_TOKEN", "token"),
)
"""Held locks (``L_WAITING`` false) and fair-mode waiting markers (true); mode ``s`` or ``x``."""
