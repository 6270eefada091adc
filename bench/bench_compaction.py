"""Major compaction of N rows in 50 deltas with 10% deletes, vs the physical limit and Hive 2.3's
CompactorMR; memory; Spark.

    python -m bench.bench_compaction [--rows 10000000] [--deltas 50] [--delete-fraction 0.1]
                                     [--buckets 1] [--memory-rows 1000000,2000000,4000000]
                                     [--spark-rows 2000000] [--spark-buckets 4] [--no-hive]

Input (built before timing, through the metastore and the ACID writer): ``--deltas`` insert deltas
of N/deltas rows each (``struct<id:bigint, name:string, price:double>``), then ten delete deltas
deleting ``--delete-fraction`` of the rows at random. Measured, each in a fresh process (so peak RSS
is that run's own):

- ``acidflow major`` -- ``execute_compaction`` (embedded): the merge-on-read of every input, the
  base written (staged, verified by re-reading its keys, renamed, committed);
- ``physical limit`` -- a bare ``pyarrow.orc`` read of every input file (stripe by stripe) plus a
  bare ``pyarrow.orc.ORCWriter`` write of the surviving rows' events (the output, without merging,
  deleting, validating or verifying);
- ``Hive CompactorMR`` -- Apache Hive 2.3.10's own ``CompactorMR.run`` (from ``pyspark/jars``) on a
  copy of the same input, in a JVM of its own (``-Xmx4g``), its MapReduce job under Hadoop's
  ``LocalJobRunner`` (one map task per bucket, run one at a time, as LocalJobRunner does by
  default); see ``tests/java/org/apache/hadoop/hive/ql/txn/compactor/HiveCompactorRunner.java``.
  Reported: the wall of ``CompactorMR.run`` inside the JVM and of the whole process (JVM start and
  class loading included), and the process's CPU and peak RSS. Both outputs' row counts are
  checked equal;
- peak RSS of ``acidflow major`` at each ``--memory-rows`` size (flat = bounded memory);
- the Spark executor (``SparkSubmitRunner``) on ``local[1]`` vs ``local[2]`` over --spark-buckets
  buckets (spark-submit's JVM start is included: it is part of what a user waits for).

``--no-hive`` leaves Hive's CompactorMR out (it needs ``java`` and ``javac``, JDK 17).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc

from acid_core.fs import LocalFileIO
from acid_core.metastore import Column, CompactionType, TableDefinition, open_metastore
from acid_core.orc.schema import RowType
from acid_core.orc.writer import delete_events, insert_events, write_acid_dir
from acid_core.paths import DeleteDeltaDir, DeltaDir

ROW_TYPE = RowType.of([("id", "bigint"), ("name", "string"), ("price", "double")])
BATCH = 256 * 1024
DELETE_TXNS = 10


def build(warehouse: str, rows: int, deltas: int, delete_fraction: float, buckets: int) -> None:
    """Write the input table through the metastore (committed txns) and the ACID writer."""
    metastore = open_metastore(None, warehouse)
    metastore.create_table(
        TableDefinition(
            "default.b",
            columns=(Column("id", "bigint"), Column("name", "string"), Column("price", "double")),
            bucket_columns=("id",) if buckets > 1 else (),
            num_buckets=buckets if buckets > 1 else -1,
            properties={"transactional": "true"},
        )
    )
    location = metastore.get_table("default.b").location
    io = LocalFileIO()
    rng = np.random.default_rng(7)
    per_delta = rows // deltas
    next_id = 0
    for _ in range(deltas):
        txn = metastore.open_txn()
        write_id = metastore.allocate_write_id(txn, "default.b")
        by_bucket = {}
        for bucket in range(buckets):
            count = per_delta // buckets
            ids = np.arange(next_id, next_id + count, dtype=np.int64)
            next_id += count
            data = pa.table(
                {"id": ids, "name": pa.array(np.char.add("n", (ids % 1000).astype(str))), "price": ids * 0.5}
            )
            by_bucket[bucket] = [
                insert_events(batch, write_id=write_id, bucket_id=bucket, first_row_id=start)
                for start, batch in _chunks(data)
            ]
        write_acid_dir(io, location, DeltaDir(write_id, write_id, 0), by_bucket, ROW_TYPE)
        metastore.commit_txn(txn)
    # Deletes: delete_fraction of (write ID, bucket, row ID) keys, split over DELETE_TXNS deltas.
    wanted = int(rows * delete_fraction)
    picked = rng.choice(deltas * (per_delta // buckets) * buckets, size=wanted, replace=False)
    per_bucket_rows = per_delta // buckets
    write_ids = picked // (per_bucket_rows * buckets) + 1
    buckets_of = (picked // per_bucket_rows) % buckets
    row_ids = picked % per_bucket_rows
    for part in range(DELETE_TXNS):
        txn = metastore.open_txn()
        write_id = metastore.allocate_write_id(txn, "default.b")
        chosen = np.arange(wanted)[part::DELETE_TXNS]
        by_bucket = {}
        for bucket in range(buckets):
            mine = chosen[buckets_of[chosen] == bucket]
            order = np.lexsort((row_ids[mine], write_ids[mine]))
            mine = mine[order]
            bucket_property = (1 << 29) | (bucket << 16)
            keys = (write_ids[mine], np.full(mine.size, bucket_property, dtype=np.int32), row_ids[mine])
            by_bucket[bucket] = [delete_events(keys, write_id=write_id, row_type=ROW_TYPE)]
        write_acid_dir(io, location, DeleteDeltaDir(write_id, write_id, 0), by_bucket, ROW_TYPE)
        metastore.commit_txn(txn)
    metastore.close()


def _chunks(table: pa.Table):
    for start in range(0, table.num_rows, BATCH):
        yield start, table.slice(start, BATCH)


def _rss_mb() -> float:
    # VmHWM (this process's peak RSS since exec); ru_maxrss would include the forking parent's.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_compact(warehouse: str, master: str | None) -> dict[str, float]:
    from acid_core.compaction.spark_runner import SparkSubmitRunner
    from acid_core.compaction.worker import WorkerOptions, execute_compaction

    metastore = open_metastore(None, warehouse)
    metastore.enqueue_compaction("default.b", None, CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact("bench")
    options = WorkerOptions()
    if master is not None:
        options = WorkerOptions(large_runner=SparkSubmitRunner(master=master), large_threshold_bytes=0)
    before = _rss_mb()
    started, cpu = time.perf_counter(), time.process_time()
    outcome = execute_compaction(metastore, claimed, options=options)
    return {
        "wall": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "rss_before_mb": before,
        "peak_rss_mb": _rss_mb(),
        "events": float(sum(outcome.events.values())),
        "input_bytes": float(outcome.input_bytes),
    }


def child_physical(warehouse: str) -> dict[str, float]:
    location = os.path.join(warehouse, "b")
    inputs = sorted(
        os.path.join(top, name)
        for top, _, names in os.walk(location)
        for name in names
        if name.startswith("bucket_")
    )
    output = os.path.join(tempfile.mkdtemp(dir=warehouse), "bucket_00000")
    before = _rss_mb()
    started, cpu = time.perf_counter(), time.process_time()
    writer = None
    deleted = 0
    for path in inputs:
        orc = paorc.ORCFile(path)
        is_delete = "delete_delta_" in path
        for index in range(orc.nstripes):
            stripe = orc.read_stripe(index)
            if is_delete:
                deleted += stripe.num_rows
                continue
            if writer is None:
                writer = paorc.ORCWriter(output, compression="zlib", stripe_size=64 * 1024 * 1024)
            writer.write(pa.Table.from_batches([stripe]))
    if writer is not None:
        writer.close()
    return {
        "wall": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "rss_before_mb": before,
        "peak_rss_mb": _rss_mb(),
        "deleted": float(deleted),
    }


HIVE_JVM_OPTIONS = [
    "-Xmx4g",
    "-XX:+UseSerialGC",
    "-Djava.awt.headless=true",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
]
HIVE_COLUMNS = "id:bigint,name:string,price:double"


def _hive_class_path(work: str) -> str:
    """Hive 2.3.10's class path (pyspark/jars, hive-common first) plus tests/java compiled."""
    from tests.fixtures.hive import JAVA_SOURCES, hive_class_path

    class_path = hive_class_path()
    classes = os.path.join(work, "classes")
    sources = sorted(str(path) for path in JAVA_SOURCES.rglob("*.java"))
    command = ["javac", "-nowarn", "-encoding", "UTF-8", "-d", classes, "-cp", os.pathsep.join(class_path)]
    done = subprocess.run([*command, *sources], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"javac failed:\n{done.stdout}{done.stderr}")
    return os.pathsep.join([*class_path, classes])


