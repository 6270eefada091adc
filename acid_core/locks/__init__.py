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
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from acid_core.errors import (
    AcidError,
    InvalidLockConfigError,
    InvalidLockRequestError,
    LockLostError,
    LockRefusedError,
)

if TYPE_CHECKING:
    from acid_core.types import TxnId

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

LOCK_MANAGER_ENV = "ACIDFLOW_LOCK_MANAGER"
ZOOKEEPER_ENV = "ACIDFLOW_ZOOKEEPER"
# The metastore's settings (as in acid_core.cli.options), for the sql lock manager.
METASTORE_ENV = "ACIDFLOW_METASTORE"
WAREHOUSE_ENV = "ACIDFLOW_WAREHOUSE"
DEFAULT_WAREHOUSE = "./warehouse"
DEFAULT_RETRIES = 10
DEFAULT_WAIT_SECONDS = 1.0
MAINTENANCE_SUFFIX = "#maintenance"

# Hive FileUtils.escapePathName: the characters a partition value may not carry unescaped.
_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^")
_IDENTIFIER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


class LockMode(StrEnum):
    """Shared (S) or exclusive (X); ``LockMode("S")`` and ``LockMode("x")`` parse too."""

    SHARED = "shared"
    EXCLUSIVE = "exclusive"

    @classmethod
    def _missing_(cls, value: object) -> LockMode | None:
        if isinstance(value, str):
            return {"s": cls.SHARED, "x": cls.EXCLUSIVE}.get(value.strip().lower())
        return None

    @property
    def letter(self) -> str:
        """``"S"`` or ``"X"``, as the design and ``--mode`` write it."""
        return "S" if self is LockMode.SHARED else "X"


COMPATIBILITY: Mapping[tuple[LockMode, LockMode], bool] = {
    (LockMode.SHARED, LockMode.SHARED): True,
    (LockMode.SHARED, LockMode.EXCLUSIVE): False,
    (LockMode.EXCLUSIVE, LockMode.SHARED): False,
    (LockMode.EXCLUSIVE, LockMode.EXCLUSIVE): False,
}
"""``COMPATIBILITY[(held, requested)]``: may ``requested`` be granted while ``held`` is held."""


def is_compatible(held: LockMode, requested: LockMode) -> bool:
    """Return whether ``requested`` may be granted on an object on which ``held`` is held."""
    return COMPATIBILITY[(held, requested)]


def parse_lock_mode(text: str) -> LockMode:
    """Parse ``S``/``X``/``shared``/``exclusive`` (any case) into a ``LockMode``.

    Raises:
        InvalidLockRequestError: for anything else.
    """
    folded = text.strip().lower()
    if folded in ("s", "shared"):
        return LockMode.SHARED
    if folded in ("x", "exclusive"):
        return LockMode.EXCLUSIVE
    raise InvalidLockRequestError(text, "unknown lock mode", "S, X, shared or exclusive")


def _escape_value(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED or ord(c) < 0x20 else c for c in value)


