"""The SQLAlchemy adapter of the metastore port: ``SqlMetastore`` (SQLite by default, PostgreSQL by URL).

The model (a writer's and a reader's calls, the compaction queue's states) is in ``port``;
``SqlMetastore`` stores it in tables named after Hive's (TXNS, TXN_TO_WRITE_ID, COMPACTION_QUEUE,
...). It is assembled here from one part per concern, each a module of its own::

    SqlMetastore (sql)
    ├── SqlCatalogPart          sql_catalog   databases, tables, partitions
    ├── SqlTxnPart              sql_txns      open / write IDs / commit / abort, reaper, housekeeping
    ├── SqlCompactionQueuePart  sql_queue     the compaction queue and its history
    └── SqlLeasePart            sql_leases    reader leases, backlog samples
        on SqlMetastoreBase     sql_base      engine, one database transaction per call, snapshots
    engines, Alembic upgrade, error translation: sql_engine (shared with the SQL lock store)

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

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acid_core.metastore.port import (
        Clock,
        Metastore,
    )


from acid_core.metastore.sql.catalog import SqlCatalogPart
from acid_core.metastore.sql.engine import (
    create_engine_for_url,
    describe_db_error,
    resolve_postgres_driver,
    translate_db_error,
    upgrade_schema,
)
from acid_core.metastore.sql.leases import SqlLeasePart
from acid_core.metastore.sql.queue import SqlCompactionQueuePart
from acid_core.metastore.sql.txns import SqlTxnPart

__all__ = [
    "InMemoryMetastore",
    "SqlMetastore",
    "create_engine_for_url",
    "describe_db_error",
    "resolve_postgres_driver",
    "translate_db_error",
    "upgrade_schema",
]


class SqlMetastore(SqlCatalogPart, SqlTxnPart, SqlCompactionQueuePart, SqlLeasePart):
    """The metastore on SQLAlchemy: SQLite (embedded default) or PostgreSQL by URL.

    Opening runs ``alembic upgrade head`` (idempotent, serialized between processes) and makes
    sure the ``default`` database exists.

    Args:
        url: a SQLAlchemy URL (``sqlite:///path``, ``postgresql+psycopg2://...``).
        warehouse: root directory of the warehouse; the ``default`` database lives there.
        clock: epoch seconds, for every ``now=None``.
    """

    def __enter__(self) -> SqlMetastore:
        return self


def _conforms_to_port(store: SqlMetastore) -> Metastore:
    # mypy checks here that SqlMetastore structurally implements the Metastore port.
    return store


class InMemoryMetastore(SqlMetastore):
    """The fast fake: ``SqlMetastore`` on a private in-memory SQLite database (one per instance)."""

    def __init__(self, *, warehouse: str = "warehouse", clock: Clock = time.time) -> None:
        super().__init__("sqlite://", warehouse=warehouse, clock=clock)
