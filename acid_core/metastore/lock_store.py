"""The tables and queries of the SQL lock manager (``acid_core.locks.sql``), on the metastore database.

The tables (acidflow's own; Hive's DbLockManager keeps HIVE_LOCKS with a richer mode set)::

    ACIDFLOW_LOCK_SESSIONS   one row per live lock-manager session: id, host, last heartbeat and
                             timeout (ms). A session whose heartbeat is older than its timeout is
                             expired: the next acquire/show/heartbeat deletes it and its locks
                             (ZooKeeper's ephemeral-node semantics).
    ACIDFLOW_LOCKS           one row per held lock (state 'a') or fair-mode waiting marker ('w'):
                             session, request token, object name, db, table, mode, holder, host,
                             txn id, acquired time (ms).

Every ``attempt`` is one database transaction serialized against every other lock transaction:
``BEGIN IMMEDIATE`` on SQLite (the metastore engine's begin hook), ``pg_advisory_xact_lock`` on
PostgreSQL. Inside it the store purges expired sessions, reads the rows on the requested objects,
asks the caller's ``find_conflicts`` (the lock rules live in ``acid_core.locks``), and either
inserts every lock row or (fair mode) its waiting markers. So a grant is all-or-nothing and two
incompatible grants can never interleave.

The tables are created on first use (``CREATE TABLE IF NOT EXISTS`` through a separate
``MetaData``), not by the metastore's Alembic history: see ``LOCK_METADATA``. Times come from the
caller (epoch ms), so hosts must keep their clocks roughly in sync (well under a session timeout).

Not here: the compatibility rules, retries, the heartbeat thread (``acid_core.locks.sql``).
Errors: database failures become ``MetastoreError`` with the cause chained.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import BigInteger, Boolean, Index, Integer, MetaData, String, delete, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from acid_core.errors import MetastoreError
from acid_core.metastore.store import _create_engine, _db_problem

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from sqlalchemy.engine import Connection

__all__ = ["LOCK_METADATA", "LockRow", "SqlLockStore", "StoredLock"]

# Kept out of models.Base on purpose: the metastore's migration test compares Base with the
# Alembic head; these tables join the Alembic history once that is coordinated (see the report).
LOCK_METADATA = MetaData()
_ID = BigInteger().with_variant(Integer(), "sqlite")  # SQLite autoincrements INTEGER PRIMARY KEY only
_SERIALIZE_KEY = 0x41C1D10C  # pg_advisory_xact_lock key of lock transactions

SESSIONS = sa.Table(
    "ACIDFLOW_LOCK_SESSIONS",
    LOCK_METADATA,
    sa.Column("LS_SESSION_ID", String(64), primary_key=True, key="session_id"),
    sa.Column("LS_HOST", String(255), nullable=False, key="host"),
    sa.Column("LS_STARTED", BigInteger, nullable=False, key="started"),
    sa.Column("LS_LAST_HEARTBEAT", BigInteger, nullable=False, key="last_heartbeat"),
    sa.Column("LS_TIMEOUT_MS", BigInteger, nullable=False, key="timeout_ms"),
)

LOCKS = sa.Table(
    "ACIDFLOW_LOCKS",
    LOCK_METADATA,
    sa.Column("L_ID", _ID, primary_key=True, autoincrement=True, key="lock_id"),
    sa.Column("L_SESSION_ID", String(64), nullable=False, key="session_id"),
    sa.Column("L_TOKEN", String(64), nullable=False, key="token"),
    sa.Column("L_OBJECT", String(1024), nullable=False, key="object_name"),
    sa.Column("L_DB", String(128), nullable=False, key="db"),
    sa.Column("L_TABLE", String(256), nullable=False, key="table_name"),
    sa.Column("L_MODE", String(1), nullable=False, key="mode"),
    sa.Column("L_WAITING", Boolean, nullable=False, key="waiting"),
    sa.Column("L_HOLDER", String(256), nullable=False, key="holder"),
    sa.Column("L_HOST", String(255), nullable=False, key="host"),
    sa.Column("L_TXN_ID", BigInteger, nullable=True, key="txn_id"),
    sa.Column("L_ACQUIRED_AT", BigInteger, nullable=False, key="acquired_at"),
    Index("IX_ACIDFLOW_LOCKS_OBJECT", "object_name"),
    Index("IX_ACIDFLOW_LOCKS_TABLE", "db", "table_name"),
    Index("IX_ACIDFLOW_LOCKS_SESSION", "session_id"),
    Index("IX_ACIDFLOW_LOCKS_TOKEN", "token"),
)


@dataclass(frozen=True, slots=True)
class LockRow:
    """A lock to insert: the object's name, db and table, and mode code ``s``/``x``."""

    object_name: str
    db: str
    table: str
    mode: str


