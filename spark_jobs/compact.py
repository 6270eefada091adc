"""Spark executor of acidflow compactions: one Spark task per (partition, bucket), the driver commits.

::

    spark-submit [--master local[*]|spark://..|yarn|k8s://..] spark_jobs/compact.py --warehouse WH
                 [--metastore URL] [--max N | --compaction-id ID [--compaction-id ID ..] [--parallel K]]
        queue mode (no --compaction-id): run_worker(metastore, run_tasks=<this job's Spark runner>)
            claim a queued compaction (the oldest), plan it (acid_core.compaction.planner),
            tasks -> sc.parallelize(descriptors, one slice each).map(compact_bucket) -> results,
            verify, rename, commit, mark ready for cleaning (acid_core.compaction.worker)
        one application for many entries (--compaction-id, repeatable; what the Airflow DAG runs):
            claim every named entry ('initiated' only: anything else is refused before Spark starts),
            then K driver threads (--parallel, default min(entries, 8)) each run one entry's
            execute_compaction: its tasks are one Spark job, all jobs share the application's
            executors, and each entry is verified and committed as soon as its own job finishes.
            A failed entry is marked failed alone; the others commit. Killed (kill -9), every
            claimed entry is recovered by the next run (recover_abandoned_compactions).

    spark-submit spark_jobs/compact.py --tasks-file T --results-file R
        tasks only: the embedded worker's driver planned them and commits (SparkSubmitRunner)

Each task runs acid_core.compaction.bucket_merge.compact_bucket: exactly the code of the embedded
worker, with pyarrow inside the Python worker (Spark's own ORC reader is never used: it fails on
column-pruned reads of ACID files). The driver ships its acid_core to the executors as a zip
(``SparkContext.addPyFile``, as ``--py-files`` would); executors need PYSPARK_PYTHON to name a
Python with pyarrow, and reach the table through its location URI (a path every host sees:
HDFS, S3, or a shared mount). While a job waits for executors or runs, the driver heartbeats the
entry's compaction transaction every --heartbeat-seconds, so the reaper never aborts it.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from pyspark.sql import SparkSession

    from acid_core.compaction.worker import BucketResult, BucketTask

DEFAULT_MASTER = "local[*]"
DEFAULT_HEARTBEAT_SECONDS = 30.0
"""Well inside Hive's ``hive.txn.timeout`` (300 s), after which the reaper aborts a silent txn."""
MAX_PARALLEL = 8
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*: \S.*$", re.MULTILINE)  # "pyarrow.lib.ArrowInvalid: ..."


