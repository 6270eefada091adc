"""Run one queued compaction: a compaction transaction, a streaming merge per bucket, verify, commit.

::

    execute_compaction(metastore, claimed)                         the driver (embedded or Spark)
      1. open_compaction_txn: a COMPACTION txn T, named on the entry in the same metastore
         transaction; its ValidTxnList; the compactor's ValidCompactorWriteIdList
      2. update_compactor_state(id, T, hwm); load_directory_state; plan_compaction    (planner)
      3. writing    one BucketTask per bucket -> run_tasks (embedded loop, or Spark tasks)
                    compact_bucket: the reader's ordered merge of the plan's inputs for ONE bucket,
                    written as event files into  <partition>/.acidflow-staging-c<id>-t<T>/<output>/
      4. verifying  every output file re-read (one per core at a time): event count and key
                    checksum == the merge's
      5. renaming   staging/<output> -> <partition>/<output>          (base_N_vT, delta_a_b_vT, ...)
                    then the output manifest (rows per file, ``output_manifest``): the cleaner
                    checks the footers against it before it deletes what the output supersedes
      6. committing commit_txn(T): the output becomes visible (``_vT``) and the queue records the
                    cleaner's rule (next txn ID at commit)
      7. marking    mark_compacted(id): 'w' -> ready for cleaning

The per-bucket merge (step 3's ``compact_bucket``, ``BucketTask``/``BucketResult``, the output
check of step 4) lives in ``bucket_merge``, the part executors run; this module drives one
compaction around it. The helpers every role shares (``partition_location``, the reaper) live in
``common`` (re-exported here and by ``cleaner`` for existing callers).

Crash windows (each is safe; ``recover_abandoned_compactions`` finishes the job on the next run;
it recovers an entry whose worker is a dead process of this host, or that has been 'working'
longer than the worker timeout, Hive's ``hive.compactor.worker.timeout``, 86400 s by default. The
dead worker's maintenance lock goes with its lock session: the SQL lock manager frees a session
whose owner is a dead local process at once, ZooKeeper when the session times out):

- before the lock, or holding it before step 1: nothing was written. Recovery fails the entry
  and queues the compaction again.
- after step 1, before writing: T is open and named on the entry (``open_compaction_txn`` opens
  and records it at once), so recovery aborts it; no orphan txn holds the cleaner back until the
  reaper's timeout.

- writing / verifying: only the hidden staging directory exists; readers skip hidden names. T is
  open, so nothing is visible. Recovery aborts T, deletes the staging directory, fails the queue
  entry and queues the compaction again.
- renaming: some outputs are in place as ``..._vT``; a ``_vT`` directory is used by readers only
  once T commits (``AcidUtils.isDirUsable``), so they are invisible. Recovery aborts T; they are
  then "aborted" directories, deleted by the cleaner. With Hive 3.1 names (no ``_v``) an output is
  visible as soon as it is renamed; it holds exactly the rows of the inputs it covers (verified
  before the rename), so a reader picking it up reads the same rows. On an object store (S3, GCS)
  a directory rename moves object by object, so a reader could see a partial Hive 3.1-named output:
  such a compaction is refused before anything is written (``_vT`` names are not affected).
- committing: T commits atomically in the metastore; before it nothing changed for readers, after
  it the outputs are used and the inputs become obsolete. A ``commit_txn`` that raises may still
  have committed (the metastore went away with the answer): the worker reads T back. Committed:
  it marks the entry compacted. Aborted (or open, then aborted here): the outputs are undone as
  above. Unreadable: nothing is deleted, the entry stays 'working' and recovery decides by T.
- marking: T is committed but the entry is still 'working'; recovery sees the committed T and
  marks it compacted. Once housekeeping has deleted T (ended long ago), its outcome is unknown:
  recovery queues the compaction again, as Hive's ``revokeFromLocalWorkers`` does.

Heartbeats: T is heartbeated after each bucket and, from a thread, every
``WorkerOptions.heartbeat_seconds`` (half Hive's ``hive.txn.timeout``, as Hive's
``CompactionHeartbeater``) from its opening to its commit: on a slow store one bucket, or the
listing before the first one, may outlast the reaper's timeout. The thread and the worker share the
metastore client one call at a time (a Thrift client is not thread-safe).

Concurrency: one compaction per table/partition at a time (the queue's rule); many workers may
run different compactions. Idempotency: re-running a failed compaction uses a new T and new names.
Not here: deciding (``initiator``), planning (``planner``), deleting inputs (``cleaner``).
Errors: ``CompactionVerificationError`` (output does not match; nothing committed),
``NoSuchPartitionError``/``InvalidPartitionError`` (the entry names no existing partition; nothing
is touched), and whatever the metastore, reader or writer raise; the queue entry is marked failed
with the message.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal, cast

from acid_core.compaction.common import DEFAULT_TXN_TIMEOUT_SECONDS, partition_location
from acid_core.compaction.initiator import CompactionType
from acid_core.compaction.output_manifest import write_output_manifest
from acid_core.compaction.planner import (
    HIVE31_NAMES,
    CompactionPlan,
    NothingToCompact,
    is_hive31_names,
    plan_compaction,
)
from acid_core.directory import load_directory_state
from acid_core.errors import (
    AcidError,
    CompactionVerificationError,
    InvalidPartitionError,
    LockTimeoutError,
    NoSuchPartitionError,
    NoSuchTxnError,
    TxnNotOpenError,
    one_line,
)
from acid_core.fs import file_io_for, has_atomic_directory_rename, real_path
from acid_core.locations import is_inside_path
from acid_core.locks import is_dead_local_process, parse_lock_object
from acid_core.locks.planner import StatementKind, StatementLocks, plan_statement_locks
from acid_core.metastore import CompactionInfo, CompactionState, Metastore, TableType, TxnState
from acid_core.metastore import CompactionType as MetastoreCompactionType
from acid_core.paths import (
    METADATA_FILE,
    BaseDir,
    parse_acid_dir,
    try_parse_bucket_file,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    # Re-exported lazily (``__getattr__``): the per-bucket merge pulls in pyarrow and numpy, which
    # ``acidflow compact`` on an empty queue never needs (issue 14 goal 3, start-up).
    from acid_core.compaction.bucket_merge import (
        BucketOutput,
        BucketResult,
        BucketTask,
        compact_bucket,
        embedded_parallelism,
        is_key_ordered,
    )
    from acid_core.fs import FileIO
    from acid_core.locks import LockManager
    from acid_core.metastore import Table
    from acid_core.orc.schema import RowType
    from acid_core.writeids import ValidCompactorWriteIdList, ValidTxnList

_LAZY_EXPORTS: Final = frozenset(
    {
        "BucketOutput",
        "BucketResult",
        "BucketTask",
        "compact_bucket",
        "embedded_parallelism",
        "is_key_ordered",
    }
)


def __getattr__(name: str) -> object:
    """The per-bucket merge's names, imported on first use (they need pyarrow and numpy)."""
    if name in _LAZY_EXPORTS:
        from acid_core.compaction import bucket_merge

        return getattr(bucket_merge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_tasks_embedded(
    tasks: Sequence[BucketTask], heartbeat: Callable[[], None], *, parallel: int | None = None
) -> list[BucketResult]:
    """``bucket_merge.run_tasks_embedded`` (the default task runner), imported when tasks run."""
    from acid_core.compaction import bucket_merge

    return bucket_merge.run_tasks_embedded(tasks, heartbeat, parallel=parallel)


__all__ = [
    "STAGING_PREFIX",
    "BucketOutput",
    "BucketResult",
    "BucketTask",
    "CompactionOutcome",
    "DEFAULT_WORKER_TIMEOUT_SECONDS",
    "WorkerOptions",
    "check_compaction_target",
    "compact_bucket",
    "default_worker_id",
    "embedded_parallelism",
    "execute_compaction",
    "input_bytes",
    "is_key_ordered",
    "partition_location",
    "recover_abandoned_compactions",
    "run_tasks_embedded",
    "run_worker",
    "staging_name",
]

_LOG = logging.getLogger(__name__)

STAGING_PREFIX: Final = ".acidflow-staging-"
_METADATA_TEXT: Final = b'{"thisFileVersion":"0","dataFormat":"compacted"}'
DEFAULT_WORKER_TIMEOUT_SECONDS: Final = 86400.0
"""Hive's ``hive.compactor.worker.timeout``: a 'working' compaction older than this is recovered."""

Step = Literal["writing", "verifying", "renaming", "renamed", "committing", "marking"]


def staging_name(compaction_id: int, txn_id: int) -> str:
    """The hidden staging directory of one compaction attempt (readers skip names starting with ``.``)."""
    return f"{STAGING_PREFIX}c{compaction_id}-t{txn_id}"


def default_worker_id() -> str:
    """``<host>-<pid>``: recovery can tell a dead local worker from a live one."""
    return f"{socket.gethostname()}-{os.getpid()}"


# --- the driver ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How the worker writes and where large compactions run.

    Attributes:
        compression: ORC compression of the output.
        stripe_size: ORC stripe size of the output (bytes).
        large_runner: runs the tasks of compactions whose inputs reach ``large_threshold_bytes``
            (the Spark executor); None keeps everything embedded.
        large_threshold_bytes: input bytes from which ``large_runner`` is used.
        heartbeat_seconds: how often a thread heartbeats the compaction's transaction between its
            opening and its commit (half the reaper's default timeout); None: only after each bucket.
    """

    compression: str = "zlib"
    stripe_size: int = 64 * 1024 * 1024
    large_runner: Callable[[Sequence[BucketTask], Callable[[], None]], list[BucketResult]] | None = None
    large_threshold_bytes: int = 1 << 30
    heartbeat_seconds: float | None = DEFAULT_TXN_TIMEOUT_SECONDS / 2


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    """What ``execute_compaction`` did.

    Attributes:
        compaction_id: the queue entry.
        status: ``compacted``, ``nothing_to_rewrite`` (ready for cleaning anyway) or ``refused``.
        message: one sentence.
        outputs: output directory names written.
        events: events written per output directory.
        input_bytes: bytes of the inputs.
        executor: ``embedded`` or ``large`` (the large-table runner).
        seconds: wall time.
        lock_refused: ``refused`` only because the maintenance lock was taken: nothing was
            wrong with the compaction, it could not start now (worth running again later).
    """

    compaction_id: int
    status: str
    message: str
    outputs: tuple[str, ...] = ()
    events: dict[str, int] = field(default_factory=dict)
    input_bytes: int = 0
    executor: str = "embedded"
    seconds: float = 0.0
    lock_refused: bool = False


def input_bytes(io: FileIO, root: str, plan: CompactionPlan) -> int:
    """Bytes of every file the plan reads."""
    total = 0
    for name in (plan.base, *plan.deltas, *plan.delete_deltas):
        if name is not None:
            total += sum(child.size for child in io.list_dir(io.join(root, name)) if not child.is_dir)
    for relative in plan.original_files:
        info = io.info(io.join(root, *relative.split("/")))
        total += 0 if info is None else info.size
    return total


def _buckets(io: FileIO, root: str, plan: CompactionPlan) -> list[int]:
    from acid_core.compaction.bucket_merge import bucket_of_file

    found: set[int] = set()
    for name in (plan.base, *plan.deltas, *plan.delete_deltas):
        if name is None:
            continue
        for child in io.list_dir(io.join(root, name)):
            bucket = None if child.is_dir else bucket_of_file(child.name)
            if bucket is not None:
                found.add(bucket)
    for relative in plan.original_files:
        bucket = bucket_of_file(relative.rsplit("/", 1)[-1])
        found.add(0 if bucket is None else bucket)
    return sorted(found)


def _implicit_bucket_count(io: FileIO, root: str) -> int:
    """The distinct bucket IDs of every ``bucket_N`` file under the partition (at least 1).

    As Hive 4's ``RebalanceQueryCompactor`` when no ``CLUSTERED INTO n BUCKETS`` was given: it lists
    the whole partition directory recursively, obsolete and aborted directories included (staging
    directories of acidflow are hidden names and left out).
    """
    found = {
        parsed.bucket_id
        for child in io.list_tree(root)
        if not child.is_dir
        and "/." not in child.path[len(root) :]
        and (parsed := try_parse_bucket_file(child.name)) is not None
    }
    return max(1, len(found))


def _rebalance_layout(
    io: FileIO, root: str, plan: CompactionPlan, write_ids: ValidCompactorWriteIdList, txns: ValidTxnList
) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """The rebalance's row count and delta marks from the footers, once for every task (or None).

    A file the footers cannot be read from is left to the tasks, which fail on it as before.
    """
    from acid_core.compaction.bucket_merge import plan_rebalance_layout

    try:
        return plan_rebalance_layout(io, root, plan.input_names, write_ids, txns)
    except AcidError as error:
        _LOG.info("rebalance layout not taken from the footers (the tasks count): %s", one_line(error))
        return None


def _tasks(
    compaction_id: int,
    location: str,
    plan: CompactionPlan,
    buckets: Sequence[int],
    staging: str,
    write_ids: ValidCompactorWriteIdList,
    txns: ValidTxnList,
    row_type: RowType,
    options: WorkerOptions,
    order_by: str | None = None,
    layout: tuple[int, tuple[tuple[int, int], ...]] | None = None,
) -> list[BucketTask]:
    from acid_core.compaction.bucket_merge import BucketTask

    insert_inputs: tuple[str, ...]
    delete_inputs: tuple[str, ...]
    if plan.compaction_type is CompactionType.REBALANCE:
        # One task per *output* bucket: each reads every input bucket and keeps its slice.
        return [
            BucketTask(
                compaction_id=compaction_id,
                location=location,
                staging=staging,
                bucket_id=bucket,
                outputs=plan.output_names,
                insert_inputs=plan.input_names,
                delete_inputs=(),
                write_ids=write_ids.to_string(),
                txns=txns.to_string(),
                row_type=row_type.to_orc(),
                compression=options.compression,
                stripe_size=options.stripe_size,
                rebalance_buckets=len(buckets),
                order_by=order_by or "",
                rebalance_rows=-1 if layout is None else layout[0],
                rebalance_marks=() if layout is None else layout[1],
            )
            for bucket in buckets
        ]
    if plan.compaction_type is CompactionType.MAJOR:
        insert_inputs, delete_inputs = plan.input_names, ()
    else:
        insert_inputs, delete_inputs = plan.deltas, plan.delete_deltas
    return [
        BucketTask(
            compaction_id=compaction_id,
            location=location,
            staging=staging,
            bucket_id=bucket,
            outputs=plan.output_names,
            insert_inputs=tuple(insert_inputs),
            delete_inputs=tuple(delete_inputs),
            write_ids=write_ids.to_string(),
            txns=txns.to_string(),
            row_type=row_type.to_orc(),
            compression=options.compression,
            stripe_size=options.stripe_size,
        )
        for bucket in buckets
    ]


def _best_effort(what: str, action: Callable[[], object]) -> None:
    try:
        action()
    except Exception as error:  # cleanup only: the original error is what the caller sees
        # One line (a traceback reaches no user; it stays at debug level).
        _LOG.warning("cleanup step failed: %s: %s", what, one_line(error))
        _LOG.debug("cleanup step failed: %s", what, exc_info=True)


def execute_compaction(
    metastore: Metastore,
    compaction: CompactionInfo,
    *,
    options: WorkerOptions | None = None,
    run_tasks: Callable[[Sequence[BucketTask], Callable[[], None]], list[BucketResult]] = run_tasks_embedded,
    on_step: Callable[[Step], None] | None = None,
    lock_manager: LockManager | None = None,
) -> CompactionOutcome:
    """Run one claimed ('working') compaction to 'ready for cleaning' (see the module docstring).

    Args:
        metastore: the transaction metastore.
        compaction: the claimed queue entry (``find_next_to_compact``).
        options: output and executor options.
        run_tasks: runs the bucket tasks (embedded loop by default; Spark passes its own).
        on_step: called as each step starts, and after each output directory is renamed
            (``renamed``): progress, and fault injection in tests.
        lock_manager: when given, the compaction holds the partition's maintenance lock (X on
            ``db.t[/k=v]#maintenance`` plus S on the table and partition, as planned by
            ``acid_core.locks.planner``) from before it plans until it has committed, so two
            compactions of one partition never overlap and the partition cannot be dropped under
            it. A refused lock marks the entry refused (the next initiator run re-queues it).

    Returns:
        The outcome.

    Raises:
        CompactionVerificationError: the output does not match its inputs (entry marked failed).
        AcidError: any other failure (entry marked failed, transaction aborted, staging removed).
    """
    try:
        table = metastore.get_table(compaction.table)
        check_compaction_target(metastore, table, compaction.partition)
    except AcidError as error:
        # A queue entry naming no table or partition must not stay 'working' (nor touch any path).
        message = _describe(error)
        _best_effort("mark failed", lambda: _fail_if_active(metastore, compaction.id, message))
        raise
    if table.table_type is not TableType.ACID:
        reason = f"{table.full_name} is {table.table_type.value}: acidflow compacts full-ACID (ORC event) tables only"
        metastore.mark_refused(compaction.id, reason)
        return CompactionOutcome(compaction.id, "refused", reason)
    if compaction.compaction_type is MetastoreCompactionType.REBALANCE and table.num_buckets > 0:
        # Hive 4's Worker, word for word (TestCrudCompactorOnTez checks this message).
        reason = "Cannot execute rebalancing compaction on bucketed tables."
        metastore.mark_refused(compaction.id, reason)
        return CompactionOutcome(compaction.id, "refused", reason)
    if lock_manager is None:
        return _execute_compaction(metastore, compaction, table, options, run_tasks, on_step)
    try:
        target = parse_lock_object(
            table.full_name if compaction.partition is None else f"{table.full_name}/{compaction.partition}"
        )
        requests = plan_statement_locks(StatementLocks(StatementKind.COMPACT, target=target, is_acid=True))
        handle = lock_manager.acquire(requests, holder=f"compaction {compaction.id}")
    except LockTimeoutError as refused:
        reason = f"the maintenance lock of {target.to_name()} is taken: {refused}"
        metastore.mark_refused(compaction.id, reason)
        return CompactionOutcome(compaction.id, "refused", reason, lock_refused=True)
    except AcidError as error:  # e.g. the lock service is down: nothing started, nothing stays 'working'
        message = _describe(error)
        _best_effort("mark failed", lambda: _fail_if_active(metastore, compaction.id, message))
        raise
    try:
        return _execute_compaction(metastore, compaction, table, options, run_tasks, on_step)
    finally:
        lock_manager.release(handle)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def check_compaction_target(metastore: Metastore, table: Table, partition: str | None) -> None:
    """Check that a compaction names an existing partition of ``table`` (or none, if unpartitioned).

    Hive's ``AlterTableCompactOperation`` refuses a spec matching no partition
    (``INVALID_PARTITION_SPEC``) and, for a partitioned table, a missing spec.

    Raises:
        InvalidPartitionError: a spec for an unpartitioned table, or none for a partitioned one.
        NoSuchPartitionError: the spec names no partition the metastore knows.
    """
    keys = [key.name for key in table.partition_keys]
    if partition is None:
        if keys:
            raise InvalidPartitionError(
                table.full_name,
                None,
                f"a partition {'/'.join(k + '=...' for k in keys)} of the partitioned table",
            )
        return
    if not keys:
        raise InvalidPartitionError(table.full_name, partition, "no partition: the table is not partitioned")
    if partition not in {candidate.name for candidate in metastore.list_partitions(table.full_name)}:
        raise NoSuchPartitionError(table.full_name, partition)


def _execute_compaction(
    metastore: Metastore,
    compaction: CompactionInfo,
    table: Table,
    options: WorkerOptions | None,
    run_tasks: Callable[[Sequence[BucketTask], Callable[[], None]], list[BucketResult]],
    on_step: Callable[[Step], None] | None,
) -> CompactionOutcome:
    from acid_core.orc.schema import RowType  # pyarrow: only once there is a compaction to run

    options = options or WorkerOptions()
    started = time.monotonic()
    step = on_step or (lambda _step: None)
    location = partition_location(metastore, table, compaction.partition)
    io, root = file_io_for(location)
    row_type = RowType.of([(column.name, column.type) for column in table.columns])
    properties = {**table.properties, **compaction.properties}
    # Opened and named on the entry in one step: killed at any point after, recovery aborts it.
    txn_id = metastore.open_compaction_txn(compaction.id)
    heartbeater = _TxnHeartbeater(metastore, txn_id, options.heartbeat_seconds)
    metastore = heartbeater.metastore  # shared with the thread, one call at a time
    committed = commit_sent = False
    staging: str | None = None
    renamed: list[str] = []
    try:
        txns = metastore.get_valid_txns(txn_id)
        write_ids = metastore.get_compactor_write_ids(table.full_name, txns)
        metastore.update_compactor_state(compaction.id, txn_id, write_ids.high_watermark)
        state = load_directory_state(io, root, write_ids, txns)
        plan = plan_compaction(
            state,
            compaction.compaction_type.value,
            write_ids,
            compaction_txn_id=txn_id,
            hive31_names=is_hive31_names(properties),
        )
        if isinstance(plan, NothingToCompact):
            return _nothing_to_rewrite(metastore, compaction.id, txn_id, plan, started)
        if is_hive31_names(properties) and not has_atomic_directory_rename(io):
            # Without _vT an output is visible once in place, and an object store moves a
            # directory object by object: a reader could see half a base. Refused, nothing written.
            reason = (
                f"{HIVE31_NAMES}=true names outputs without _v<txn>, and {location!r} is on an object "
                "store whose directory rename is not atomic; expected a table whose readers know _v names "
                f"(Hive 3+; unset {HIVE31_NAMES}) or a store with atomic rename (HDFS, local disk)"
            )
            metastore.abort_txn(txn_id)
            metastore.mark_refused(compaction.id, reason)
            return CompactionOutcome(compaction.id, "refused", reason, seconds=time.monotonic() - started)
        existing = [name for name in plan.output_names if io.info(io.join(root, name)) is not None]
        if existing:
            # Only possible with Hive 3.1 names: the same inputs were compacted before.
            metastore.abort_txn(txn_id)
            metastore.mark_refused(compaction.id, f"output {existing[0]!r} already exists")
            return CompactionOutcome(compaction.id, "refused", f"output {existing[0]!r} already exists")
        staging = staging_name(compaction.id, txn_id)
        size = input_bytes(io, root, plan)
        layout = None
        if plan.compaction_type is CompactionType.REBALANCE:
            buckets = list(range(compaction.number_of_buckets or _implicit_bucket_count(io, root)))
            if not compaction.order_by:
                layout = _rebalance_layout(io, root, plan, write_ids, txns)
        else:
            buckets = _buckets(io, root, plan)
        tasks = _tasks(
            compaction.id,
            location,
            plan,
            buckets,
            staging,
            write_ids,
            txns,
            row_type,
            options,
            compaction.order_by,
            layout,
        )

        def heartbeat() -> None:
            metastore.heartbeat(txn_id)

        large = options.large_runner is not None and size >= options.large_threshold_bytes
        if options.large_runner is not None:
            # Issue 14 goal 5: Spark's fixed start-up (tens of seconds) dwarfs a small merge.
            _LOG.info(
                "compaction %d: %d bytes of input %s the large-input threshold of %d bytes: %s executor",
                compaction.id,
                size,
                "reach" if large else "are below",
                options.large_threshold_bytes,
                "the large-input (Spark)" if large else "the embedded",
            )
        step("writing")
        _delete_abandoned_staging(io, root, metastore, table)
        io.mkdirs(io.join(root, staging))
        runner = options.large_runner if large and options.large_runner is not None else run_tasks
        results = runner(tasks, heartbeat)
        heartbeat()
        step("verifying")
        events = _verify_and_finish(io, root, staging, compaction.id, plan, tasks, results)
        heartbeat()  # verifying reads every output's footer: minutes on an object store's big base
        step("renaming")
        for name in plan.output_names:
            io.rename(io.join(root, staging, name), io.join(root, name))
            renamed.append(name)
            step("renamed")
        io.delete_dir(io.join(root, staging))
        _record_output(table, compaction, results)
        heartbeater.stop()
        step("committing")
        commit_sent = True
        metastore.commit_txn(txn_id)
        committed = True
        step("marking")
        metastore.mark_compacted(compaction.id)
        seconds = time.monotonic() - started
        _LOG.info("compaction %d of %s: wrote %s in %.2f s", compaction.id, root, plan.output_names, seconds)
        return CompactionOutcome(
            compaction.id,
            "compacted",
            f"{plan.compaction_type.value} compaction wrote {', '.join(plan.output_names)}",
            plan.output_names,
            events,
            size,
            "large" if large else "embedded",
            seconds,
        )
    except Exception as error:
        outcome = _settle_failed_commit(metastore, txn_id) if commit_sent and not committed else None
        if outcome is TxnState.COMMITTED:
            # The commit happened, its answer did not arrive: the outputs are live, finish the entry.
            _best_effort("mark compacted", lambda: metastore.mark_compacted(compaction.id))
        elif commit_sent and outcome is None:
            # The metastore cannot say whether T committed: the renamed outputs may be live, so
            # nothing is deleted; the entry stays 'working' and recovery finishes or undoes it.
            _LOG.error(
                "compaction %d: commit of txn %d unconfirmed (%s); outputs %s kept for recovery",
                compaction.id,
                txn_id,
                error,
                renamed,
            )
        elif not committed:
            _best_effort("abort txn", lambda: _abort_if_open(metastore, txn_id))
            if staging is not None:
                _best_effort("delete staging", lambda: io.delete_dir(io.join(root, staging)))
            for name in renamed:
                if parse_acid_dir(name).visibility_txn_id:  # invisible (_vT of an aborted T): ours to delete
                    _best_effort("delete output", lambda name=name: io.delete_dir(io.join(root, name)))  # type: ignore[misc]
            message = f"{type(error).__name__}: {error}"
            _best_effort("mark failed", lambda: _fail_if_active(metastore, compaction.id, message))
        # After the commit the output is in place: recovery marks the entry compacted.
        raise
    finally:
        heartbeater.stop()


class _OneCallAtATime:
    """Forwards every method call to ``target`` under ``lock`` (a Thrift client is not thread-safe)."""

    def __init__(self, target: object, lock: threading.Lock) -> None:
        self._target, self._lock = target, lock

    def __getattr__(self, name: str) -> object:
        attribute = getattr(self._target, name)
        if not callable(attribute):
            return attribute

        def call(*args: object, **kwargs: object) -> object:
            with self._lock:
                return attribute(*args, **kwargs)

        return call


class _TxnHeartbeater:
    """Heartbeats a compaction's transaction every ``interval`` seconds from a thread until ``stop``.

    Hive's ``CompactionHeartbeater``: the worker also heartbeats after each bucket, but a bucket (or
    the listing before the first) on a slow store can outlast ``hive.txn.timeout``, and the reaper
    would abort T under a compaction that is alive. A failed beat is logged; the thread stops when
    T is no longer open (the worker's own next call then fails and undoes the compaction).
    """

    def __init__(self, metastore: Metastore, txn_id: int, interval: float | None) -> None:
        self.metastore = cast("Metastore", _OneCallAtATime(metastore, threading.Lock()))
        self._txn_id, self._stopped = txn_id, threading.Event()
        self._thread: threading.Thread | None = None
        if interval is not None:
            self._thread = threading.Thread(
                target=self._run, args=(interval,), name=f"compaction-txn-{txn_id}-heartbeat", daemon=True
            )
            self._thread.start()

    def _run(self, interval: float) -> None:
        while not self._stopped.wait(interval):
            try:
                self.metastore.heartbeat(self._txn_id)
            except TxnNotOpenError as e:
                _LOG.warning("compaction txn %d is no longer open; heartbeats stop: %s", self._txn_id, e)
                return
            except AcidError as e:  # a hiccup: the next beat tries again, well before the timeout
                _LOG.warning("compaction txn %d: heartbeat failed (retried next beat): %s", self._txn_id, e)

    def stop(self) -> None:
        """Stop beating (idempotent); returns once the thread has ended."""
        self._stopped.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()


def _record_output(table: Table, compaction: CompactionInfo, results: Sequence[BucketResult]) -> None:
    """The output manifest (rows per file) the cleaner checks before it deletes what this supersedes."""
    rows: dict[str, dict[str, int]] = {}
    for result in results:
        for output in result.outputs:
            rows.setdefault(output.directory, {})[posixpath.basename(output.path)] = output.events
    table_io, table_root = file_io_for(table.location)
    write_output_manifest(table_io, table_root, compaction.id, compaction.partition, rows)


def _nothing_to_rewrite(
    metastore: Metastore, compaction_id: int, txn_id: int, plan: NothingToCompact, started: float
) -> CompactionOutcome:
    if plan.cleanable:
        # Hive's Worker: nothing to rewrite, but obsolete/aborted directories remain for the cleaner.
        metastore.commit_txn(txn_id)
        metastore.mark_compacted(compaction_id)
        return CompactionOutcome(
            compaction_id, "nothing_to_rewrite", plan.reason, seconds=time.monotonic() - started
        )
    metastore.abort_txn(txn_id)
    metastore.mark_refused(compaction_id, plan.reason)
    return CompactionOutcome(compaction_id, "refused", plan.reason, seconds=time.monotonic() - started)


def _verify_and_finish(
    io: FileIO,
    root: str,
    staging: str,
    compaction_id: int,
    plan: CompactionPlan,
    tasks: Sequence[BucketTask],
    results: Sequence[BucketResult],
) -> dict[str, int]:
    from acid_core.compaction.bucket_merge import verify_output_file
    from acid_core.orc.writer import write_acid_version_file

    expected = sorted(task.bucket_id for task in tasks)
    got = sorted(result.bucket_id for result in results)
    if got != expected:
        raise CompactionVerificationError(compaction_id, "set of buckets written", expected, got)
    events = dict.fromkeys(plan.output_names, 0)
    outputs = [output for result in results for output in result.outputs]
    _verify_outputs(io, compaction_id, outputs, verify_output_file)
    for output in outputs:
        events[output.directory] += output.events
    for output_dir in plan.outputs:
        directory = io.join(root, staging, output_dir.to_name())
        io.mkdirs(directory)
        write_acid_version_file(io, directory)
        if isinstance(output_dir, BaseDir) and plan.metadata_marker:
            io.write_bytes_atomic(io.join(directory, METADATA_FILE), _METADATA_TEXT)
    return events


def _verify_outputs(
    io: FileIO,
    compaction_id: int,
    outputs: Sequence[BucketOutput],
    verify: Callable[[FileIO, int, BucketOutput], None],
) -> None:
    """Re-read the outputs a few at a time (one per core): the step between the job and the commit.

    pyarrow's ORC decode and numpy's checksum release the GIL, so threads overlap; a rebalance's
    or a bucketed table's outputs are verified in about the time of the largest instead of their
    sum. The first failure (in output order) is raised once the running checks end; checks not
    started are cancelled.
    """
    from acid_core.compaction.bucket_merge import embedded_parallelism

    workers = min(len(outputs), embedded_parallelism())
    if workers <= 1:
        for output in outputs:
            verify(io, compaction_id, output)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="acidflow-verify") as pool:
        futures = [pool.submit(verify, io, compaction_id, output) for output in outputs]
        try:
            for future in futures:
                future.result()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _txn_state(metastore: Metastore, txn_id: int) -> TxnState | None:
    """The transaction's state; None once housekeeping deleted it (it ended long ago)."""
    try:
        return metastore.get_txn(txn_id).state
    except NoSuchTxnError:
        return None


def _abort_if_open(metastore: Metastore, txn_id: int) -> None:
    if _txn_state(metastore, txn_id) is TxnState.OPEN:
        metastore.abort_txn(txn_id)


def _settle_failed_commit(metastore: Metastore, txn_id: int) -> TxnState | None:
    """T's state after its ``commit_txn`` raised (aborted here if still open); None when it cannot be read."""
    try:
        if _txn_state(metastore, txn_id) is TxnState.OPEN:
            metastore.abort_txn(txn_id)
        return _txn_state(metastore, txn_id)
    except AcidError as error:  # e.g. the metastore is still unreachable: recovery decides later
        _LOG.warning("the state of compaction txn %d cannot be read: %s", txn_id, error)
        _LOG.debug("the state of compaction txn %d cannot be read", txn_id, exc_info=True)
        return None


def _fail_if_active(metastore: Metastore, compaction_id: int, message: str) -> None:
    state = metastore.get_compaction(compaction_id).state
    if state in (CompactionState.INITIATED, CompactionState.WORKING):
        metastore.mark_failed(compaction_id, message)


# --- recovery and the loop ---------------------------------------------------------------------


def _is_dead_local_worker(worker_id: str | None, started: float | None) -> bool:
    if not worker_id:
        return True
    host, _, pid_text = worker_id.rpartition("-")
    if not pid_text.isdigit():  # "<host>-<pid>-<role>" (the Airflow operator's "-airflow")
        host, _, pid_text = host.rpartition("-")
    if not host or not pid_text.isdigit():
        return False
    # The worker process started before it claimed the entry; a process started after the claim
    # holds a reused process ID.
    return is_dead_local_process(host, int(pid_text), started=started, local_host=socket.gethostname())


_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"c(\d+)-t\d+")


