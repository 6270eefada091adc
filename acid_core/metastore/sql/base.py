"""The SQL metastore's common ground: row codes, row-to-value helpers and ``SqlMetastoreBase``.

``SqlMetastoreBase`` holds what every part of ``SqlMetastore`` needs: the engine, one database
transaction per call (``_transaction``), row lookups and locks, and the transaction snapshot
(``_txns_in_snapshot``: on PostgreSQL IDs come from ``TXN_ID_SEQ``, Hive 4's openTxns; an ID whose
open has not committed is a gap, listed as open). The parts (``sql.catalog``, ``sql.txns``,
``sql.queue``, ``sql.leases``) add the public methods; ``sql`` assembles ``SqlMetastore``.

Not here: public methods. Errors: database failures become ``MetastoreError`` in ``_transaction``.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import func, or_, select, union_all, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from acid_core.errors import (
    AcidError,
    CompactionStateError,
    DatabaseAlreadyExistsError,
    InvalidMetastoreRequestError,
    InvalidTableNameError,
    MetastoreDatabaseUnavailableError,
    MetastoreError,
    NoSuchCompactionError,
    NoSuchDatabaseError,
    NoSuchTableError,
    NoSuchTxnError,
    TableAlreadyExistsError,
    TxnNotOpenError,
)
from acid_core.metastore.sql.models import (
    BacklogSampleRow,
    CompactionQueueEntry,
    CompletedCompaction,
    DatabaseRow,
    NextTxnId,
    NextWriteId,
    ReaderLease,
    TableRow,
    Txn,
    TxnToWriteId,
)
from acid_core.types import TxnId, WriteId
from acid_core.writeids import (
    ValidTxnList,
    ValidWriteIdList,
    parse_valid_txn_list,
    parse_valid_write_id_list,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence


from acid_core.metastore.port import (
    DEFAULT_DATABASE,
    BacklogSample,
    Clock,
    Column,
    CompactionInfo,
    CompactionState,
    CompactionType,
    Lease,
    Table,
    TableType,
    TxnInfo,
    TxnState,
    TxnType,
    WriteOperation,
    _valid_read_txn_list,
    _valid_write_id_list,
    split_table_name,
)
from acid_core.metastore.sql.engine import (
    SchemaRevisionError,
    _is_sqlite_memory,
    create_engine_for_url,
    translate_db_error,
    upgrade_schema,
)

# One logger for every part, named as before the split.
_LOG = logging.getLogger("acid_core.metastore.sql.metastore")


_HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


_TXN_STATE_CODE = {TxnState.OPEN: "o", TxnState.COMMITTED: "c", TxnState.ABORTED: "a"}


_TXN_STATE_BY_CODE = {code: state for state, code in _TXN_STATE_CODE.items()}


# Hive's thrift TxnType ordinals: DEFAULT=0, REPL_CREATED=1, READ_ONLY=2, COMPACTION=3.
_TXN_TYPE_CODE = {TxnType.DEFAULT: 0, TxnType.READ_ONLY: 2, TxnType.COMPACTION: 3}


_TXN_TYPE_BY_CODE = {code: kind for kind, code in _TXN_TYPE_CODE.items()}


_OPERATION_CODE = {WriteOperation.INSERT: "i", WriteOperation.UPDATE: "u", WriteOperation.DELETE: "d"}


_OPERATION_NAME = {code: op.value for op, code in _OPERATION_CODE.items()}


_COMPACTION_TYPE_CODE = {CompactionType.MAJOR: "a", CompactionType.MINOR: "i", CompactionType.REBALANCE: "r"}


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


COMMIT_CHECK_SECONDS = 30.0
"""How long ``commit_txn`` keeps trying to read back a transaction whose commit lost its answer.

