"""In-process lock managers: ``InMemoryLockManager`` (threads of one process) and ``NoLockManager``.

``InMemoryLockManager`` is the fast fake and the reference model of the lock contract suite
(``tests/acid_core/locks/test_lock_manager_behaviors.py``); several managers share one
``InMemoryLockTable`` to act as several processes. ``NoLockManager`` is locking switched off
(``ACIDFLOW_LOCK_MANAGER=none``). The rules are the package's (``acid_core.locks``).
Not here: locks across processes (``sql``, ``zookeeper``).
Errors: ``LockRefusedError`` after the last retry; ``LockLostError`` after ``expire_session``.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acid_core.locks.liveness import default_host
from acid_core.locks.port import (
    DEFAULT_RETRIES,
    DEFAULT_WAIT_SECONDS,
    LockHandle,
    LockInfo,
    LockMode,
    LockObject,
    LockRequest,
    _now,
    _validate_retry,
    is_compatible,
    plan_lock_set,
    retry_acquire,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from acid_core.types import TxnId


class NoLockManager:
    """Locking switched off (``ACIDFLOW_LOCK_MANAGER=none``): every acquire is granted at once.

    Nothing is recorded, so ``show`` is always empty and no two handles ever conflict.
    """

    def acquire(
        self,
        requests: Iterable[LockRequest],
        *,
        holder: str,
        txn_id: TxnId | None = None,
        retries: int = DEFAULT_RETRIES,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> LockHandle:
        """Grant at once (see ``LockManager.acquire``)."""
        _validate_retry(retries, wait_seconds)
        return LockHandle(plan_lock_set(requests), holder=holder, txn_id=txn_id, acquired_at=_now())

    def release(self, handle: LockHandle) -> None:
        """Mark the handle released."""
        handle._mark_released()

    def show(self, prefix: LockObject | None = None, *, extended: bool = False) -> list[LockInfo]:
        """Always empty: nothing is locked."""
        return []

    def close(self) -> None:
        """Nothing to close."""


@dataclass(slots=True)
class _Held:
    handle: LockHandle
    session: int
    host: str


@dataclass(slots=True)
class InMemoryLockTable:
    """The shared state of in-memory sessions: the fake's "server".

    Several ``InMemoryLockManager`` built on one table behave like several ZooKeeper sessions.
    """

    guard: threading.Lock = field(default_factory=threading.Lock)
    held: dict[str, _Held] = field(default_factory=dict)
    # object -> {request token: marker sequence}; fair-mode waiting writers.
    markers: dict[LockObject, dict[str, int]] = field(default_factory=dict)
    sequence: itertools.count[int] = field(default_factory=itertools.count)
    sessions: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


class InMemoryLockManager:
    """Locks kept in this process, for threads and tests; one instance is one session.

    Args:
        table: the state shared by sessions; a fresh one when None.
        fair: the fair mode of the module docstring.
        host: the host recorded with each lock.
    """

    def __init__(
        self, table: InMemoryLockTable | None = None, *, fair: bool = False, host: str | None = None
    ) -> None:
        self.table = table if table is not None else InMemoryLockTable()
        self.fair = fair
        self.host = host or default_host()
        self._session = next(self.table.sessions)

    def session(self, *, fair: bool | None = None) -> InMemoryLockManager:
        """A new session on the same table (like a second ZooKeeper client)."""
        return InMemoryLockManager(self.table, fair=self.fair if fair is None else fair, host=self.host)

    def acquire(
        self,
        requests: Iterable[LockRequest],
        *,
        holder: str,
        txn_id: TxnId | None = None,
        retries: int = DEFAULT_RETRIES,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> LockHandle:
        """See ``LockManager.acquire``."""
        _validate_retry(retries, wait_seconds)
        planned = plan_lock_set(requests)
        token = uuid.uuid4().hex
        writes = [r.object for r in planned if r.mode is LockMode.EXCLUSIVE]
        pure_read = not writes
        table = self.table

        def attempt(_number: int) -> tuple[LockHandle | None, list[LockInfo]]:
            with table.guard:
                conflicts = self._conflicts(planned, pure_read)
                if not conflicts:
                    handle = LockHandle(planned, holder=holder, txn_id=txn_id, acquired_at=_now())
                    table.held[handle.handle_id] = _Held(handle, self._session, self.host)
                    self._drop_markers(token, writes)
                    return handle, []
                if self.fair and writes:
                    seq = next(table.sequence)
                    for obj in writes:
                        table.markers.setdefault(obj, {}).setdefault(token, seq)
                return None, conflicts

        def give_up() -> None:
            with table.guard:
                self._drop_markers(token, writes)

        return retry_acquire(planned, attempt, retries=retries, wait_seconds=wait_seconds, give_up=give_up)

    def _conflicts(self, planned: Sequence[LockRequest], pure_read: bool) -> list[LockInfo]:
        conflicts: list[LockInfo] = []
        wanted = {r.object: r.mode for r in planned}
        for held in self.table.held.values():
            for request in held.handle.requests:
                mode = wanted.get(request.object)
                if mode is not None and not is_compatible(request.mode, mode):
                    conflicts.append(self._info(held, request))
        if pure_read:
            for obj in wanted:
                for token in self.table.markers.get(obj, {}):
                    conflicts.append(
                        LockInfo(obj, LockMode.EXCLUSIVE, holder=f"waiting request {token}", waiting=True)
                    )
        return conflicts

    def _drop_markers(self, token: str, objects: Iterable[LockObject]) -> None:
        for obj in objects:
            waiting = self.table.markers.get(obj)
            if waiting is not None:
                waiting.pop(token, None)
                if not waiting:
                    del self.table.markers[obj]

    @staticmethod
    def _info(held: _Held, request: LockRequest) -> LockInfo:
        handle = held.handle
        return LockInfo(
            request.object,
            request.mode,
            holder=handle.holder,
            host=held.host,
            txn_id=handle.txn_id,
            acquired_at=handle.acquired_at,
        )

    def release(self, handle: LockHandle) -> None:
        """See ``LockManager.release``."""
        handle.check()
        with self.table.guard:
            self.table.held.pop(handle.handle_id, None)
        handle._mark_released()

    def show(self, prefix: LockObject | None = None, *, extended: bool = False) -> list[LockInfo]:
        """See ``LockManager.show``."""
        with self.table.guard:
            infos = [
                self._info(held, request)
                for held in self.table.held.values()
                for request in held.handle.requests
                if prefix is None or request.object.is_within(prefix)
            ]
        if not extended:
            infos = [LockInfo(i.object, i.mode) for i in infos]
        return sorted(infos, key=LockInfo.sort_key)

    def expire_session(self) -> None:
        """Simulate a lost session: free this session's locks and mark its handles lost."""
        with self.table.guard:
            lost = [h for h in self.table.held.values() if h.session == self._session]
            for held in lost:
                del self.table.held[held.handle.handle_id]
        for held in lost:
            held.handle._mark_lost("the in-memory session expired")
        self._session = next(self.table.sessions)

    def close(self) -> None:
        """End the session: its locks are freed (like an ephemeral node's session closing)."""
        with self.table.guard:
            for key in [k for k, h in self.table.held.items() if h.session == self._session]:
                del self.table.held[key]