def run_hive_compactor(class_path: str, location: str, buckets: int, high_watermark: int) -> dict[str, float]:
    """Hive 2.3.10's CompactorMR (major) on ``location``, in a JVM of its own."""
    work = tempfile.mkdtemp(prefix="acidflow-bench-hive-")
    command = [
        "java",
        *HIVE_JVM_OPTIONS,
        f"-Djava.io.tmpdir={work}",
        "-cp",
        class_path,
        "org.apache.hadoop.hive.ql.txn.compactor.HiveCompactorRunner",
        location,
        HIVE_COLUMNS,
        str(buckets),
        str(high_watermark),
        "",
        "major",
        work,
    ]
    log = os.path.join(work, "jvm.log")
    started = time.perf_counter()
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=out, text=True)
        assert process.stdout is not None
        stdout = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode != 0 or "wall_seconds=" not in stdout:
        with open(log) as text:
            tail = text.read()[-3000:]
        raise SystemExit(f"Hive CompactorMR failed ({process.returncode}):\n{stdout}{tail}")
    shutil.rmtree(work, ignore_errors=True)
    fields = dict(item.split("=", 1) for item in stdout.strip().splitlines()[-1].split())
    return {
        "wall": float(fields["wall_seconds"]),
        "process_wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
    }


def _base_rows(location: str) -> tuple[str, int]:
    """The newest base directory of ``location`` and the rows of its bucket files."""
    bases = sorted(
        (name for name in os.listdir(location) if name.startswith("base_")),
        key=lambda name: int(name.split("_")[1]),
    )
    if not bases:
        raise SystemExit(f"no base directory in {location}: {sorted(os.listdir(location))}")
    base = os.path.join(location, bases[-1])
    rows = sum(
        paorc.ORCFile(os.path.join(base, name)).nrows
        for name in os.listdir(base)
        if name.startswith("bucket_")
    )
    return bases[-1], rows