About a PostgreSQL restart or a failover to a standby; after it the commit's state is unknown
(``CommitStateUnknownError``).
"""


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _seconds(millis: int | None) -> float | None:
    return None if millis is None else millis / 1000


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
        number_of_buckets=row.number_of_buckets or 0,
        order_by=row.order_by,
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


def _same_partition(column: Any, partition: str | None) -> Any:  # noqa: ANN401 - SQL expressions
    return column.is_(None) if partition is None else column == partition


def _sequence_high_watermark(s: Session | sa.Connection) -> int:
    """The highest transaction ID the PostgreSQL sequence has handed out (its row may not be visible yet)."""
    last_value, is_called = s.execute(sa.text('SELECT last_value, is_called FROM "TXN_ID_SEQ"')).one()
    return int(last_value) if is_called else int(last_value) - 1


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


class SqlMetastoreBase:
    """The engine, one database transaction per call, and the lookups every part shares."""

    def __init__(
        self,
        url: str,
        *,
        warehouse: str = "warehouse",
        clock: Clock = time.time,
        commit_check_seconds: float = COMMIT_CHECK_SECONDS,
    ) -> None:
        self._commit_check_seconds = commit_check_seconds
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
        except SchemaRevisionError as e:  # e.g. the database is at a revision this code does not know
            raise MetastoreError("migrate", self._shown_url, str(e)) from e
        self._postgresql = self._engine.dialect.name == "postgresql"
        self._txn_id_sequence = self._postgresql
        self._ensure_default_database()

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

    @contextlib.contextmanager
    def _connection(self, operation: str) -> Iterator[sa.Connection]:
        """One database transaction on a plain connection: ``_transaction`` without an ORM session.

        The transaction path (open, allocate a write ID, commit) runs on this with prepared
        ``text()`` statements: no unit of work, no identity map, no statement compilation per call.
        """
        try:
            with self._serialize, self._engine.begin() as connection:
                yield connection
        except SQLAlchemyError as e:
            raise translate_db_error(operation, self._url, e) from e

    @contextlib.contextmanager
    def _autocommit(self, operation: str) -> Iterator[sa.Connection]:
        """A PostgreSQL connection in autocommit mode: each statement commits on its own.

        For an operation that is one statement: one round trip, no BEGIN or COMMIT, and its row
        locks are released by that statement's commit. The driver's ``autocommit`` flag is set
        directly (SQLAlchemy's AUTOCOMMIT isolation level costs two round trips per checkout).
        """
        try:
            with self._serialize, self._engine.connect() as connection:
                driver: Any = connection.connection.dbapi_connection
                try:
                    driver.autocommit = True
                except self._engine.dialect.loaded_dbapi.Error as e:  # e.g. closed by the server
                    connection.invalidate(e)
                    problem = f"{type(e).__name__}: {str(e).strip()}"
                    raise MetastoreDatabaseUnavailableError(operation, self._shown_url, problem) from e
                try:
                    yield connection
                finally:
                    if not connection.invalidated:
                        try:
                            driver.autocommit = False
                        except self._engine.dialect.loaded_dbapi.Error as e:
                            connection.invalidate(e)  # not back to the pool in autocommit
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

    def _next_txn_id_locked(self, s: Session | sa.Connection) -> int:
        """Lock NEXT_TXN_ID exclusively and return the next txn ID; every lower ID is settled.

        Hive 4's ``acquireTxnLock(exclusive)``: opens hold the same row in share mode from before
        they draw an ID until they commit, so once this lock is held no open is in flight and every
        ID the sequence handed out is a TXNS row or a rolled-back open. On PostgreSQL the row then
        records the sequence's position (the "settled" mark below which snapshots see no gaps);
        on SQLite it is the counter itself.
        """
        settled = int(s.execute(select(NextTxnId.next_txn_id).with_for_update()).scalar_one())
        if not self._txn_id_sequence:
            return settled
        return self._settle(s, settled)

    @staticmethod
    def _settle(s: Session | sa.Connection, settled: int) -> int:
        next_txn_id = max(settled, _sequence_high_watermark(s) + 1)
        if next_txn_id != settled:
            s.execute(update(NextTxnId).values(next_txn_id=next_txn_id))
        return next_txn_id

    def _txns_in_snapshot(self, s: Session) -> tuple[int, list[tuple[int, str, int | None]]]:
        """The high watermark and every open or aborted txn at or below it, gaps included.

        Hive 4's ``getOpenTxnsList``: IDs come from a sequence, so a txn whose open has not
        committed yet is a gap between visible TXNS rows; a gap at or above the settled mark
        is listed as open (its type unknown: ``None``). Below the mark there are no in-flight
        opens, and a missing row is a rolled-back open or one housekeeping deleted.
        """
        high_watermark = _sequence_high_watermark(s) if self._txn_id_sequence else None
        settled_mark = select(NextTxnId.next_txn_id).scalar_subquery()
        # One statement, so the mark and the rows come from one database snapshot.
        rows: Sequence[Any] = s.execute(
            union_all(
                select(NextTxnId.next_txn_id, sa.null(), sa.null()),
                select(Txn.txn_id, Txn.state, Txn.txn_type).where(
                    or_(Txn.state.in_((_OPEN, _ABORTED)), Txn.txn_id >= settled_mark)
                ),
            )
        ).all()
        settled = next(int(t) for t, state, _ in rows if state is None)
        high_watermark = settled - 1 if high_watermark is None else max(high_watermark, settled - 1)
        present: set[int] = set()
        listed: list[tuple[int, str, int | None]] = []
        for txn_id, state, txn_type in rows:
            if state is None or txn_id > high_watermark:
                continue
            if txn_id >= settled:
                present.add(txn_id)
            if state in (_OPEN, _ABORTED):
                listed.append((int(txn_id), state, txn_type))
        listed.extend((t, _OPEN, None) for t in range(settled, high_watermark + 1) if t not in present)
        listed.sort()
        return high_watermark, listed

    def _valid_txns(self, s: Session, current_txn_id: int | None) -> ValidTxnList:
        high_watermark, txns = self._txns_in_snapshot(s)
        read_only = _TXN_TYPE_CODE[TxnType.READ_ONLY]
        return _valid_read_txn_list(
            high_watermark, [(t, st == _ABORTED) for t, st, kind in txns if kind != read_only], current_txn_id
        )

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

    def _min_open_txn_id(self, s: Session) -> int:
        high_watermark, txns = self._txns_in_snapshot(s)
        return min((t for t, state, _ in txns if state == _OPEN), default=high_watermark + 1)

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
