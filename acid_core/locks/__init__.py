"""The lock manager port: shared/exclusive locks on tables and partitions (Hive's HIVE-1293 design).

The model::

    db.table                      a table
    db.table/k=v                  a partition              (parents: db.table)
    db.table/k=v/k2=v2            a multi-level partition  (parents: db.table, db.table/k=v)
    db.table/k=v#maintenance      the compaction worker's maintenance object of that partition
                                  (parents: db.table, db.table/k=v)

            held S   held X
    ask S     yes      no          S is compatible with S only; X with nothing.
    ask X     no       no

A ``LockManager`` takes a whole set of ``LockRequest`` at once, all or nothing: it either grants
every request and returns one ``LockHandle``, or holds nothing, waits ``wait_seconds`` (jittered
down to half of it so that competing retriers drift apart) and retries the whole set, ``retries``
times after the first attempt. Every manager first completes the set with ``plan_lock_set``:
locking a partition in any mode also locks each parent in S, so a table cannot be dropped while a
partition is being written; an object asked for in both modes is locked in X only.

Adapters: ``InMemoryLockManager`` (threads of one process; the fast fake, and the reference model
of the contract suite), ``KazooLockManager`` in ``acid_core.locks.zookeeper`` (ZooKeeper, across
processes and hosts), ``SqlLockManager`` in ``acid_core.locks.sql`` (the metastore database:
SQLite, the embedded default, or PostgreSQL) and ``NoLockManager`` (locking switched off: every
acquire is granted and nothing is recorded). ``open_lock_manager`` picks one from
``ACIDFLOW_LOCK_MANAGER``.

Fair mode (``fair=True``, off by default as in Hive): the design notes that a steady stream of
readers can starve a writer, since each new S request is compatible with the S locks already held.
In fair mode a refused request that contains an X request leaves a *waiting marker* on each of its
X objects until it is granted or gives up; a later request made only of S requests is refused
while an older marker exists on one of its objects. Requests that contain X ignore markers, so
waiting writers never wait for each other's markers and no marker cycle (deadlock) can form.

Invariants:
    * Two handles never hold incompatible modes on one object at the same time.
    * ``acquire`` is all-or-nothing: on refusal nothing stays locked.
    * Locks are not re-entrant: a second acquire by the same holder conflicts like any other.
    * ``release`` is idempotent on a live handle.

Not here: which locks a SQL statement needs (``acid_core.locks.planner``), transactions.

Error handling:
    * ``LockRefusedError`` (a ``LockTimeoutError``) after the last retry: the message names every
      conflicting holder (object, mode, holder, host, transaction, acquired time). Retry later or
      raise ``retries``/``wait_seconds``.
    * ``LockLostError`` when the session that held the locks is lost (ZooKeeper session expired,
      ``InMemoryLockManager.expire_session``): the locks are gone and another process may already
      hold them. The holder must stop writing at once and abort its transaction. The handle is
      marked lost, every further use (``check``, ``release``) raises ``LockLostError``, and the
      callbacks registered with ``LockHandle.add_lost_listener`` run (on a background thread:
      they must only signal the writer, e.g. set an event, never block).
    * ``LockServiceUnavailableError`` when the lock service cannot be reached; nothing is held.
    * ``InvalidLockRequestError`` for a malformed object name or mode.

Concurrency: managers are thread-safe; one handle must not be released from two threads at once.

The package re-exports the modules' public names::

    port.py      LockMode, LockObject, LockRequest, LockInfo, LockHandle, LockManager, retry_acquire
    memory.py    InMemoryLockManager, InMemoryLockTable, NoLockManager
    liveness.py  default_host, is_dead_local_process
    factory.py   open_lock_manager (ACIDFLOW_LOCK_MANAGER)
    planner.py   which locks a SQL statement needs;  sql.py, zookeeper.py  the other adapters
"""

from __future__ import annotations

from acid_core.locks.factory import (
    DEFAULT_WAREHOUSE,
    LOCK_MANAGER_ENV,
    METASTORE_ENV,
    WAREHOUSE_ENV,
    ZOOKEEPER_ENV,
    open_lock_manager,
)
from acid_core.locks.liveness import default_host, is_dead_local_process
from acid_core.locks.memory import InMemoryLockManager, InMemoryLockTable, NoLockManager
from acid_core.locks.port import (
    COMPATIBILITY,
    DEFAULT_RETRIES,
    DEFAULT_WAIT_SECONDS,
    LockHandle,
    LockInfo,
    LockManager,
    LockMode,
    LockObject,
    LockRequest,
    is_compatible,
    parse_lock_mode,
    parse_lock_object,
    plan_lock_set,
    retry_acquire,
)

__all__ = [
    "COMPATIBILITY",
    "DEFAULT_RETRIES",
    "DEFAULT_WAIT_SECONDS",
    "DEFAULT_WAREHOUSE",
    "LOCK_MANAGER_ENV",
    "METASTORE_ENV",
    "WAREHOUSE_ENV",
    "ZOOKEEPER_ENV",
    "InMemoryLockManager",
    "InMemoryLockTable",
    "LockHandle",
    "LockInfo",
    "LockManager",
    "LockMode",
    "LockObject",
    "LockRequest",
    "NoLockManager",
    "default_host",
    "is_compatible",
    "is_dead_local_process",
    "open_lock_manager",
    "parse_lock_mode",
    "parse_lock_object",
    "plan_lock_set",
    "retry_acquire",
]