def _unescape_value(text: str, whole: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%":
            code = text[i + 1 : i + 3]
            if len(code) != 2 or any(h not in "0123456789abcdefABCDEF" for h in code):
                raise InvalidLockRequestError(
                    whole, f"bad escape {text[i : i + 3]!r} in partition value", "%XX with two hex digits"
                )
            out.append(chr(int(code, 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _check_identifier(whole: str, what: str, name: str) -> str:
    folded = name.lower()
    if not folded or not set(folded) <= _IDENTIFIER_CHARS:
        raise InvalidLockRequestError(
            whole, f"bad {what} name {name!r}", f"a {what} name of letters, digits and _"
        )
    return folded


@dataclass(frozen=True, slots=True)
class LockObject:
    """A lockable object: a table, a (multi-level) partition, or a maintenance object.

    Database, table and partition-key names are case-insensitive (stored lower-case, as Hive does);
    partition values keep their case.

    >>> obj = parse_lock_object("Sales.Orders/ds=2024-01-01/hr=7")
    >>> obj.to_name()
    'sales.orders/ds=2024-01-01/hr=7'
    >>> [p.to_name() for p in obj.parents()]
    ['sales.orders', 'sales.orders/ds=2024-01-01']
    """

    db: str
    table: str
    partition: tuple[tuple[str, str], ...] = ()
    maintenance: bool = False

    def __post_init__(self) -> None:
        shown = f"{self.db}.{self.table}"
        object.__setattr__(self, "db", _check_identifier(shown, "database", self.db))
        object.__setattr__(self, "table", _check_identifier(shown, "table", self.table))
        keys: list[str] = []
        for key, value in self.partition:
            folded = _check_identifier(shown, "partition key", key)
            if folded in keys:
                raise InvalidLockRequestError(
                    shown, f"partition key {key!r} appears twice", "each partition key once"
                )
            if not value:
                raise InvalidLockRequestError(
                    shown, f"empty value for partition key {key!r}", "k=v with a non-empty value"
                )
            keys.append(folded)
        object.__setattr__(
            self, "partition", tuple((k, v) for k, (_, v) in zip(keys, self.partition, strict=True))
        )

    @property
    def is_table(self) -> bool:
        """True for a table-level data object (no partition, not maintenance)."""
        return not self.partition and not self.maintenance

    def data_object(self) -> LockObject:
        """The table or partition this object is about (itself unless it is a maintenance object)."""
        return LockObject(self.db, self.table, self.partition) if self.maintenance else self

    def maintenance_object(self) -> LockObject:
        """The maintenance object of this table or partition."""
        return LockObject(self.db, self.table, self.partition, maintenance=True)

    def parents(self) -> tuple[LockObject, ...]:
        """Every object above this one, outermost first: the table, then each partition prefix.

        A maintenance object's parents are its data object and that object's parents.
        """
        levels = len(self.partition) + (1 if self.maintenance else 0)
        return tuple(LockObject(self.db, self.table, self.partition[:n]) for n in range(levels))

    def is_within(self, prefix: LockObject) -> bool:
        """Whether this object is ``prefix`` or below it (``SHOW LOCKS prefix`` lists it)."""
        if (self.db, self.table) != (prefix.db, prefix.table):
            return False
        if prefix.maintenance:
            return self == prefix
        return self.partition[: len(prefix.partition)] == prefix.partition

    def sort_key(self) -> tuple[str, str, tuple[tuple[str, str], ...], bool]:
        """Lexicographic order over the path components: parents sort before their children."""
        return (self.db, self.table, self.partition, self.maintenance)

    def path_components(self) -> tuple[str, ...]:
        """``("db", "table", "k=v", ..., ["#maintenance"])``: one component per hierarchy level."""
        parts = [self.db, self.table, *(f"{k}={_escape_value(v)}" for k, v in self.partition)]
        if self.maintenance:
            parts.append(MAINTENANCE_SUFFIX)
        return tuple(parts)

    @classmethod
    def from_path_components(cls, components: Sequence[str]) -> LockObject:
        """Inverse of ``path_components``."""
        text = ".".join(components[:2]) + "".join("/" + c for c in components[2:])
        return parse_lock_object(text.replace("/" + MAINTENANCE_SUFFIX, MAINTENANCE_SUFFIX))

    def to_name(self) -> str:
        """``db.table[/k=v...][#maintenance]``; the exact inverse of ``parse_lock_object``."""
        name = f"{self.db}.{self.table}" + "".join(f"/{k}={_escape_value(v)}" for k, v in self.partition)
        return name + MAINTENANCE_SUFFIX if self.maintenance else name

    def __str__(self) -> str:
        return self.to_name()


def parse_lock_object(text: str) -> LockObject:
    """Parse ``db.table``, ``db.table/k=v``, ``db.table/k=v/k2=v2`` (optionally ``#maintenance``).

    Partition values are escaped like Hive path names (``%2F`` for ``/``, ``%3A`` for ``:``...).

    Raises:
        InvalidLockRequestError: for a missing database, bad names, ``k`` without ``=v``, etc.
    """
    body = text
    maintenance = body.endswith(MAINTENANCE_SUFFIX)
    if maintenance:
        body = body[: -len(MAINTENANCE_SUFFIX)]
    head, *parts = body.split("/")
    db, dot, table = head.partition(".")
    if not dot or "." in table:
        raise InvalidLockRequestError(
            text, "the object does not start with db.table", "db.table[/k=v[/k2=v2...]][#maintenance]"
        )
    partition: list[tuple[str, str]] = []
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq:
            raise InvalidLockRequestError(
                text, f"partition component {part!r} has no '='", "db.table/k=v[/k2=v2...]"
            )
        partition.append((key, _unescape_value(value, text)))
    try:
        return LockObject(db, table, tuple(partition), maintenance=maintenance)
    except InvalidLockRequestError as e:
        raise InvalidLockRequestError(text, e.problem, e.expected) from e


@dataclass(frozen=True, slots=True)
class LockRequest:
    """One object in one mode, as EXPLAIN LOCKS prints it."""

    object: LockObject
    mode: LockMode

    def sort_key(self) -> tuple[tuple[str, str, tuple[tuple[str, str], ...], bool], str]:
        """Objects in lexicographic order, then S before X."""
        return (self.object.sort_key(), self.mode.letter)

    def to_dict(self) -> dict[str, str]:
        """``{"object": ..., "mode": "S"|"X"}`` for ``--format jsonl``."""
        return {"object": self.object.to_name(), "mode": self.mode.letter}

    def __str__(self) -> str:
        return f"{self.mode.letter} {self.object.to_name()}"


def plan_lock_set(requests: Iterable[LockRequest]) -> list[LockRequest]:
    """Complete a request set with the hierarchy; de-duplicate; sort. PURE.

    Every parent of a requested object is added in S; an object asked for in both modes is kept
    in X only; the result is sorted by object (parents first), one request per object.

    >>> [str(r) for r in plan_lock_set([LockRequest(parse_lock_object("d.t/p=1"), LockMode("X"))])]
    ['S d.t', 'X d.t/p=1']
    """
    modes: dict[LockObject, LockMode] = {}
    for request in requests:
        for parent in request.object.parents():
            modes.setdefault(parent, LockMode.SHARED)
        if request.mode is LockMode.EXCLUSIVE or request.object not in modes:
            modes[request.object] = request.mode
    return sorted((LockRequest(o, m) for o, m in modes.items()), key=LockRequest.sort_key)


@dataclass(frozen=True, slots=True)
class LockInfo:
    """One lock as SHOW LOCKS lists it; holder details are filled in only when ``extended``.

    ``waiting`` marks a fair-mode waiting writer's marker (only ever seen in refusal messages).
    """

    object: LockObject
    mode: LockMode
    holder: str | None = None
    host: str | None = None
    txn_id: TxnId | None = None
    acquired_at: datetime | None = None
    waiting: bool = False

    def sort_key(self) -> tuple[tuple[str, str, tuple[tuple[str, str], ...], bool], str, str, float]:
        """Object order, then mode, then holder, then acquired time."""
        when = self.acquired_at.timestamp() if self.acquired_at is not None else 0.0
        return (self.object.sort_key(), self.mode.letter, self.holder or "", when)

    def to_dict(self, *, extended: bool = False) -> dict[str, str | int | None]:
        """``{"object", "mode"}``, plus holder, host, txn_id and acquired_at when ``extended``."""
        out: dict[str, str | int | None] = {"object": self.object.to_name(), "mode": self.mode.letter}
        if extended:
            out["holder"] = self.holder
            out["host"] = self.host
            out["txn_id"] = self.txn_id
            out["acquired_at"] = None if self.acquired_at is None else self.acquired_at.isoformat()
        return out

    def describe(self) -> str:
        """One human line naming the holder, for error messages."""
        state = "waited for in exclusive mode" if self.waiting else f"held in {self.mode.value} mode"
        who = f"by {self.holder!r}" if self.holder else "by an unknown holder"
        details = [f"host {self.host!r}"] if self.host else []
        if self.txn_id is not None:
            details.append(f"txn {self.txn_id}")
        if self.acquired_at is not None:
            details.append(f"since {self.acquired_at.isoformat(timespec='seconds')}")
        extra = f" ({', '.join(details)})" if details else ""
        return f"{self.object.to_name()} {state} {who}{extra}"


LostListener = Callable[["LockHandle"], None]


class LockHandle:
    """The locks granted by one ``acquire``; give it back to ``release``.

    A handle becomes *lost* when its session is lost; from then on ``check`` and ``release`` raise
    ``LockLostError`` and the lost listeners have been called once.
    """

    def __init__(
        self,
        requests: Sequence[LockRequest],
        *,
        holder: str,
        txn_id: TxnId | None,
        acquired_at: datetime,
        handle_id: str | None = None,
    ) -> None:
        self.requests: tuple[LockRequest, ...] = tuple(requests)
        self.holder = holder
        self.txn_id = txn_id
        self.acquired_at = acquired_at
        self.handle_id = handle_id or uuid.uuid4().hex
        self._guard = threading.Lock()
        self._lost_reason: str | None = None
        self._released = False
        self._listeners: list[LostListener] = []

    @property
    def is_lost(self) -> bool:
        """Whether the session that held these locks was lost."""
        return self._lost_reason is not None

    @property
    def is_released(self) -> bool:
        """Whether ``release`` completed."""
        return self._released

    def check(self) -> None:
        """Raise ``LockLostError`` if the locks were lost; call before each write.

        Raises:
            LockLostError: the session was lost; stop writing and abort the transaction.
        """
        reason = self._lost_reason
        if reason is not None:
            raise LockLostError(
                f"Locks of holder {self.holder!r} (txn {self.txn_id}) on "
                f"{', '.join(str(r) for r in self.requests)} were lost: {reason}; expected a live "
                "session; hint: stop writing and abort the transaction, then retry it from the start"
            )

    def add_lost_listener(self, listener: LostListener) -> None:
        """Call ``listener(handle)`` once when the locks are lost (at once if they already are).

        Listeners run on a background thread and must not block.
        """
        with self._guard:
            lost = self._lost_reason is not None
            if not lost:
                self._listeners.append(listener)
        if lost:
            _run_listeners(self, [listener])

    def _mark_lost(self, reason: str) -> None:
        with self._guard:
            if self._lost_reason is not None or self._released:
                return
            self._lost_reason = reason
            listeners, self._listeners = self._listeners, []
        if listeners:
            _run_listeners(self, listeners)

    def _mark_released(self) -> None:
        with self._guard:
            self._released = True
            self._listeners = []

    def __repr__(self) -> str:
        state = "lost" if self.is_lost else "released" if self._released else "held"
        return f"LockHandle({self.holder!r}, [{', '.join(str(r) for r in self.requests)}], {state})"


def _run_listeners(handle: LockHandle, listeners: list[LostListener]) -> None:
    def run() -> None:
        for listener in listeners:
            listener(handle)

    threading.Thread(target=run, name="acidflow-lock-lost", daemon=True).start()


@runtime_checkable
class LockManager(Protocol):
    """The port every lock manager implements (see the module docstring for the semantics)."""

    def acquire(
        self,
        requests: Iterable[LockRequest],
        *,
        holder: str,
        txn_id: TxnId | None = None,
        retries: int = DEFAULT_RETRIES,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> LockHandle:
        """Lock every request (completed with ``plan_lock_set``) or nothing.

        Args:
            requests: the objects and modes; parents are added in S.
            holder: who holds the locks (user, query id), shown by SHOW LOCKS EXTENDED.
            txn_id: the transaction the locks belong to, if any.
            retries: how many times to retry the whole set after the first refusal.
            wait_seconds: the longest wait between attempts (each wait is jittered to 50-100%).

        Returns:
            The handle to release.

        Raises:
            LockRefusedError: still refused after the last retry; names the conflicting holders.
            LockServiceUnavailableError: the lock service cannot be reached.
        """
        ...

    def release(self, handle: LockHandle) -> None:
        """Release every lock of ``handle``; a second release is a no-op.

        Raises:
            LockLostError: the locks had already been lost with their session.
        """
        ...

    def show(self, prefix: LockObject | None = None, *, extended: bool = False) -> list[LockInfo]:
        """List the held locks on ``prefix`` and below it (everything when None), sorted.

        Without ``extended`` only object and mode are filled in.
        """
        ...

    def close(self) -> None:
        """Release the connection; locks still held are freed with the session."""
        ...


def _validate_retry(retries: int, wait_seconds: float) -> None:
    if retries < 0:
        raise InvalidLockRequestError(str(retries), "negative retries", "retries >= 0")
    if wait_seconds < 0:
        raise InvalidLockRequestError(str(wait_seconds), "negative wait", "wait_seconds >= 0")


def _now() -> datetime:
    return datetime.now(UTC)


def default_host() -> str:
    """This machine's host name, recorded with each lock."""
    return socket.gethostname()


def _process_start_epoch(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds, Linux ``/proc``); None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        ticks = float(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime, after "pid (comm)"
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def is_dead_local_process(
    host: str, pid: int | None, *, started: float | None = None, local_host: str | None = None
) -> bool:
    """Whether the owner ``pid`` on ``host`` is certainly gone: a process of this host that has ended.

    Dead-owner detection for lock sessions and compaction workers (Hive reverts the compactions of
    dead local workers, ``CompactionTxnHandler.revokeFromLocalWorkers``). Only an owner on this
    host can be checked; any other owner is *not* dead here (it expires by heartbeat timeout). A
    zombie (killed, not yet reaped by its parent) is dead; so is a process ID that was reused by a
    process started after ``started`` (the owner's registration time, epoch seconds).

    Args:
        host: the owner's host name as recorded.
        pid: the owner's process ID (None: unknown, so not dead).
        started: when the owner registered (epoch seconds), to detect a reused process ID.
        local_host: this host's name (default ``default_host()``).

    Returns:
        True only when the owner is certainly dead.
    """
    if pid is None or pid <= 0 or host != (local_host or default_host()):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # someone else's live process
    if _is_zombie(pid):
        return True
    if started is not None:
        process_started = _process_start_epoch(pid)
        # 2 s of slack: boot time and clock ticks are coarse; a reused PID starts much later.
        if process_started is not None and process_started > started + 2.0:
            return True
    return False


def _describe_requests(requests: Sequence[LockRequest]) -> tuple[str, ...]:
    return tuple(str(r) for r in requests)


def retry_acquire(
    requests: Sequence[LockRequest],
    attempt: Callable[[int], tuple[LockHandle | None, list[LockInfo]]],
    *,
    retries: int,
    wait_seconds: float,
    give_up: Callable[[], None] = lambda: None,
    sleep: Callable[[float], None] = time.sleep,
) -> LockHandle:
    """Run ``attempt(number)`` until it grants or ``retries`` retries are used up (adapters' shell).

    ``attempt`` returns ``(handle, [])`` when granted, ``(None, conflicts)`` when refused, and must
    hold nothing after a refusal. ``give_up`` runs once after the last refusal, or when ``attempt``
    raises (fair-mode cleanup; its own ``AcidError`` is then suppressed in favour of the first error).

    Raises:
        LockRefusedError: after the last refusal, naming the conflicts of the last attempt.
    """
    conflicts: list[LockInfo] = []
    try:
        for number in range(retries + 1):
            if number:
                sleep(wait_seconds * random.uniform(0.5, 1.0))
            handle, conflicts = attempt(number)
            if handle is not None:
                return handle
    except BaseException:
        # A failed attempt (service down, interrupt) must not leave fair-mode markers behind.
        with contextlib.suppress(AcidError):
            give_up()
        raise
    give_up()
    holders = tuple(dict.fromkeys(c.describe() for c in sorted(conflicts, key=LockInfo.sort_key)))
    raise LockRefusedError(_describe_requests(requests), holders, retries + 1)


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


def open_lock_manager(
    environ: Mapping[str, str] | None = None,
    *,
    fair: bool = False,
    metastore_url: str | None = None,
    warehouse: str | None = None,
) -> LockManager:
    """Build the lock manager chosen by ``ACIDFLOW_LOCK_MANAGER`` (``zookeeper``, ``sql``, ``none``).

    ``zookeeper`` needs ``ACIDFLOW_ZOOKEEPER=host:port[,host:port...][/chroot]``. ``sql`` uses the
    metastore database: ``ACIDFLOW_METASTORE`` (a SQLAlchemy URL), else the embedded SQLite file of
    ``ACIDFLOW_WAREHOUSE`` (default ``./warehouse``). Unset means ``zookeeper`` when
    ``ACIDFLOW_ZOOKEEPER`` is set, otherwise ``sql`` (the embedded default). A caller that already
    knows its metastore passes ``metastore_url`` (and ``warehouse``), which win over the environment,
    so that its locks live in the same database as its transactions.

    Raises:
        InvalidLockConfigError: an unknown manager, a missing or malformed ZooKeeper address.
        LockServiceUnavailableError: ZooKeeper or the metastore database cannot be reached.
    """
    env = os.environ if environ is None else environ
    hosts = env.get(ZOOKEEPER_ENV, "").strip()
    name = env.get(LOCK_MANAGER_ENV, "").strip().lower() or ("zookeeper" if hosts else "sql")
    if name == "none":
        return NoLockManager()
    if name == "zookeeper":
        if not hosts:
            raise InvalidLockConfigError(
                ZOOKEEPER_ENV, hosts, "host:port[,host:port...]", f"set it when {LOCK_MANAGER_ENV}=zookeeper"
            )
        servers, _, _chroot = hosts.partition("/")  # ZooKeeper's optional "/chroot" suffix
        for server in servers.split(","):
            host, colon, port = server.strip().rpartition(":")
            if not colon or not host or not port.isdigit():
                raise InvalidLockConfigError(ZOOKEEPER_ENV, hosts, "host:port[,host:port...][/chroot]")
        from acid_core.locks.zookeeper import KazooLockManager  # kazoo is an optional extra

        manager: LockManager = KazooLockManager(hosts, fair=fair)
        return manager
    if name == "sql":
        from acid_core.locks.sql import SqlLockManager  # sqlalchemy is an optional extra
        from acid_core.metastore import METASTORE_DIR_NAME, default_metastore_url

        url = metastore_url or env.get(METASTORE_ENV, "").strip()
        if url.lower().startswith("thrift://"):
            url = ""  # a Hive Metastore has no SQL of ours: the warehouse's embedded file holds the locks
        if not url:
            root = Path(warehouse or env.get(WAREHOUSE_ENV, "").strip() or DEFAULT_WAREHOUSE)
            (root.resolve() / METASTORE_DIR_NAME).mkdir(parents=True, exist_ok=True)
            url = default_metastore_url(str(root))
        sql_manager: LockManager = SqlLockManager(url, fair=fair)
        return sql_manager
    raise InvalidLockConfigError(LOCK_MANAGER_ENV, name, "zookeeper, sql or none")
