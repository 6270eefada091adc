"""``SqlLockManager``: the same shared/exclusive locks on the metastore database (no ZooKeeper).

The embedded default (SQLite next to the warehouse) and PostgreSQL both work. The model::

    session  ──heartbeat every timeout/3──>  ACIDFLOW_LOCK_SESSIONS (last heartbeat)
    acquire  ──one serialized transaction──> purge expired sessions, read rows on the objects,
                                             check compatibility here, insert all rows or none
    release  ──>                             delete the grant's rows

A session plays the role of a ZooKeeper session: its locks live as long as it heartbeats. If the
process dies, nobody heartbeats, and the next acquire/show/heartbeat of any session after
``session_timeout`` deletes its rows (Hive's ``TxnHandler.timeOutLocks``). A session records its
owner's host and process ID: when that process is a dead process of the caller's host (``kill -9``;
``acid_core.locks.is_dead_local_process``), its rows go at once, so the next ``acidflow compact``
after a killed worker takes the maintenance lock without waiting for the timeout. Fair mode stores waiting markers as rows with
``L_WAITING``; the rule is the one of ``acid_core.locks`` (markers block later pure-S requests).

Invariants: as ``acid_core.locks``; a grant is atomic because every lock transaction is
serialized (``BEGIN IMMEDIATE`` on SQLite, an advisory transaction lock on PostgreSQL).
Not here: SQL (``acid_core.metastore.sql.lock_store``); the rules' documentation (``acid_core.locks``).

Error handling:
    * ``LockRefusedError`` after the last retry, naming the holders.
    * ``LockLostError``: when a heartbeat (or an acquire or release) finds that this session has
      expired (the process stalled longer than ``session_timeout``, or an operator ended it), every
      live handle is marked lost and its listeners run; the holder must stop writing and abort its
      transaction. The manager then opens a new session, so later acquisitions work.
    * ``LockServiceUnavailableError`` when the database fails (the ``MetastoreError`` is chained).

Concurrency: thread-safe; one heartbeat thread per manager.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from acid_core.errors import LockLostError, LockServiceUnavailableError, MetastoreError
from acid_core.locks.liveness import default_host, is_dead_local_process
from acid_core.locks.port import (
    DEFAULT_RETRIES,
    DEFAULT_WAIT_SECONDS,
    LockHandle,
    LockInfo,
    LockMode,
    LockObject,
    LockRequest,
    _validate_retry,
    is_compatible,
    parse_lock_object,
    plan_lock_set,
    retry_acquire,
)
from acid_core.metastore.sql.lock_store import LockRow, SqlLockStore, StoredLock
from acid_core.types import TxnId

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from acid_core.metastore.sql.lock_store import AttemptResult

__all__ = ["DEFAULT_SESSION_TIMEOUT", "SqlLockManager"]

DEFAULT_SESSION_TIMEOUT = 30.0
_T = TypeVar("_T")
_MODE_CODE = {LockMode.SHARED: "s", LockMode.EXCLUSIVE: "x"}
_CODE_MODE = {code: mode for mode, code in _MODE_CODE.items()}


def _now_ms() -> int:
    return int(time.time() * 1000)


def _row(obj: LockObject, mode: LockMode) -> LockRow:
    return LockRow(obj.to_name(), obj.db, obj.table, _MODE_CODE[mode])


def _info(stored: StoredLock, *, extended: bool) -> LockInfo:
    obj = parse_lock_object(stored.object_name)
    mode = _CODE_MODE[stored.mode]
    if not extended:
        return LockInfo(obj, mode, waiting=stored.waiting)
    return LockInfo(
        obj,
        mode,
        holder=stored.holder,
        host=stored.host,
        txn_id=None if stored.txn_id is None else TxnId(stored.txn_id),
        acquired_at=datetime.fromtimestamp(stored.acquired_ms / 1000, UTC),
        waiting=stored.waiting,
    )


class SqlLockManager:
    """Shared/exclusive locks in the metastore database; one instance is one session.

    Args:
        url: the metastore's SQLAlchemy URL.
        fair: fair mode (see ``acid_core.locks``).
        session_timeout: seconds without a heartbeat after which the session's locks are freed.
        host: the host name recorded with each lock.

    Raises:
        LockServiceUnavailableError: the database cannot be opened.
    """

    def __init__(
        self,
        url: str,
        *,
        fair: bool = False,
        session_timeout: float = DEFAULT_SESSION_TIMEOUT,
        host: str | None = None,
    ) -> None:
        self.fair = fair
        self.host = host or default_host()
        self.session_timeout = session_timeout
        self._guard = threading.Lock()
        self._held: dict[str, LockHandle] = {}
        self._stop = threading.Event()
        try:
            self._store = SqlLockStore(url, is_dead_owner=self._is_dead_owner)
        except MetastoreError as e:
            raise LockServiceUnavailableError(
                f"Could not open the SQL lock store: {e}; expected a reachable metastore database; "
                "hint: check ACIDFLOW_METASTORE"
            ) from e
        self.session_id = ""
        self._call(self._new_session)
        self._heartbeat_thread = threading.Thread(
            target=self._heartbeat_loop, name="acidflow-lock-heartbeat", daemon=True
        )
        self._heartbeat_thread.start()

    # -- session -------------------------------------------------------------------------------

    def _new_session(self) -> None:
        session_id = uuid.uuid4().hex
        self._store.open_session(
            session_id, self.host, int(self.session_timeout * 1000), _now_ms(), pid=os.getpid()
        )
        self.session_id = session_id

    def _is_dead_owner(self, host: str, pid: int, started: float) -> bool:
        return is_dead_local_process(host, pid, started=started, local_host=self.host)

    def _call(self, operation: Callable[[], _T]) -> _T:
        try:
            return operation()
        except MetastoreError as e:
            raise LockServiceUnavailableError(
                f"The SQL lock store at {self._store.shown_url!r} failed: {e}; expected a reachable "
                "database; hint: retry; locks already granted stay held while the session heartbeats"
            ) from e

    def _session_lost(self, session_id: str) -> None:
        """Our session expired: mark its handles lost and start a new session."""
        with self._guard:
            if session_id != self.session_id:
                return  # another thread already handled it
            lost, self._held = list(self._held.values()), {}
        for handle in lost:
            handle._mark_lost(
                f"the SQL lock session {session_id} expired (no heartbeat for {self.session_timeout} s)"
            )
        self._call(self._new_session)

    def _heartbeat_loop(self) -> None:
        interval = max(self.session_timeout / 3, 0.05)
        while not self._stop.wait(interval):
            session_id = self.session_id
            try:
                alive = self._store.heartbeat(session_id, _now_ms())
            except MetastoreError:
                continue  # the database is down: keep trying; expiry is decided by the next heartbeat
            if not alive:
                try:
                    self._session_lost(session_id)
                except LockServiceUnavailableError:
                    continue

    def end_session(self, session_id: str) -> None:
        """End any session (an operator's kill): its locks are freed; its owner learns it lost them."""
        self._call(lambda: self._store.end_session(session_id))

    # -- the port ------------------------------------------------------------------------------

    def acquire(
        self,
        requests: Iterable[LockRequest],
        *,
        holder: str,
        txn_id: TxnId | None = None,
        retries: int = DEFAULT_RETRIES,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> LockHandle:
        """See ``acid_core.locks.LockManager.acquire``."""
        _validate_retry(retries, wait_seconds)
        planned = plan_lock_set(requests)
        token = uuid.uuid4().hex
        wanted = {r.object.to_name(): r.mode for r in planned}
        pure_read = all(r.mode is LockMode.SHARED for r in planned)
        rows = [_row(r.object, r.mode) for r in planned]
        markers = (
            [_row(r.object, r.mode) for r in planned if r.mode is LockMode.EXCLUSIVE] if self.fair else []
        )

        def find_conflicts(existing: Sequence[StoredLock]) -> list[StoredLock]:
            conflicts = []
            for stored in existing:
                if stored.token == token:
                    continue
                if stored.waiting:
                    if pure_read:
                        conflicts.append(stored)
                elif not is_compatible(_CODE_MODE[stored.mode], wanted[stored.object_name]):
                    conflicts.append(stored)
            return conflicts

        def attempt(_number: int) -> tuple[LockHandle | None, list[LockInfo]]:
            for _ in range(2):  # a second try only after our expired session was replaced
                session_id = self.session_id
                now = _now_ms()
                result: AttemptResult = self._call(
                    functools.partial(
                        self._store.attempt,
                        session_id=session_id,
                        token=token,
                        rows=rows,
                        markers=markers,
                        holder=holder,
                        host=self.host,
                        txn_id=txn_id,
                        now_ms=now,
                        find_conflicts=find_conflicts,
                    )
                )
                if not result.session_alive:
                    self._session_lost(session_id)
                    continue
                if not result.granted:
                    return None, [_info(c, extended=True) for c in result.conflicts]
                acquired_at = datetime.fromtimestamp(now / 1000, UTC)
                handle = LockHandle(
                    planned, holder=holder, txn_id=txn_id, acquired_at=acquired_at, handle_id=token
                )
                with self._guard:
                    self._held[token] = handle
                return handle, []
            return None, []

        return retry_acquire(
            planned,
            attempt,
            retries=retries,
            wait_seconds=wait_seconds,
            give_up=lambda: self._call(lambda: self._store.drop_markers(token)),
        )

    def release(self, handle: LockHandle) -> None:
        """See ``acid_core.locks.LockManager.release``."""
        handle.check()
        with self._guard:
            known = handle.handle_id in self._held
        if not known:
            handle._mark_released()
            return
        session_id = self.session_id
        if not self._call(lambda: self._store.release(session_id, handle.handle_id)):
            self._session_lost(session_id)
            handle.check()
            raise LockLostError(
                f"Locks of holder {handle.holder!r} were lost before release; hint: abort the transaction"
            )
        with self._guard:
            self._held.pop(handle.handle_id, None)
        handle._mark_released()

    def show(self, prefix: LockObject | None = None, *, extended: bool = False) -> list[LockInfo]:
        """See ``acid_core.locks.LockManager.show``."""
        db, table = (prefix.db, prefix.table) if prefix is not None else (None, None)
        stored = self._call(lambda: self._store.list_locks(_now_ms(), db, table))
        infos = [_info(s, extended=extended) for s in stored]
        if prefix is not None:
            infos = [i for i in infos if i.object.is_within(prefix)]
        return sorted(infos, key=LockInfo.sort_key)

    def close(self) -> None:
        """End the session: its locks are freed; live handles become lost."""
        self._stop.set()
        self._heartbeat_thread.join(5)
        with self._guard:
            live, self._held = list(self._held.values()), {}
        try:
            self._call(lambda: self._store.end_session(self.session_id))
        finally:
            self._store.close()
            for handle in live:
                handle._mark_lost("the lock manager was closed")
