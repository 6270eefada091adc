"""The lock manager port: lock modes, lock objects, requests, handles and the ``LockManager`` protocol.

The model and the rules are in the package docstring (``acid_core.locks``)::

    LockMode S|X   LockObject db.table[/k=v...][#maintenance]   LockRequest(object, mode)
    plan_lock_set(requests)   the request completed with the hierarchy (S on every parent)
    LockManager.acquire(requests) -> LockHandle   all or nothing; retry_acquire is the adapters' loop

Not here: the adapters (``memory``, ``sql``, ``zookeeper``), choosing one (``factory``), which
locks a statement needs (``planner``).
Errors: ``InvalidLockRequestError`` for a malformed object or mode; ``retry_acquire`` raises
``LockRefusedError`` naming the holders.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from acid_core.errors import (
    AcidError,
    InvalidLockRequestError,
    LockLostError,
    LockRefusedError,
)

if TYPE_CHECKING:
    from acid_core.types import TxnId


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
        verify: Callable[[LockHandle], None] | None = None,
    ) -> None:
        self.requests: tuple[LockRequest, ...] = tuple(requests)
        # The backend's round trip that ``confirm`` makes: raises ``LockLostError`` unless the lock
        # service itself still holds the locks (the local state can lag behind it after a pause).
        self._verify = verify
        self.holder = holder
        self.txn_id = txn_id
        self.acquired_at = acquired_at
        self.handle_id = handle_id or uuid.uuid4().hex
        self._guard = threading.Lock()
        self._lost_reason: str | None = None
        self._lost_service: str | None = None  # the lock service whose session was lost
        self._released = False
        self._listeners: list[LostListener] = []
        # Set while the session is known live; cleared while it is suspended (disconnected, fate unknown).
        self._live = threading.Event()
        self._live.set()

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
                "session; hint: stop writing and abort the transaction, then retry it from the start",
                service=self._lost_service,
            )

    def confirm(self, timeout_seconds: float) -> None:
        """Raise unless the locks are held right now: the fence before a commit.

        While the session is suspended (disconnected from the lock service, e.g. during a ZooKeeper
        restart) nobody can tell whether the session outlived the outage; this waits up to
        ``timeout_seconds`` for it to reconnect (held) or be reported lost.

        Then, with a backend that can tell (ZooKeeper), it asks the lock service itself: a process
        that was paused (a long GC, SIGSTOP) past its session timeout may not have heard of the
        expiry yet when it resumes, and its local state would still say held.

        Raises:
            LockLostError: the session was lost, is still suspended after ``timeout_seconds``, or
                the lock service no longer holds the locks.
        """
        if not self._live.wait(timeout_seconds):
            raise LockLostError(
                f"Locks of holder {self.holder!r} (txn {self.txn_id}) on "
                f"{', '.join(str(r) for r in self.requests)} are in doubt: the session to the lock service "
                f"stayed disconnected for more than {timeout_seconds:g} s; expected a live session; hint: "
                "stop writing and abort the transaction, then retry it from the start"
            )
        self.check()
        if self._verify is not None and not self._released:
            self._verify(self)
            self.check()

    def _mark_suspended(self, suspended: bool) -> None:
        if suspended and self._lost_reason is None:
            self._live.clear()
        else:
            self._live.set()

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

    def _mark_lost(self, reason: str, service: str | None = None) -> None:
        with self._guard:
            if self._lost_reason is not None or self._released:
                return
            self._lost_reason = reason
            self._lost_service = service
            listeners, self._listeners = self._listeners, []
        self._live.set()  # wakes ``confirm``, which then raises
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
