"""Issue 23: many compactions in one Spark application vs one ``spark-submit`` per compaction.

    python -m bench.bench_spark_cluster [--compactions 200] [--rows 50000] [--deltas 5] [--sample N]
                                        [--overhead-rows 10] [--rss-compactions 10] [--smoke]

A Spark standalone cluster (master + two one-core workers, 1 GB each, from PySpark's jars:
``tests.fixtures.spark_cluster.start_cluster``) runs every job. Input: a table partitioned by
``part`` with ``--compactions`` partitions, each ``--rows`` rows in ``--deltas`` insert deltas (one
committed transaction per delta, writing every partition), one major compaction queued per
partition. Built twice, identically:

- **one application** (this change, what the compaction DAG runs): ``spark-submit compact.py
  --compaction-id ID`` for all N entries at once; wall time from submit to exit;
- **one spark-submit per compaction** (the design before, one mapped SparkSubmitOperator per
  entry, run one after another since each application takes every core of the cluster): the wall
  of ``--sample`` of them (default all), scaled to N (each submission is independent).

Per-entry overhead of the one application: on a third table whose partitions hold
``--overhead-rows`` rows each (nothing to merge), ``(wall(N entries) - wall(1 entry)) / (N - 1)``:
what one more entry costs the application beyond its merge.

The application driver's peak memory: every submission samples its driver every 0.5 s, the
spark-submit JVM (``SparkSubmit``, client mode) and the Python driver it starts (``compact.py``),
reading each process's ``VmHWM`` (its own peak RSS) from ``/proc/<pid>/status`` (the tree found
with psutil; executors are the workers' children, not counted). The driver's peak is the JVM's
plus the Python's. Goal 23d compares the driver of one application for ``--rss-compactions``
entries whose partitions hold ``--rows`` rows with the same entries at 10x ``--rows`` rows each:
"the table grows 10x" as in issue 14's goal 3 (rows, same layout: same partitions, deltas and
files). That is the axis a driver must not follow (the rows are merged on executors; the driver
plans, heartbeats, re-reads each output file's key columns in batches to verify it, and commits):
a driver that collected rows or read whole files would grow 10x. The other axis, entries, is the
driver's own per-entry state; it is printed (not a goal) from the nothing-to-merge pair above:
1 entry vs ``--compactions`` entries. With ``--rss-compactions`` equal to ``--compactions`` the
one-application run is the first of the pair (one submission fewer; the smoke does this).

Goals (``bench.goals.report``): 23a one application >= 5x faster than one spark-submit per
compaction; 23b per-entry overhead <= 0.5 s (reported as overhead / 0.5 s, target <= 1.00x); 23d
the driver's peak RSS (JVM + Python) at 10x rows <= 1.5x its peak at 1x.
``--smoke``: 3 tiny partitions (200 rows, then 2,000 for 23d), goal lines marked SMOKE.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa

from acid_core.fs import LocalFileIO
from acid_core.metastore import Column, CompactionState, CompactionType, TableDefinition, open_metastore
from acid_core.orc.schema import RowType
from acid_core.orc.writer import insert_events, write_acid_dir
from acid_core.paths import DeltaDir
from bench import goals

ROW_TYPE = RowType.of([("id", "bigint"), ("name", "string"), ("price", "double")])
TABLE = "default.p"


def build(warehouse: str, partitions: int, rows: int, deltas: int) -> list[int]:
    """Write the partitioned table through the metastore and the ACID writer; queue one major each."""
    with open_metastore(None, warehouse) as metastore:
        metastore.create_table(
            TableDefinition(
                TABLE,
                columns=(Column("id", "bigint"), Column("name", "string"), Column("price", "double")),
                partition_keys=(Column("part", "string"),),
                properties={"transactional": "true"},
            )
        )
        locations = [metastore.add_partition(TABLE, {"part": f"{i:04d}"}).location for i in range(partitions)]
        io = LocalFileIO()
        per_delta = max(1, rows // deltas)
        for _ in range(deltas):
            txn = metastore.open_txn()
            write_id = metastore.allocate_write_id(txn, TABLE)
            for number, location in enumerate(locations):
                ids = (
                    np.arange(number * rows, number * rows + per_delta, dtype=np.int64) + write_id * per_delta
                )
                data = pa.table(
                    {
                        "id": ids,
                        "name": pa.array(np.char.add("n", (ids % 1000).astype(str))),
                        "price": ids * 0.5,
                    }
                )
                events = [insert_events(data, write_id=write_id, bucket_id=0, first_row_id=0)]
                write_acid_dir(io, location, DeltaDir(write_id, write_id, 0), {0: events}, ROW_TYPE)
            metastore.commit_txn(txn)
        return [
            metastore.enqueue_compaction(TABLE, f"part={i:04d}", CompactionType.MAJOR)
            for i in range(partitions)
        ]


@dataclass(frozen=True)
class DriverPeak:
    """Peak RSS (``VmHWM``, MiB) of an application's driver: the spark-submit JVM and its Python."""

    jvm_mib: float
    python_mib: float

    @property
    def total_mib(self) -> float:
        return self.jvm_mib + self.python_mib

    def __str__(self) -> str:
        return f"JVM {self.jvm_mib:6.1f} + Python {self.python_mib:6.1f} = {self.total_mib:6.1f} MiB"


