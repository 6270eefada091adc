"""The SQLAlchemy adapter of the metastore port: ``SqlMetastore`` (SQLite by default, PostgreSQL by URL).

The model (a writer's and a reader's calls, the compaction queue's states) is in ``port``;
this module stores it in tables named after Hive's (TXNS, TXN_TO_WRITE_ID, COMPACTION_QUEUE, ...).

Invariants: transaction IDs and per-table write IDs are unique and increasing under any
concurrency (one database transaction each: ``SELECT ... FOR UPDATE`` on PostgreSQL, ``BEGIN
IMMEDIATE`` on SQLite); aborted transactions are never deleted, so their write IDs stay invalid in
every later snapshot; ``commit_txn`` of a committed transaction and ``abort_txn`` of an aborted one
are no-ops (Hive's idempotent retries).

Concurrency: every public method is one database transaction and safe to call from many
processes and threads (the in-memory fake serializes its threads on its one connection). SQLite serializes writers (WAL, busy timeout 30 s); PostgreSQL runs at READ COMMITTED
with row locks in a fixed order (own TXNS row, then NEXT_TXN_ID / NEXT_WRITE_ID) so no deadlock.

Not here: files (writers), locks (``locks``), retries (the shell's RetryPolicy), sleeping (pass
``now`` or inject a ``clock``).
Errors: database failures become ``MetastoreError`` (cause chained); catalog misses become
``NoSuch*Error``; duplicates ``*AlreadyExistsError``; ``CommitConflictError`` on a write-write
conflict (the transaction is already aborted when it is raised).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import getpass
import importlib.util
import logging
import socket
import sqlite3
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import and_, delete, event, exists, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, aliased
from sqlalchemy.pool import StaticPool

from acid_core.errors import (
    AcidError,
    CommitConflictError,
    CompactionStateError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DiskFullError,
    InvalidMetastoreRequestError,
    InvalidPartitionError,
    InvalidTableDefinitionError,
    InvalidTableNameError,
    MetastoreError,
    MissingDependencyError,
    NoSuchCompactionError,
    NoSuchDatabaseError,
    NoSuchLeaseError,
    NoSuchPartitionError,
    NoSuchTableError,
    NoSuchTxnError,
    PartitionAlreadyExistsError,
    TableAlreadyExistsError,
    TxnNotOpenError,
)
from acid_core.locations import (
    validate_column_name,
    validate_object_name,
    validate_partition_value,
)
from acid_core.metastore.models import (
    BacklogSampleRow,
    CompactionQueueEntry,
    CompletedCompaction,
    CompletedTxnComponent,
    DatabaseRow,
    MinHistoryLevel,
    NextCompactionQueueId,
    NextTxnId,
    NextWriteId,
    PartitionRow,
    ReaderLease,
    TableRow,
    Txn,
    TxnComponent,
    TxnToWriteId,
    WriteSetEntry,
)
from acid_core.types import TxnId, WriteId
from acid_core.writeids import (
    LONG_MAX,
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
    parse_valid_txn_list,
    parse_valid_write_id_list,
    to_compactor_write_id_list,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    from sqlalchemy.engine import Engine
    from sqlalchemy.sql.elements import ColumnElement

from acid_core.metastore.port import (
    DEFAULT_DATABASE,
    DEFAULT_OPEN_TXN_TIMEOUT_SECONDS,
    BacklogSample,
    Clock,
    Column,
    CompactionInfo,
    CompactionState,
    CompactionType,
    Database,
    HousekeepingResult,
    Lease,
    Metastore,
    Partition,
    Table,
    TableDefinition,
    TableType,
    TxnInfo,
    TxnState,
    TxnType,
    WriteOperation,
    _valid_read_txn_list,
    _valid_write_id_list,
    check_lease_ttl,
    format_partition_name,
    split_table_name,
    table_type_from_properties,
)

__all__ = [
    "InMemoryMetastore",
    "SqlMetastore",
    "create_engine_for_url",
    "describe_db_error",
    "resolve_postgres_driver",
    "translate_db_error",
    "upgrade_schema",
]

_LOG = logging.getLogger(__name__)

_MIGRATIONS_DIR = Path(__file__).with_name("migrations")
# Any constant works; it only has to be the same in every process that migrates one database.
_MIGRATION_LOCK_KEY = 0x41C1DF10
_SQLITE_BUSY_TIMEOUT_MS = 30_000
_HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_TXN_STATE_CODE = {TxnState.OPEN: "o", TxnState.COMMITTED: "c", TxnState.ABORTED: "a"}
_TXN_STATE_BY_CODE = {code: state for state, code in _TXN_STATE_CODE.items()}
# Hive's thrift TxnType ordinals: DEFAULT=0, REPL_CREATED=1, READ_ONLY=2, COMPACTION=3.
_TXN_TYPE_CODE = {TxnType.DEFAULT: 0, TxnType.READ_ONLY: 2, TxnType.COMPACTION: 3}
_TXN_TYPE_BY_CODE = {code: kind for kind, code in _TXN_TYPE_CODE.items()}
_OPERATION_CODE = {WriteOperation.INSERT: "i", WriteOperation.UPDATE: "u", WriteOperation.DELETE: "d"}
_OPERATION_NAME = {code: op.value for op, code in _OPERATION_CODE.items()}
_COMPACTION_TYPE_CODE = {CompactionType.MAJOR: "a", CompactionType.MINOR: "i"}
_COMPACTION_TYPE_BY_CODE = {code: kind for kind, code in _COMPACTION_TYPE_CODE.items()}
_COMPACTION_STATE_CODE = {
    CompactionState.INITIATED: "i",
    CompactionState.WORKING: "w",
    CompactionState.READY_FOR_CLEANING: "r",
    CompactionState.SUCCEEDED: "s",
    CompactionState.FAILED: "f",
    CompactionState.DID_NOT_INITIATE: "a",
    CompactionState.REFUSED: "c",
    CompactionState.ABORTED: "x",
}
_COMPACTION_STATE_BY_CODE = {code: state for state, code in _COMPACTION_STATE_CODE.items()}
_OPEN = _TXN_STATE_CODE[TxnState.OPEN]
_ABORTED = _TXN_STATE_CODE[TxnState.ABORTED]
_COMMITTED = _TXN_STATE_CODE[TxnState.COMMITTED]
_UPDATE_DELETE_CODES = (_OPERATION_CODE[WriteOperation.UPDATE], _OPERATION_CODE[WriteOperation.DELETE])
# Hive's OperationType.COMPACT: the compactor's footprint in TXN_COMPONENTS (never a write).
_COMPACT_OPERATION = "p"


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _seconds(millis: int | None) -> float | None:
    return None if millis is None else millis / 1000


def _validate_definition(definition: TableDefinition, full_name: str) -> None:
    if not definition.columns:
        raise InvalidTableDefinitionError(full_name, "no columns", "at least one column")
    names = [c.name.lower() for c in (*definition.columns, *definition.partition_keys)]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidTableDefinitionError(
            full_name, f"column {duplicates[0]!r} is declared twice", "unique names across columns and keys"
        )
    for column in (*definition.columns, *definition.partition_keys):
        validate_column_name(column.name)
        if not column.name or not column.type:
            raise InvalidTableDefinitionError(full_name, f"column {column!r}", "a non-empty name and type")
    column_names = {c.name.lower() for c in definition.columns}
    for bucket_column in definition.bucket_columns:
        if bucket_column.lower() not in column_names:
            raise InvalidTableDefinitionError(
                full_name,
                f"bucket column {bucket_column!r} is not a column",
                f"one of {sorted(column_names)}",
            )
    if definition.bucket_columns and definition.num_buckets < 1:
        raise InvalidTableDefinitionError(
            full_name,
            f"num_buckets {definition.num_buckets!r}",
            "CLUSTERED BY ... INTO n BUCKETS with n >= 1",
        )
    if not definition.bucket_columns and definition.num_buckets not in (-1, 0):
        raise InvalidTableDefinitionError(
            full_name,
            f"num_buckets {definition.num_buckets!r} without bucket columns",
            "-1 when not bucketed",
        )


def _table_from_row(database: str, row: TableRow) -> Table:
    return Table(
        database=database,
        name=row.name,
        location=row.location,
        columns=tuple(Column(c["name"], c["type"]) for c in row.columns),
        partition_keys=tuple(Column(c["name"], c["type"]) for c in row.partition_keys),
        bucket_columns=tuple(row.bucket_columns),
        num_buckets=row.num_buckets,
        properties=dict(row.properties),
        table_type=TableType(row.transactional_type),
        external=row.tbl_type == "EXTERNAL_TABLE",
        owner=row.owner,
        create_time=row.create_time / 1000,
    )


def _txn_info(row: Txn) -> TxnInfo:
    return TxnInfo(
        txn_id=TxnId(row.txn_id),
        state=_TXN_STATE_BY_CODE[row.state],
        txn_type=_TXN_TYPE_BY_CODE.get(row.txn_type, TxnType.DEFAULT),
        user=row.user,
        host=row.host,
        started=row.started / 1000,
        last_heartbeat=row.last_heartbeat / 1000,
    )


def _compaction_info(row: CompactionQueueEntry | CompletedCompaction) -> CompactionInfo:
    end = row.end if isinstance(row, CompletedCompaction) else None
    return CompactionInfo(
        id=row.id,
        table=f"{row.database}.{row.table}",
        partition=row.partition,
        state=_COMPACTION_STATE_BY_CODE[row.state],
        compaction_type=_COMPACTION_TYPE_BY_CODE[row.compaction_type],
        properties=dict(row.properties or {}),
        enqueue_time=_seconds(row.enqueue_time),
        worker_id=row.worker_id,
        start_time=_seconds(row.start),
        end_time=_seconds(end),
        highest_write_id=None if row.highest_write_id is None else WriteId(row.highest_write_id),
        next_txn_id=None if row.next_txn_id is None else TxnId(row.next_txn_id),
        txn_id=None if row.txn_id is None else TxnId(row.txn_id),
        commit_time=_seconds(row.commit_time),
        error_message=row.error_message,
        initiator_id=row.initiator_id,
        initiator_version=row.initiator_version,
        worker_version=row.worker_version,
        run_as=row.run_as,
        retry_retention=(row.retry_retention or 0) / 1000 if isinstance(row, CompactionQueueEntry) else 0.0,
    )


def _lease(row: ReaderLease) -> Lease:
    return Lease(
        lease_id=row.id,
        table=f"{row.database}.{row.table}",
        write_ids=parse_valid_write_id_list(row.write_id_list),
        owner=row.owner,
        created=row.created / 1000,
        expires=row.expires / 1000,
        txns=None if row.txn_list is None else parse_valid_txn_list(row.txn_list),
    )


def _backlog_sample(row: BacklogSampleRow) -> BacklogSample:
    return BacklogSample(
        table=f"{row.database}.{row.table}",
        partition=row.partition,
        sampled_at=row.sampled_at / 1000,
        deltas=row.deltas,
        delete_deltas=row.delete_deltas,
        delta_bytes=row.delta_bytes,
        delete_delta_bytes=row.delete_delta_bytes,
        aborted=row.aborted,
        oldest_delta_time=None if row.oldest_delta_time is None else row.oldest_delta_time / 1000,
    )


# --------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------


@functools.cache
def _alembic_config() -> tuple[Config, str | None]:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    return config, ScriptDirectory.from_config(config).get_current_head()


def _is_sqlite_memory(url: sa.URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


_POSTGRES_DRIVERS = ("psycopg2", "psycopg")  # the installed one wins; psycopg2 is requirements.txt's


def resolve_postgres_driver(url: sa.URL) -> sa.URL:
    """Give a bare ``postgresql://`` URL a driver that is installed; other URLs are returned as is.

    SQLAlchemy 2.1 maps a bare ``postgresql://`` to psycopg (3); users write that form, while the
    pinned driver is psycopg2. A URL that names its driver (``postgresql+psycopg2://``) is kept.

    Args:
        url: a parsed SQLAlchemy URL.

    Returns:
        The URL, with ``+psycopg2`` (or ``+psycopg``) added when it had no driver.

    Raises:
        MissingDependencyError: a bare PostgreSQL URL and neither psycopg2 nor psycopg installed.

    >>> str(resolve_postgres_driver(sa.make_url("sqlite:///m.db")))
    'sqlite:///m.db'
    """
    if url.drivername != "postgresql":
        return url
    for driver in _POSTGRES_DRIVERS:
        if importlib.util.find_spec(driver) is not None:
            return url.set(drivername=f"postgresql+{driver}")
    raise MissingDependencyError("psycopg2-binary (or psycopg)", "a postgresql:// metastore", "postgres")


def create_engine_for_url(url: sa.URL) -> Engine:
    """An engine configured as the metastore uses it; the lock store shares this setup.

    PostgreSQL runs at READ COMMITTED. SQLite gets a 30 s busy timeout, foreign keys, WAL (files)
    and ``BEGIN IMMEDIATE`` for every transaction, so each one is serialized against every writer
    (SQLite's ``SELECT ... FOR UPDATE``); an in-memory database is one shared connection.

    Args:
        url: a parsed SQLAlchemy URL.

    Returns:
        The engine; nothing is connected yet.
    """
    if url.get_backend_name() != "sqlite":
        url = resolve_postgres_driver(url)
        try:
            return sa.create_engine(url, pool_recycle=1800, isolation_level="READ COMMITTED")
        except ImportError as e:  # a driver named in the URL (postgresql+pg8000://) is not installed
            raise MissingDependencyError(
                f"the database driver {url.drivername!r}",
                f"the metastore URL {url.render_as_string()!r}",
                "postgres",
            ) from e
    memory = _is_sqlite_memory(url)
    if memory:
        engine = sa.create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = sa.create_engine(url, connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:  # noqa: ANN401 - DBAPI objects are untyped
        # SQLAlchemy emits BEGIN itself (below); pysqlite must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if not memory:
            # WAL is a property of the file: the first connection sets it for good. Switching needs
            # an exclusive lock and fails at once (no busy handler) while another process writes,
            # e.g. migrates a brand-new file; that process's connection has already switched it.
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                with contextlib.suppress(sqlite3.OperationalError):
                    cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        # IMMEDIATE takes the write lock up front: two readers that both try to upgrade to writers
        # would otherwise deadlock into SQLITE_BUSY; this is SQLite's SELECT ... FOR UPDATE.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def upgrade_schema(engine: Engine) -> None:
    """Bring the database to the newest Alembic revision (``upgrade head``), idempotently.

    Serialized between processes (an advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite);
    a database already at head costs one query. The SQL lock store calls this too, so the lock
    tables exist whichever of the two opens a database first.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed (callers translate it).
        alembic.util.CommandError: the database is at a revision this code does not know.
    """
    config, head = _alembic_config()
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # One migrator at a time; the others wait here, then find the schema at head.
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
        if MigrationContext.configure(connection).get_current_revision() == head:
            return
        config.attributes["connection"] = connection
        try:
            command.upgrade(config, "head")
        finally:
            config.attributes.pop("connection", None)


class SqlMetastore:
    """The metastore on SQLAlchemy: SQLite (embedded default) or PostgreSQL by URL.

    Opening runs ``alembic upgrade head`` (idempotent, serialized between processes) and makes
    sure the ``default`` database exists.

    Args:
        url: a SQLAlchemy URL (``sqlite:///path``, ``postgresql+psycopg2://...``).
        warehouse: root directory of the warehouse; the ``default`` database lives there.
        clock: epoch seconds, for every ``now=None``.
    """

    def __init__(self, url: str, *, warehouse: str = "warehouse", clock: Clock = time.time) -> None:
        try:
            self._url = sa.make_url(url)
        except SQLAlchemyError as e:
            raise MetastoreError(
                "open", url, f"not a SQLAlchemy URL ({e}); expected e.g. sqlite:///path"
            ) from e
        self._shown_url = self._url.render_as_string(hide_password=True)
        self._warehouse = warehouse.rstrip("/") or "/"
        self._clock = clock
        # An in-memory database is one shared connection (StaticPool): threads take turns on it.
        self._serialize: contextlib.AbstractContextManager[object] = (
            threading.RLock() if _is_sqlite_memory(self._url) else contextlib.nullcontext()
        )
        try:
            self._engine = create_engine_for_url(self._url)
            upgrade_schema(self._engine)
        except SQLAlchemyError as e:
            raise translate_db_error("open", self._url, e) from e
        except CommandError as e:  # e.g. the database is at a revision this code does not know
            raise MetastoreError("migrate", self._shown_url, f"{type(e).__name__}: {e}") from e
        self._ensure_default_database()

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return self._shown_url

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.dialect.name

    def close(self) -> None:
        """Release connections."""
        self._engine.dispose()

    def __enter__(self) -> SqlMetastore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now_ms(self, now: float | None) -> int:
        return _ms(self._clock() if now is None else now)

    @contextlib.contextmanager
    def _transaction(
        self, operation: str, on_integrity_error: Callable[[], AcidError] | None = None
    ) -> Iterator[Session]:
        try:
            with self._serialize, Session(self._engine, expire_on_commit=False) as session, session.begin():
                yield session
        except IntegrityError as e:
            if on_integrity_error is None:
                raise translate_db_error(operation, self._url, e) from e
            raise on_integrity_error() from e
        except SQLAlchemyError as e:
            raise translate_db_error(operation, self._url, e) from e

    def _ensure_default_database(self) -> None:
        try:
            with self._transaction(
                "create default database", lambda: DatabaseAlreadyExistsError("default")
            ) as s:
                if s.scalar(select(DatabaseRow.db_id).where(DatabaseRow.name == DEFAULT_DATABASE)) is None:
                    s.add(
                        DatabaseRow(
                            name=DEFAULT_DATABASE,
                            description="Default Hive database",
                            location=self._warehouse,
                            owner=None,
                            create_time=self._now_ms(None),
                        )
                    )
        except DatabaseAlreadyExistsError:
            pass  # another process created it between our check and insert

    @staticmethod
    def _database_row(s: Session, name: str) -> DatabaseRow:
        row = s.scalars(select(DatabaseRow).where(DatabaseRow.name == name)).one_or_none()
        if row is None:
            raise NoSuchDatabaseError(name)
        return row

    @staticmethod
    def _table_row(s: Session, database: str, table: str) -> TableRow:
        row = s.scalars(
            select(TableRow)
            .join(DatabaseRow, DatabaseRow.db_id == TableRow.db_id)
            .where(DatabaseRow.name == database, TableRow.name == table)
        ).one_or_none()
        if row is None:
            raise NoSuchTableError(
                f"No such table {f'{database}.{table}'!r}; expected an existing table; "
                "hint: SHOW TABLES lists them, CREATE TABLE makes one"
            )
        return row

    @staticmethod
    def _lock_txn(s: Session, txn_id: int) -> Txn:
        _check_id("transaction ID", txn_id)
        row = s.scalars(select(Txn).where(Txn.txn_id == txn_id).with_for_update()).one_or_none()
        if row is None:
            raise NoSuchTxnError(txn_id)
        return row

    def _lock_open_txn(self, s: Session, txn_id: int, operation: str) -> Txn:
        row = self._lock_txn(s, txn_id)
        if row.state != _OPEN:
            raise TxnNotOpenError(txn_id, _TXN_STATE_BY_CODE[row.state].value, operation)
        return row

    @staticmethod
    def _next_txn_id_locked(s: Session) -> int:
        # Hive's S4U on NEXT_TXN_ID: the mutex between openTxns and the commit of writers.
        return int(s.execute(select(NextTxnId.next_txn_id).with_for_update()).scalar_one())

    # -- catalog -----------------------------------------------------------------------------

    def create_database(
        self, name: str, location: str | None = None, description: str | None = None, owner: str | None = None
    ) -> Database:
        """See ``Metastore.create_database``."""
        db_name = validate_object_name("database", _normalize_database_name(name))
        where = location or f"{self._warehouse}/{db_name}.db"
        with self._transaction("create_database", lambda: DatabaseAlreadyExistsError(db_name)) as s:
            if s.scalar(select(DatabaseRow.db_id).where(DatabaseRow.name == db_name)) is not None:
                raise DatabaseAlreadyExistsError(db_name)
            s.add(
                DatabaseRow(
                    name=db_name,
                    description=description,
                    location=where,
                    owner=owner,
                    create_time=self._now_ms(None),
                )
            )
        return Database(db_name, where, description, owner)

    def get_database(self, name: str) -> Database:
        """See ``Metastore.get_database``."""
        with self._transaction("get_database") as s:
            row = self._database_row(s, _normalize_database_name(name))
            return Database(row.name, row.location, row.description, row.owner)

    def list_databases(self) -> list[str]:
        """See ``Metastore.list_databases``."""
        with self._transaction("list_databases") as s:
            return list(s.scalars(select(DatabaseRow.name).order_by(DatabaseRow.name)))

    def drop_database(self, name: str, cascade: bool = False) -> None:
        """See ``Metastore.drop_database``."""
        db_name = _normalize_database_name(name)
        with self._transaction("drop_database") as s:
            row = self._database_row(s, db_name)
            tables = list(
                s.scalars(select(TableRow.name).where(TableRow.db_id == row.db_id).order_by(TableRow.name))
            )
            if tables and not cascade:
                raise DatabaseNotEmptyError(db_name, tables)
            for table in tables:
                self._drop_table_records(s, db_name, table)
            s.execute(
                delete(PartitionRow).where(
                    PartitionRow.tbl_id.in_(select(TableRow.tbl_id).where(TableRow.db_id == row.db_id))
                )
            )
            s.execute(delete(TableRow).where(TableRow.db_id == row.db_id))
            s.execute(delete(DatabaseRow).where(DatabaseRow.db_id == row.db_id))

    def create_table(self, definition: TableDefinition) -> Table:
        """See ``Metastore.create_table``."""
        database, name = split_table_name(definition.name)
        full_name = f"{database}.{name}"
        validate_object_name("table", name)  # MetaStoreUtils.validateName, as create_table_core
        _validate_definition(definition, full_name)
        already = functools.partial(_table_exists_error, full_name)
        with self._transaction("create_table", already) as s:
            db_row = self._database_row(s, database)
            exists = s.scalar(
                select(TableRow.tbl_id).where(TableRow.db_id == db_row.db_id, TableRow.name == name)
            )
            if exists is not None:
                raise already()
            row = TableRow(
                db_id=db_row.db_id,
                name=name,
                tbl_type="EXTERNAL_TABLE" if definition.external else "MANAGED_TABLE",
                transactional_type=table_type_from_properties(definition.properties).value,
                location=definition.location or f"{db_row.location.rstrip('/')}/{name}",
                columns=[{"name": c.name.lower(), "type": c.type} for c in definition.columns],
                partition_keys=[{"name": c.name.lower(), "type": c.type} for c in definition.partition_keys],
                bucket_columns=[c.lower() for c in definition.bucket_columns],
                num_buckets=definition.num_buckets if definition.bucket_columns else -1,
                properties={str(k): str(v) for k, v in definition.properties.items()},
                owner=definition.owner,
                create_time=self._now_ms(None),
            )
            s.add(row)
            # Hive creates NEXT_WRITE_ID lazily; creating it here lets allocation always lock a row.
            s.execute(delete(NextWriteId).where(NextWriteId.database == database, NextWriteId.table == name))
            s.add(NextWriteId(database=database, table=name, next_write_id=1))
            s.flush()
            return _table_from_row(database, row)

    def get_table(self, name: str) -> Table:
        """See ``Metastore.get_table``."""
        database, table = split_table_name(name)
        with self._transaction("get_table") as s:
            return _table_from_row(database, self._table_row(s, database, table))

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        """See ``Metastore.list_tables``."""
        with self._transaction("list_tables") as s:
            row = self._database_row(s, _normalize_database_name(database))
            return list(
                s.scalars(select(TableRow.name).where(TableRow.db_id == row.db_id).order_by(TableRow.name))
            )

    def drop_table(self, name: str) -> None:
        """See ``Metastore.drop_table``."""
        database, table = split_table_name(name)
        with self._transaction("drop_table") as s:
            row = self._table_row(s, database, table)
            s.execute(delete(PartitionRow).where(PartitionRow.tbl_id == row.tbl_id))
            s.execute(delete(TableRow).where(TableRow.tbl_id == row.tbl_id))
            self._drop_table_records(s, database, table)

    @staticmethod
    def _drop_table_records(s: Session, database: str, table: str) -> None:
        # TxnHandler.cleanupRecords: forget every transactional record of the dropped table.
        for model, db_col, tbl_col in (
            (TxnComponent, TxnComponent.database, TxnComponent.table),
            (CompletedTxnComponent, CompletedTxnComponent.database, CompletedTxnComponent.table),
            (CompactionQueueEntry, CompactionQueueEntry.database, CompactionQueueEntry.table),
            (CompletedCompaction, CompletedCompaction.database, CompletedCompaction.table),
            (TxnToWriteId, TxnToWriteId.database, TxnToWriteId.table),
            (NextWriteId, NextWriteId.database, NextWriteId.table),
            (WriteSetEntry, WriteSetEntry.database, WriteSetEntry.table),
            (ReaderLease, ReaderLease.database, ReaderLease.table),
        ):
            s.execute(delete(model).where(db_col == database, tbl_col == table))

    def _partition_name(self, table: Table, values: Mapping[str, str | None]) -> tuple[str, tuple[str, ...]]:
        keys = [k.name for k in table.partition_keys]
        given = {str(k).lower(): v for k, v in values.items()}
        if not keys or sorted(given) != sorted(keys):
            expected = (
                f"exactly the partition keys {keys!r}"
                if keys
                else "no partition (the table is unpartitioned)"
            )
            raise InvalidPartitionError(table.full_name, dict(values), expected)
        ordered = [validate_partition_value(given[k]) for k in keys]
        return format_partition_name(keys, ordered), tuple("" if v is None else str(v) for v in ordered)

    def add_partition(
        self, table: str, values: Mapping[str, str | None], location: str | None = None
    ) -> Partition:
        """See ``Metastore.add_partition``."""
        database, name = split_table_name(table)
        with self._transaction(
            "add_partition", lambda: PartitionAlreadyExistsError(f"{database}.{name}", repr(dict(values)))
        ) as s:
            row = self._table_row(s, database, name)
            value = _table_from_row(database, row)
            part_name, part_values = self._partition_name(value, values)
            exists = s.scalar(
                select(PartitionRow.part_id).where(
                    PartitionRow.tbl_id == row.tbl_id, PartitionRow.name == part_name
                )
            )
            if exists is not None:
                raise PartitionAlreadyExistsError(value.full_name, part_name)
            where = location or f"{row.location.rstrip('/')}/{part_name}"
            created = self._now_ms(None)
            s.add(
                PartitionRow(
                    tbl_id=row.tbl_id,
                    name=part_name,
                    values=list(part_values),
                    location=where,
                    create_time=created,
                )
            )
        return Partition(value.full_name, part_name, part_values, where, created / 1000)

    def drop_partition(self, table: str, values: Mapping[str, str | None]) -> None:
        """See ``Metastore.drop_partition``."""
        database, name = split_table_name(table)
        with self._transaction("drop_partition") as s:
            row = self._table_row(s, database, name)
            part_name, _ = self._partition_name(_table_from_row(database, row), values)
            result = s.execute(
                delete(PartitionRow).where(PartitionRow.tbl_id == row.tbl_id, PartitionRow.name == part_name)
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise NoSuchPartitionError(f"{database}.{name}", part_name)

    def set_location(self, table: str, partition: str | None, location: str) -> None:
        """See ``Metastore.set_location``."""
        database, name = split_table_name(table)
        with self._transaction("set_location") as s:
            row = self._table_row(s, database, name)
            if partition is None:
                row.location = location
                return
            part = s.scalars(
                select(PartitionRow).where(PartitionRow.tbl_id == row.tbl_id, PartitionRow.name == partition)
            ).one_or_none()
            if part is None:
                raise NoSuchPartitionError(f"{database}.{name}", partition)
            part.location = location

    def list_partitions(self, table: str) -> list[Partition]:
        """See ``Metastore.list_partitions``."""
        database, name = split_table_name(table)
        with self._transaction("list_partitions") as s:
            row = self._table_row(s, database, name)
            parts = s.scalars(
                select(PartitionRow).where(PartitionRow.tbl_id == row.tbl_id).order_by(PartitionRow.name)
            )
            return [
                Partition(f"{database}.{name}", p.name, tuple(p.values), p.location, p.create_time / 1000)
                for p in parts
            ]

    # -- transactions ------------------------------------------------------------------------

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
        with self._transaction("open_txn") as s:
            return self._open_txn_in(s, user, host, kind, now_ms)

    def open_compaction_txn(
        self, compaction_id: int, user: str | None = None, host: str | None = None, now: float | None = None
    ) -> TxnId:
        """See ``Metastore.open_compaction_txn``: one database transaction opens and records it."""
        now_ms = self._now_ms(now)
        with self._transaction("open_compaction_txn") as s:
            row = self._queue_row(s, compaction_id)
            self._require_state(row, "open a compaction transaction for", (CompactionState.WORKING,))
            txn_id = self._open_txn_in(s, user, host, TxnType.COMPACTION, now_ms)
            row.txn_id = txn_id
            return txn_id

    def _open_txn_in(
        self, s: Session, user: str | None, host: str | None, kind: TxnType, now_ms: int
    ) -> TxnId:
        txn_id = self._next_txn_id_locked(s)
        s.execute(update(NextTxnId).values(next_txn_id=txn_id + 1))
        s.execute(
            insert(Txn).values(
                txn_id=txn_id,
                state=_OPEN,
                started=now_ms,
                last_heartbeat=now_ms,
                user=user if user is not None else _current_user(),
                host=host if host is not None else socket.gethostname(),
                txn_type=_TXN_TYPE_CODE[kind],
            )
        )
        # Hive 3's openTxns: remember the lowest txn open now (this one included). Any snapshot
        # this txn takes lists as open only txns at or above it; housekeeping keeps their rows.
        lowest_open = s.scalar(select(func.min(Txn.txn_id)).where(Txn.state == _OPEN))
        s.add(MinHistoryLevel(txn_id=txn_id, min_open_txn_id=min(txn_id, int(lowest_open or txn_id))))
        return TxnId(txn_id)

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

    @staticmethod
    def _valid_txns(s: Session, current_txn_id: int | None) -> ValidTxnList:
        high_watermark = int(s.execute(select(NextTxnId.next_txn_id)).scalar_one()) - 1
        rows = s.execute(
            select(Txn.txn_id, Txn.state)
            .where(
                Txn.state.in_((_OPEN, _ABORTED)),
                Txn.txn_id <= high_watermark,
                Txn.txn_type != _TXN_TYPE_CODE[TxnType.READ_ONLY],
            )
            .order_by(Txn.txn_id)
        ).all()
        return _valid_read_txn_list(high_watermark, [(t, st == _ABORTED) for t, st in rows], current_txn_id)

    def _allocate(self, s: Session, txn_id: int, database: str, table: str) -> WriteId:
        existing = s.scalar(
            select(TxnToWriteId.write_id).where(
                TxnToWriteId.txn_id == txn_id, TxnToWriteId.database == database, TxnToWriteId.table == table
            )
        )
        if existing is not None:
            return WriteId(existing)
        next_write_id = s.scalar(
            select(NextWriteId.next_write_id)
            .where(NextWriteId.database == database, NextWriteId.table == table)
            .with_for_update()
        )
        if next_write_id is None:
            # create_table makes the counter and drop_table removes it, so this is a missing table
            # (raises), or one whose counter was lost: start it as Hive does, at 1.
            self._table_row(s, database, table)
            next_write_id = 1
            s.add(NextWriteId(database=database, table=table, next_write_id=2))
        else:
            s.execute(
                update(NextWriteId)
                .where(NextWriteId.database == database, NextWriteId.table == table)
                .values(next_write_id=next_write_id + 1)
            )
        s.add(TxnToWriteId(database=database, table=table, write_id=next_write_id, txn_id=txn_id))
        s.flush()
        return WriteId(next_write_id)

    def allocate_write_id(self, txn_id: int, table: str) -> WriteId:
        """See ``Metastore.allocate_write_id``."""
        database, name = split_table_name(table)
        with self._transaction("allocate_write_id") as s:
            self._lock_open_txn(s, txn_id, "allocate a write ID in")
            return self._allocate(s, txn_id, database, name)

    def get_valid_write_ids(self, table: str, valid_txns: ValidTxnList) -> ValidWriteIdList:
        """See ``Metastore.get_valid_write_ids``."""
        database, name = split_table_name(table)
        with self._transaction("get_valid_write_ids") as s:
            self._table_row(s, database, name)
            return self._valid_write_ids(s, database, name, valid_txns)

    @staticmethod
    def _valid_write_ids(s: Session, database: str, table: str, valid_txns: ValidTxnList) -> ValidWriteIdList:
        same_table = (TxnToWriteId.database == database, TxnToWriteId.table == table)
        high_watermark = s.scalar(
            select(func.max(TxnToWriteId.write_id)).where(
                TxnToWriteId.txn_id <= valid_txns.high_watermark, *same_table
            )
        )
        if high_watermark is None or high_watermark <= 0:
            next_write_id = s.scalar(
                select(NextWriteId.next_write_id).where(
                    NextWriteId.database == database, NextWriteId.table == table
                )
            )
            high_watermark = 0 if next_write_id is None else next_write_id - 1
        rows = s.execute(
            select(TxnToWriteId.txn_id, TxnToWriteId.write_id)
            .where(TxnToWriteId.write_id <= high_watermark, *same_table)
            .order_by(TxnToWriteId.write_id)
        ).all()
        return _valid_write_id_list(
            f"{database}.{table}", valid_txns, high_watermark, [(t, w) for t, w in rows]
        )

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
            write_id = self._allocate(s, txn_id, database, name)
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
        """See ``Metastore.commit_txn``."""
        now_ms = self._now_ms(now)
        conflict: str | None = None
        with self._transaction("commit_txn") as s:
            txn = self._lock_txn(s, txn_id)
            if txn.state == _COMMITTED:
                return  # Hive: a repeated commit is a retry; succeed quietly
            if txn.state == _ABORTED:
                raise TxnNotOpenError(txn_id, TxnState.ABORTED.value, "commit")
            components = s.scalars(select(TxnComponent).where(TxnComponent.txn_id == txn_id)).all()
            footprint = sorted(
                {
                    (c.database, c.table, c.partition, c.operation)
                    for c in components
                    if c.operation in _UPDATE_DELETE_CODES
                },
                key=lambda item: (item[0], item[1], item[2] or "", item[3]),
            )
            commit_id: int | None = None
            if txn.txn_type != _TXN_TYPE_CODE[TxnType.READ_ONLY] and footprint:
                commit_id = self._next_txn_id_locked(s) - 1
                conflict = self._find_write_conflict(s, txn_id, commit_id, footprint)
                if conflict is not None:
                    s.execute(update(Txn).where(Txn.txn_id == txn_id).values(state=_ABORTED))
                    s.execute(delete(MinHistoryLevel).where(MinHistoryLevel.txn_id == txn_id))
                else:
                    s.execute(
                        insert(WriteSetEntry),
                        [
                            {
                                "database": db,
                                "table": tbl,
                                "partition": part,
                                "txn_id": txn_id,
                                "commit_id": commit_id,
                                "operation": op,
                            }
                            for db, tbl, part, op in footprint
                        ],
                    )
            elif txn.txn_type == _TXN_TYPE_CODE[TxnType.COMPACTION]:
                commit_id = self._next_txn_id_locked(s) - 1
            if conflict is None:
                self._complete_txn(s, txn_id, components, "Y" if footprint else "N", now_ms)
                if txn.txn_type == _TXN_TYPE_CODE[TxnType.COMPACTION] and commit_id is not None:
                    # CompactionTxnHandler.updateWSCommitIdAndCleanUpMetadata records the cleaner's
                    # rule data at commit. Hive 4 stores the high watermark there; we store the next
                    # txn ID (hwm + 1), so "next_txn_id <= min open txn" also waits for the newest
                    # txn open at commit time, which Hive 4's off-by-one would let through.
                    s.execute(
                        update(CompactionQueueEntry)
                        .where(CompactionQueueEntry.txn_id == txn_id)
                        .values(next_txn_id=commit_id + 1, commit_time=now_ms)
                    )
        if conflict is not None:
            raise CommitConflictError(conflict)

    @staticmethod
    def _find_write_conflict(
        s: Session, txn_id: int, commit_id: int, footprint: Sequence[tuple[str, str, str | None, str]]
    ) -> str | None:
        # TxnHandler.checkForWriteConflict: an update/delete committed at or after our start
        # (committed.WS_COMMIT_ID >= our TXN_ID) on the same table and partition wins.
        for database, table, partition, operation in footprint:
            same_partition = (
                WriteSetEntry.partition.is_(None)
                if partition is None
                else WriteSetEntry.partition == partition
            )
            hit = s.execute(
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
    def _complete_txn(
        s: Session, txn_id: int, components: Sequence[TxnComponent], update_delete: str, now_ms: int
    ) -> None:
        # TxnHandler.commitTxn: the compactor's own footprint ('p') only guards an abort of the
        # compaction txn; it is not a write, so it is not copied to COMPLETED_TXN_COMPONENTS.
        writes = [c for c in components if c.operation != _COMPACT_OPERATION]
        if writes:
            s.execute(
                insert(CompletedTxnComponent),
                [
                    {
                        "txn_id": txn_id,
                        "database": c.database,
                        "table": c.table,
                        "partition": c.partition,
                        "timestamp": now_ms,
                        "write_id": c.write_id,
                        "update_delete": update_delete,
                    }
                    for c in writes
                ],
            )
        if components:
            s.execute(delete(TxnComponent).where(TxnComponent.txn_id == txn_id))
        s.execute(update(Txn).where(Txn.txn_id == txn_id).values(state=_COMMITTED))
        s.execute(delete(MinHistoryLevel).where(MinHistoryLevel.txn_id == txn_id))

    def abort_txn(self, txn_id: int) -> None:
        """See ``Metastore.abort_txn``."""
        with self._transaction("abort_txn") as s:
            txn = self._lock_txn(s, txn_id)
            if txn.state == _ABORTED:
                return
            if txn.state == _COMMITTED:
                raise TxnNotOpenError(txn_id, TxnState.COMMITTED.value, "abort")
            s.execute(update(Txn).where(Txn.txn_id == txn_id).values(state=_ABORTED))
            s.execute(delete(MinHistoryLevel).where(MinHistoryLevel.txn_id == txn_id))

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

    @staticmethod
    def _min_open_txn_id(s: Session) -> int:
        min_open = s.scalar(select(func.min(Txn.txn_id)).where(Txn.state == _OPEN))
        next_txn_id = int(s.execute(select(NextTxnId.next_txn_id)).scalar_one())
        return next_txn_id if min_open is None else min(int(min_open), next_txn_id)

    # -- compaction queue --------------------------------------------------------------------

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

    def _queue_row(self, s: Session, compaction_id: int) -> CompactionQueueEntry:
        _check_id("compaction ID", compaction_id)
        row = s.scalars(
            select(CompactionQueueEntry).where(CompactionQueueEntry.id == compaction_id).with_for_update()
        ).one_or_none()
        if row is None:
            done = s.get(CompletedCompaction, compaction_id)
            if done is None:
                raise NoSuchCompactionError(compaction_id)
            state = _COMPACTION_STATE_BY_CODE[done.state].value
            raise CompactionStateError(
                compaction_id, state, "change", "initiated, working or ready_for_cleaning"
            )
        return row

    @staticmethod
    def _require_state(
        row: CompactionQueueEntry, operation: str, allowed: tuple[CompactionState, ...]
    ) -> None:
        if row.state not in {_COMPACTION_STATE_CODE[a] for a in allowed}:
            raise CompactionStateError(
                row.id,
                _COMPACTION_STATE_BY_CODE[row.state].value,
                operation,
                " or ".join(a.value for a in allowed),
            )

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

    # -- reader leases -----------------------------------------------------------------------

    def take_lease(
        self, table: str, ttl_seconds: float, owner: str | None = None, now: float | None = None
    ) -> Lease:
        """See ``Metastore.take_lease``."""
        check_lease_ttl(ttl_seconds)
        database, name = split_table_name(table)
        now_ms = self._now_ms(now)
        with self._transaction("take_lease") as s:
            self._table_row(s, database, name)
            # One database transaction: the write-ID list is exactly the one this txn list implies.
            txns = self._valid_txns(s, None)
            snapshot = self._valid_write_ids(s, database, name, txns)
            row = ReaderLease(
                database=database,
                table=name,
                write_id_list=snapshot.to_string(),
                txn_list=txns.to_string(),
                owner=owner if owner is not None else f"{_current_user()}@{socket.gethostname()}",
                created=now_ms,
                expires=now_ms + _ms(ttl_seconds),
            )
            s.add(row)
            s.flush()
            return _lease(row)

    def renew_lease(self, lease_id: int, ttl_seconds: float, now: float | None = None) -> Lease:
        """See ``Metastore.renew_lease``: the same snapshot, expiring ``ttl_seconds`` from now."""
        check_lease_ttl(ttl_seconds)
        lease, now_s = self.get_lease(lease_id), self._now_ms(now) / 1000
        if lease.expires <= now_s:  # the cleaner may already have deleted what it read
            raise NoSuchLeaseError(lease_id)
        return self.put_lease(replace(lease, expires=now_s + ttl_seconds))

    def put_lease(self, lease: Lease) -> Lease:
        """Insert or replace a lease record as given (its ID included), without checking the catalog.

        For a Hive Metastore's side store (``hive_leases``): there the lease ID is the HMS
        transaction that holds the snapshot, and the table lives in the HMS, not here.
        """
        _check_id("lease ID", lease.lease_id)
        database, name = split_table_name(lease.table)
        with self._transaction("put_lease") as s:
            row = ReaderLease(
                id=lease.lease_id,
                database=database,
                table=name,
                write_id_list=lease.write_ids.to_string(),
                txn_list=None if lease.txns is None else lease.txns.to_string(),
                owner=lease.owner,
                created=_ms(lease.created),
                expires=_ms(lease.expires),
            )
            return _lease(s.merge(row))

    def get_lease(self, lease_id: int) -> Lease:
        """See ``Metastore.get_lease``."""
        _check_id("lease ID", lease_id)
        with self._transaction("get_lease") as s:
            row = s.get(ReaderLease, lease_id)
            if row is None:
                raise NoSuchLeaseError(lease_id)
            return _lease(row)

    def release_lease(self, lease_id: int) -> None:
        """See ``Metastore.release_lease``."""
        _check_id("lease ID", lease_id)
        with self._transaction("release_lease") as s:
            result = s.execute(delete(ReaderLease).where(ReaderLease.id == lease_id))
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise NoSuchLeaseError(lease_id)

    def list_leases(self, table: str | None = None) -> list[Lease]:
        """See ``Metastore.list_leases``."""
        query = select(ReaderLease).order_by(ReaderLease.id)
        if table is not None:
            database, name = split_table_name(table)
            query = query.where(ReaderLease.database == database, ReaderLease.table == name)
        with self._transaction("list_leases") as s:
            return [_lease(r) for r in s.scalars(query)]

    def expire_leases(self, now: float | None = None) -> list[int]:
        """See ``Metastore.expire_leases``."""
        now_ms = self._now_ms(now)
        with self._transaction("expire_leases") as s:
            ids = list(
                s.scalars(
                    select(ReaderLease.id).where(ReaderLease.expires <= now_ms).order_by(ReaderLease.id)
                )
            )
            if ids:
                s.execute(delete(ReaderLease).where(ReaderLease.id.in_(ids)))
            return ids

    def record_backlog_samples(
        self, samples: Sequence[BacklogSample], prune_before: float | None = None
    ) -> None:
        """See ``Metastore.record_backlog_samples``.

        One database transaction: the pruning and the new rows commit together (a crash keeps
        neither or both; recording again later only adds a point to the history).
        """
        rows = []
        for sample in samples:
            database, name = split_table_name(sample.table)
            rows.append(
                BacklogSampleRow(
                    database=database,
                    table=name,
                    partition=sample.partition,
                    sampled_at=_ms(sample.sampled_at),
                    deltas=sample.deltas,
                    delete_deltas=sample.delete_deltas,
                    delta_bytes=sample.delta_bytes,
                    delete_delta_bytes=sample.delete_delta_bytes,
                    aborted=sample.aborted,
                    oldest_delta_time=None
                    if sample.oldest_delta_time is None
                    else _ms(sample.oldest_delta_time),
                )
            )
        with self._transaction("record_backlog_samples") as s:
            if prune_before is not None:
                s.execute(delete(BacklogSampleRow).where(BacklogSampleRow.sampled_at < _ms(prune_before)))
            s.add_all(rows)

    def list_backlog_samples(self, since: float, table: str | None = None) -> list[BacklogSample]:
        """See ``Metastore.list_backlog_samples``."""
        query = select(BacklogSampleRow).where(BacklogSampleRow.sampled_at >= _ms(since))
        if table is not None:
            database, name = split_table_name(table)
            query = query.where(BacklogSampleRow.database == database, BacklogSampleRow.table == name)
        query = query.order_by(
            BacklogSampleRow.database,
            BacklogSampleRow.table,
            BacklogSampleRow.partition,
            BacklogSampleRow.sampled_at,
            BacklogSampleRow.id,
        )
        with self._transaction("list_backlog_samples") as s:
            return [_backlog_sample(r) for r in s.scalars(query)]


def _conforms_to_port(store: SqlMetastore) -> Metastore:
    # mypy checks here that SqlMetastore structurally implements the Metastore port.
    return store


class InMemoryMetastore(SqlMetastore):
    """The fast fake: ``SqlMetastore`` on a private in-memory SQLite database (one per instance)."""

    def __init__(self, *, warehouse: str = "warehouse", clock: Clock = time.time) -> None:
        super().__init__("sqlite://", warehouse=warehouse, clock=clock)


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _same_partition(column: Any, partition: str | None) -> Any:  # noqa: ANN401 - SQL expressions
    return column.is_(None) if partition is None else column == partition


def _normalize_database_name(name: str) -> str:
    database, _ = split_table_name(f"{name}.x") if isinstance(name, str) else (None, None)
    if database is None:
        raise InvalidTableNameError(repr(name))
    return database


def _table_exists_error(full_name: str) -> AcidError:
    return TableAlreadyExistsError(
        f"Table {full_name!r} already exists; expected a new name; hint: DROP TABLE first"
    )


_LONG_MAX = 2**63 - 1  # IDs are BIGINT columns (Hive: long); a larger one must not reach the driver


def _check_id(what: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _LONG_MAX:
        raise InvalidMetastoreRequestError(what, value, f"a positive integer <= {_LONG_MAX} (a 64-bit long)")


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry in some containers
        return "unknown"


_DISK_FULL_PGCODE = "53100"  # PostgreSQL's disk_full SQLSTATE
_DISK_FULL_SQLITE = "database or disk is full"  # SQLITE_FULL


def translate_db_error(operation: str, url: sa.URL, error: SQLAlchemyError) -> AcidError:
    """The ``AcidError`` for a database failure: ``DiskFullError`` when the disk is full, else ``MetastoreError``.

    A full disk is a disk problem, not a metastore or lock-store one: the message says so and names
    the database file (SQLite) or the URL (a server).
    """
    cause = getattr(error, "orig", None) or error
    full = (
        getattr(cause, "pgcode", None) == _DISK_FULL_PGCODE
        or _DISK_FULL_SQLITE in str(cause)
        or (isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT))
    )
    shown = url.render_as_string(hide_password=True)
    if full:
        path = url.database if url.get_backend_name() == "sqlite" and url.database else shown
        return DiskFullError(path, f"metastore operation {operation!r}", describe_db_error(error))
    return MetastoreError(operation, shown, describe_db_error(error))


def describe_db_error(error: SQLAlchemyError) -> str:
    r"""A one-line description of a database error for ``MetastoreError``: the driver's class and first line.

    >>> describe_db_error(sa.exc.OperationalError("SELECT 1", {}, ValueError("server closed\nmore")))
    'ValueError: server closed'
    """
    cause = getattr(error, "orig", None) or error
    return f"{type(cause).__name__}: {str(cause).strip().splitlines()[0] if str(cause).strip() else ''}"