def _run_child(kind: str, warehouse: str, master: str | None = None) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.bench_compaction", "--child", kind, "--warehouse", warehouse]
    if master:
        command += ["--master", master]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"child {kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fresh(rows: int, deltas: int, fraction: float, buckets: int) -> str:
    warehouse = tempfile.mkdtemp(prefix="acidflow-bench-compaction-")
    started = time.perf_counter()
    build(warehouse, rows, deltas, fraction, buckets)
    print(
        f"  built {rows:,} rows in {deltas} deltas + {DELETE_TXNS} delete deltas, {buckets} bucket(s) "
        f"in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return warehouse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_compaction")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--deltas", type=int, default=50)
    parser.add_argument("--delete-fraction", type=float, default=0.1)
    parser.add_argument("--buckets", type=int, default=1)
    parser.add_argument("--memory-rows", default="1000000,2000000,4000000")
    parser.add_argument("--spark-rows", type=int, default=2_000_000)
    parser.add_argument("--spark-buckets", type=int, default=4)
    parser.add_argument("--no-hive", action="store_true", help="leave Hive 2.3's CompactorMR out")
    parser.add_argument("--child", choices=("compact", "physical"), default=None)
    parser.add_argument("--warehouse", default=None)
    parser.add_argument("--master", default=None)
    args = parser.parse_args(argv)
    if args.child is not None:
        result = (
            child_compact(args.warehouse, args.master)
            if args.child == "compact"
            else child_physical(args.warehouse)
        )
        print(json.dumps(result))
        return 0

    print(f"major compaction of {args.rows:,} rows, {args.deltas} deltas, {args.delete_fraction:.0%} deletes")
    warehouse = _fresh(args.rows, args.deltas, args.delete_fraction, args.buckets)
    hive_copy = None
    if not args.no_hive:
        hive_copy = os.path.join(warehouse, "hive-copy")
        shutil.copytree(os.path.join(warehouse, "b"), hive_copy)
        class_path = _hive_class_path(warehouse)
    physical = _run_child("physical", warehouse)
    ours = _run_child("compact", warehouse)
    hive = None
    if hive_copy is not None:
        hive = run_hive_compactor(class_path, hive_copy, args.buckets, args.deltas + DELETE_TXNS)
        ours_base, ours_rows = _base_rows(os.path.join(warehouse, "b"))
        hive_base, hive_rows = _base_rows(hive_copy)
        if ours_rows != hive_rows:
            raise SystemExit(
                f"acidflow's {ours_base} has {ours_rows:,} rows, Hive's {hive_base} {hive_rows:,}"
            )
        print(f"  outputs        : acidflow {ours_base}, Hive {hive_base}, {ours_rows:,} rows each")
    shutil.rmtree(warehouse, ignore_errors=True)
    print(
        f"  physical limit : wall {physical['wall']:7.2f} s  cpu {physical['cpu']:7.2f} s  peak {physical['peak_rss_mb']:.0f} MB"
    )
    print(
        f"  acidflow major : wall {ours['wall']:7.2f} s  cpu {ours['cpu']:7.2f} s  peak {ours['peak_rss_mb']:.0f} MB"
        f"  ({ours['events']:,.0f} events, {ours['input_bytes'] / 1e6:.0f} MB in)"
    )
    if hive is not None:
        print(
            f"  Hive CompactorMR: wall {hive['wall']:7.2f} s  (process {hive['process_wall']:.2f} s)"
            f"  cpu {hive['cpu']:7.2f} s (process)  peak {hive['peak_rss_mb']:.0f} MB"
        )
    print(
        f"  ratio          : wall {ours['wall'] / physical['wall']:.2f}x  cpu {ours['cpu'] / physical['cpu']:.2f}x"
        " (acidflow / physical limit)"
    )
    if hive is not None:
        print(
            f"  ratio          : wall {hive['wall'] / ours['wall']:.2f}x"
            f" (process {hive['process_wall'] / ours['wall']:.2f}x)  cpu {hive['cpu'] / ours['cpu']:.2f}x"
            " (Hive CompactorMR / acidflow)"
        )

    sizes = [int(s) for s in args.memory_rows.split(",") if s]
    if sizes:
        print("peak RSS of acidflow major by table size (fresh process each):")
    for rows in sizes:
        warehouse = _fresh(rows, args.deltas, args.delete_fraction, args.buckets)
        result = _run_child("compact", warehouse)
        shutil.rmtree(warehouse, ignore_errors=True)
        print(
            f"  {rows:>11,} rows: peak {result['peak_rss_mb']:.0f} MB (after imports {result['rss_before_mb']:.0f} MB), "
            f"wall {result['wall']:.2f} s"
        )

    if args.spark_rows:
        print(
            f"Spark executor, {args.spark_rows:,} rows, {args.spark_buckets} buckets (spark-submit start included):"
        )
        for master in ("local[1]", "local[2]"):
            warehouse = _fresh(args.spark_rows, args.deltas, args.delete_fraction, args.spark_buckets)
            result = _run_child("compact", warehouse, master)
            shutil.rmtree(warehouse, ignore_errors=True)
            print(f"  {master}: wall {result['wall']:.2f} s")
        warehouse = _fresh(args.spark_rows, args.deltas, args.delete_fraction, args.spark_buckets)
        result = _run_child("compact", warehouse)
        shutil.rmtree(warehouse, ignore_errors=True)
        print(f"  embedded: wall {result['wall']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
