"""Spark executor of acidflow compactions: one Spark task per (partition, bucket), the driver commits.

::

    spark-submit [--master local[*]] spark_jobs/compact.py --warehouse WH [--metastore URL]
                 [--max N | --compaction-id ID [--compaction-id ID ..]]
        driver: run_worker(metastore, run_tasks=<this job's Spark runner>)
            claim a queued compaction (the oldest, or exactly each --compaction-id, which must be
            'initiated': anything else is refused before Spark starts), plan it (acid_core.compaction.planner),
            tasks -> sc.parallelize(descriptors, one slice each).map(compact_bucket) -> results,
            verify, rename, commit, mark ready for cleaning (acid_core.compaction.worker)

    spark-submit spark_jobs/compact.py --tasks-file T --results-file R
        tasks only: the embedded worker's driver planned them and commits (SparkSubmitRunner)

Each task runs acid_core.compaction.bucket_merge.compact_bucket: exactly the code of the embedded
worker, with pyarrow inside the Python worker (Spark's own ORC reader is never used: it fails on
column-pruned reads of ACID files). The driver ships its acid_core to the executors as a zip
(``SparkContext.addPyFile``, as ``--py-files`` would); executors need PYSPARK_PYTHON to name a
Python with pyarrow, and reach the table through its location URI (a path every host sees).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pyspark.sql import SparkSession

    from acid_core.compaction.worker import BucketResult, BucketTask

DEFAULT_MASTER = "local[*]"


def _run_task(descriptor: str) -> str:
    from acid_core.compaction.bucket_merge import BucketTask, compact_bucket

    return compact_bucket(BucketTask.from_json(descriptor)).to_json()


def run_tasks_on_spark(
    spark: SparkSession, tasks: Sequence[BucketTask], heartbeat: Callable[[], None] | None = None
) -> list[BucketResult]:
    """Run bucket tasks as one Spark job (one partition per task); returns their BucketResults."""
    from acid_core.compaction.worker import BucketResult as Result

    if not tasks:
        return []
    if heartbeat is not None:
        heartbeat()
    descriptors = [task.to_json() for task in tasks]
    rdd = spark.sparkContext.parallelize(descriptors, numSlices=len(descriptors))
    results = [Result.from_json(text) for text in rdd.map(_run_task).collect()]
    if heartbeat is not None:
        heartbeat()
    return results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compact.py", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--master", default=None, help=f"Spark master (default: spark-submit's, else {DEFAULT_MASTER})"
    )
    parser.add_argument("--warehouse", default=None, help="warehouse directory (queue mode)")
    parser.add_argument("--metastore", default=None, help="metastore URL (default: the warehouse's SQLite)")
    parser.add_argument("--max", type=int, default=None, help="compact at most N queued compactions")
    parser.add_argument(
        "--compaction-id",
        type=int,
        action="append",
        default=None,
        dest="compaction_ids",
        metavar="ID",
        help="claim and run exactly this queued ('initiated') compaction; repeatable (default: drain the queue)",
    )
    parser.add_argument("--tasks-file", default=None, help="tasks-only mode: JSON lines of BucketTask")
    parser.add_argument("--results-file", default=None, help="tasks-only mode: where to write BucketResults")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; returns the exit code."""
    args = _parser().parse_args(argv)
    if (args.tasks_file is None) == (args.warehouse is None):
        print(
            "compact.py: error: give --warehouse (queue mode) or --tasks-file (tasks mode)", file=sys.stderr
        )
        return 2
    if args.compaction_ids is not None and (args.max is not None or args.tasks_file is not None):
        print("compact.py: error: --compaction-id goes with --warehouse, without --max", file=sys.stderr)
        return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    if root not in sys.path:
        sys.path.insert(0, root)
    from pyspark.sql import SparkSession

    from acid_core.compaction.spark_runner import build_code_zip
    from acid_core.compaction.worker import BucketTask, execute_compaction, run_worker
    from acid_core.errors import AcidError
    from acid_core.locks import open_lock_manager
    from acid_core.metastore import CompactionState, open_metastore

    if args.compaction_ids is not None:
        # Refuse before starting Spark: every ID must be queued and still 'initiated'.
        with open_metastore(args.metastore, args.warehouse) as metastore:
            for compaction_id in args.compaction_ids:
                try:
                    state = metastore.get_compaction(compaction_id).state
                except AcidError as error:
                    print(f"compact.py: error: {error}", file=sys.stderr)
                    return 2
                if state is not CompactionState.INITIATED:
                    print(
                        f"compact.py: error: compaction {compaction_id} is {state.value!r}; expected "
                        "'initiated' (queued, not yet claimed); hint: SHOW COMPACTIONS",
                        file=sys.stderr,
                    )
                    return 2

    # Every session acidflow builds can use format("hiveacid"), whose option pushdown needs this.
    builder = SparkSession.builder.appName("acidflow-compact").config(
        "spark.sql.python.filterPushdown.enabled", "true"
    )
    if args.master or "PYSPARK_GATEWAY_PORT" not in os.environ:  # else spark-submit's --master rules
        builder = builder.master(args.master or os.environ.get("ACIDFLOW_SPARK_MASTER", DEFAULT_MASTER))
    spark = builder.getOrCreate()
    shipped = tempfile.TemporaryDirectory(prefix="acidflow-ship-")
    try:
        # Executors on other hosts import the driver's acid_core from this zip (--py-files' way).
        spark.sparkContext.addPyFile(build_code_zip(shipped.name))
        if args.tasks_file is not None:
            tasks = [
                BucketTask.from_json(line) for line in Path(args.tasks_file).read_text().splitlines() if line
            ]
            results = run_tasks_on_spark(spark, tasks)
            Path(args.results_file).write_text("".join(r.to_json() + "\n" for r in results))
            return 0
        worker_id = f"{socket.gethostname()}-{os.getpid()}"

        def runner(tasks: Sequence[BucketTask], heartbeat: Callable[[], None]) -> list[BucketResult]:
            return run_tasks_on_spark(spark, tasks, heartbeat)

        # Like every worker, the driver holds each partition's maintenance lock while it compacts.
        locks = open_lock_manager(metastore_url=args.metastore, warehouse=args.warehouse)
        try:
            if args.compaction_ids is not None:
                failed = 0
                with open_metastore(args.metastore, args.warehouse) as metastore:
                    for compaction_id in args.compaction_ids:
                        claimed = metastore.claim_compaction(compaction_id, worker_id)
                        try:
                            outcome = execute_compaction(
                                metastore, claimed, run_tasks=runner, lock_manager=locks
                            )
                        except AcidError as error:
                            failed += 1
                            print(f"compaction {compaction_id}: failed: {error}")
                            continue
                        print(f"compaction {outcome.compaction_id}: {outcome.status}: {outcome.message}")
                return 1 if failed else 0
            with open_metastore(args.metastore, args.warehouse) as metastore:
                outcomes = run_worker(
                    metastore,
                    worker_id=worker_id,
                    max_compactions=args.max,
                    run_tasks=runner,
                    lock_manager=locks,
                )
        finally:
            locks.close()
        for outcome in outcomes:
            print(f"compaction {outcome.compaction_id}: {outcome.status}: {outcome.message}")
        return 0
    finally:
        spark.stop()
        shipped.cleanup()


if __name__ == "__main__":
    sys.exit(main())
