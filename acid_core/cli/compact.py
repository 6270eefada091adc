"""``acidflow compact``: run queued compactions, after recovering those whose worker died.

::

    acidflow compact [--table T [--partition P] --type minor|major|rebalance [--buckets N]
                     [--order-by COLS]] [--max N] [--worker-timeout S]
                     [--executor embedded|spark|auto] [--spark-master M] [--spark-threshold-bytes N]
                     [--progress auto|on|off] [--metastore URL] [--warehouse DIR] [--json]

``compact`` first recovers compactions whose worker died (a dead process of this host, or
'working' longer than ``--worker-timeout``, default ``$ACIDFLOW_COMPACTOR_WORKER_TIMEOUT`` else
86400 s: Hive's ``hive.compactor.worker.timeout``), then runs queued ones (a ``--table`` compaction
is queued first, as ALTER TABLE ... COMPACT does; a table or ``--partition`` that does not exist is
refused before anything is queued). Each recovered compaction prints one
``compaction N: recovered: <why>`` line (``"status": "recovered"`` with ``--json``); recovery
alone does not make the exit status 1. With ``--executor auto`` compactions whose inputs reach
``--spark-threshold-bytes`` run on Spark. Progress lines go to stderr (``progress``).

Not here: the rules (``initiator``, ``planner``), the work (``worker``).
Errors: an ``AcidError`` propagates to ``app.main`` (one line on stderr, exit 1); a failed
compaction is one ``compaction N: failed: ...`` line and exit 1. A compaction refused because its
maintenance lock is taken (``compaction N: refused: the maintenance lock of ... is taken: ...``,
naming the holder) also exits 1: the work asked for was not done and is worth retrying later, as
``clean`` exits 1 for a cleaning it will retry (a scheduler retries the task). Hive's other
refusals (nothing worth compacting, a table acidflow does not compact) are answers, not
failures: exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from acid_core.cli.argtypes import non_negative_number, positive_long, positive_seconds, whole_number
from acid_core.cli.options import (
    add_common_options,
    metastore_url,
    note_nothing,
    open_existing_metastore,
    warehouse_dir,
)
from acid_core.cli.registry import add_command_parser

if TYPE_CHECKING:
    from acid_core.metastore import Table

__all__ = ["WORKER_TIMEOUT_ENV", "add_parser", "run_compact"]

WORKER_TIMEOUT_ENV = "ACIDFLOW_COMPACTOR_WORKER_TIMEOUT"
_DEFAULT_SPARK_THRESHOLD = 1 << 30
_positive_float = positive_seconds("value")


def _rebalance_options(args: argparse.Namespace, table: Table) -> tuple[int, str | None]:
    """``--buckets`` and ``--order-by``, checked (one-line ``InvalidRebalanceError`` before anything is queued)."""
    from acid_core.compaction.rebalance import check_bucket_count, format_order_by, parse_order_by
    from acid_core.errors import InvalidRebalanceError

    if args.type != "rebalance":
        if args.buckets or args.order_by:
            raise InvalidRebalanceError(
                "option for a " + repr(args.type) + " compaction",
                "--buckets" if args.buckets else "--order-by",
                "--buckets and --order-by only with --type rebalance",
            )
        return 0, None
    number_of_buckets = check_bucket_count(args.buckets) if args.buckets else 0
    keys = parse_order_by(args.order_by, [column.name for column in table.columns])
    return number_of_buckets, format_order_by(keys)


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


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``acidflow compact`` (handler ``run_compact``)."""
    compact = add_command_parser(
        subparsers, "compact", description="Run queued compactions: minor or major, embedded or on Spark."
    )
    add_common_options(compact)
    compact.add_argument("--table", default=None, help="queue a compaction of this table first")
    compact.add_argument("--partition", default=None, help="its partition, k=v[/k2=v2]")
    compact.add_argument(
        "--type",
        choices=("minor", "major", "rebalance"),
        default="major",
        help="for --table (default major; rebalance: Hive 4's, see --buckets, --order-by)",
    )
    compact.add_argument(
        "--buckets",
        type=positive_long("bucket count"),
        default=0,
        metavar="N",
        help="--type rebalance: CLUSTERED INTO N BUCKETS (default: as many bucket IDs as the partition has)",
    )
    compact.add_argument(
        "--order-by", default=None, metavar="COLS", help="--type rebalance: ORDER BY, e.g. 'b DESC, a'"
    )
    compact.add_argument(
        "--max", type=positive_long("value"), default=None, metavar="N", help="run at most N compactions"
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
        type=whole_number("byte count"),
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
        "--progress-interval",
        type=non_negative_number("value"),
        default=30.0,
        metavar="SECONDS",
        help=argparse.SUPPRESS,
    )
    compact.set_defaults(handler=run_compact)
    return compact


def run_compact(args: argparse.Namespace) -> int:
    """``acidflow compact``: recover, then run queued compactions; exit 1 if any failed or found its lock taken."""
    from acid_core.cli.app import freeze_start_up
    from acid_core.cli.progress import ProgressReporter
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
    with open_existing_metastore(args) as metastore:
        if args.table is not None:
            # Refused before anything is queued: the table and the partition must exist.
            table = metastore.get_table(args.table)
            check_compaction_target(metastore, table, args.partition)
            number_of_buckets, order_by = _rebalance_options(args, table)
            metastore.enqueue_compaction(
                table.full_name,
                args.partition,
                CompactionType(args.type),
                initiator_id="manual",
                number_of_buckets=number_of_buckets,
                order_by=order_by,
            )
        elif args.partition is not None:
            print("acidflow compact: error: --partition needs --table", file=sys.stderr)
            return 2
        elif args.buckets or args.order_by:
            print(
                "acidflow compact: error: --buckets and --order-by need --table and --type rebalance",
                file=sys.stderr,
            )
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
        # Start-up done (SQLAlchemy and its mappers, the metastore's first queries): out of the
        # collector's way for the compaction's own allocations.
        freeze_start_up(args)
        # The configured lock manager (ACIDFLOW_LOCK_MANAGER): each compaction holds its
        # partition's maintenance lock, so two workers never compact one partition at once.
        locks = open_lock_manager(metastore_url=metastore_url(args), warehouse=warehouse_dir(args))
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
    if not outcomes and not recovered:
        note_nothing(args, "nothing to compact (the queue is empty)")
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
    return 1 if failed or any(outcome.lock_refused for outcome in outcomes) else 0