def _delete_abandoned_staging(io: FileIO, root: str, metastore: Metastore, table: Table) -> None:
    """Delete the staging directories of this partition's compactions that are no longer 'working'.

    A worker that failed deletes its staging directory best effort; when the store refused (a
    read-only or full file system) the directory stays, holding a whole compaction's output, and
    nothing else would ever delete it (recovery handles only 'working' entries, the cleaner only
    ACID directories). The caller holds the partition's compaction slot (one compaction per
    partition at a time), so only a 'working' entry's directory (a killed worker's, which recovery
    undoes) may still be in use; every other one is garbage. Only inside the table's own location:
    a partition the metastore places elsewhere is left alone, and so is a name that leads outside
    the partition (a symbolic link). Best effort: a failure is logged.
    """
    try:
        table_root = file_io_for(table.location)[1]
        if not is_inside_path(real_path(io, root), real_path(io, table_root), strictly=False):
            _LOG.warning(
                "staging directories under %s left alone: outside %s's location", root, table.full_name
            )
            return
        leftovers = {
            entry.name: int(match.group(1))
            for entry in io.list_dir(root)
            if (match := _STAGING_NAME.fullmatch(entry.name)) is not None
        }
        if not leftovers:
            return
        working = {
            c.id for c in metastore.show_compactions(table.full_name) if c.state is CompactionState.WORKING
        }
        for name, compaction_id in sorted(leftovers.items()):
            path = io.join(root, name)
            if compaction_id in working:
                continue
            if not is_inside_path(real_path(io, path), real_path(io, root)):
                _LOG.warning("%s left alone: it leads outside %s", path, root)
                continue
            _LOG.warning(
                "deleting the staging directory %s left by failed compaction %d", name, compaction_id
            )
            io.delete_dir(path)
    except (AcidError, OSError) as error:
        _LOG.warning("could not delete abandoned staging directories under %s: %s", root, error)