def _vm_hwm_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:  # gone between the listing and the read
        return None
    return None


def _driver_role(process: psutil.Process) -> str | None:
    """``jvm`` for the SparkSubmit JVM, ``python`` for the driver's Python, else None.

    spark-submit execs spark-class, which first runs a short-lived launcher JVM
    (``org.apache.spark.launcher.Main``) and then execs the SparkSubmit JVM; that JVM starts the
    Python driver (``PythonRunner``). The launcher is not the driver and is not counted.
    """
    try:
        name, arguments = process.name(), process.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    if name == "java" and "org.apache.spark.deploy.SparkSubmit" in arguments:
        # The launcher's command line names SparkSubmit too, but after its own main class.
        return None if "org.apache.spark.launcher.Main" in arguments else "jvm"
    if name.startswith("python") and any(a.endswith("compact.py") for a in arguments):
        return "python"
    return None


class DriverSampler:
    """Samples the ``VmHWM`` of a spark-submit's process tree every ``interval`` seconds (a thread).

    ``VmHWM`` is each process's own peak RSS since its exec, so a sample every half second misses
    at most the growth of a process's last half second; the driver's peak is the JVM's peak plus
    the Python driver's peak (an upper bound of their simultaneous sum).
    """

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        self._root = psutil.Process(pid)
        self._interval = interval
        self._peaks: dict[str, float] = {"jvm": 0.0, "python": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="driver-rss", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        try:
            tree = [self._root, *self._root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for process in tree:
            role = _driver_role(process)
            peak = _vm_hwm_mib(process.pid) if role is not None else None
            if role is not None and peak is not None:
                self._peaks[role] = max(self._peaks[role], peak)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def stop(self) -> DriverPeak:
        """Stop sampling; the peaks seen (0.0 for a process never seen)."""
        self._stop.set()
        self._thread.join()
        return DriverPeak(self._peaks["jvm"], self._peaks["python"])


def _submit(cluster: object, warehouse: str, ids: list[int]) -> tuple[float, DriverPeak]:
    from acid_core.compaction.spark_runner import find_spark_submit, spark_job_path

    command = [
        find_spark_submit(),
        "--master",
        cluster.master_url,  # type: ignore[attr-defined]
        *cluster.conf_args(),  # type: ignore[attr-defined]
        spark_job_path(),
        "--warehouse",
        warehouse,
        *(arg for i in ids for arg in ("--compaction-id", str(i))),
    ]
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cluster.submit_env(),  # type: ignore[attr-defined]
    )
    sampler = DriverSampler(process.pid)
    try:
        stdout, stderr = process.communicate()
    finally:
        peak = sampler.stop()
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"spark-submit failed ({process.returncode}):\n{stdout}\n{stderr[-3000:]}")
    if not (peak.jvm_mib and peak.python_mib):
        raise SystemExit(f"the driver's processes were not sampled ({peak}); expected a JVM and a Python")
    with open_metastore(None, warehouse) as metastore:
        states = {metastore.get_compaction(i).state for i in ids}
    if states != {CompactionState.READY_FOR_CLEANING}:
        raise SystemExit(f"compactions {ids} ended {states}; expected ready for cleaning")
    return wall, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_spark_cluster", description=__doc__.splitlines()[0])
    parser.add_argument("--compactions", type=int, default=200)
    parser.add_argument("--rows", type=int, default=50_000, help="rows per partition")
    parser.add_argument("--deltas", type=int, default=5)
    parser.add_argument("--sample", type=int, default=None, help="one-per-submit runs measured (default all)")
    parser.add_argument("--overhead-rows", type=int, default=10)
    parser.add_argument(
        "--rss-compactions",
        type=int,
        default=10,
        help="goal 23d: entries of the driver-RSS runs, at --rows and 10x --rows per partition (default 10; "
        "equal to --compactions, the one-application run is the first of the two)",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny input, no verdict")
    args = parser.parse_args(argv)
    if args.smoke:
        args.compactions, args.rows, args.deltas, args.sample, args.rss_compactions = 3, 200, 2, 1, 3
    count = args.compactions
    sample = min(count, args.sample or count)
    rss_count = args.rss_compactions
    from tests.fixtures.spark_cluster import start_cluster

    with tempfile.TemporaryDirectory(prefix="acidflow-bench-cluster-") as scratch:
        root = Path(scratch)
        cluster = start_cluster(root / "cluster")
        try:
            print(
                f"{count} partitions x {args.rows:,} rows in {args.deltas} deltas; cluster {cluster.master_url}"
            )
            one_ids = build(str(root / "one"), count, args.rows, args.deltas)
            one, one_peak = _submit(cluster, str(root / "one"), one_ids)
            print(f"  one application, {count} compactions: {one:8.2f} s; driver peak {one_peak}", flush=True)
            each_ids = build(str(root / "each"), count, args.rows, args.deltas)
            walls = [_submit(cluster, str(root / "each"), [i])[0] for i in each_ids[:sample]]
            each = sum(walls) / len(walls) * count
            print(
                f"  one spark-submit per compaction: {sum(walls) / len(walls):6.2f} s each "
                f"({sample} measured) -> {each:8.2f} s for {count}",
                flush=True,
            )
            tiny_ids = build(str(root / "tiny"), count + 1, args.overhead_rows, 1)
            single, single_peak = _submit(cluster, str(root / "tiny"), tiny_ids[:1])
            many, many_peak = _submit(cluster, str(root / "tiny"), tiny_ids[1:])
            overhead = (many - single) / max(1, count - 1)
            print(
                f"  nothing to merge: 1 entry {single:6.2f} s, {count} entries {many:6.2f} s -> "
                f"{overhead:.3f} s per extra entry",
                flush=True,
            )
            print(
                f"  driver peak, nothing to merge: 1 entry {single_peak}; {count} entries {many_peak} "
                f"({many_peak.total_mib / single_peak.total_mib:.2f}x)",
                flush=True,
            )
            # Goal 23d: the same entries, each partition 10x the rows (the table grows 10x).
            peaks: list[DriverPeak] = []
            for rows in (args.rows, args.rows * 10):
                if rss_count == count and rows == args.rows:
                    peaks.append(one_peak)  # the one-application run above is exactly this run
                else:
                    name = f"rss{rows}"
                    ids = build(str(root / name), rss_count, rows, args.deltas)
                    peaks.append(_submit(cluster, str(root / name), ids)[1])
                print(f"  driver peak, {rss_count} entries x {rows:,} rows: {peaks[-1]}", flush=True)
        finally:
            cluster.stop()
    command = (
        "python -m bench.bench_spark_cluster --smoke"
        if args.smoke
        else f"python -m bench.bench_spark_cluster --compactions {count} --rows {args.rows} "
        f"--deltas {args.deltas} --sample {sample} --overhead-rows {args.overhead_rows} "
        f"--rss-compactions {rss_count}"
    )
    goals.report(
        "23a",
        "one Spark application vs one spark-submit per compaction (standalone cluster)",
        each / one,
        5.0,
        command=command,
        smoke=args.smoke,
        higher_is_better=True,
    )
    goals.report(
        "23b",
        f"per-entry overhead in one application ({overhead:.3f} s / 0.5 s)",
        overhead / 0.5,
        1.0,
        command=command,
        smoke=args.smoke,
    )
    small, large = peaks
    goals.report(
        "23d",
        f"application driver peak RSS (JVM + Python), {rss_count} entries x 10x rows "
        f"({large.total_mib:.0f} / {small.total_mib:.0f} MiB)",
        large.total_mib / small.total_mib,
        1.5,
        command=command,
        smoke=args.smoke,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
