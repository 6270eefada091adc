"""``KazooLockManager``: Hive's ZooKeeper shared/exclusive lock protocol (HIVE-1293), via kazoo.

The znode tree (``root`` defaults to ``/acidflow/locks``)::

    /acidflow/locks/sales/orders                        the table db.table's znode (persistent)
        read-0000000007                                 an S lock (ephemeral sequential)
        ds=2024-01-01/                                  a partition's znode (persistent)
            write-0000000003                            an X lock on sales.orders/ds=2024-01-01
            wait-0000000002                             fair mode: a waiting writer's marker
            #maintenance/write-0000000000               the compaction worker's maintenance lock

Each lock node's data is JSON: ``{"holder", "host", "pid", "txn_id", "acquired_at", "mode", "object",
"token"}``; SHOW LOCKS EXTENDED reads it and so does a refusal message.

The protocol, per ``acquire`` attempt: the objects, completed with their parents by
``plan_lock_set``, are taken in lexicographic order of their path components (parents first).
For each, create an ephemeral sequential child ``read-`` (S) or ``write-`` (X) under the object's
znode, then ``getChildren`` without a watch. S is refused if a ``write-`` child has a lower
sequence number; X is refused if any ``read-`` or ``write-`` child does. On refusal, the node just
made and every node already made in this attempt are deleted, the attempt sleeps
(``wait_seconds`` jittered to 50-100%) and the whole set is retried, ``retries`` times; after the
last refusal ``LockRefusedError`` names the holders read from the conflicting nodes' data.
Correctness rests on the sequence order: of two incompatible nodes on one object, the later one
always sees the earlier one, so at most one of them can be granted. Nobody waits while holding a
lock, so there is no deadlock; the jitter keeps symmetric retriers from live-locking.

Dead local holders: a conflicting node whose ``host`` is this manager's host and whose ``pid`` is a
process that has ended (``kill -9``; a zombie; a process ID reused by a process started after the
node's ``acquired_at``: ``acid_core.locks.is_dead_local_process``) is deleted at once and does not
refuse the attempt, as ``SqlLockManager`` frees a dead local owner's session. Without this such a
node lives until the dead process's session expires, and ZooKeeper re-arms the full session timeout
of every session it restores when it restarts: a ZooKeeper restarted more often than the session
timeout (a crash loop) kept a killed compactor's maintenance lock for minutes (the long soak with
faults, seed 1194515100). A dead process cannot write, so nothing needs fencing; a node of another
host, or with no ``pid`` (an older acidflow), waits for its session to expire as before. Host names
must tell machines apart, and the processes of one host name must share a PID namespace (not so
for containers with host networking), as for the SQL locks and Hive's ``revokeFromLocalWorkers``.

Fair mode (``fair=True``): a request with at least one X that is refused creates one ephemeral
sequential ``wait-`` marker under each of its X objects, kept across its retries and deleted once
it is granted or gives up. A request made only of S treats a ``wait-`` child with a lower sequence
number like a lower ``write-`` child (so it queues behind the waiting writer) whatever its own
``fair`` setting; requests that contain an X ignore markers, so no cycle of markers can form.
Markers are never listed by ``show``; the node of an attempt that is about to be refused can be
(for a few milliseconds, as in Hive), since ``show`` reads the tree without any lock.

Invariants: lock nodes are ephemeral, so everything a session holds disappears with it; a node is
deleted exactly by its owner, by the session's end, or by another manager of the same host once
the owner's process is dead; empty partition znodes are deleted on release (best effort, as Hive
does) and recreated on demand; table and database znodes are kept.

Not here: which locks a statement needs (``acid_core.locks.planner``).

Error handling (kazoo exceptions are translated here, chained with ``from``):
    * ``LockRefusedError`` after the last retry, naming every conflicting holder.
    * ``LockLostError``: when the ZooKeeper session is LOST (expired), every live handle of this
      manager is marked lost and its lost listeners run. The ephemeral nodes are gone and another
      process may already hold the locks: the holder must stop writing and abort its transaction.
      Further use of a lost handle (``check``, ``release``) raises ``LockLostError``. The manager
      itself reconnects with a new session, so new acquisitions work again.
    * While the connection is merely SUSPENDED (the server is unreachable for less than the
      session timeout, e.g. a ZooKeeper restart), the locks are still held by the session; when the
      client reconnects in time the handles stay valid. Writers that cannot tolerate the doubt
      should pause while ``is_connected`` is False; ``LockHandle.confirm`` (the fence a
      transaction passes right before its commit) waits for the doubt to resolve and raises
      ``LockLostError`` if the session is lost or stays disconnected. Then it asks the server
      (``exists`` on each of the handle's nodes, retried over a dropped connection for up to the
      session timeout): a process paused past its session timeout (a long GC, SIGSTOP) resumes
      before kazoo has heard of the expiry, and a node deleted by another client never shows in
      the client's state; a node gone or owned by another session marks the handle lost
      (``LockLostError``) and its other nodes are deleted.
    * ``LockServiceUnavailableError`` when ZooKeeper cannot be reached at start, or when the last
      attempt failed on a connection error (an attempt made while the client is not connected
      waits for it at most the session timeout, then counts as one; nothing is held then), or when a
      release's delete got
      no answer within the session timeout (a link too slow or cut for the client to reconnect: kazoo
      queues the request and would wait for ever; by then the server has ended the session and
      its ephemeral nodes itself, or a later ``release`` retries), or when ``show`` got none (every
      request waits at most the session timeout; the pruning of empty znodes after a release then
      just stops, best effort).

Concurrency: thread-safe; the kazoo client runs its own threads. Idempotency: ``release`` of a
released handle is a no-op.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import RetryFailedError

from acid_core.errors import (
    InvalidLockRequestError,
    LockLostError,
    LockRefusedError,
    LockServiceUnavailableError,
)
from acid_core.locks.liveness import default_host, is_dead_local_process
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
    plan_lock_set,
    retry_acquire,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from kazoo.interfaces import IAsyncResult

    from acid_core.types import TxnId

__all__ = ["DEFAULT_ROOT", "KazooLockManager"]

_LOG = logging.getLogger(__name__)

DEFAULT_ROOT = "/acidflow/locks"
READ_PREFIX = "read-"
WRITE_PREFIX = "write-"
WAIT_PREFIX = "wait-"
_SEQUENCE_DIGITS = 10
# Connection trouble, as opposed to a refusal: worth another attempt, else "unavailable".
_CONNECTION_ERRORS = (
    ConnectionLoss,
    OperationTimeoutError,
    SessionExpiredError,
    RetryFailedError,
    KazooTimeoutError,  # a bounded wait for an answer (``_delete_within_session_timeout``)
)


def _sequence(name: str) -> int | None:
    """The sequence number of a ``read-``/``write-``/``wait-`` child, None for anything else."""
    for prefix in (READ_PREFIX, WRITE_PREFIX, WAIT_PREFIX):
        if name.startswith(prefix):
            digits = name[len(prefix) :]
            if len(digits) == _SEQUENCE_DIGITS and digits.isdigit():
                return int(digits)
    return None


def _is_conflict(child: str, own_sequence: int, mode: LockMode, *, pure_read: bool) -> bool:
    """Whether an existing child node refuses a new node of ``mode`` with ``own_sequence``."""
    sequence = _sequence(child)
    if sequence is None or sequence >= own_sequence:
        return False
    if child.startswith(WRITE_PREFIX):
        return True
    if child.startswith(READ_PREFIX):
        return mode is LockMode.EXCLUSIVE
    return pure_read  # a fair-mode waiting writer's marker blocks later pure readers


class _SessionReplacedError(Exception):
    """Internal: the session expired during an attempt; the attempt is retried (never escapes)."""


class _Attempt:
    """The mutable state of one ``acquire`` call across its attempts."""

    def __init__(self, planned: Sequence[LockRequest], token: str, data: bytes) -> None:
        self.planned = planned
        self.token = token
        self.data = data
        self.writes = [r.object for r in planned if r.mode is LockMode.EXCLUSIVE]
        self.pure_read = not self.writes
        self.markers: list[str] = []
        self.last_error: Exception | None = None


class KazooLockManager:
    """Shared/exclusive locks in ZooKeeper; one instance is one ZooKeeper session.

    Args:
        hosts: ``host:port[,host:port...]`` of the ensemble.
        root: the znode under which lock objects live.
        fair: fair mode (see the module docstring).
        session_timeout: seconds without contact before ZooKeeper expires the session (and frees
            its locks); the server bounds it by its min/max session timeouts.
        connect_timeout: seconds to wait for the first connection.
        host: the host name recorded with each lock.

    Raises:
        LockServiceUnavailableError: no server answered within ``connect_timeout``.
    """

    def __init__(
        self,
        hosts: str,
        *,
        root: str = DEFAULT_ROOT,
        fair: bool = False,
        session_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        host: str | None = None,
    ) -> None:
        if not root.startswith("/") or root.endswith("/"):
            raise InvalidLockRequestError(root, "bad ZooKeeper root", "an absolute path like /acidflow/locks")
        self.hosts = hosts
        self.root = root
        self.fair = fair
        self.host = host or default_host()
        self._guard = threading.Lock()
        self._held: dict[str, tuple[LockHandle, list[str]]] = {}
        self._loss_generation = 0
        self._session_timeout = session_timeout
        self._client = KazooClient(
            hosts=hosts,
            timeout=session_timeout,
            connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 2, "max_delay": 1.0},
            command_retry={"max_tries": 20, "delay": 0.05, "backoff": 2, "max_delay": 1.0},
        )
        self._client.add_listener(self._on_state)
        try:
            self._client.start(timeout=connect_timeout)
        except KazooTimeoutError as e:
            self._client.stop()
            self._client.close()
            raise LockServiceUnavailableError(
                f"Could not connect to ZooKeeper at {hosts!r} within {connect_timeout} s; expected a "
                "running ZooKeeper server; nothing was locked: acidflow stops this run and the next run "
                "starts from the state the metastore holds; hint: check ACIDFLOW_ZOOKEEPER and that the "
                "server answers `echo ruok | nc host port`"
            ) from e

    # -- session state -------------------------------------------------------------------------

    def _on_state(self, state: str) -> None:
        # Runs on kazoo's event thread: only flip flags; listeners run on their own thread.
        if state == KazooState.LOST:
            with self._guard:
                self._loss_generation += 1
                lost, self._held = list(self._held.values()), {}
            for handle, _ in lost:
                handle._mark_lost(f"the ZooKeeper session to {self.hosts!r} expired", service="ZooKeeper")
            return
        with self._guard:
            held = [handle for handle, _ in self._held.values()]
        for handle in held:  # SUSPENDED: in doubt until CONNECTED (held) or LOST
            handle._mark_suspended(state == KazooState.SUSPENDED)

    @property
    def is_connected(self) -> bool:
        """Whether the session is connected right now (False while SUSPENDED or LOST)."""
        return bool(self._client.connected)

    @property
    def client_id(self) -> tuple[int, bytes] | None:
        """``(session id, password)`` of the current session (tests use it to expire the session)."""
        value = self._client.client_id
        return None if value is None else (int(value[0]), bytes(value[1]))

    # -- paths ---------------------------------------------------------------------------------

    def object_path(self, obj: LockObject) -> str:
        """The znode of ``obj``: ``root/db/table[/k=v...][/#maintenance]``."""
        return "/".join([self.root, *obj.path_components()])

    def _object_of(self, path: str) -> LockObject:
        return LockObject.from_path_components(path[len(self.root) + 1 :].split("/"))

    # -- acquire -------------------------------------------------------------------------------

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
        payload = {"holder": holder, "host": self.host, "pid": os.getpid(), "txn_id": txn_id, "token": token}
        state = _Attempt(planned, token, json.dumps(payload).encode())

        def attempt(_number: int) -> tuple[LockHandle | None, list[LockInfo]]:
            try:
                self._wait_until_connected()
                result = self._attempt(state, holder, txn_id)
            except (*_CONNECTION_ERRORS, _SessionReplacedError) as e:
                state.last_error = e
                return None, []
            state.last_error = None
            return result

        try:
            handle = retry_acquire(
                planned,
                attempt,
                retries=retries,
                wait_seconds=wait_seconds,
                give_up=lambda: self._drop_markers(state),
            )
        except LockRefusedError as refused:
            if state.last_error is not None:
                raise LockServiceUnavailableError(
                    f"Could not lock {', '.join(refused.requested)} on ZooKeeper {self.hosts!r}: the "
                    f"last of {refused.attempts} attempt(s) failed with {state.last_error!r}; expected "
                    "a connected session; hint: check the ZooKeeper server; nothing is held"
                ) from state.last_error
            raise
        self._drop_markers(state)
        return handle

    def _wait_until_connected(self) -> None:
        # kazoo queues a request made while the client is not connected and waits for ever for the
        # answer: a link so slow that no handshake succeeds (nor learns the session expired) hung
        # acquire. Nothing is sent until the client is connected; after a session timeout of
        # waiting, this attempt fails as a connection loss (nothing created, nothing held).
        deadline = time.monotonic() + self._session_timeout
        while not self._client.connected:
            if time.monotonic() >= deadline:
                raise ConnectionLoss(
                    f"not connected to ZooKeeper {self.hosts!r} for {self._session_timeout:g} s"
                )
            time.sleep(0.05)

    def _attempt(
        self, state: _Attempt, holder: str, txn_id: TxnId | None
    ) -> tuple[LockHandle | None, list[LockInfo]]:
        created: list[str] = []
        acquired_at = _now()
        generation = self._loss_generation
        data = json.loads(state.data)
        data["acquired_at"] = acquired_at.isoformat()
        try:
            for request in state.planned:
                data["mode"], data["object"] = request.mode.value, request.object.to_name()
                path = self.object_path(request.object)
                prefix = WRITE_PREFIX if request.mode is LockMode.EXCLUSIVE else READ_PREFIX
                node = self._create(f"{path}/{prefix}", json.dumps(data).encode(), state.token)
                own = node.rsplit("/", 1)[1]
                own_sequence = cast("int", _sequence(own))
                children = cast("list[str]", self._client.get_children(path))
                conflicting = [
                    c
                    for c in children
                    if c != own and _is_conflict(c, own_sequence, request.mode, pure_read=state.pure_read)
                ]
                if conflicting:
                    # Nodes with a lower sequence only: removing a dead holder's cannot let in anyone
                    # whom the sequence order would refuse.
                    reaped = self._reap_dead_holders(path, conflicting)
                    conflicting = [c for c in conflicting if c not in reaped]
                if conflicting:
                    self._delete_quietly([node, *created])
                    created = []
                    if self.fair and state.writes and not state.markers:
                        self._create_markers(state)
                    return None, self._describe(path, conflicting)
                created.append(node)
        except _CONNECTION_ERRORS:
            self._delete_quietly(created)
            raise
        handle = LockHandle(
            state.planned, holder=holder, txn_id=txn_id, acquired_at=acquired_at, verify=self._verify
        )
        with self._guard:
            # kazoo reports LOST before any operation of the next session can run, so an unchanged
            # generation means every node above belongs to the live session.
            survived = generation == self._loss_generation
            if survived:
                self._held[handle.handle_id] = (handle, created)
        if not survived:
            # The nodes died with the old session; with retries left, try again on the new one
            # rather than hand back a handle that is lost at birth.
            raise _SessionReplacedError(f"the ZooKeeper session to {self.hosts!r} expired while locking")
        return handle, []

    def _create(self, prefix: str, data: bytes, token: str) -> str:
        """Create an ephemeral sequential node; recreate the object's znode if a release removed it."""
        for _ in range(10):
            try:
                return cast(
                    "str", self._client.create(prefix, data, ephemeral=True, sequence=True, makepath=True)
                )
            except NoNodeError:
                continue  # a concurrent release deleted the empty parent between ensure and create
            except ConnectionLoss:
                # The node may exist without us knowing its name: find it by our token and drop it.
                self._delete_orphans(prefix.rsplit("/", 1)[0], token)
                raise
        raise ConnectionLoss(f"could not create {prefix!r}: its parent kept disappearing")

    def _delete_orphans(self, path: str, token: str) -> None:
        try:
            for child in self._client.retry(self._client.get_children, path):
                if _sequence(child) is None:
                    continue
                raw, _ = self._client.retry(self._client.get, f"{path}/{child}")
                if json.loads(raw or b"{}").get("token") == token:
                    self._client.retry(self._client.delete, f"{path}/{child}")
        except (KazooException, ValueError):
            # Best effort: an orphan left here is ephemeral and goes away with this session.
            return

    def _reap_dead_holders(self, path: str, children: Iterable[str]) -> set[str]:
        """Delete the nodes among ``children`` whose owner is a dead process of this host.

        Returns:
            The names of the nodes that are gone (deleted here, or already gone).
        """
        reaped: set[str] = set()
        for child in children:
            node = f"{path}/{child}"
            try:
                raw, _ = self._answer(self._client.get_async(node))
            except NoNodeError:
                reaped.add(child)  # released (or its session ended) since the listing
                continue
            try:
                data = json.loads(raw or b"{}")
                pid = data.get("pid")
                acquired = data.get("acquired_at")
                started = datetime.fromisoformat(acquired).timestamp() if acquired else None
            except (ValueError, TypeError, AttributeError):
                continue  # not our JSON: leave it to its session
            if not isinstance(pid, int) or not is_dead_local_process(
                str(data.get("host")), pid, started=started, local_host=self.host
            ):
                continue
            with contextlib.suppress(NoNodeError):  # its session expired meanwhile
                self._client.delete(node)
            _LOG.info(
                "freed ZooKeeper lock node %s of %r: its process %d on %r is dead",
                node,
                data.get("holder"),
                pid,
                self.host,
            )
            reaped.add(child)
        return reaped

    def _create_markers(self, state: _Attempt) -> None:
        data = json.loads(state.data)
        data["acquired_at"] = _now().isoformat()  # the markers' owner, for dead-holder detection
        for obj in state.writes:
            data["mode"], data["object"] = LockMode.EXCLUSIVE.value, obj.to_name()
            node = self._create(
                f"{self.object_path(obj)}/{WAIT_PREFIX}", json.dumps(data).encode(), state.token
            )
            state.markers.append(node)

    def _drop_markers(self, state: _Attempt) -> None:
        markers, state.markers = state.markers, []
        try:
            self._delete_quietly(markers)
        except _CONNECTION_ERRORS:
            return  # ephemeral: the markers disappear with the session at the latest

    def _delete_quietly(self, nodes: Iterable[str]) -> None:
        for node in nodes:
            try:
                self._client.retry(self._delete_within_session_timeout, node)
            except NoNodeError:
                continue

    def _delete_within_session_timeout(self, node: str) -> None:
        # kazoo's synchronous delete() waits without a bound while the client cannot reconnect (a link
        # whose round trip outlasts the handshake's timeout never gets an answer, not even "expired"):
        # a released or aborted transaction hung there. Past the session timeout the server has
        # expired the session and deleted the node itself, so waiting longer gains nothing.
        self._answer(self._client.delete_async(node))

    def _answer(self, request: IAsyncResult) -> Any:  # noqa: ANN401 - kazoo's results are untyped
        """``request``'s answer, waited for at most the session timeout (``KazooTimeoutError``).

        Every request goes through here: kazoo's synchronous calls queue a request made while the
        client cannot reconnect and wait for its answer without a bound (``show`` and the pruning
        after a release hung so).
        """
        return request.get(timeout=self._session_timeout)

    def _describe(self, path: str, children: Iterable[str]) -> list[LockInfo]:
        obj = self._object_of(path)
        return [self._read_info(obj, f"{path}/{child}", extended=True) for child in children]

    def _read_info(self, obj: LockObject, node: str, *, extended: bool) -> LockInfo:
        name = node.rsplit("/", 1)[1]
        waiting = name.startswith(WAIT_PREFIX)
        mode = LockMode.SHARED if name.startswith(READ_PREFIX) else LockMode.EXCLUSIVE
        if not extended:
            return LockInfo(obj, mode, waiting=waiting)
        try:
            raw, _ = self._answer(self._client.get_async(node))
            data = json.loads(raw or b"{}")
        except NoNodeError:
            return LockInfo(obj, mode, waiting=waiting)  # released between the listing and now
        except ValueError:
            data = {}
        acquired = data.get("acquired_at")
        return LockInfo(
            obj,
            mode,
            holder=data.get("holder"),
            host=data.get("host"),
            txn_id=data.get("txn_id"),
            acquired_at=datetime.fromisoformat(acquired) if acquired else None,
            waiting=waiting,
        )

    def _verify(self, handle: LockHandle) -> None:
        """``LockHandle.confirm``'s round trip: the server still holds the handle's nodes for us.

        Each node must exist and belong to this session, as the server says now: kazoo's state can
        lag (a process paused past its session timeout has not heard of the expiry when it resumes)
        and an operator may have deleted a node. When not, the handle is marked lost (``confirm``
        then raises ``LockLostError``) and its other nodes are deleted, so nothing of it stays held.
        """
        with self._guard:
            entry = self._held.get(handle.handle_id)
        if entry is None:
            return  # released, or lost (then ``check`` raises)
        nodes = entry[1]
        deadline = time.monotonic() + self._session_timeout
        while True:
            try:
                stats = [self._answer(self._client.exists_async(node)) for node in nodes]
                break
            except SessionExpiredError:
                self._lose(handle, f"the ZooKeeper session to {self.hosts!r} expired")
                return
            except _CONNECTION_ERRORS as e:
                # A dropped connection (a restart) is retried while the session may still live.
                if time.monotonic() >= deadline:
                    raise LockLostError(
                        f"Locks of holder {handle.holder!r} (txn {handle.txn_id}) are in doubt: ZooKeeper "
                        f"{self.hosts!r} did not confirm them within {self._session_timeout:g} s "
                        f"({type(e).__name__}); expected a live session; hint: stop writing and abort "
                        "the transaction, then retry it from the start",
                        service="ZooKeeper",
                    ) from e
                time.sleep(0.05)
        client_id = self._client.client_id
        session = None if client_id is None else client_id[0]
        for node, stat in zip(nodes, stats, strict=True):
            if stat is None or stat.ephemeralOwner != session:
                how = (
                    "deleted by another client"
                    if stat is None
                    else f"owned by session {stat.ephemeralOwner:#x}"
                )
                self._lose(handle, f"ZooKeeper {self.hosts!r} no longer holds its lock node {node} ({how})")
                return

    def _lose(self, handle: LockHandle, reason: str) -> None:
        with self._guard:
            entry = self._held.pop(handle.handle_id, None)
        handle._mark_lost(reason, service="ZooKeeper")
        if entry is not None:
            with contextlib.suppress(*_CONNECTION_ERRORS):  # they end with the session at the latest
                self._delete_quietly(entry[1])

    # -- release / show / close ----------------------------------------------------------------

    def release(self, handle: LockHandle) -> None:
        """See ``acid_core.locks.LockManager.release``.

        Raises:
            LockLostError: the session that held the locks was lost.
            LockServiceUnavailableError: ZooKeeper stayed unreachable; the nodes are kept on record
                so a later ``release`` can retry (they also vanish when the session ends).
        """
        handle.check()
        with self._guard:
            entry = self._held.get(handle.handle_id)
        if entry is None:
            handle._mark_released()
            return
        nodes = entry[1]
        try:
            self._delete_quietly(nodes)
        except SessionExpiredError as e:
            handle._mark_lost(f"the ZooKeeper session to {self.hosts!r} expired", service="ZooKeeper")
            raise LockLostError(
                f"Locks of holder {handle.holder!r} were lost before release: the ZooKeeper session "
                "expired; expected a live session; hint: abort the transaction",
                service="ZooKeeper",
            ) from e
        except _CONNECTION_ERRORS as e:
            raise LockServiceUnavailableError(
                f"Could not release the locks of {handle.holder!r} on ZooKeeper {self.hosts!r}: {e!r}; "
                "expected a reachable server; hint: retry release, or close the manager to end the session"
            ) from e
        with self._guard:
            self._held.pop(handle.handle_id, None)
        handle._mark_released()
        for node in nodes:
            self._prune(node.rsplit("/", 1)[0])

    def _prune(self, path: str) -> None:
        """Delete empty partition znodes upward, stopping at the first non-empty one (best effort).

        Table and database znodes are kept: there are few of them, and recreating them on every
        acquire made an uncontended acquire+release about 4x slower (bench/bench_locks.py).
        """
        table_depth = self.root.count("/") + 2
        while path.count("/") > table_depth:
            try:
                self._answer(self._client.delete_async(path))
            except (NotEmptyError, NoNodeError):
                return
            except (KazooException, KazooTimeoutError):
                return  # best effort only: an empty znode left behind costs nothing
            path = path.rsplit("/", 1)[0]

    def show(self, prefix: LockObject | None = None, *, extended: bool = False) -> list[LockInfo]:
        """See ``acid_core.locks.LockManager.show``.

        Raises:
            LockServiceUnavailableError: ZooKeeper cannot be reached.
        """
        start = self.root if prefix is None else self.object_path(prefix)
        infos: list[LockInfo] = []
        pending = [start]
        try:
            while pending:
                path = pending.pop()
                try:
                    children = self._client.retry(
                        lambda p=path: self._answer(self._client.get_children_async(p))
                    )
                except NoNodeError:
                    continue
                for child in children:
                    if _sequence(child) is None:
                        pending.append(f"{path}/{child}")
                    elif not child.startswith(WAIT_PREFIX) and path != self.root:
                        infos.append(
                            self._read_info(self._object_of(path), f"{path}/{child}", extended=extended)
                        )
        except _CONNECTION_ERRORS as e:
            raise LockServiceUnavailableError(
                f"Could not list locks on ZooKeeper {self.hosts!r}: {e!r}; expected a reachable server; "
                "hint: check the server"
            ) from e
        return sorted(infos, key=LockInfo.sort_key)

    def close(self) -> None:
        """End the session: ZooKeeper deletes its ephemeral nodes; live handles become lost."""
        with self._guard:
            live, self._held = list(self._held.values()), {}
        try:
            self._client.stop()
        finally:
            self._client.close()
        for handle, _ in live:
            handle._mark_lost("the lock manager was closed")

    def __enter__(self) -> KazooLockManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