def recover_abandoned_compactions(
    metastore: Metastore,
    *,
    worker_timeout_seconds: float = DEFAULT_WORKER_TIMEOUT_SECONDS,
    now: float | None = None,
) -> list[int]:
    """Finish or undo compactions whose worker died (Hive's ``revokeFromLocalWorkers``/timeouts).

    A 'working' entry is abandoned when its worker was a process of this host that no longer
    exists (``kill -9``), or it started more than ``worker_timeout_seconds`` ago (Hive's
    ``hive.compactor.worker.timeout``, ``CompactionTxnHandler.revokeTimedoutWorkers``). If its
    transaction committed, the output is in place: it is marked compacted. Otherwise the
    transaction is aborted, the staging directory deleted, the entry marked failed and the same
    compaction queued again. An entry naming no existing table or partition is only marked failed:
    there is nothing of it on disk to undo, and no path is derived from it.

    Idempotent: killed during recovery, the next call recovers what is still 'working'.

    Args:
        metastore: the transaction metastore.
        worker_timeout_seconds: how long a compaction may stay 'working' (default 86400 s).
        now: the clock (epoch seconds).

    Returns:
        The IDs of the recovered entries.
    """
    now = time.time() if now is None else now
    recovered: list[int] = []
    for entry in metastore.show_compactions():
        if entry.state is not CompactionState.WORKING:
            continue
        timed_out = entry.start_time is not None and now - entry.start_time > worker_timeout_seconds
        if not (timed_out or _is_dead_local_worker(entry.worker_id, entry.start_time)):
            continue
        recovered.append(entry.id)
        why = (
            f"worker {entry.worker_id} ran longer than the worker timeout ({worker_timeout_seconds:g} s)"
            if timed_out
            else f"worker {entry.worker_id} died"
        )
        txn_state = None if entry.txn_id is None else _txn_state(metastore, entry.txn_id)
        if txn_state is TxnState.COMMITTED:
            metastore.mark_compacted(entry.id)
            continue
        if txn_state is TxnState.OPEN and entry.txn_id is not None:
            metastore.abort_txn(entry.txn_id)
        if entry.txn_id is not None and txn_state is None:
            # Housekeeping deleted the ended txn: committed or aborted, nobody can tell any more.
            # As Hive's revokeFromLocalWorkers, the compaction runs again; a committed output is
            # visible to readers and the new run finds it (a base it builds on, or nothing to
            # rewrite), an aborted one was already removed by the cleaner before its txn went.
            gone = f" (its transaction {entry.txn_id} ended and was housekept)"
        else:
            gone = ""
        try:
            table = metastore.get_table(entry.table)
            check_compaction_target(metastore, table, entry.partition)
        except AcidError as error:
            metastore.mark_failed(entry.id, f"{why}; not queued again: {_describe(error)}")
            continue
        io, root = file_io_for(partition_location(metastore, table, entry.partition))
        prefix = f"{STAGING_PREFIX}c{entry.id}-"
        for child in io.list_dir(root) if io.info(root) is not None else []:
            if child.name.startswith(prefix):
                io.delete_dir(child.path)
        metastore.mark_failed(entry.id, f"{why}; compaction queued again{gone}")
        metastore.enqueue_compaction(
            entry.table,
            entry.partition,
            entry.compaction_type,
            properties=entry.properties,
            initiator_id=entry.initiator_id,
            run_as=entry.run_as,
        )
    return recovered


