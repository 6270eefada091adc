"""The pure model of the soak's table and the writer's crash-safe journal.

The table is ``t (id int, v string)``; the model is ``{id: v}`` of the committed rows. Every write
the soak makes gives its changed rows values unique to the operation (``i17-42``: op 17 wrote
id 42), so a row the model does not expect (an aborted or half-written one) can never compare equal
by accident, and a fresh id is never used twice.

The writer keeps a journal (one JSON object per line, flushed and fsynced before it goes on)::

    {"t": "pending", "op": 7, "kind": "sql_update", "txn": 31, "changes": {"4": "u7-4"}}
                                        written once the transaction is open, before it commits
    {"t": "done", "op": 7, "outcome": "committed"}        or "aborted", after commit/abort returned
    {"t": "lease", "lease": 3, "rows": {"1": "i0-1"}, "txns": "40:9223372036854775807::"}
    {"t": "releasing", "lease": 3}   {"t": "released", "lease": 3}
    {"t": "check", "rows": 25}       one step checked: SELECT and every live lease, 25 rows compared
    {"t": "fail", "message": "..."}  a check failed (the process then exits 3)

A writer killed with SIGKILL leaves at most one ``pending`` without its ``done`` (and maybe a torn
last line, which ``Journal`` drops): the next writer resolves it from the metastore's record of the
transaction before doing anything else (``replay`` returns it as ``unresolved``).

Invariants: ``replay`` is a pure function of the lines; applying ``done`` records in order to an
empty model gives the committed table.
Not here: any I/O but the journal file, any acidflow call.
Errors: ``JournalError`` on a record that does not fit (a ``done`` without its ``pending``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

Changes = dict[int, "str | None"]
"""Row id -> its new value, or None for a deleted row."""


class JournalError(AssertionError):
    """The journal contradicts itself (a soak bug, not an acidflow one)."""


@dataclass(frozen=True, slots=True)
class PendingOp:
    """A write whose transaction was open when the journal line was written."""

    op: int
    kind: str
    txn_id: int
    changes: Changes


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """A lease the writer took: the rows its snapshot must read, and the txn list at that moment."""

    lease_id: int
    rows: dict[int, str]
    txns: str


@dataclass
class JournalState:
    """What a journal says: the committed rows, the write in flight, the live leases, the figures."""

    rows: dict[int, str] = field(default_factory=dict)
    unresolved: list[PendingOp] = field(default_factory=list)
    leases: dict[int, LeaseRecord] = field(default_factory=dict)
    releasing: set[int] = field(default_factory=set)
    next_op: int = 0
    next_id: int = 1
    committed: int = 0
    aborted: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    checks: int = 0
    rows_checked: int = 0
    leases_taken: int = 0
    leases_released: int = 0
    failures: list[str] = field(default_factory=list)


def apply_changes(rows: dict[int, str], changes: Changes) -> None:
    """Apply one committed write to ``rows`` in place."""
    for key, value in changes.items():
        if value is None:
            rows.pop(key, None)
        else:
            rows[key] = value


def _changes(raw: dict[str, str | None]) -> Changes:
    return {int(key): value for key, value in raw.items()}


def replay(records: list[dict[str, object]]) -> JournalState:
    """Fold journal records into a ``JournalState`` (pure).

    Raises:
        JournalError: a ``done`` for an op that is not pending.
    """
    state = JournalState()
    pending: dict[int, PendingOp] = {}
    for record in records:
        kind = record["t"]
        if kind == "pending":
            op = PendingOp(
                int(record["op"]),  # type: ignore[call-overload]
                str(record["kind"]),
                int(record["txn"]),  # type: ignore[call-overload]
                _changes(record["changes"]),  # type: ignore[arg-type]
            )
            pending[op.op] = op
            state.next_op = max(state.next_op, op.op + 1)
            if op.changes:
                state.next_id = max(state.next_id, max(op.changes) + 1)
        elif kind == "done":
            number = int(record["op"])  # type: ignore[call-overload]
            if number not in pending:
                raise JournalError(f"journal: done for op {number} that is not pending: {record!r}")
            op = pending.pop(number)
            if record["outcome"] == "committed":
                apply_changes(state.rows, op.changes)
                state.committed += 1
                state.kinds[op.kind] = state.kinds.get(op.kind, 0) + 1
            else:
                state.aborted += 1
                state.kinds[f"{op.kind} (aborted)"] = state.kinds.get(f"{op.kind} (aborted)", 0) + 1
        elif kind == "op":
            state.next_op = max(state.next_op, int(record["op"]) + 1)  # type: ignore[call-overload]
        elif kind == "lease":
            lease_id = int(record["lease"])  # type: ignore[call-overload]
            rows = {int(k): str(v) for k, v in record["rows"].items()}  # type: ignore[attr-defined]
            state.leases[lease_id] = LeaseRecord(lease_id, rows, str(record["txns"]))
            state.leases_taken += 1
        elif kind == "releasing":
            state.releasing.add(int(record["lease"]))  # type: ignore[call-overload]
        elif kind == "released":
            lease_id = int(record["lease"])  # type: ignore[call-overload]
            state.leases.pop(lease_id, None)
            state.releasing.discard(lease_id)
            state.leases_released += 1
        elif kind == "check":
            state.checks += 1
            state.rows_checked += int(record["rows"])  # type: ignore[call-overload]
        elif kind == "fail":
            state.failures.append(str(record["message"]))
    state.unresolved = sorted(pending.values(), key=lambda p: p.op)
    return state


class Journal:
    """An append-only JSON-lines file; every record is on disk before ``append`` returns.

    Opening drops a torn last line (a writer killed in the middle of a write).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        if os.path.exists(path):
            with open(path, "rb") as handle:
                data = handle.read()
            if data and not data.endswith(b"\n"):
                with open(path, "r+b") as handle:
                    handle.truncate(data.rfind(b"\n") + 1)
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def records(self) -> list[dict[str, object]]:
        """Every complete record so far."""
        return read_records(self.path)

    def append(self, record: dict[str, object]) -> None:
        """Write one record durably."""
        self._handle.write(json.dumps(record, sort_keys=True) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


def read_records(path: str) -> list[dict[str, object]]:
    """The complete records of a journal file (a torn last line is left out)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    lines = text.split("\n")
    return [json.loads(line) for line in lines[:-1] if line.strip()]


def diff_rows(expected: dict[int, str], actual: dict[int, str]) -> str:
    """One line saying how ``actual`` differs from ``expected`` (empty when equal)."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    changed = sorted(k for k in set(expected) & set(actual) if expected[k] != actual[k])
    parts = []
    if missing:
        parts.append(f"{len(missing)} committed row(s) lost: {[(k, expected[k]) for k in missing[:8]]}")
    if extra:
        parts.append(f"{len(extra)} row(s) not committed: {[(k, actual[k]) for k in extra[:8]]}")
    if changed:
        parts.append(
            f"{len(changed)} row(s) with a wrong value: {[(k, expected[k], actual[k]) for k in changed[:8]]}"
        )
    return "; ".join(parts)
