"""``acidflow initiate``, ``acidflow compact`` and ``acidflow clean``: the compaction commands.

::

    acidflow initiate [--dry-run] [--table T ...] [--json]      the backlog: one decision per table/partition
    acidflow compact [--table T [--partition P] --type minor|major] [--max N] [--worker-timeout S]
                     [--executor embedded|spark|auto] [--spark-master M] [--spark-threshold-bytes N]
    acidflow clean [--dry-run] [--quarantine] [--retention SECONDS] [--json]
    acidflow clean --purge-trash TABLE [--older-than SECONDS]    only inside TABLE's trash
    acidflow clean --restore TABLE --compaction ID              only back into TABLE's locations

Every command takes ``--metastore URL`` (default ``$ACIDFLOW_METASTORE``, else the embedded SQLite
file of the warehouse) and ``--warehouse DIR`` (default ``$ACIDFLOW_WAREHOUSE``, else
``./warehouse``). ``compact`` first recovers compactions whose worker died (a dead process of this
host, or 'working' longer than ``--worker-timeout``, default ``$ACIDFLOW_COMPACTOR_WORKER_TIMEOUT``
else 86400 s: Hive's ``hive.compactor.worker.timeout``), then runs queued ones (a ``--table``
compaction is queued first, as ALTER TABLE ... COMPACT does; a table or ``--partition`` that does
not exist is refused before anything is queued). Each recovered compaction prints one
``compaction N: recovered: <why>`` line (``"status": "recovered"`` with ``--json``); recovery
alone does not make the exit status 1. With ``--executor
auto`` compactions whose inputs reach ``--spark-threshold-bytes`` run on Spark.

Not here: the rules (``initiator``, ``planner``), the work (``worker``, ``cleaner``); the top-level
parser (``acid_core.cli`` calls ``add_compaction_parsers``; handlers are ``run_initiate``,
``run_compact``, ``run_clean``).
A ledger row of ``--purge-trash``/``--restore`` that points outside what the table owns is named
on stderr and skipped, and the command exits 1.
Errors: an ``AcidError`` propagates to ``acid_core.cli.main`` (one line on stderr, exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acid_core.metastore import SqlMetastore
    from acid_core.metastore.hive import HiveMetastore

__all__ = ["add_compaction_parsers", "run_clean", "run_compact", "run_initiate"]

METASTORE_ENV = "ACIDFLOW_METASTORE"
WAREHOUSE_ENV = "ACIDFLOW_WAREHOUSE"
WORKER_TIMEOUT_ENV = "ACIDFLOW_COMPACTOR_WORKER_TIMEOUT"
_DEFAULT_WAREHOUSE = "./warehouse"
_DEFAULT_SPARK_THRESHOLD = 1 << 30


_LONG_MAX = 2**63 - 1


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected a finite non-negative number")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected a positive number of seconds")
    return value


def _worker_timeout(args: argparse.Namespace) -> float:
    from acid_core.compaction.worker import DEFAULT_WORKER_TIMEOUT_SECONDS
    from acid_core.errors import InvalidPlatformConfigError

    if args.worker_timeout is not None:
        return float(args.worker_timeout)
    text = os.environ.get(WORKER_TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_WORKER_TIMEOUT_SECONDS
    try:
        return _positive_float(text)
    except argparse.ArgumentTypeError:
        raise InvalidPlatformConfigError(
            "the environment", WORKER_TIMEOUT_ENV, text, "a positive number of seconds"
        ) from None


def _positive_int(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= _LONG_MAX:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: expected a positive integer <= {_LONG_MAX} (a 64-bit long)"
        )
    return int(text)


def _byte_count(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) > _LONG_MAX:
        raise argparse.ArgumentTypeError(f"invalid byte count {text!r}: expected a whole number >= 0")
    return int(text)


def add_compaction_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``initiate``, ``compact`` and ``clean`` (handlers ``run_initiate``/``run_compact``/``run_clean``)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--metastore", metavar="URL", default=None, help=f"metastore URL (default: ${METASTORE_ENV})"
    )
    common.add_argument(
        "--warehouse",
        metavar="DIR",
        default=None,
        help=f"warehouse directory (default: ${WAREHOUSE_ENV}, else ./warehouse)",
    )
    common.add_argument("--json", action="store_true", help="one JSON object per line")

    initiate = subparsers.add_parser(
        "initiate",
        parents=[common],
        help="decide which tables/partitions need compaction (Hive's Initiator) and queue them",
        description="Print the backlog: the initiator's decision, reason and numbers per table and partition.",
    )
    initiate.add_argument("--dry-run", action="store_true", help="decide only; queue nothing")
    initiate.add_argument("--table", action="append", default=None, metavar="TABLE", help="only these tables")
    initiate.set_defaults(handler=run_initiate)

    compact = subparsers.add_parser(
        "compact",
        parents=[common],
        help="run queued compactions (recovering those whose worker died)",
        description="Run queued compactions: minor or major, embedded or on Spark.",
    )
    compact.add_argument("--table", default=None, help="queue a compaction of this table first")
    compact.add_argument("--partition", default=None, help="its partition, k=v[/k2=v2]")
    compact.add_argument(
        "--type", choices=("minor", "major"), default="major", help="for --table (default major)"
    )
    compact.add_argument(
        "--max", type=_positive_int, default=None, metavar="N", help="run at most N compactions"
    )
    compact.add_argument(
        "--executor",
        choices=("embedded", "spark", "auto"),
        default="auto",
        help="where the merge runs (auto: Spark from --spark-threshold-bytes of input; default auto)",
    )
    compact.add_argument(
        "--worker-timeout",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="recover a compaction 'working' longer than this (Hive's hive.compactor.worker.timeout; "
        f"default ${WORKER_TIMEOUT_ENV}, else 86400)",
    )
    compact.add_argument("--spark-master", default="local[*]", help="Spark master (default local[*])")
    compact.add_argument(
        "--spark-threshold-bytes",
        type=_byte_count,
        default=_DEFAULT_SPARK_THRESHOLD,
        metavar="N",
        help=f"input bytes from which auto uses Spark (default {_DEFAULT_SPARK_THRESHOLD})",
    )
    compact.add_argument(
        "--progress",
        choices=("auto", "on", "off"),
        default="auto",
        help="progress lines on stderr: each compaction, bucket i/N, and a 'still running' line "
        "every 30 s while one step takes long (auto: when stderr is a terminal)",
    )
    compact.add_argument(
        "--progress-interval", type=_non_negative, default=30.0, metavar="SECONDS", help=argparse.SUPPRESS
    )
    compact.set_defaults(handler=run_compact)

    clean = subparsers.add_parser(
        "clean",
        parents=[common],
        help="delete directories made obsolete by compactions, once no reader needs them",
        description="Hive's Cleaner: waits for older transactions and reader leases; keeps a ledger.",
    )
    clean.add_argument("--dry-run", action="store_true", help="list what would be deleted; change nothing")
    clean.add_argument(
        "--quarantine", action="store_true", help="move into the table's trash instead of deleting"
    )
    clean.add_argument(
        "--retention", type=_non_negative, default=0.0, metavar="SECONDS", help="wait after commit"
    )
    clean.add_argument(
        "--purge-trash", default=None, metavar="TABLE", help="purge TABLE's quarantined directories"
    )
    clean.add_argument(
        "--older-than", type=_non_negative, default=0.0, metavar="SECONDS", help="with --purge-trash"
    )
    clean.add_argument(
        "--restore", default=None, metavar="TABLE", help="restore TABLE's quarantined directories"
    )
    clean.add_argument("--compaction", type=_positive_int, default=None, metavar="ID", help="with --restore")
    clean.set_defaults(handler=run_clean)


def _open(args: argparse.Namespace) -> SqlMetastore | HiveMetastore:
    from acid_core.cli_args import require_existing_warehouse
    from acid_core.metastore import open_metastore

    url = args.metastore or os.environ.get(METASTORE_ENV) or None
    warehouse = args.warehouse or os.environ.get(WAREHOUSE_ENV) or _DEFAULT_WAREHOUSE
    require_existing_warehouse(url, warehouse)
    return open_metastore(url, warehouse)


def run_initiate(args: argparse.Namespace) -> int:
    """``acidflow initiate``: print the backlog (and queue compactions unless ``--dry-run``)."""
    from acid_core.compaction.backlog import iter_initiator

    # Streamed: a line per partition as it is decided, whatever the size of the warehouse.
    with _open(args) as metastore:
        for entry in iter_initiator(metastore, dry_run=args.dry_run, tables=args.table):
            decision = entry.decision
            if args.json:
                print(json.dumps({**decision.to_json_dict(), "compaction_id": entry.compaction_id}))
                continue
            what = decision.compaction_type.value if decision.compaction_type else "none"
            queued = (
                f" (queued as compaction {entry.compaction_id})" if entry.compaction_id is not None else ""
            )
            print(f"{what}\t{decision.reason.value}\t{decision.message}{queued}")
    return 0


def run_compact(args: argparse.Namespace) -> int:
    """``acidflow compact``: recover, then run queued compactions; exit 1 if any failed."""
    from acid_core.compaction.cli_progress import ProgressReporter
    from acid_core.compaction.spark_runner import SparkSubmitRunner
    from acid_core.compaction.worker import (
        WorkerOptions,
        check_compaction_target,
        recover_abandoned_compactions,
        run_tasks_embedded,
        run_worker,
    )
    from acid_core.locks import open_lock_manager
    from acid_core.metastore import CompactionState, CompactionType

    runner = SparkSubmitRunner(master=args.spark_master)
    show_progress = args.progress == "on" or (args.progress == "auto" and sys.stderr.isatty())
    progress = ProgressReporter(interval=args.progress_interval) if show_progress else None
    run_tasks = run_tasks_embedded if progress is None else progress.wrap(run_tasks_embedded, "embedded")
    if args.executor == "embedded":
        options = WorkerOptions()
    else:
        threshold = 0 if args.executor == "spark" else args.spark_threshold_bytes
        large = runner if progress is None else progress.wrap(runner, "on Spark")
        options = WorkerOptions(large_runner=large, large_threshold_bytes=threshold)
    worker_timeout = _worker_timeout(args)
    with _open(args) as metastore:
        if args.table is not None:
            # Refused before anything is queued: the table and the partition must exist.
            table = metastore.get_table(args.table)
            check_compaction_target(metastore, table, args.partition)
            metastore.enqueue_compaction(
                table.full_name, args.partition, CompactionType(args.type), initiator_id="manual"
            )
        elif args.partition is not None:
            print("acidflow compact: error: --partition needs --table", file=sys.stderr)
            return 2
        # Recovered entries are marked failed and queued again: that is this run's recovery, not
        # a failure of this run, so they are reported as recovered and do not set the exit status.
        recovered = recover_abandoned_compactions(metastore, worker_timeout_seconds=worker_timeout)
        for compaction_id in recovered:
            entry = metastore.get_compaction(compaction_id)
            message = entry.error_message or entry.state.value
            if args.json:
                print(json.dumps({"compaction_id": compaction_id, "status": "recovered", "message": message}))
            else:
                print(f"compaction {compaction_id}: recovered: {message}")
        before = {c.id for c in metastore.show_compactions() if c.state is CompactionState.FAILED}
        # The configured lock manager (ACIDFLOW_LOCK_MANAGER): each compaction holds its
        # partition's maintenance lock, so two workers never compact one partition at once.
        locks = open_lock_manager(
            metastore_url=args.metastore or os.environ.get(METASTORE_ENV) or None,
            warehouse=args.warehouse or os.environ.get(WAREHOUSE_ENV) or _DEFAULT_WAREHOUSE,
        )
        try:
            outcomes = run_worker(
                metastore,
                max_compactions=args.max,
                options=options,
                run_tasks=run_tasks,
                lock_manager=locks,
                worker_timeout_seconds=worker_timeout,
            )
        finally:
            locks.close()
        failed = [
            c
            for c in metastore.show_compactions()
            if c.state is CompactionState.FAILED and c.id not in before
        ]
    for outcome in outcomes:
        if args.json:
            print(
                json.dumps(
                    {
                        "compaction_id": outcome.compaction_id,
                        "status": outcome.status,
                        "message": outcome.message,
                        "outputs": list(outcome.outputs),
                        "events": outcome.events,
                        "input_bytes": outcome.input_bytes,
                        "executor": outcome.executor,
                        "seconds": round(outcome.seconds, 3),
                    }
                )
            )
        else:
            print(
                f"compaction {outcome.compaction_id}: {outcome.status}: {outcome.message} ({outcome.seconds:.2f} s)"
            )
    for entry in failed:
        print(f"compaction {entry.id}: failed: {entry.error_message}")
    return 1 if failed else 0


def run_clean(args: argparse.Namespace) -> int:
    """``acidflow clean``: clean ready compactions, or purge / restore a table's trash; exit 1 if any failed."""
    from acid_core.compaction.cleaner import (
        CleanerOptions,
        PathAction,
        purge_trash,
        restore_from_trash,
        run_cleaner,
    )

    skipped: list[str] = []

    def report(action: PathAction, why: str) -> None:
        # A ledger row is input, not trust: one pointing elsewhere is named, skipped, and fails the run.
        skipped.append(action.path)
        print(
            f"acidflow clean: skipped ledger row of compaction {action.compaction_id}: {why}", file=sys.stderr
        )

    with _open(args) as metastore:
        if args.purge_trash is not None:
            location = metastore.get_table(args.purge_trash).location
            for path in purge_trash(location, args.older_than, on_skip=report):
                print(json.dumps({"purged": path}) if args.json else f"purged {path}")
            return 1 if skipped else 0
        if args.restore is not None:
            if args.compaction is None:
                print("acidflow clean: error: --restore needs --compaction ID")
                return 2
            table = metastore.get_table(args.restore)
            partitions = [p.location for p in metastore.list_partitions(table.full_name)]
            for path in restore_from_trash(
                table.location, args.compaction, partition_locations=partitions, on_skip=report
            ):
                print(json.dumps({"restored": path}) if args.json else f"restored {path}")
            return 1 if skipped else 0
        options = CleanerOptions(
            retention_seconds=args.retention, dry_run=args.dry_run, quarantine=args.quarantine
        )
        results = run_cleaner(metastore, options)
    for result in results:
        if args.json:
            actions = [{"path": a.path, "reason": a.reason, "action": a.action} for a in result.actions]
            print(
                json.dumps(
                    {
                        "compaction_id": result.compaction_id,
                        "status": result.status,
                        "message": result.message,
                        "actions": actions,
                    }
                )
            )
            continue
        print(f"compaction {result.compaction_id}: {result.status}: {result.message}")
        for action in result.actions:
            print(f"  {action.action}\t{action.reason}\t{action.path}")
    return 1 if any(result.status in ("failed", "retrying") for result in results) else 0
