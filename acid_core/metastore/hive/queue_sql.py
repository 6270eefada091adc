"""Hive 2.3's and 3.1's compaction queue by SQL on the metastore's backend database (``ACIDFLOW_HMS_DB``).

Hive 2.3 and 3.1 expose ``compact2`` and ``show_compact`` over Thrift, but the worker's and
cleaner's steps (``findNextToCompact``, ``setCompactionHighestWriteId``, ``markCompacted``,
``markCleaned``, ``markFailed``) live only inside ``CompactionTxnHandler``. An external compactor does what that
class does, on the same tables, so Hive's own compactor and ``SHOW COMPACTIONS`` see its work::

    COMPACTION_QUEUE        'i' --claim (guarded UPDATE)--> 'w' --mark_compacted--> 'r'
    COMPLETED_COMPACTIONS   's' (mark_cleaned), 'f' (mark_failed / refused / aborted), 'a' (attempted)

``mark_cleaned`` also deletes COMPLETED_TXN_COMPONENTS of the table/partition up to the highest txn,
TXN_COMPONENTS of the aborted writes the cleaner saw removed, and aborted TXNS rows left without
components (``cleanEmptyAbortedTxns``). Which aborted writes follow Hive 4's ``MarkCleanedFunction``,
not 2.3's and 3.1's ``markCleaned``: those forget every aborted write up to the highest ID, even one
whose rows still sit in a delta the compaction did not rewrite (a streaming batch's
``delta_x_y`` that mixes an aborted write with ones still open at compaction time). The transaction
then leaves TXNS, every snapshot takes it for committed and its rows turn visible (found by the HMS
fault soak on a real 3.1.3 server). Hive 4 fixed it with the cleaner's ``hasUncompactedAborts`` and
``writeIds``; acidflow's cleaner hands both to every version.

Hive 2.3 has no column for the compaction transaction, its commit time, the next txn ID at
commit or the cleaner's retry back-off (Hive 4's CQ_TXN_ID, CQ_COMMIT_TIME, CQ_NEXT_TXN_ID,
CQ_RETRY_RETENTION); acidflow keeps them as JSON in CQ_META_INFO (a bytea Hive's compactor does not
use), so the cleaner's rules (wait for every transaction that started before the compaction
committed; back off after a failed cleaning) work on 2.3 as on Hive 4, for every acidflow process
that shares the HMS, and they leave with the entry.

The schema is detected once per connection, from the ``VERSION`` row (``SCHEMA_VERSION``) and the
queue's columns, and every statement is written for it::

    2.3.x   CQ_/CC_HIGHEST_TXN_ID; TXN_COMPONENTS / COMPLETED_TXN_COMPONENTS by txn ID
    3.1.x   CQ_/CC_HIGHEST_WRITE_ID; TC_WRITEID / CTC_WRITEID <= it (Hive 3's markCleaned);
            *_CATALOG NOT NULL (copied from the queue row; 'hive' for new history rows)
    no VERSION row      told by the columns (a 2.3 server that never recorded its version)
    4.x, 1.x, unknown   refused (``HiveMetastoreCapabilityError``): Hive 4 has Thrift worker calls

Table names are unquoted upper case, which matches the PostgreSQL DDL (folded to lower case),
MySQL (case-sensitive there: Hive's DDL is upper case) and Derby; tested on PostgreSQL and MariaDB
against Hive's own schematool scripts and real 2.3/3.1 servers.

Hive 4's queue (``hive4_*``, read for the cleaner's columns no Thrift call lists) is ``v4``'s
(``Hive4QueuePart``), on the same connection. ``partition_changes`` (the initiator's skip, read
only) reads COMPLETED_TXN_COMPONENTS / TXN_COMPONENTS of any of the three versions.

Invariants: every transition is one database transaction with a guarded UPDATE (the row must still
be in the expected state), so two compactors never claim one entry.
Not here: Thrift calls (``hive``), deciding anything.
Errors: ``MetastoreError`` (database errors, chained); ``NoSuchCompactionError``;
``CompactionStateError`` for a transition from the wrong state; ``HiveMetastoreCapabilityError`` for
a schema version other than 2.x/3.x.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

import sqlalchemy as sa
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import SQLAlchemyError

from acid_core.errors import (
    CompactionStateError,
    HiveMetastoreCapabilityError,
    MetastoreError,
    NoSuchCompactionError,
)
from acid_core.metastore.hive.v4 import Hive4QueuePart, delete_cleaned_aborts

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from sqlalchemy.engine import URL, Connection

    from acid_core.writeids import NewlyValidWriteIds

__all__ = ["HiveQueueRow", "HiveQueueSchema", "HiveQueueSql", "queue_schema_for"]

_LOG = logging.getLogger(__name__)
_DEFAULT_CATALOG: Final = "hive"  # Hive 3's default catalog (metastore.catalog.default)


@dataclass(frozen=True, slots=True)
class HiveQueueSchema:
    """The layout of a backend database's queue tables (see the module docstring).

    Attributes:
        version: ``SCHEMA_VERSION`` of the ``VERSION`` row, or None when there is none.
        write_ids: Hive 3: the highest ID is a write ID (CQ_HIGHEST_WRITE_ID, TC_/CTC_WRITEID);
            Hive 2: a txn ID (CQ_HIGHEST_TXN_ID).
        catalog: the tables have Hive 3's NOT NULL catalog columns.
    """

    version: str | None
    write_ids: bool
    catalog: bool

    @property
    def queue_columns(self) -> str:
        """The COMPACTION_QUEUE columns a ``HiveQueueRow`` is read from."""
        return (
            "CQ_ID, CQ_DATABASE, CQ_TABLE, CQ_PARTITION, CQ_STATE, CQ_TYPE, CQ_TBLPROPERTIES, CQ_WORKER_ID, "
            f"CQ_START, CQ_RUN_AS, CQ_{self._highest}, CQ_META_INFO"
        )

    @property
    def history_columns(self) -> str:
        """The COMPLETED_COMPACTIONS columns a ``HiveQueueRow`` is read from."""
        return (
            "CC_ID, CC_DATABASE, CC_TABLE, CC_PARTITION, CC_STATE, CC_TYPE, CC_TBLPROPERTIES, CC_WORKER_ID, "
            f"CC_START, CC_RUN_AS, CC_{self._highest}, CC_META_INFO, CC_END"
        )

    @property
    def _highest(self) -> str:
        return "HIGHEST_WRITE_ID" if self.write_ids else "HIGHEST_TXN_ID"


def queue_schema_for(version: str | None, queue_columns: Iterable[str], where: str) -> HiveQueueSchema:
    """The queue layout of a backend whose VERSION row says ``version`` and whose queue has ``queue_columns``.

    Raises:
        HiveMetastoreCapabilityError: a version other than 2.x/3.x, or columns that do not match it.

    >>> queue_schema_for("3.1.0", ["cq_id", "cq_catalog", "cq_highest_write_id"], "db")
    HiveQueueSchema(version='3.1.0', write_ids=True, catalog=True)
    >>> queue_schema_for(None, ["CQ_ID", "CQ_HIGHEST_TXN_ID"], "db")
    HiveQueueSchema(version=None, write_ids=False, catalog=False)
    """
    columns = {c.lower() for c in queue_columns}
    has_write_ids, has_txn_ids = "cq_highest_write_id" in columns, "cq_highest_txn_id" in columns
    major = version.strip().split(".")[0] if version else None
    operation = "use the compaction queue of the backend database"
    hint = "set ACIDFLOW_HMS_DB to the backend database of a Hive 2.3 or 3.1 metastore, or unset it"
    if major is None:
        if has_write_ids == has_txn_ids:
            raise HiveMetastoreCapabilityError(
                where,
                operation,
                "it has no VERSION row and COMPACTION_QUEUE is not Hive 2.3's or 3.1's",
                hint,
            )
        _LOG.info(
            "%s has no VERSION row; its queue columns say Hive %s", where, "3" if has_write_ids else "2"
        )
    elif major in ("2", "3"):
        expected = "cq_highest_write_id" if major == "3" else "cq_highest_txn_id"
        if expected not in columns:
            raise HiveMetastoreCapabilityError(
                where, operation, f"VERSION says {version!r} but COMPACTION_QUEUE has no {expected}", hint
            )
        has_write_ids = major == "3"
    else:
        raise HiveMetastoreCapabilityError(
            where,
            operation,
            f"schema version {version!r} is not supported by the SQL queue (expected 2.3.x or 3.1.x; Hive 4 "
            "has the compactor-worker Thrift calls, which acidflow uses instead)",
            hint,
        )
    return HiveQueueSchema(version, has_write_ids, "cq_catalog" in columns)


@dataclass(frozen=True, slots=True)
class HiveQueueRow:
    """One COMPACTION_QUEUE or COMPLETED_COMPACTIONS row (times in epoch milliseconds)."""

    id: int
    database: str
    table: str
    partition: str | None
    state: str
    type: str
    properties: str | None
    worker_id: str | None
    start_ms: int | None
    run_as: str | None
    highest_txn_id: int | None
    meta: Mapping[str, Any]
    end_ms: int | None = None


def _meta(raw: object) -> dict[str, Any]:
    if raw is None:
        return {}
    data = bytes(raw) if isinstance(raw, bytes | bytearray | memoryview) else str(raw).encode()
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}  # Hive's own meta info, not ours
    acidflow = parsed.get("acidflow") if isinstance(parsed, dict) else None
    return dict(acidflow) if isinstance(acidflow, dict) else {}


def _row(values: tuple[Any, ...]) -> HiveQueueRow:
    end = values[12] if len(values) > 12 else None
    return HiveQueueRow(
        id=int(values[0]),
        database=values[1],
        table=values[2],
        partition=values[3],
        state=str(values[4]),
        type=str(values[5]),
        properties=values[6],
        worker_id=values[7],
        start_ms=None if values[8] is None else int(values[8]),
        run_as=values[9],
        highest_txn_id=None if values[10] is None else int(values[10]),
        meta=_meta(values[11]),
        end_ms=None if end is None else int(end),
    )


def _with_driver(url: str) -> URL:
    # A plain postgresql:// means psycopg (3) to SQLAlchemy 2.1; accept it with psycopg2 too. A plain
    # mysql:// (or mariadb://) means mysqlclient; accept it with the pure-Python PyMySQL too.
    import importlib.util

    def missing(module: str) -> bool:
        return importlib.util.find_spec(module) is None

    parsed = make_url(url)
    if parsed.drivername == "postgresql" and missing("psycopg") and not missing("psycopg2"):
        return parsed.set(drivername="postgresql+psycopg2")
    if parsed.drivername in ("mysql", "mariadb") and missing("MySQLdb") and not missing("pymysql"):
        return parsed.set(drivername=f"{parsed.drivername}+pymysql")
    return parsed


class HiveQueueSql(Hive4QueuePart):
    """COMPACTION_QUEUE / COMPLETED_COMPACTIONS of a Hive 2.3 or 3.1 backend database (see module doc).

    Args:
        url: a SQLAlchemy URL of the HMS backend database (``postgresql://user@host/db``).
        clock: epoch seconds.
    """

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self._clock = clock
        try:
            self._engine = create_engine(
                _with_driver(url), pool_pre_ping=True, isolation_level="READ COMMITTED"
            )
        except (SQLAlchemyError, ImportError, ValueError) as e:
            raise MetastoreError("open", url, f"{type(e).__name__}: {e}") from e
        self._layout: HiveQueueSchema | None = None
        self._hive4: bool | None = None

    @property
    def schema(self) -> HiveQueueSchema:
        """The backend's queue layout, detected on first use (``queue_schema_for``)."""
        if self._layout is None:
            try:
                inspector = sa.inspect(self._engine)
                tables = {name.lower(): name for name in inspector.get_table_names()}
                if "compaction_queue" not in tables:
                    raise HiveMetastoreCapabilityError(
                        self.url,
                        "use the compaction queue of the backend database",
                        "it has no COMPACTION_QUEUE table (not a Hive metastore database with ACID tables)",
                        "set ACIDFLOW_HMS_DB to the database named by the HMS's javax.jdo.option.ConnectionURL",
                    )
                columns = [c["name"] for c in inspector.get_columns(tables["compaction_queue"])]
                version = self._schema_version(tables.get("version"), inspector)
            except SQLAlchemyError as e:
                raise MetastoreError("detect the schema", self.url, f"{type(e).__name__}: {e}") from e
            self._layout = queue_schema_for(version, columns, self.url)
        return self._layout

    def _schema_version(self, table_name: str | None, inspector: sa.Inspector) -> str | None:
        if table_name is None:
            return None
        names = {c["name"].lower(): c["name"] for c in inspector.get_columns(table_name)}
        if "schema_version" not in names:
            return None
        version_table = sa.table(table_name, sa.column(names["schema_version"]))
        with self._engine.connect() as c:
            value = c.execute(sa.select(version_table.c[names["schema_version"]])).scalars().first()
        return None if value is None else str(value)

    @property
    def is_hive4(self) -> bool:
        """Whether the backend's ``VERSION`` row says Hive 4 (its queue is read, never written, here)."""
        if self._hive4 is None:
            try:
                inspector = sa.inspect(self._engine)
                tables = {name.lower(): name for name in inspector.get_table_names()}
                version = self._schema_version(tables.get("version"), inspector)
            except SQLAlchemyError as e:
                raise MetastoreError("detect the schema", self.url, f"{type(e).__name__}: {e}") from e
            self._hive4 = version is not None and version.strip().startswith("4.")
        return self._hive4

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    @contextmanager
    def _tx(self, operation: str) -> Iterator[Connection]:
        try:
            with self._engine.begin() as connection:
                yield connection
        except SQLAlchemyError as e:
            raise MetastoreError(operation, self.url, f"{type(e).__name__}: {e}") from e

    def close(self) -> None:
        """Release connections."""
        self._engine.dispose()

    # Reads ---------------------------------------------------------------------------------------
    def get(self, compaction_id: int) -> HiveQueueRow:
        """A queued or historical row. Raises ``NoSuchCompactionError``."""
        layout = self.schema
        with self._tx("get_compaction") as c:
            row = c.execute(
                text(f"SELECT {layout.queue_columns} FROM COMPACTION_QUEUE WHERE CQ_ID = :id"),
                {"id": compaction_id},
            ).first()
            if row is None:
                row = c.execute(
                    text(f"SELECT {layout.history_columns} FROM COMPLETED_COMPACTIONS WHERE CC_ID = :id"),
                    {"id": compaction_id},
                ).first()
        if row is None:
            raise NoSuchCompactionError(compaction_id)
        return _row(tuple(row))

    def list_all(self) -> list[HiveQueueRow]:
        """Queue and history, by ID."""
        layout = self.schema
        with self._tx("show_compactions") as c:
            queued = [
                _row(tuple(r))
                for r in c.execute(text(f"SELECT {layout.queue_columns} FROM COMPACTION_QUEUE"))
            ]
            done = [
                _row(tuple(r))
                for r in c.execute(text(f"SELECT {layout.history_columns} FROM COMPLETED_COMPACTIONS"))
            ]
        return sorted([*queued, *done], key=lambda r: r.id)

    # Transitions ------------------------------------------------------------------------------------
    def claim(self, worker_id: str, compaction_id: int | None = None) -> HiveQueueRow | None:
        """``findNextToCompact``: 'i' -> 'w' for the oldest (or the given) initiated entry."""
        layout = self.schema
        with self._tx("find_next_to_compact") as c:
            query = f"SELECT {layout.queue_columns} FROM COMPACTION_QUEUE WHERE CQ_STATE = 'i'"
            params: dict[str, Any] = {}
            if compaction_id is not None:
                query += " AND CQ_ID = :id"
                params["id"] = compaction_id
            for values in c.execute(text(query + " ORDER BY CQ_ID"), params).all():
                start = self._now_ms()
                updated = c.execute(
                    text(
                        "UPDATE COMPACTION_QUEUE SET CQ_WORKER_ID = :worker, CQ_START = :start, CQ_STATE = 'w' "
                        "WHERE CQ_ID = :id AND CQ_STATE = 'i'"
                    ),
                    {"worker": worker_id, "start": start, "id": values[0]},
                )
                if updated.rowcount == 1:
                    return replace(_row(tuple(values)), state="w", worker_id=worker_id, start_ms=start)
        return None

    def _update_meta(self, c: Connection, compaction_id: int, **values: object) -> HiveQueueRow:
        values_row = c.execute(
            text(f"SELECT {self.schema.queue_columns} FROM COMPACTION_QUEUE WHERE CQ_ID = :id FOR UPDATE"),
            {"id": compaction_id},
        ).first()
        if values_row is None:
            raise NoSuchCompactionError(compaction_id)
        row = _row(tuple(values_row))
        meta = {**row.meta, **values}
        c.execute(
            text("UPDATE COMPACTION_QUEUE SET CQ_META_INFO = :meta WHERE CQ_ID = :id"),
            {"meta": json.dumps({"acidflow": meta}).encode(), "id": compaction_id},
        )
        return row

    def set_compactor_state(self, compaction_id: int, txn_id: int, highest_txn_id: int) -> None:
        """``setCompactionHighestTxnId`` (3.1: ``...WriteId``), plus the compaction txn in CQ_META_INFO."""
        column = "CQ_HIGHEST_WRITE_ID" if self.schema.write_ids else "CQ_HIGHEST_TXN_ID"
        with self._tx("update_compactor_state") as c:
            self._update_meta(c, compaction_id, txn_id=txn_id)
            c.execute(
                text(f"UPDATE COMPACTION_QUEUE SET {column} = :hi WHERE CQ_ID = :id"),
                {"hi": highest_txn_id, "id": compaction_id},
            )

    def mark_compacted(self, compaction_id: int, next_txn_id: int) -> None:
        """``markCompacted``: 'w' -> 'r'; records the next txn ID and the commit time (meta info)."""
        with self._tx("mark_compacted") as c:
            row = self._update_meta(c, compaction_id, next_txn_id=next_txn_id, commit_time_ms=self._now_ms())
            if row.state != "w":
                raise CompactionStateError(compaction_id, row.state, "mark compacted", "'w' (working)")
            c.execute(
                text("UPDATE COMPACTION_QUEUE SET CQ_STATE = 'r', CQ_WORKER_ID = NULL WHERE CQ_ID = :id"),
                {"id": compaction_id},
            )

    def set_retry_retention(self, compaction_id: int, retry_retention_ms: int, error_message: str) -> None:
        """Hive 4's ``setCleanerRetryRetentionTimeOnError`` (CQ_RETRY_RETENTION), in CQ_META_INFO.

        The entry must be 'r' (ready for cleaning); the reason is kept as the entry's error message.
        """
        with self._tx("set_cleaner_retry_retention") as c:
            row = self._update_meta(
                c, compaction_id, retry_retention_ms=retry_retention_ms, error_message=error_message[:1000]
            )
            if row.state != "r":
                raise CompactionStateError(
                    compaction_id, row.state, "retry cleaning", "'r' (ready for cleaning)"
                )

    def _to_history(self, c: Connection, compaction_id: int, state: str, allowed: str) -> HiveQueueRow:
        values = c.execute(
            text(f"SELECT {self.schema.queue_columns} FROM COMPACTION_QUEUE WHERE CQ_ID = :id FOR UPDATE"),
            {"id": compaction_id},
        ).first()
        if values is None:
            raise NoSuchCompactionError(compaction_id)
        row = _row(tuple(values))
        if row.state not in allowed:
            raise CompactionStateError(compaction_id, row.state, f"move to '{state}'", " or ".join(allowed))
        layout = self.schema
        highest = "HIGHEST_WRITE_ID" if layout.write_ids else "HIGHEST_TXN_ID"
        catalog = ("CC_CATALOG, ", "CQ_CATALOG, ") if layout.catalog else ("", "")
        c.execute(
            text(
                f"INSERT INTO COMPLETED_COMPACTIONS (CC_ID, {catalog[0]}CC_DATABASE, CC_TABLE, CC_PARTITION, "
                f"CC_STATE, CC_TYPE, CC_TBLPROPERTIES, CC_WORKER_ID, CC_START, CC_END, CC_RUN_AS, CC_{highest}, "
                f"CC_META_INFO, CC_HADOOP_JOB_ID) SELECT CQ_ID, {catalog[1]}CQ_DATABASE, CQ_TABLE, CQ_PARTITION, "
                f":state, CQ_TYPE, CQ_TBLPROPERTIES, CQ_WORKER_ID, CQ_START, :end_ms, CQ_RUN_AS, CQ_{highest}, "
                "CQ_META_INFO, CQ_HADOOP_JOB_ID FROM COMPACTION_QUEUE WHERE CQ_ID = :id"
            ),
            {"state": state, "end_ms": self._now_ms(), "id": compaction_id},
        )
        c.execute(text("DELETE FROM COMPACTION_QUEUE WHERE CQ_ID = :id"), {"id": compaction_id})
        return row

    def mark_failed(self, compaction_id: int, error_message: str, allowed: str = "iwr") -> None:
        """``markFailed``: to history 'f' (Hive 2.3 has no error column: the message goes in meta info)."""
        with self._tx("mark_failed") as c:
            self._update_meta(c, compaction_id, error_message=error_message[:1000])
            self._to_history(c, compaction_id, "f", allowed)

    def mark_cleaned(
        self,
        compaction_id: int,
        *,
        has_uncompacted_aborts: bool | None = None,
        aborted_write_ids: Iterable[int] = (),
    ) -> None:
        """``markCleaned``: to history 's'; forget the txn bookkeeping the compaction made obsolete.

        The aborted writes forgotten are Hive 4's (``MarkCleanedFunction.removeTxnComponents``):
        every one up to the highest ID when ``has_uncompacted_aborts`` is False (no delta that
        stays holds aborted writes), else only ``aborted_write_ids`` (2.3: txn IDs), else none.
        """
        with self._tx("mark_cleaned") as c:
            row = self._to_history(c, compaction_id, "s", "r")
            params: dict[str, Any] = {
                "db": row.database,
                "tbl": row.table,
                "part": row.partition,
                "hi": row.highest_txn_id if row.highest_txn_id is not None else -1,
            }
            part = "IS NULL" if row.partition is None else "= :part"
            # 2.3 compares txn IDs; 3.1 write IDs (CTC_WRITEID / TC_WRITEID), as its markCleaned does.
            write_ids = self.schema.write_ids
            completed = "CTC_WRITEID" if write_ids else "CTC_TXNID"
            c.execute(
                text(
                    "DELETE FROM COMPLETED_TXN_COMPONENTS WHERE CTC_DATABASE = :db AND CTC_TABLE = :tbl "
                    f"AND CTC_PARTITION {part} AND {completed} <= :hi"
                ),
                params,
            )
            written = "TC_WRITEID" if write_ids else "TC_TXNID"
            aborted = (
                "DELETE FROM TXN_COMPONENTS WHERE TC_TXNID IN (SELECT TXN_ID FROM TXNS WHERE "
                f"TXN_STATE = 'a') AND TC_DATABASE = :db AND TC_TABLE = :tbl AND TC_PARTITION {part}"
            )
            delete_cleaned_aborts(
                c,
                aborted,
                written,
                params,
                has_uncompacted_aborts=has_uncompacted_aborts is not False,
                highest=row.highest_txn_id,
                removed=aborted_write_ids,
            )
            # cleanEmptyAbortedTxns: aborted txns with nothing left to track
            c.execute(
                text(
                    "DELETE FROM TXNS WHERE TXN_STATE = 'a' AND NOT EXISTS "
                    "(SELECT 1 FROM TXN_COMPONENTS WHERE TC_TXNID = TXN_ID)"
                )
            )

    def partition_changes(
        self, database: str, table: str, newly_valid: NewlyValidWriteIds
    ) -> tuple[frozenset[str | None], frozenset[str | None]]:
        """(written, aborted) partitions of a table, as Hive's ``findPotentialCompactions`` finds them.

        Written: those with a committed write under a newly valid ID, from the COMPLETED_TXN_COMPONENTS
        rows whose CTC_WRITEID (Hive 3.1 and 4; 2.3: CTC_TXNID, its write IDs being txn IDs) is in
        ``newly_valid``. Aborted: those in TXN_COMPONENTS of TXNS in state 'a'. Read only, any
        Hive version (2.3, 3.1, 4: Hive 4's quoted names).
        """
        q: Callable[[str], str] = str
        if self.is_hive4:
            q = self._engine.dialect.identifier_preparer.quote_identifier
            id_column = "CTC_WRITEID"
        else:
            id_column = "CTC_WRITEID" if self.schema.write_ids else "CTC_TXNID"
        params: dict[str, object] = {"db": database, "tbl": table, "above": newly_valid.above}
        params |= {"up_to": newly_valid.up_to, "aborted": "a"}
        ids = f"({q(id_column)} > :above AND {q(id_column)} <= :up_to)"
        if newly_valid.also:
            ids = f"({ids} OR {q(id_column)} IN :also)"
            params["also"] = list(newly_valid.also)
        if id_column == "CTC_WRITEID":
            # A row without a write ID (written before an upgrade from 2.x, or by a writer that
            # locked without allocating one) cannot be placed in time: listed, never skipped.
            ids = f"({ids} OR {q(id_column)} IS NULL)"
        written = text(
            f"SELECT DISTINCT {q('CTC_PARTITION')} FROM {q('COMPLETED_TXN_COMPONENTS')} "
            f"WHERE {q('CTC_DATABASE')} = :db AND {q('CTC_TABLE')} = :tbl AND {ids}"
        )
        if newly_valid.also:
            written = written.bindparams(sa.bindparam("also", expanding=True))
        aborted = text(
            f"SELECT DISTINCT {q('TC_PARTITION')} FROM {q('TXN_COMPONENTS')} WHERE {q('TC_DATABASE')} = :db "
            f"AND {q('TC_TABLE')} = :tbl AND {q('TC_TXNID')} IN "
            f"(SELECT {q('TXN_ID')} FROM {q('TXNS')} WHERE {q('TXN_STATE')} = :aborted)"
        )
        with self._tx("list_partition_changes") as c:
            written_partitions = frozenset(c.execute(written, params).scalars())
            aborted_partitions = frozenset(c.execute(aborted, params).scalars())
        return written_partitions, aborted_partitions

    def record_attempted(self, database: str, table: str, partition: str | None, type_code: str) -> int:
        """History 'a' (attempted: the initiator could not start it), with an ID from the queue's counter."""
        with self._tx("record_did_not_initiate") as c:
            next_id = int(
                c.execute(text("SELECT NCQ_NEXT FROM NEXT_COMPACTION_QUEUE_ID FOR UPDATE")).scalar_one()
            )
            c.execute(text("UPDATE NEXT_COMPACTION_QUEUE_ID SET NCQ_NEXT = :n"), {"n": next_id + 1})
            now = self._now_ms()
            catalog = ("CC_CATALOG, ", ":catalog, ") if self.schema.catalog else ("", "")
            c.execute(
                text(
                    f"INSERT INTO COMPLETED_COMPACTIONS (CC_ID, {catalog[0]}CC_DATABASE, CC_TABLE, CC_PARTITION, "
                    f"CC_STATE, CC_TYPE, CC_START, CC_END) VALUES (:id, {catalog[1]}:db, :tbl, :part, 'a', :type, "
                    ":now, :now)"
                ),
                {
                    "catalog": _DEFAULT_CATALOG,
                    "id": next_id,
                    "db": database,
                    "tbl": table,
                    "part": partition,
                    "type": type_code,
                    "now": now,
                },
            )
            return next_id
