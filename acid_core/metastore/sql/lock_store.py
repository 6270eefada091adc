"""The tables and queries of the SQL lock manager (``acid_core.locks.sql``), on the metastore database.

The tables (acidflow's own; Hive's DbLockManager keeps HIVE_LOCKS with a richer mode set)::

    ACIDFLOW_LOCK_SESSIONS   one row per live lock-manager session: id, host, owner pid, last
                             heartbeat and timeout (ms). A session whose heartbeat is older than
                             its timeout is expired: the next acquire/show/heartbeat deletes it and
                             its locks (ZooKeeper's ephemeral-node semantics). So is a session whose
                             owner the store's ``is_dead_owner`` check finds dead (a killed process
                             of this host), without waiting for the timeout.
    ACIDFLOW_LOCKS           one row per held lock (state 'a') or fair-mode waiting marker ('w'):
                             session, request token, object name, db, table, mode, holder, host,
                             txn id, acquired time (ms).

Every ``attempt`` is one database transaction serialized against every other lock transaction:
``BEGIN IMMEDIATE`` on SQLite (the metastore engine's begin hook), ``pg_advisory_xact_lock`` on
PostgreSQL. Inside it the store purges expired sessions, reads the rows on the requested objects,
asks the caller's ``find_conflicts`` (the lock rules live in ``acid_core.locks``), and either
inserts every lock row or (fair mode) its waiting markers. So a grant is all-or-nothing and two
incompatible grants can never interleave.

The tables are part of the metastore schema (``models.LOCK_SESSIONS`` / ``models.LOCKS``, Alembic
revision 0002): opening a store runs the metastore's ``upgrade head``, as ``SqlMetastore`` does, so
either may open a fresh database first. Times come from the caller (epoch ms), so hosts must keep
their clocks roughly in sync (well under a session timeout).

Not here: the compatibility rules, retries, the heartbeat thread (``acid_core.locks.sql``).
Errors: database failures (and a database at a revision this code does not know) become
``MetastoreError`` with the cause chained.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from acid_core.errors import MetastoreError
from acid_core.metastore.sql.engine import (
    SchemaRevisionError,
    create_engine_for_url,
    translate_db_error,
    upgrade_schema,
)
from acid_core.metastore.sql.models import LOCK_SESSIONS, LOCKS, Base

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from sqlalchemy.engine import Connection

__all__ = ["LOCK_METADATA", "DeadOwnerCheck", "LockRow", "SqlLockStore", "StoredLock"]

DeadOwnerCheck = Callable[[str, int, float], bool]
"""``(host, pid, started epoch seconds) -> bool``: whether a session's owner is certainly dead."""

LOCK_METADATA = Base.metadata
"""Deprecated alias: the lock tables now live on the metastore's ``Base.metadata`` (Alembic owns them)."""
SESSIONS = LOCK_SESSIONS
_SERIALIZE_KEY = 0x41C1D10C  # pg_advisory_xact_lock key of lock transactions (revision 0002 waits on it)


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
        MetastoreError: not a URL, the database cannot be opened or migrated to the newest schema.
    """

    def __init__(self, url: str, *, is_dead_owner: DeadOwnerCheck | None = None) -> None:
        self._is_dead_owner = is_dead_owner
        try:
            self._url = sa.make_url(url)
        except SQLAlchemyError as e:
            raise MetastoreError(
                "open lock store", url, f"not a SQLAlchemy URL ({e}); expected e.g. sqlite:///path"
            ) from e
        self.shown_url = self._url.render_as_string(hide_password=True)
        try:
            self._engine = create_engine_for_url(self._url)
            upgrade_schema(self._engine)
        except SQLAlchemyError as e:
            raise translate_db_error("open lock store", self._url, e) from e
        except SchemaRevisionError as e:  # the database is at a revision this code does not know
            raise MetastoreError("migrate lock store", self.shown_url, str(e)) from e

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
            raise translate_db_error(operation, self._url, e) from e

    def _purge_expired(self, connection: Connection, now_ms: int) -> None:
        expired = select(SESSIONS.c.session_id).where(
            SESSIONS.c.last_heartbeat + SESSIONS.c.timeout_ms < now_ms
        )
        ids = list(connection.scalars(expired))
        if self._is_dead_owner is not None:
            # Hive's reaper frees a dead session's locks only after hive.txn.timeout; an owner that
            # is a dead process of this host is certainly gone, so its session goes now.
            owned = select(SESSIONS.c.session_id, SESSIONS.c.host, SESSIONS.c.pid, SESSIONS.c.started).where(
                SESSIONS.c.pid.is_not(None)
            )
            for session_id, host, pid, started in connection.execute(owned):
                if session_id not in ids and self._is_dead_owner(str(host), int(pid), int(started) / 1000):
                    ids.append(str(session_id))
        if ids:
            connection.execute(delete(LOCKS).where(LOCKS.c.session_id.in_(ids)))
            connection.execute(delete(SESSIONS).where(SESSIONS.c.session_id.in_(ids)))

    @staticmethod
    def _alive(connection: Connection, session_id: str) -> bool:
        found = connection.scalar(select(SESSIONS.c.session_id).where(SESSIONS.c.session_id == session_id))
        return found is not None

    def open_session(
        self, session_id: str, host: str, timeout_ms: int, now_ms: int, pid: int | None = None
    ) -> None:
        """Register a new session (``pid``: its owner's process ID on ``host``, for dead-owner reaping)."""
        with self._serialized("open lock session") as c:
            c.execute(
                insert(SESSIONS).values(
                    session_id=session_id,
                    host=host,
                    pid=pid,
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