def _python_worker() -> str:
    """``host:pid`` of this Python worker (which warm worker a task ran in)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _run_task(descriptor: str) -> tuple[str, str]:
    from acid_core.compaction.bucket_merge import BucketTask, compact_bucket

    return _python_worker(), compact_bucket(BucketTask.from_json(descriptor)).to_json()


def _warm_worker(_index: int) -> str:
    # What every bucket task imports (pyarrow's ORC and dataset readers, numpy, acid_core): about a
    # second of a cold Python worker's first task, paid here once per Python worker.
    import pyarrow.dataset  # noqa: F401  (the reader's ORC dataset scan)

    import acid_core.compaction.bucket_merge  # noqa: F401

    return _python_worker()


def warm_executors(spark: SparkSession) -> list[str]:
    """Start and warm a Python worker on every executor core before any entry is claimed.

    A long-running compactor application pays this once, not once per compaction: the first task
    of an executor otherwise starts its Python worker (``pyspark.daemon`` forks it), fetches the
    shipped acid_core zip and imports acid_core, numpy and pyarrow before it merges a row, and
    the JVM loads the classes of its first Python task. One task per core of the registered
    executors (``defaultParallelism``, at least one each: an executor's core runs them one after
    the other); with ``spark.python.worker.reuse`` (Spark's default) the compaction tasks that
    follow run in these warm workers. The driver imports what it verifies outputs with at the
    same time. Executors that register later start cold, as without this, and so does a worker
    after a minute with no Python task on its executor (Spark's ``PythonWorkerFactory`` stops
    idle workers then: ``IDLE_WORKER_TIMEOUT_NS``, not configurable) or after a task failed.
    Nothing is warmed when ``spark.python.worker.reuse`` is false (every task starts a worker).

    Returns:
        ``host:pid`` of the Python worker each warm-up task ran in.
    """
    import pyarrow.dataset  # noqa: F401  (verify_output_file's reader, on the driver)

    import acid_core.compaction.bucket_merge  # noqa: F401

    context = spark.sparkContext
    if context.getConf().get("spark.python.worker.reuse", "true").strip().lower() == "false":
        return []
    slots = max(1, context.defaultParallelism)
    context.setJobDescription("acidflow: warm the executors' Python workers")
    try:
        return context.parallelize(range(slots), numSlices=slots).map(_warm_worker).collect()
    finally:
        context.setJobDescription(None)  # type: ignore[arg-type]


def _spark_failure(text: str) -> str:
    """The Python error line of a failed job's message (before the JVM's stack), else its first line."""
    python_part = text.split("\n\tat ", 1)[0]
    found = _ERROR_LINE.findall(python_part)
    return found[-1].strip() if found else (text.strip().splitlines() or ["unknown failure"])[0]


def run_tasks_on_spark(
    spark: SparkSession,
    tasks: Sequence[BucketTask],
    heartbeat: Callable[[], None] | None = None,
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS,
    python_workers: list[str] | None = None,
) -> list[BucketResult]:
    """Run bucket tasks as one Spark job (one partition per task); returns their BucketResults.

    The job runs in a thread of its own while this one calls ``heartbeat`` every
    ``heartbeat_seconds``, so the compaction's transaction stays alive however long the job waits
    for executors. A failed job raises ``SparkJobError`` naming the task's Python error. When
    given, ``python_workers`` is extended with the ``host:pid`` of the Python worker each task
    ran in.
    """
    from pyspark import InheritableThread

    from acid_core.compaction.worker import BucketResult as Result
    from acid_core.errors import SparkJobError

    if not tasks:
        return []
    if heartbeat is not None:
        heartbeat()
    descriptors = [task.to_json() for task in tasks]
    compaction_id = tasks[0].compaction_id
    outcome: dict[str, object] = {}

    def collect() -> None:
        try:
            spark.sparkContext.setJobDescription(f"acidflow compaction {compaction_id}")
            rdd = spark.sparkContext.parallelize(descriptors, numSlices=len(descriptors))
            outcome["rows"] = rdd.map(_run_task).collect()
        except Exception as error:  # handed to the waiting thread, which raises it as SparkJobError
            outcome["error"] = error

    job = InheritableThread(target=collect, daemon=True)
    job.start()
    job.join(heartbeat_seconds)
    while job.is_alive():
        if heartbeat is not None:
            heartbeat()
        job.join(heartbeat_seconds)
    if "error" in outcome:
        raise SparkJobError(compaction_id, _spark_failure(str(outcome["error"]))) from outcome["error"]  # type: ignore[misc]
    rows: list[tuple[str, str]] = outcome["rows"]  # type: ignore[assignment]
    if heartbeat is not None:
        heartbeat()
    if python_workers is not None:
        python_workers.extend(worker for worker, _ in rows)
    return [Result.from_json(text) for _, text in rows]


def run_entries(
    spark: SparkSession,
    compaction_ids: Sequence[int],
    *,
    metastore_url: str | None,
    warehouse: str,
    worker_id: str,
    parallel: int,
    heartbeat_seconds: float,
    warm_workers: Collection[str] = (),
) -> int:
    """One application for many queued entries: claim all, run them concurrently, commit each alone.

    Prints one line per entry as it ends (``compaction N: <status>: ... (S s)`` then ``steps:
    ...``, the seconds of each step and how many of its tasks ran in one of ``warm_workers``
    (``warm_executors``), or ``compaction N: failed: ...``); returns the number of entries that
    failed.
    """
    from acid_core.compaction.worker import WorkerOptions, execute_compaction
    from acid_core.errors import AcidError
    from acid_core.locks import open_lock_manager
    from acid_core.metastore import open_metastore

    claimed = []
    failed = 0
    with open_metastore(metastore_url, warehouse) as metastore:
        for compaction_id in compaction_ids:
            try:  # another worker may have claimed it since the check before Spark started
                claimed.append(metastore.claim_compaction(compaction_id, worker_id))
            except AcidError as error:
                failed += 1
                print(f"compaction {compaction_id}: failed: {error}", flush=True)
    local = threading.local()
    guard = threading.Lock()
    opened = contextlib.ExitStack()

    def services() -> tuple[object, object]:
        # One metastore and lock manager per driver thread (a Thrift client is not thread-safe).
        if not hasattr(local, "metastore"):
            with guard:
                local.metastore = opened.enter_context(open_metastore(metastore_url, warehouse))
                local.locks = open_lock_manager(metastore_url=metastore_url, warehouse=warehouse)
                opened.callback(local.locks.close)
        return local.metastore, local.locks

    def run_one(entry: object) -> str:
        metastore, locks = services()

        python_workers: list[str] = []

        def runner(tasks: Sequence[BucketTask], heartbeat: Callable[[], None]) -> list[BucketResult]:
            return run_tasks_on_spark(spark, tasks, heartbeat, heartbeat_seconds, python_workers)

        steps: list[tuple[str, float]] = [("planning", time.monotonic())]

        def on_step(step: str) -> None:
            if step != "renamed":
                steps.append((step, time.monotonic()))

        # The worker's heartbeat thread beats at the job's interval too: planning (listing,
        # footers) and verifying run outside the Spark job, and many entries at once on a busy
        # driver make those phases long.
        outcome = execute_compaction(
            metastore,  # type: ignore[arg-type]
            entry,  # type: ignore[arg-type]
            options=WorkerOptions(heartbeat_seconds=heartbeat_seconds),
            run_tasks=runner,
            on_step=on_step,
            lock_manager=locks,  # type: ignore[arg-type]
        )
        steps.append(("", time.monotonic()))
        spent = ", ".join(
            f"{name} {end - begin:.2f} s" for (name, begin), (_, end) in itertools.pairwise(steps)
        )
        # The entry's own time, claim to commit (bench_rebalance compares it without start-up),
        # then where it went (writing = the Spark job; planning includes the lock and the listing).
        warm = sum(worker in warm_workers for worker in python_workers)
        return (
            f"{outcome.status}: {outcome.message} ({outcome.seconds:.2f} s)\n  steps: {spent}; "
            f"tasks in warm Python workers: {warm} of {len(python_workers)}"
        )

    with (
        opened,
        ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="acidflow-entry") as pool,
    ):
        futures = {pool.submit(run_one, entry): entry.id for entry in claimed}
        for future in as_completed(futures):
            try:
                line = future.result()
            except AcidError as error:
                failed += 1
                line = f"failed: {error}"
            except Exception as error:  # one entry's failure must not stop the others (it is marked failed)
                failed += 1
                line = f"failed: {type(error).__name__}: {error}"
            print(f"compaction {futures[future]}: {line}", flush=True)
    return failed


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer; expected e.g. 4")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds; expected e.g. 30")
    return value


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
        help="claim and run exactly this queued ('initiated') compaction; repeatable: all in this one "
        "application (default: drain the queue)",
    )
    parser.add_argument(
        "--parallel",
        type=_positive_int,
        default=None,
        help=f"with --compaction-id: entries run at once, one Spark job each (default: min(entries, {MAX_PARALLEL}))",
    )
    parser.add_argument(
        "--heartbeat-seconds",
        type=_positive_float,
        default=DEFAULT_HEARTBEAT_SECONDS,
        help=f"heartbeat each running compaction's transaction this often (default: {DEFAULT_HEARTBEAT_SECONDS:g})",
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
    if args.parallel is not None and args.compaction_ids is None:
        print("compact.py: error: --parallel goes with --compaction-id", file=sys.stderr)
        return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    if root not in sys.path:
        sys.path.insert(0, root)
    from pyspark.sql import SparkSession

    from acid_core.compaction.spark_runner import build_code_zip
    from acid_core.compaction.worker import BucketTask, WorkerOptions, run_worker
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
        # Before any claim: an entry's time (claim to commit) is then its own work, not start-up.
        warming = time.monotonic()
        warm_workers: list[str] = []
        try:
            warm_workers = warm_executors(spark)
        except Exception as error:  # e.g. an executor's Python lacks pyarrow: each entry's job fails alone
            print(
                f"compact.py: warm-up failed (tasks start cold): {_spark_failure(str(error))}",
                file=sys.stderr,
            )
        print(
            f"warmed {len(set(warm_workers))} Python worker(s) ({len(warm_workers)} task(s)) in "
            f"{time.monotonic() - warming:.2f} s",
            flush=True,
        )
        if args.compaction_ids is not None:
            failed = run_entries(
                spark,
                args.compaction_ids,
                metastore_url=args.metastore,
                warehouse=args.warehouse,
                worker_id=worker_id,
                parallel=args.parallel or min(len(args.compaction_ids), MAX_PARALLEL),
                heartbeat_seconds=args.heartbeat_seconds,
                warm_workers=frozenset(warm_workers),
            )
            return 1 if failed else 0

        def runner(tasks: Sequence[BucketTask], heartbeat: Callable[[], None]) -> list[BucketResult]:
            return run_tasks_on_spark(spark, tasks, heartbeat, args.heartbeat_seconds)

        # Like every worker, the driver holds each partition's maintenance lock while it compacts.
        locks = open_lock_manager(metastore_url=args.metastore, warehouse=args.warehouse)
        try:
            with open_metastore(args.metastore, args.warehouse) as metastore:
                outcomes = run_worker(
                    metastore,
                    worker_id=worker_id,
                    max_compactions=args.max,
                    options=WorkerOptions(heartbeat_seconds=args.heartbeat_seconds),
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