@dataclass(frozen=True, slots=True)
class StoredLock:
    """A row of ``ACIDFLOW_LOCKS``."""

    lock_id: int
    session_id: str
    token: str
    object_name: str
    mode: str
    waiting: bool
    holder: str
    host: str
    txn_id: int | None
    acquired_ms: int


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one serialized attempt found: whether our session was alive, and the conflicts."""

    session_alive: bool
    granted: bool
    conflicts: tuple[StoredLock, ...]


def _stored(row: sa.Row[tuple[object, ...]]) -> StoredLock:
    m = row._mapping
    return StoredLock(
        lock_id=int(m[LOCKS.c.lock_id]),
        session_id=str(m[LOCKS.c.session_id]),
        token=str(m[LOCKS.c.token]),
        object_name=str(m[LOCKS.c.object_name]),
        mode=str(m[LOCKS.c.mode]),
        waiting=bool(m[LOCKS.c.waiting]),
        holder=str(m[LOCKS.c.holder]),
        host=str(m[LOCKS.c.host]),
        txn_id=None if m[LOCKS.c.txn_id] is None else int(m[LOCKS.c.txn_id]),
        acquired_ms=int(m[LOCKS.c.acquired_at]),
    )


class SqlLockStore:
    """Lock rows in the metastore database (SQLite or PostgreSQL, by SQLAlchemy URL).

    Raises:
        MetastoreError: the database cannot be opened or the tables cannot be created.
    """

    def __init__(self, url: str) -> None:
        self._url = sa.make_url(url)
        self.shown_url = self._url.render_as_string(hide_password=True)
        try:
            self._engine = _create_engine(self._url)
            with self._engine.begin() as connection:
                if connection.dialect.name == "postgresql":
                    connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SERIALIZE_KEY})
                LOCK_METADATA.create_all(connection, checkfirst=True)
        except SQLAlchemyError as e:
            raise MetastoreError("open lock store", self.shown_url, _db_problem(e)) from e

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.dialect.name

    def close(self) -> None:
        """Release connections."""
        self._engine.dispose()

    @contextmanager
    def _serialized(self, operation: str) -> Iterator[Connection]:
        try:
            with self._engine.begin() as connection:
                if connection.dialect.name == "postgresql":
                    connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SERIALIZE_KEY})
                yield connection
        except SQLAlchemyError as e:
            raise MetastoreError(operation, self.shown_url, _db_problem(e)) from e

    @staticmethod
    def _purge_expired(connection: Connection, now_ms: int) -> None:
        expired = select(SESSIONS.c.session_id).where(
            SESSIONS.c.last_heartbeat + SESSIONS.c.timeout_ms < now_ms
        )
        ids = list(connection.scalars(expired))
        if ids:
            connection.execute(delete(LOCKS).where(LOCKS.c.session_id.in_(ids)))
            connection.execute(delete(SESSIONS).where(SESSIONS.c.session_id.in_(ids)))

    @staticmethod
    def _alive(connection: Connection, session_id: str) -> bool:
        found = connection.scalar(select(SESSIONS.c.session_id).where(SESSIONS.c.session_id == session_id))
        return found is not None

    def open_session(self, session_id: str, host: str, timeout_ms: int, now_ms: int) -> None:
        """Register a new session."""
        with self._serialized("open lock session") as c:
            c.execute(
                insert(SESSIONS).values(
                    session_id=session_id,
                    host=host,
                    started=now_ms,
                    last_heartbeat=now_ms,
                    timeout_ms=timeout_ms,
                )
            )

    def heartbeat(self, session_id: str, now_ms: int) -> bool:
        """Renew the session; False if it had already expired (its locks are gone)."""
        with self._serialized("lock session heartbeat") as c:
            self._purge_expired(c, now_ms)
            result = c.execute(
                update(SESSIONS).where(SESSIONS.c.session_id == session_id).values(last_heartbeat=now_ms)
            )
            return bool(result.rowcount)

    def end_session(self, session_id: str) -> None:
        """Delete a session and every lock and marker it holds (close, or an operator's kill)."""
        with self._serialized("end lock session") as c:
            c.execute(delete(LOCKS).where(LOCKS.c.session_id == session_id))
            c.execute(delete(SESSIONS).where(SESSIONS.c.session_id == session_id))

    def attempt(
        self,
        *,
        session_id: str,
        token: str,
        rows: Sequence[LockRow],
        markers: Sequence[LockRow],
        holder: str,
        host: str,
        txn_id: int | None,
        now_ms: int,
        find_conflicts: Callable[[Sequence[StoredLock]], list[StoredLock]],
    ) -> AttemptResult:
        """Grant every row or none, in one serialized transaction.

        Args:
            session_id: the acquiring session; nothing happens if it has expired.
            token: this acquire call's id; its markers are ignored by the conflict check's caller.
            rows: the locks to insert when there is no conflict.
            markers: on conflict, waiting markers to insert (once per token; fair mode).
            holder: recorded with each row; so are ``host``, ``txn_id`` and ``now_ms``.
            host: see ``holder``.
            txn_id: see ``holder``.
            now_ms: the current time, for expiry and the acquired time.
            find_conflicts: given the stored rows on the requested objects, the conflicting ones.

        Returns:
            Whether the session was alive, whether the rows were granted, and the conflicts.
        """
        names = sorted({r.object_name for r in rows})
        with self._serialized("acquire locks") as c:
            self._purge_expired(c, now_ms)
            if not self._alive(c, session_id):
                return AttemptResult(session_alive=False, granted=False, conflicts=())
            existing = [_stored(r) for r in c.execute(select(LOCKS).where(LOCKS.c.object_name.in_(names)))]
            conflicts = find_conflicts(existing)
            common = {
                "session_id": session_id,
                "token": token,
                "holder": holder,
                "host": host,
                "txn_id": txn_id,
                "acquired_at": now_ms,
            }
            if not conflicts:
                c.execute(delete(LOCKS).where(LOCKS.c.token == token, LOCKS.c.waiting.is_(True)))
                c.execute(
                    insert(LOCKS),
                    [
                        {
                            **common,
                            "object_name": r.object_name,
                            "db": r.db,
                            "table_name": r.table,
                            "mode": r.mode,
                            "waiting": False,
                        }
                        for r in rows
                    ],
                )
                return AttemptResult(session_alive=True, granted=True, conflicts=())
            has_markers = any(e.token == token and e.waiting for e in existing)
            if markers and not has_markers:
                c.execute(
                    insert(LOCKS),
                    [
                        {
                            **common,
                            "object_name": m.object_name,
                            "db": m.db,
                            "table_name": m.table,
                            "mode": m.mode,
                            "waiting": True,
                        }
                        for m in markers
                    ],
                )
            return AttemptResult(session_alive=True, granted=False, conflicts=tuple(conflicts))

    def drop_markers(self, token: str) -> None:
        """Delete the waiting markers of one acquire call."""
        with self._serialized("drop lock markers") as c:
            c.execute(delete(LOCKS).where(LOCKS.c.token == token, LOCKS.c.waiting.is_(True)))

    def release(self, session_id: str, token: str) -> bool:
        """Delete the locks of one grant; False if the session had expired (they were gone)."""
        with self._serialized("release locks") as c:
            if not self._alive(c, session_id):
                return False
            c.execute(delete(LOCKS).where(LOCKS.c.token == token))
            return True

    def list_locks(self, now_ms: int, db: str | None = None, table: str | None = None) -> list[StoredLock]:
        """Held locks (not markers) of live sessions, optionally of one table, by id."""
        with self._serialized("show locks") as c:
            self._purge_expired(c, now_ms)
            query = select(LOCKS).where(LOCKS.c.waiting.is_(False))
            if db is not None and table is not None:
                query = query.where(LOCKS.c.db == db, LOCKS.c.table_name == table)
            return [_stored(r) for r in c.execute(query.order_by(LOCKS.c.lock_id))]
