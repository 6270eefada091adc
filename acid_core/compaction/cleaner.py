"""Delete what a compaction made obsolete, once no reader can need it: Hive's ``Cleaner``, made careful.

::

    for each compaction 'ready for cleaning' (find_ready_to_clean), lowest highest write ID first:
        ready?   its next txn ID <= the lowest open txn (every txn that could read the inputs ended),
                 committed more than retention (+ its retry retention) ago     (metastore rule)
        what?    getAcidState with the table's write IDs capped at the compaction's highest write
                 ID and the txns as of its commit: its obsolete + aborted directories (Hive's
                 ``removeFiles``); a newer compaction's base hiding them -> 'superseded'
        readers? every live lease's full snapshot (write IDs + txns) and every open transaction's
                 snapshot, evaluated over the listing: a directory any of them reads -> 'waiting'
                 (nothing deleted); one that cannot be read at all -> SnapshotLostError
        safe?    every path is a direct child of the table or partition directory, inside the
                 table location (a partition whose LOCATION lies elsewhere: inside its own
                 location, which may be no filesystem root and may not hold the table), or
                 UnsafeCleanError
        intact?  the ORC footer of every file of the base and deltas that supersede them reads,
                 or CorruptDataError and nothing is deleted (Hive's Cleaner does not look)
        do       ledger entry first (planned), then delete each (or move it into the table's trash),
                 ledger entry rewritten (done), mark_cleaned                  -> history 'succeeded'
        dropped? the table gone (DROP TABLE) at any step: stop, 'skipped'; its directory is never
                 recreated by the ledger
        failed?  retry after retry_retention_seconds * 2**n (Hive's CQ_RETRY_RETENTION); after
                 max_attempts retries -> history 'failed' with the reason     ('retrying' / 'failed')

    <table>/_acidflow_cleaner/ledger/c<compaction>.json    every path, its compaction, reason, action
    <table>/_acidflow_trash/c<compaction>/<partition>/<dir> quarantined directories (purge, restore)

Both names start with ``_``: Hive and acidflow readers skip them (hidden names).
``purge_trash`` deletes only inside ``_acidflow_trash`` and ``restore_from_trash`` moves only from
there to inside the table or its partitions' locations (symbolic links resolved): the ledger is
input, not trust, so a row pointing elsewhere (``/etc``, another table) is reported and skipped.

Concurrency and idempotency: safe to kill at any moment and to re-run. Killed before
``mark_cleaned``, the entry stays ready; the next run recomputes the obsolete set from the listing
(what is already gone is simply not there) and finishes. A directory half-deleted when killed is
still obsolete by its name, so it is deleted again. Quarantine uses renames (atomic on local disks
and HDFS). Store errors are retried with exponential back-off before the run gives up on that
compaction (it stays ready for the next run).
Safe default: ``dry_run`` lists what would go and changes nothing (the CLI's ``--dry-run``).
Not here: deciding readiness (the metastore's ``find_ready_to_clean``), compacting (``worker``).
Errors: ``UnsafeCleanError`` (a path outside the table location; nothing of that compaction is
touched), ``CorruptDataError`` (a file of the superseding output does not read; nothing deleted),
``TableDroppedError`` (reported as 'skipped', not as a failure), ``SnapshotLostError`` (a live lease or open transaction whose snapshot is no longer
readable: a bug, nothing deleted), ``StorageError`` after the retries; ``run_cleaner`` turns each
into a retry with back-off, and the last one into a failed compaction with the reason.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import posixpath
import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Final

from acid_core.compaction.common import (
    DEFAULT_TXN_TIMEOUT_SECONDS,
    partition_location,
    reap_timed_out_transactions,
)
from acid_core.compaction.output_manifest import LEDGER_DIR, prune_output_manifests, recorded_rows
from acid_core.directory import load_directory_state
from acid_core.errors import (
    AcidError,
    CorruptDataError,
    NoSuchCompactionError,
    NoSuchTableError,
    NotAnAcidFileError,
    NotEnoughHistoryError,
    NothingToRestoreError,
    SnapshotLostError,
    StorageError,
    TableDroppedError,
    UnsafeCleanError,
    UnsafeDeleteError,
)
from acid_core.fs import file_io_for, real_path, store_key
from acid_core.locations import is_inside_path
from acid_core.metastore import CompactionState, TxnState
from acid_core.writeids import ValidTxnList, ValidWriteIdList

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from acid_core.fs import FileIO
    from acid_core.metastore import CompactionInfo, Metastore, Table
    from acid_core.state import AcidDirectoryState

__all__ = [
    "DEFAULT_TXN_TIMEOUT_SECONDS",
    "LEDGER_DIR",
    "TRASH_DIR",
    "CleanResult",
    "CleanerOptions",
    "PathAction",
    "ReaderSnapshot",
    "clean_compaction",
    "plan_clean",
    "purge_trash",
    "read_ledger",
    "reader_snapshots",
    "reap_timed_out_transactions",
    "restore_from_trash",
    "run_cleaner",
    "snapshot_read_set",
    "waiting_to_clean",
]

_LOG = logging.getLogger(__name__)

_MAX_PASSES: Final = 1000
TRASH_DIR: Final = "_acidflow_trash"


@dataclass(frozen=True, slots=True)
class CleanerOptions:
    """How the cleaner runs.

    Attributes:
        retention_seconds: wait this long after the compaction committed (Hive's
            ``hive.compactor.cleaner.retention.time``, 0 by default).
        dry_run: report what would be deleted; change nothing.
        quarantine: move directories into the table's trash instead of deleting them.
        retries: attempts per store operation.
        backoff_seconds: first back-off; doubled after each failed attempt.
        sleep: how to wait between attempts (tests pass a fake).
        on_step: called before each step: ``("ledger", None)``, ``("deleting", path)``,
            ``("marking", None)`` (progress; fault injection in tests).
        txn_timeout_seconds: the reaper's timeout (None: ``DEFAULT_TXN_TIMEOUT_SECONDS``).
        max_attempts: retries after a failed cleaning run; the next failure marks the compaction
            failed (Hive's ``hive.compactor.cleaner.retry.maxattempts``, 5; 0: no retry).
        retry_retention_seconds: the wait after the first failed run, doubled after each one
            (Hive's ``hive.compactor.cleaner.retry.retentionTime``, 300 s).
    """

    retention_seconds: float = 0.0
    dry_run: bool = False
    quarantine: bool = False
    retries: int = 4
    backoff_seconds: float = 0.2
    sleep: Callable[[float], None] = time.sleep
    on_step: Callable[[str, str | None], None] | None = None
    txn_timeout_seconds: float | None = None
    max_attempts: int = 5
    retry_retention_seconds: float = 300.0


@dataclass(frozen=True, slots=True)
class PathAction:
    """One path the cleaner handled (a ledger line).

    Attributes:
        compaction_id: the compaction that made it obsolete.
        table: ``db.table``.
        partition: partition name or None.
        path: the path, in the store's syntax.
        reason: ``obsolete`` or ``aborted``.
        action: ``deleted``, ``quarantined``, ``would delete``, ``planned``.
        trash_path: where a quarantined directory went, else None.
        time: epoch seconds.
    """

    compaction_id: int
    table: str
    partition: str | None
    path: str
    reason: str
    action: str
    trash_path: str | None = None
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What happened to one compaction ready for cleaning.

    Attributes:
        compaction_id: the queue entry.
        status: ``cleaned``; ``dry_run``; ``waiting`` (a lease or open transaction still reads
            something; nothing deleted); ``superseded`` (a newer compaction's obsolete set holds
            this one's; nothing deleted, marked cleaned); ``retrying`` (this run failed, the entry
            waits its back-off) or ``failed`` (the last attempt failed: terminal, with the reason);
            ``skipped`` (the table was dropped while it was cleaned: nothing more deleted, its
            directory not recreated).
        message: one sentence.
        actions: the paths handled.
    """

    compaction_id: int
    status: str
    message: str
    actions: tuple[PathAction, ...] = field(default_factory=tuple)


def _read_set(state: AcidDirectoryState) -> set[str]:
    tops = {path.split("/", 1)[0] for path in state.original_files}
    return {*((state.base,) if state.base else ()), *state.deltas, *tops, *state.original_directories}


def plan_clean(
    state: AcidDirectoryState, lease_read_sets: Iterable[set[str]] = ()
) -> tuple[list[tuple[str, str]], set[str]]:
    """Pure: what to delete from a directory state, and what live leases protect.

    Args:
        state: the state at the compaction's capped snapshot.
        lease_read_sets: for each live lease, the top-level names its snapshot reads.

    Returns:
        ``([(name, reason), ...], protected_names)``: obsolete and aborted names (sorted), and the
        subset some lease still reads.
    """
    candidates = sorted(
        [(name, "obsolete") for name in state.obsolete if "/" not in name]
        + [(name, "aborted") for name in state.aborted if "/" not in name]
    )
    reads: set[str] = set().union(*lease_read_sets)
    return candidates, {name for name, _ in candidates if name in reads}


def _retry(options: CleanerOptions, what: str, action: Callable[[], None]) -> None:
    delay = options.backoff_seconds
    for attempt in range(1, max(1, options.retries) + 1):
        try:
            action()
            return
        except StorageError:
            if attempt >= options.retries:
                raise
            _LOG.warning(
                "%s failed (attempt %d of %d); retrying in %.2f s", what, attempt, options.retries, delay
            )
            options.sleep(delay)
            delay *= 2


def _check_same_store(location: str, table_location: str) -> None:
    """Refuse a partition on another store than its table (another HDFS name node).

    The ledger and the trash live in the table's location and the checks compare store-local
    paths, which cannot tell ``/wh/t`` on two name nodes apart; nothing is deleted.

    Raises:
        UnsafeCleanError: the two locations are on different stores.
    """
    if store_key(location) != store_key(table_location):
        raise UnsafeCleanError(location, table_location)


def _inside(io: FileIO, table_root: str, root: str, name: str) -> str:
    # A partition whose LOCATION lies outside the table directory owns only its own location
    # (Hive's ADD PARTITION .. LOCATION); it may not be a filesystem root or hold the table.
    owner = table_root if is_inside_path(root, table_root, strictly=False) else root
    path = io.join(root, name)
    if (
        not name
        or "/" in name
        or name in (".", "..")
        or not is_inside_path(path, owner)
        or not owner.strip("/")
        or (owner != table_root and is_inside_path(table_root, owner, strictly=False))
    ):
        raise UnsafeCleanError(path, owner)
    return path


@dataclass(frozen=True, slots=True)
class ReaderSnapshot:
    """A snapshot someone reads with, whose files the cleaner must keep.

    Attributes:
        holder: who reads with it, for messages (``reader lease 7``, ``open transaction 12``).
        write_ids: the table's ValidWriteIdList.
        views: the ValidTxnLists to evaluate it with: exactly one for a full snapshot; for a
            lease taken before metastore revision 0003 (no txn list stored) every plausible one,
            and the union of what they read is kept.
    """

    holder: str
    write_ids: ValidWriteIdList
    views: tuple[ValidTxnList, ...]


def reader_snapshots(
    metastore: Metastore,
    table: Table,
    now: float,
    current: ValidTxnList,
    compaction_txn_id: int | None = None,
) -> list[ReaderSnapshot]:
    """Every snapshot of ``table`` someone may read with now: live leases, then open transactions.

    A lease brings its own full snapshot. An open transaction's snapshot is rebuilt as
    ``get_valid_txns(txn)`` (Hive's ``createValidReadTxnList`` for that transaction) and the
    table's write IDs under it; ``find_ready_to_clean`` already waits for every transaction open
    before the compaction committed (HIVE-24291), so this is a second line of defence.

    Args:
        metastore: the metastore.
        table: the table being cleaned.
        now: the clock (epoch seconds); leases expiring at or before it are ignored.
        current: the current ValidTxnList (views of pre-0003 leases).
        compaction_txn_id: the compaction's txn (a pre-0003 lease may predate it).

    Returns:
        The snapshots, leases first, by ID.
    """
    snapshots: list[ReaderSnapshot] = []
    for lease in metastore.list_leases(table.full_name):
        if lease.expires <= now:
            continue
        snapshots.append(
            ReaderSnapshot(
                f"reader lease {lease.lease_id}",
                lease.write_ids,
                (lease.txns,) if lease.txns is not None else _legacy_views(current, compaction_txn_id),
            )
        )
    for txn in metastore.show_transactions():
        if txn.state is not TxnState.OPEN:
            continue
        txns = metastore.get_valid_txns(txn.txn_id)
        write_ids = metastore.get_valid_write_ids(table.full_name, txns)
        snapshots.append(ReaderSnapshot(f"open transaction {txn.txn_id}", write_ids, (txns,)))
    return snapshots


def _legacy_views(current: ValidTxnList, compaction_txn_id: int | None) -> tuple[ValidTxnList, ...]:
    """A lease without its txn list: it may or may not see the compaction's ``_vT`` output."""
    if compaction_txn_id is None:
        return (current,)
    return (
        current,
        ValidTxnList(
            high_watermark=current.high_watermark,
            open_ids=tuple(sorted({*current.open_ids, compaction_txn_id})),
            aborted_ids=current.aborted_ids,
            min_open_id=compaction_txn_id
            if current.min_open_id is None
            else min(current.min_open_id, compaction_txn_id),
        ),
    )


def snapshot_read_set(io: FileIO, root: str, snapshot: ReaderSnapshot) -> set[str]:
    """The top-level names under ``root`` that ``snapshot`` reads (getAcidState over the listing).

    Raises:
        SnapshotLostError: no view of the snapshot is readable from the listing any more
            (NotEnoughHistory): a bug to surface, never "it needs nothing here".
    """
    reads: set[str] = set()
    lost: NotEnoughHistoryError | None = None
    readable = False
    for view in snapshot.views:
        try:
            reads |= _read_set(load_directory_state(io, root, snapshot.write_ids, view))
            readable = True
        except NotEnoughHistoryError as e:
            lost = e
    if not readable and lost is not None:
        raise SnapshotLostError(
            snapshot.holder,
            root,
            snapshot.write_ids.to_string(),
            " or ".join(view.to_string() for view in snapshot.views),
            str(lost).split(";", 1)[0],
        ) from lost
    return reads


def _txns_as_of(txns: ValidTxnList, next_txn_id: int | None) -> ValidTxnList:
    """The transaction list at the compaction's commit: nothing that began after it is visible.

    With it, a newer compaction's ``_vT`` output (a base above this compaction's write IDs) is
    invisible, so an older compaction that was not cleaned before a newer one committed still
    computes its own obsolete set instead of failing with NotEnoughHistory forever.
    """
    if next_txn_id is None or next_txn_id - 1 >= txns.high_watermark:
        return txns
    high = next_txn_id - 1
    open_ids = tuple(i for i in txns.open_ids if i <= high)
    return ValidTxnList(
        high_watermark=high,
        open_ids=open_ids,
        aborted_ids=tuple(i for i in txns.aborted_ids if i <= high),
        min_open_id=open_ids[0] if open_ids else None,
    )


def _ledger_path(io: FileIO, table_root: str, compaction_id: int) -> str:
    return io.join(table_root, LEDGER_DIR, "ledger", f"c{compaction_id}.json")


def _write_ledger(
    io: FileIO,
    table_root: str,
    compaction_id: int,
    actions: Sequence[PathAction],
    *,
    create_root: bool = False,
) -> None:
    # The ledger lives inside the table directory and never brings it back: a table dropped under
    # the cleaner would otherwise exist again on disk, and CREATE TABLE of its name be refused.
    # (``create_root``: the table directory never existed, e.g. all its partitions lie elsewhere.)
    if not create_root and io.info(table_root) is None:
        raise TableDroppedError(posixpath.basename(table_root.rstrip("/")), table_root)
    io.mkdirs(io.join(table_root, LEDGER_DIR, "ledger"))
    payload = json.dumps([asdict(a) for a in actions], indent=1, sort_keys=True).encode()
    io.write_bytes_atomic(_ledger_path(io, table_root, compaction_id), payload)


def _previous_actions(io: FileIO, table_root: str, compaction_id: int) -> list[PathAction]:
    """What an earlier (possibly killed) run of this compaction's cleaning already did."""
    path = _ledger_path(io, table_root, compaction_id)
    if io.info(path) is None:
        return []
    finished: list[PathAction] = []
    for item in _ledger_entries(path, io.read_bytes(path)):
        if item.action != "planned":
            finished.append(item)
        elif io.info(item.path) is None:  # the killed run got to it
            moved = item.trash_path is not None and io.info(item.trash_path) is not None
            finished.append(
                replace(
                    item,
                    action="quarantined" if moved else "deleted",
                    trash_path=item.trash_path if moved else None,
                )
            )
    return finished


_LEDGER_FIELDS: Final = {
    "compaction_id": (int,),
    "table": (str,),
    "partition": (str, type(None)),
    "path": (str,),
    "reason": (str,),
    "action": (str,),
    "trash_path": (str, type(None)),
    "time": (int, float),
}


def _ledger_entries(path: str, payload: bytes) -> list[PathAction]:
    """The rows of one ledger file; a file that is not a list of cleaner actions is refused."""
    try:
        items = json.loads(payload)
    except ValueError as e:
        raise StorageError(
            f"Ledger file {path!r} is not JSON ({e}); expected a list of cleaner actions"
        ) from e
    if not isinstance(items, list):
        raise StorageError(
            f"Ledger file {path!r} holds {type(items).__name__}; expected a list of cleaner actions"
        )
    # Every field of PathAction is known; those without a default are required (rows written by
    # an older acidflow lack the fields added since, which have defaults).
    known = {f.name: f for f in dataclasses.fields(PathAction)}
    required = {n for n, f in known.items() if f.default is dataclasses.MISSING}
    actions = []
    for item in items:
        if not isinstance(item, dict) or not required <= set(item) <= set(known):
            raise StorageError(f"Ledger file {path!r} has row {item!r}; expected the fields {sorted(known)}")
        bad = [
            k
            for k, kinds in _LEDGER_FIELDS.items()
            if k in item and (not isinstance(item[k], kinds) or isinstance(item[k], bool))
        ]
        if bad:
            raise StorageError(
                f"Ledger file {path!r} has row {item!r} with a bad {bad[0]!r}; expected a cleaner action"
            )
        actions.append(PathAction(**item))
    return actions


def read_ledger(table_location: str) -> list[PathAction]:
    """Every ledger line of a table, by compaction ID then path.

    Raises:
        StorageError: a ledger file that is not a JSON list of cleaner actions (named).
    """
    io, table_root = file_io_for(table_location)
    directory = io.join(table_root, LEDGER_DIR, "ledger")
    if io.info(directory) is None:
        return []
    actions: list[PathAction] = []
    for child in sorted(io.list_dir(directory), key=lambda c: c.name):
        if child.name.endswith(".json"):
            actions.extend(_ledger_entries(child.path, io.read_bytes(child.path)))
    return sorted(actions, key=lambda a: (a.compaction_id, a.path))


def clean_compaction(
    metastore: Metastore,
    compaction: CompactionInfo,
    options: CleanerOptions | None = None,
    now: float | None = None,
) -> CleanResult:
    """Clean one compaction that ``find_ready_to_clean`` returned (see the module docstring).

    Raises:
        UnsafeCleanError: a path outside the table location (nothing deleted for this compaction).
        SnapshotLostError: a live lease or open transaction cannot read its snapshot any more
            (nothing deleted).
        NotEnoughHistoryError: the capped state is unreadable and no newer compaction supersedes
            this one (nothing deleted).
        StorageError: the store kept failing after the retries (the entry stays ready).
    """
    options = options or CleanerOptions()
    now = time.time() if now is None else now
    try:
        table = metastore.get_table(compaction.table)
    except NoSuchTableError as e:
        raise TableDroppedError(compaction.table, "(unknown location)") from e
    location = partition_location(metastore, table, compaction.partition)
    _check_same_store(location, table.location)
    io, root = file_io_for(location)
    _, table_root = file_io_for(table.location)
    if io.info(root) is None:  # the partition was dropped: nothing left to clean
        if not options.dry_run:
            metastore.mark_cleaned(compaction.id)
        return CleanResult(compaction.id, "cleaned", f"{root} no longer exists")
    txns = metastore.get_valid_txns()
    reader = metastore.get_valid_write_ids(table.full_name, txns)
    highest = (
        compaction.highest_write_id if compaction.highest_write_id is not None else reader.high_watermark
    )
    # Hive's Cleaner: the reader's list with the high watermark lowered to the compaction's ...
    capped = ValidWriteIdList(
        high_watermark=min(highest, reader.high_watermark),
        aborted_ids=tuple(i for i in reader.aborted_ids if i <= highest),
        table_name=reader.table_name,
    )
    # ... and, unlike Hive, transactions as of the compaction's commit, so the output of a newer
    # compaction (committed later) does not hide this one's obsolete set behind NotEnoughHistory.
    capped_txns = _txns_as_of(txns, compaction.next_txn_id)
    try:
        state = load_directory_state(io, root, capped, capped_txns)
    except NotEnoughHistoryError:
        newer = _superseding(metastore, compaction)
        if newer is None:
            raise
        if not options.dry_run:
            metastore.mark_cleaned(compaction.id)
        return CleanResult(
            compaction.id,
            "superseded",
            f"compaction {newer.id} (highest write ID {newer.highest_write_id}) made everything this "
            "one made obsolete obsolete too; nothing deleted, it cleans them",
        )
    # Every snapshot someone reads with keeps every directory it reads (raises SnapshotLostError
    # if one can no longer be read at all: then nothing is deleted).
    snapshots = reader_snapshots(metastore, table, now, txns, compaction.txn_id)
    read_sets = [snapshot_read_set(io, root, snapshot) for snapshot in snapshots]
    candidates, protected = plan_clean(state, read_sets)
    paths = [(_inside(io, table_root, root, name), reason) for name, reason in candidates]

    def action(path: str, reason: str, what: str, trash: str | None = None) -> PathAction:
        return PathAction(
            compaction.id, table.full_name, compaction.partition, path, reason, what, trash, now
        )

    if protected:
        names = ", ".join(sorted(protected))
        holders = [snap.holder for snap, reads in zip(snapshots, read_sets, strict=True) if reads & protected]
        leases = sum(1 for holder in holders if holder.startswith("reader lease"))
        return CleanResult(
            compaction.id,
            "waiting",
            f"{leases} live reader lease(s) and {len(holders) - leases} open transaction(s) still read "
            f"{names} ({', '.join(holders)}); nothing deleted",
        )
    if options.dry_run:
        actions = tuple(action(path, reason, "would delete") for path, reason in paths)
        return CleanResult(compaction.id, "dry_run", f"would delete {len(actions)} path(s)", actions)
    if paths:
        _check_superseding(io, root, state, recorded_rows(*file_io_for(table.location), compaction.partition))
    trash_root = io.join(table_root, TRASH_DIR, f"c{compaction.id}", *(compaction.partition or "").split("/"))
    planned = [
        action(
            path,
            reason,
            "planned",
            io.join(trash_root, posixpath.basename(path)) if options.quarantine else None,
        )
        for path, reason in paths
    ]
    step = options.on_step or (lambda _step, _path: None)

    root_existed = io.info(table_root) is not None

    def still_there() -> None:
        # DROP TABLE forgets the queue entry and deletes the directory: stop, recreate nothing.
        if not _table_exists(metastore, table) or (root_existed and io.info(table_root) is None):
            raise TableDroppedError(table.full_name, table_root)

    def write_ledger(actions: Sequence[PathAction]) -> None:
        _write_ledger(io, table_root, compaction.id, actions, create_root=not root_existed)

    done = [
        a for a in _previous_actions(io, table_root, compaction.id) if a.path not in {p.path for p in planned}
    ]
    step("ledger", None)
    still_there()
    _retry(options, "write the ledger", lambda: write_ledger([*done, *planned]))
    for item in planned:
        step("deleting", item.path)
        still_there()
        if item.trash_path is not None:
            trash_path = item.trash_path

            def move(source: str = item.path, target: str = trash_path) -> None:
                if io.info(source) is None:
                    return  # moved by an earlier, killed run
                io.mkdirs(posixpath.dirname(target))
                io.rename(source, target)

            _retry(options, f"quarantine {item.path}", move)
            done.append(action(item.path, item.reason, "quarantined", trash_path))
        else:
            _retry(options, f"delete {item.path}", lambda path=item.path: _delete(io, path))  # type: ignore[misc]
            done.append(action(item.path, item.reason, "deleted"))
    still_there()
    _retry(options, "write the ledger", lambda: write_ledger(done))
    step("marking", None)
    still_there()
    # Hive 4's Cleaner hands markCleaned the directory state's aborted facts, so the metastore
    # may forget aborted writes whose files are gone (and only those).
    metastore.mark_cleaned(
        compaction.id,
        has_uncompacted_aborts=state.has_uncompacted_aborts,
        aborted_write_ids=state.aborted_write_ids,
    )
    _best_effort_prune(table, compaction.partition, root)
    verb = "quarantined" if options.quarantine else "deleted"
    return CleanResult(compaction.id, "cleaned", f"{verb} {len(planned)} path(s)", tuple(done))


def _check_superseding(
    io: FileIO, root: str, state: AcidDirectoryState, recorded: dict[str, dict[str, int]]
) -> None:
    """Read the footer of every file of what supersedes the obsolete directories, before any delete.

    Hive's cleaner deletes without looking; a base or delta corrupted after its compaction
    committed would then leave the table without any good copy of its rows. Every file must read,
    and where acidflow's worker recorded the output (``recorded``: the output manifests, by
    directory name), the footers' row counts must be what it wrote, file for file. The deltas stay
    until the output reads again (the failure is retried and, after the last retry, marked failed:
    the operator page and the Airflow alerts show it).

    Raises:
        CorruptDataError: a file of the base or a delta does not read, or its rows (or its set of
            files) differ from what the compaction recorded at commit (named).
    """
    from acid_core.orc.files import read_footers  # pyarrow: only once there is something to delete

    for name in (*((state.base,) if state.base else ()), *state.deltas):
        directory = io.join(root, name)
        try:
            footers = read_footers(io, directory)
        except (NotAnAcidFileError, CorruptDataError, StorageError) as e:
            raise CorruptDataError(
                directory,
                f"it supersedes the directories to delete, and it does not read ({e})",
                "every file of the compaction's output readable before its inputs are deleted; nothing "
                "was deleted",
            ) from e
        expected = recorded.get(name)
        footers = {file: rows for file, rows in footers.items() if rows}  # as recorded: files with events
        if expected is not None and footers != expected:
            differ = sorted(
                set(footers) ^ set(expected) | {f for f in footers if footers[f] != expected.get(f)}
            )
            found = {f: footers.get(f, "missing") for f in differ}
            wrote = {f: expected.get(f, "not written") for f in differ}
            raise CorruptDataError(
                directory,
                f"it supersedes the directories to delete, and its files hold other rows than its "
                f"compaction wrote (footer rows {found}, recorded at commit {wrote})",
                "every file of the compaction's output as the compaction recorded it before its inputs "
                "are deleted; nothing was deleted",
            )


def _best_effort_prune(table: Table, partition: str | None, root: str) -> None:
    """Forget the output manifests whose directories are all gone (a failure only leaves a small file)."""
    try:
        table_io, table_root = file_io_for(table.location)
        prune_output_manifests(table_io, table_root, partition, root)
    except (StorageError, CorruptDataError) as e:
        _LOG.warning("cleaner: output manifests of %s not pruned: %s", table.full_name, e)


def _table_exists(metastore: Metastore, table: Table) -> bool:
    """Whether the metastore still has ``table`` (the same location: not dropped and created again)."""
    try:
        return metastore.get_table(table.full_name).location == table.location
    except NoSuchTableError:
        return False


def _dropped(metastore: Metastore, compaction: CompactionInfo) -> bool:
    """Whether a failure came from DROP TABLE: the table or its queue entry is gone."""
    try:
        metastore.get_table(compaction.table)
        metastore.get_compaction(compaction.id)
    except (NoSuchTableError, NoSuchCompactionError):
        return True
    return False


def _delete(io: FileIO, path: str) -> None:
    info = io.info(path)
    if info is None:
        return
    if info.is_dir:
        io.delete_dir(path)
    else:
        io.delete_file(path)


def _superseding(metastore: Metastore, compaction: CompactionInfo) -> CompactionInfo | None:
    """A newer compaction of the same table/partition, ready for cleaning, whose output covers ours."""
    if compaction.highest_write_id is None:
        return None
    newer = [
        other
        for other in metastore.show_compactions(compaction.table)
        if other.id != compaction.id
        and other.partition == compaction.partition
        and other.state is CompactionState.READY_FOR_CLEANING
        and other.highest_write_id is not None
        and other.highest_write_id > compaction.highest_write_id
    ]
    return min(newer, key=lambda c: c.id) if newer else None


def _failed_attempts(retry_retention: float, first: float) -> int:
    """How many cleaning runs failed so far, from the entry's retry retention (Hive's formula)."""
    if retry_retention <= 0 or first <= 0:
        return 0
    return int(math.log(retry_retention / first) / math.log(2)) + 1


def _record_failure(
    metastore: Metastore, compaction: CompactionInfo, error: AcidError, options: CleanerOptions, now: float
) -> CleanResult:
    """Hive's ``handleCleanerAttemptFailure``: back off exponentially, fail after ``max_attempts``."""
    reason = str(error)
    attempts = _failed_attempts(compaction.retry_retention, options.retry_retention_seconds)
    if options.dry_run:
        return CleanResult(compaction.id, "retrying", f"would retry: {reason}")
    if attempts >= options.max_attempts:
        message = f"cleaning failed {attempts + 1} time(s), giving up: {reason}"
        metastore.mark_failed(compaction.id, message, now=now)
        _LOG.error("compaction %d of %s: %s", compaction.id, compaction.table, message)
        return CleanResult(compaction.id, "failed", message)
    retention = (2**attempts) * options.retry_retention_seconds
    metastore.set_cleaner_retry_retention(compaction.id, retention, reason)
    message = (
        f"cleaning failed (retry {attempts + 1} of {options.max_attempts} after {retention:g} s): {reason}"
    )
    _LOG.warning("compaction %d of %s: %s", compaction.id, compaction.table, message)
    return CleanResult(compaction.id, "retrying", message)


def run_cleaner(
    metastore: Metastore, options: CleanerOptions | None = None, now: float | None = None
) -> list[CleanResult]:
    """Clean every compaction that is ready; one failing compaction does not stop the others.

    Ready compactions are cleaned lowest highest-write-ID first per partition (Hive 4's
    ``findReadyToClean``). A run that fails leaves the entry ready for cleaning with a retry
    retention of ``retry_retention_seconds * 2**(failed runs - 1)`` (Hive's
    ``CQ_RETRY_RETENTION``); the ``max_attempts``-th failure marks it failed with the reason, so
    the next compaction of that partition is cleaned and the table converges to its newest base
    plus newer deltas. Unless ``dry_run``, the transaction reaper runs first and the metastore's
    housekeeping last.

    Returns:
        One result per compaction that was ready, including ``retrying`` and ``failed`` ones.
    """
    options = options or CleanerOptions()
    now = time.time() if now is None else now
    if not options.dry_run:
        reap_timed_out_transactions(metastore, options.txn_timeout_seconds, now)
    results: list[CleanResult] = []
    handled: set[int] = set()
    # Cleaning the oldest compaction of a partition makes the next one ready: go on until no
    # compaction this run has not handled yet is ready (each is tried at most once per run).
    for _ in range(_MAX_PASSES):
        ready = [
            c
            for c in metastore.find_ready_to_clean(retention_seconds=options.retention_seconds, now=now)
            if c.id not in handled
        ]
        if not ready:
            break
        for compaction in ready:
            handled.add(compaction.id)
            try:
                results.append(clean_compaction(metastore, compaction, options, now))
            except AcidError as e:
                _LOG.debug("cleaning compaction %d failed", compaction.id, exc_info=True)
                if isinstance(e, TableDroppedError) or _dropped(metastore, compaction):
                    # DROP TABLE forgot the entry with the table: nothing to retry, nothing failed.
                    message = f"table {compaction.table} was dropped while it was cleaned; nothing more done"
                    _LOG.info("compaction %d: %s", compaction.id, message)
                    results.append(CleanResult(compaction.id, "skipped", message))
                    continue
                try:
                    results.append(_record_failure(metastore, compaction, e, options, now))
                except AcidError:
                    _LOG.exception(
                        "recording the failed cleaning of compaction %d of %s failed; it stays ready",
                        compaction.id,
                        compaction.table,
                    )
    if not options.dry_run:
        # Hive's AcidHouseKeeperService: drop transaction records no snapshot can need any more,
        # so the aborted lists of snapshots do not grow forever.
        metastore.housekeeping(now)
    return results


def waiting_to_clean(
    metastore: Metastore,
    handled: Iterable[int],
    options: CleanerOptions | None = None,
    now: float | None = None,
) -> list[CleanResult]:
    """The compactions 'ready for cleaning' that a run did not clean, each with why it waits.

    ``find_ready_to_clean`` (Hive's ``findReadyToClean``) leaves out an entry while a transaction
    older than its commit is open (a reader of the old snapshot may still read the files it
    replaced), while its retention runs, while an older compaction of the same partition is not
    cleaned yet, or (on a Hive Metastore) while a lock older than its commit is held. Hive says
    nothing about them; ``acidflow clean`` reports each as ``waiting`` with the reason found here,
    so an operator sees why nothing was deleted. Reads only; ``handled``: the entries this run
    returned a result for.
    """
    options = options or CleanerOptions()
    now = time.time() if now is None else now
    done = set(handled)
    pending = [
        c
        for c in metastore.show_compactions()
        if c.state == CompactionState.READY_FOR_CLEANING and c.id not in done
    ]
    if not pending:
        return []
    lowest_open = metastore.min_open_txn_id()
    oldest: dict[tuple[str, str | None], int] = {}
    for c in pending:
        key = (c.table, c.partition)
        oldest[key] = min(oldest.get(key, c.id), c.id)
    waiting: list[CleanResult] = []
    for c in pending:
        where = c.table if c.partition is None else f"{c.table} partition {c.partition}"
        wait_until = (
            None if c.commit_time is None else c.commit_time + options.retention_seconds + c.retry_retention
        )
        if c.next_txn_id is not None and lowest_open is not None and c.next_txn_id > lowest_open:
            why = (
                f"transaction {lowest_open} is still open and began before the compaction committed:"
                " a reader of the older snapshot may read the files it replaced; the cleaner waits"
                " until it commits or aborts (`acidflow sql 'SHOW TRANSACTIONS'` lists them)"
            )
        elif wait_until is not None and wait_until > now:
            why = f"its retention runs until {wait_until - now:.0f} s from now" + (
                f" (after a failed run: {c.error_message})" if c.retry_retention and c.error_message else ""
            )
        elif oldest[(c.table, c.partition)] != c.id:
            why = f"compaction {oldest[(c.table, c.partition)]} of the same partition is cleaned first"
        else:
            why = (
                "not ready for acidflow's cleaner: a lock taken before the compaction committed is"
                " still held, or its metastore cleans it itself (Hive 4 without ACIDFLOW_HMS_DB)"
            )
        waiting.append(CleanResult(c.id, "waiting", f"{where}: {why}; nothing deleted"))
    return waiting


def _skip(item: PathAction, why: str, on_skip: Callable[[PathAction, str], None] | None) -> None:
    _LOG.warning("ledger row of compaction %d skipped: %s", item.compaction_id, why)
    if on_skip is not None:
        on_skip(item, why)


def _in_owned(io: FileIO, path: str, roots: Sequence[str]) -> bool:
    """Whether ``path`` lies strictly below one of ``roots``, as written and with symlinks resolved."""
    return any(
        is_inside_path(path, root) and is_inside_path(real_path(io, path), real_path(io, root))
        for root in roots
    )


def _table_root(table_location: str) -> tuple[FileIO, str]:
    io, table_root = file_io_for(table_location)
    if not table_root.strip("/"):
        raise UnsafeDeleteError(
            table_location, "the table location is a filesystem root", "a table directory of its own"
        )
    return io, table_root


def _trash_problem(io: FileIO, table_root: str, item: PathAction) -> str | None:
    trash = io.join(table_root, TRASH_DIR)
    if item.trash_path is None or not _in_owned(io, item.trash_path, [trash]):
        return f"its trash path {item.trash_path!r} is not inside the table's trash {trash!r}"
    real_trash = io.join(real_path(io, table_root), TRASH_DIR)
    if not is_inside_path(real_path(io, item.trash_path), real_trash):
        return f"its trash path {item.trash_path!r} leads outside the table's trash {trash!r}"
    return None


def purge_trash(
    table_location: str,
    older_than_seconds: float = 0.0,
    now: float | None = None,
    *,
    on_skip: Callable[[PathAction, str], None] | None = None,
) -> list[str]:
    """Delete quarantined directories moved into the trash more than ``older_than_seconds`` ago.

    Only paths inside ``<table>/_acidflow_trash`` (also once symbolic links are resolved) are
    deleted; a ledger row pointing elsewhere is reported (``on_skip``, a warning) and skipped.

    Returns:
        The trash paths deleted.

    Raises:
        StorageError: a ledger file that is not a JSON list of cleaner actions.
        UnsafeDeleteError: the table location is a filesystem root.
    """
    now = time.time() if now is None else now
    io, table_root = _table_root(table_location)
    purged: list[str] = []
    for item in read_ledger(table_location):
        if item.action != "quarantined" or not item.trash_path or now - item.time < older_than_seconds:
            continue
        problem = _trash_problem(io, table_root, item)
        if problem is not None:
            _skip(item, problem, on_skip)
            continue
        if io.info(item.trash_path) is not None:
            io.delete_dir(item.trash_path)
            purged.append(item.trash_path)
    return purged


def restore_from_trash(
    table_location: str,
    compaction_id: int,
    *,
    partition_locations: Sequence[str] = (),
    on_skip: Callable[[PathAction, str], None] | None = None,
) -> list[str]:
    """Move one compaction's quarantined directories back where they were (they are obsolete again).

    Only a move from inside ``<table>/_acidflow_trash`` to inside the table location (or the
    location of one of its partitions, ``partition_locations``), outside the cleaner's own
    directories, is done; a ledger row pointing elsewhere is reported (``on_skip``) and skipped.

    Returns:
        The restored paths.

    Raises:
        StorageError: a path to restore exists again (nothing is overwritten), or a bad ledger file.
        UnsafeDeleteError: the table location is a filesystem root.
        NothingToRestoreError: the compaction quarantined nothing, or nothing of it is left in
            the trash (restored or purged before); a skipped row is not this error (``on_skip``).
    """
    io, table_root = _table_root(table_location)
    # Partitions on another store (another HDFS name node) own nothing here: their store-local
    # paths would name directories of the table's store.
    same_store = [loc for loc in partition_locations if store_key(loc) == store_key(table_location)]
    roots = [table_root, *(file_io_for(location)[1] for location in same_store)]
    private = [io.join(table_root, TRASH_DIR), io.join(table_root, LEDGER_DIR)]
    restored: list[str] = []
    quarantined = skipped = 0
    for item in read_ledger(table_location):
        if item.compaction_id != compaction_id or item.action != "quarantined" or not item.trash_path:
            continue
        quarantined += 1
        problem = _trash_problem(io, table_root, item)
        if problem is None and (
            not _in_owned(io, item.path, roots)
            or any(is_inside_path(item.path, p, strictly=False) for p in private)
        ):
            problem = (
                f"its path {item.path!r} is not inside the table location {table_root!r} or its partitions'"
            )
        if problem is not None:
            _skip(item, problem, on_skip)
            skipped += 1
            continue
        if io.info(item.trash_path) is None:
            continue
        if io.info(item.path) is not None:
            raise StorageError(f"Cannot restore {item.trash_path!r}: {item.path!r} exists; expected it gone")
        io.rename(item.trash_path, item.path)
        restored.append(item.path)
    if not restored and not skipped:
        raise NothingToRestoreError(
            table_location,
            compaction_id,
            "the cleaner's ledger has no directory it quarantined"
            if not quarantined
            else f"none of its {quarantined} quarantined directories is in the trash any more "
            "(restored or purged before)",
        )
    return restored