def run_worker(
    metastore: Metastore,
    *,
    worker_id: str | None = None,
    max_compactions: int | None = None,
    options: WorkerOptions | None = None,
    run_tasks: Callable[[Sequence[BucketTask], Callable[[], None]], list[BucketResult]] = run_tasks_embedded,
    lock_manager: LockManager | None = None,
    worker_timeout_seconds: float = DEFAULT_WORKER_TIMEOUT_SECONDS,
    failure_log_level: int = logging.ERROR,
) -> list[CompactionOutcome]:
    """Recover abandoned compactions, then claim and run queued ones until the queue is empty.

    A failing compaction is marked failed and the loop goes on with the next one. With a
    ``lock_manager`` each compaction holds its partition's maintenance lock (``execute_compaction``);
    the locks of a killed worker's session are freed by the lock manager (dead-owner detection or
    session timeout), so a recovered compaction can take them again.

    Args:
        metastore: the transaction metastore.
        worker_id: recorded on claimed entries (default ``<host>-<pid>``).
        max_compactions: claim at most this many.
        options: output and executor options.
        run_tasks: runs the bucket tasks.
        lock_manager: the maintenance locks (none taken when None).
        worker_timeout_seconds: ``recover_abandoned_compactions``' timeout.
        failure_log_level: the level a failed compaction is logged at (``ALTER TABLE ... COMPACT
            ... AND WAIT`` reports it in its own result and succeeds, as Hive does: not an error).

    Returns:
        The outcome of each compaction that finished (failed ones are logged, not returned).
    """
    worker_id = worker_id or default_worker_id()
    recover_abandoned_compactions(metastore, worker_timeout_seconds=worker_timeout_seconds)
    outcomes: list[CompactionOutcome] = []
    done = 0
    while max_compactions is None or done < max_compactions:
        claimed = metastore.find_next_to_compact(worker_id)
        if claimed is None:
            break
        done += 1
        try:
            outcomes.append(
                execute_compaction(
                    metastore, claimed, options=options, run_tasks=run_tasks, lock_manager=lock_manager
                )
            )
        except AcidError as error:
            # One line for the operator (the entry is marked failed with it); the traceback only at debug.
            _LOG.log(failure_log_level, "compaction %d of %s failed: %s", claimed.id, claimed.table, error)
            _LOG.debug("compaction %d failed", claimed.id, exc_info=True)
    return outcomes
