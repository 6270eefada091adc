"""Spark through ``hiveacid`` vs Spark on one plain ORC file: reads, worker memory, writes.

    python -m bench.bench_spark_read [--rows 4000000] [--master local[1]] [--repeat 3]
                                     [--memory-rows 1000000,4000000] [--write-rows 2000000] [--dir D]
                                     [--smoke]

Read: the table of ``bench.bench_read`` (base with 50% of the rows, five insert deltas of 10%, one
delete delta deleting a random 10% of all rows; ``struct<id:bigint, name:string, price:double>``,
one bucket), registered in an embedded metastore as ``bench.acid`` and read at write ID 11 with
``spark.read.format("hiveacid")``, through the JVM reader (its jar on ``spark.jars``, the default)
and through the Python data source (``engine='python'``). Baseline: the same visible rows written
once to ONE plain ORC file (ZLIB) and read with ``spark.read.orc``. All are consumed with the
``noop`` sink (every row and column materialized), in the same session, round-robin after one
warm-up each; best of ``--repeat``. The goal (issue 13: hiveacid <= 1.3x plain) is reported with
``bench.goals.report`` for the JVM reader.

The floor of any Python data source: ``passthrough`` is a Python data source that does no ACID work
at all (pyarrow reads the plain ORC file and yields its batches unchanged); the gap between it and
``spark.read.orc`` is Spark's Python data source transport (Arrow IPC from the Python worker, then
rows in the JVM), which the Python source pays too. Each read variant also prints its CPU seconds
split between the JVM and Spark's Python processes (``/proc``, Linux only; the least of the timed
runs).

Memory: for each of ``--memory-rows``, a fresh Spark session (subprocess) per read path reads the
table and reports the peak RSS (``VmHWM``) of the process that merges: the JVM for the JVM reader
(in local mode it is also the driver: a ceiling, not the task's own memory), the largest of Spark's
Python workers for the Python source. Both should stay flat as the table grows, beyond the delete
set (24-32 bytes per deleted row).

Write: ``--write-rows`` rows from ``spark.range`` through ``hiveacid`` (append, one transaction)
vs ``df.write.orc``; best of ``--repeat``.

``--smoke`` (CI): 20,000 rows, one repeat, no memory runs, 1,000 written rows; the goal line says
SMOKE, because a CI-sized input only proves that the benchmark still works.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.orc as orc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from acid_core.fs import LocalFileIO
from acid_core.metastore import Column, TableDefinition
from acid_core.metastore.factory import open_metastore
from acid_core.orc.reader import scan_table
from acid_core.writeids import ValidWriteIdList
from bench import goals
from bench.bench_read import generate
from pyspark_hiveacid.jvm import jar_path

if TYPE_CHECKING:
    from collections.abc import Callable

COMMAND = "python -m bench.bench_spark_read --rows 4000000 --repeat 3"
_ROOT = str(Path(__file__).resolve().parents[1])
COLUMNS = (Column("id", "bigint"), Column("name", "string"), Column("price", "double"))


class _PassThroughReader(DataSourceReader):
    def __init__(self, path: str) -> None:
        self.path = path

    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        import pyarrow.dataset as ds

        yield from ds.dataset(self.path, format="orc").to_batches(batch_size=65536)


class PassThroughDataSource(DataSource):
    """The floor of a Python data source: a plain ORC file's batches as pyarrow decodes them."""

    @classmethod
    def name(cls) -> str:
        return "bench_passthrough"

    def schema(self) -> str:
        return "id bigint, name string, price double"

    def reader(self, schema) -> _PassThroughReader:
        return _PassThroughReader(self.options["path"])


def _session(master: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _ROOT not in paths:  # the workers import bench.bench_spark_read for the passthrough source
        os.environ["PYTHONPATH"] = os.pathsep.join([_ROOT, *paths])
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName("bench-spark-read")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.memory", "2g")
        .config("spark.jars", str(jar_path()))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(PassThroughDataSource)
    return spark


def prepare(root: Path, rows: int) -> tuple[str, str, str]:
    """The warehouse, the registered ACID table's snapshot string, and the plain ORC file."""
    warehouse = root / "warehouse"
    table_dir = root / f"acid-{rows}"
    generate(table_dir, rows)
    store = open_metastore(None, str(warehouse))
    try:
        if "bench" not in store.list_databases():
            store.create_database("bench")
        name = f"bench.acid_{rows}"
        if f"acid_{rows}" not in store.list_tables("bench"):
            store.create_table(
                TableDefinition(
                    name, columns=COLUMNS, properties={"transactional": "true"}, location=str(table_dir)
                )
            )
        if "w" not in store.list_tables("bench"):
            store.create_table(
                TableDefinition("bench.w", columns=COLUMNS, properties={"transactional": "true"})
            )
    finally:
        store.close()
    snapshot = ValidWriteIdList(11, table_name=name)
    plain = root / f"plain-{rows}.orc"
    if not plain.exists():
        visible = scan_table(LocalFileIO(), str(table_dir), snapshot)
        orc.write_table(visible, str(plain), compression="ZLIB")
    return str(warehouse), snapshot.to_string(), str(plain)


def _acid(spark, warehouse: str, snapshot: str, rows: int, engine: str = "jvm"):
    return (
        spark.read.format("hiveacid")
        .option("warehouse", warehouse)
        .option("snapshot", snapshot)
        .option("engine", engine)
        .load(f"bench.acid_{rows}")
    )


def _noop(df) -> float:
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def _best_interleaved(variants, repeat: int) -> dict[str, float]:
    """Best of ``repeat`` for each variant, run round-robin (load drifts hit all alike), after a warm-up."""
    for function in variants.values():
        function()
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(repeat):
        for name, function in variants.items():
            best[name] = min(best[name], function())
    return best


def _best(function, repeat: int) -> float:
    function()  # warm-up
    return min(function() for _ in range(repeat))


def _descendants() -> set[int]:
    """The process IDs of this process's descendants (the JVM, Spark's Python daemon and workers)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    mine: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - mine
        mine |= frontier
    return mine


def _program(pid: int) -> str | None:
    """``java``, ``pyspark`` (a Spark Python daemon or worker) or None (anything else, or gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            arguments = cmdline.read().split(b"\0")
    except OSError:
        return None
    if os.path.basename(arguments[0]) == b"java":
        return "java"
    return "pyspark" if any(b"pyspark" in a for a in arguments) else None


def _descendant_peak_rss(program_name: str) -> float:
    """Largest VmHWM (MiB) among this process's descendants running ``program_name``.

    ``pyspark``: Spark's Python workers (in local mode the daemon forks the workers that ran
    ``read()``; they stay alive for reuse, so their high-water marks include the read). ``java``:
    the JVM (driver and executor in local mode).
    """
    peak = 0
    for pid in _descendants():
        if _program(pid) != program_name:
            continue
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
        except OSError:
            continue
    return peak / 2**20


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _tree_cpu() -> dict[int, tuple[str, float]]:
    """Each JVM and Spark Python process under this one: (``java`` | ``pyspark``, CPU seconds so far).

    utime + stime + the CPU of children it waited for (``/proc/PID/stat`` fields 14-17); the JVM's
    threads (task, GC, JIT) are all in its figure. Linux only (elsewhere: nothing).
    """
    used: dict[int, tuple[str, float]] = {}
    if not os.path.isdir("/proc"):
        return used
    for pid in _descendants():
        program = _program(pid)
        if program is None:
            continue
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        used[pid] = (program, sum(int(f) for f in fields[11:15]) / _TICKS)
    return used


def _cpu_between(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU used between two ``_tree_cpu`` readings by the processes alive at the second, per program.

    A process that ended in between is left out unless its parent waited for it (then its CPU is in
    the parent's figure): an undercount, never the negative a plain difference of sums would give.
    """
    spent = {"java": 0.0, "pyspark": 0.0}
    for pid, (program, seconds) in after.items():
        earlier = before.get(pid)
        start = earlier[1] if earlier is not None and earlier[0] == program else 0.0
        spent[program] += max(0.0, seconds - start)
    return spent


def _with_cpu(function: Callable[[], float], log: list[tuple[float, float, float]]) -> Callable[[], float]:
    """``function`` (returning its wall time) that also appends (wall, JVM CPU, Python CPU) to ``log``."""

    def measured() -> float:
        before = _tree_cpu()
        wall = function()
        spent = _cpu_between(before, _tree_cpu())
        log.append((wall, spent["java"], spent["pyspark"]))
        return wall

    return measured


def _child(args: argparse.Namespace) -> int:
    warehouse, snapshot, _plain = prepare(Path(args.dir), args.rows)
    spark = _session(args.master)
    count = _acid(spark, warehouse, snapshot, args.rows, args.engine).count()
    _noop(_acid(spark, warehouse, snapshot, args.rows, args.engine))
    program = "java" if args.engine == "jvm" else "pyspark"
    print(json.dumps({"rows": args.rows, "visible": count, "peak_mib": _descendant_peak_rss(program)}))
    spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_spark_read", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--master", default="local[1]")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory-rows", default="1000000,4000000")
    parser.add_argument("--write-rows", type=int, default=2_000_000)
    parser.add_argument("--dir", default=None, help="keep generated tables here (default: a temp dir)")
    parser.add_argument("--smoke", action="store_true", help="CI size: seconds, no verdict")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--engine", default="jvm", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.repeat, args.memory_rows, args.write_rows = 20_000, 1, "", 1_000
    temporary = None
    if args.dir is None:
        temporary = tempfile.mkdtemp(prefix="bench-spark-")
        args.dir = temporary
    try:
        if args.child:
            return _child(args)
        root = Path(args.dir)
        warehouse, snapshot, plain = prepare(root, args.rows)
        spark = _session(args.master)
        acid_rows = _acid(spark, warehouse, snapshot, args.rows).count()
        plain_rows = spark.read.orc(plain).count()
        assert acid_rows == plain_rows, (acid_rows, plain_rows)
        python_rows = _acid(spark, warehouse, snapshot, args.rows, "python").count()
        assert acid_rows == python_rows, (acid_rows, python_rows)
        logs: dict[str, list[tuple[float, float, float]]] = {
            "plain": [],
            "passthrough": [],
            "hiveacid": [],
            "python": [],
        }
        variants = {
            "plain": _with_cpu(lambda: _noop(spark.read.orc(plain)), logs["plain"]),
            "passthrough": _with_cpu(
                lambda: _noop(spark.read.format("bench_passthrough").load(plain)), logs["passthrough"]
            ),
            "hiveacid": _with_cpu(
                lambda: _noop(_acid(spark, warehouse, snapshot, args.rows)), logs["hiveacid"]
            ),
            "python": _with_cpu(
                lambda: _noop(_acid(spark, warehouse, snapshot, args.rows, "python")), logs["python"]
            ),
        }
        best = _best_interleaved(variants, args.repeat)
        plain_s, acid_s = best["plain"], best["hiveacid"]
        # CPU of the timed runs (the warm-up, logged first, is left out): the least of each.
        cpu = {name: (min(r[1] for r in log[1:]), min(r[2] for r in log[1:])) for name, log in logs.items()}
        print(f"read {args.rows:,} rows ({acid_rows:,} visible), master {args.master}:")
        print("                                   wall   ratio   JVM CPU  Python CPU (least of the runs)")
        labels = {
            "plain": "plain ORC (spark.read.orc)  ",
            "passthrough": "Python source, no ACID work ",  # the floor of any Python data source
            "hiveacid": "hiveacid, JVM reader        ",
            "python": "hiveacid, engine='python'   ",
        }
        for name, label in labels.items():
            print(
                f"  {label} {best[name]:7.2f} s  {best[name] / plain_s:5.2f}x"
                f"  {cpu[name][0]:6.2f} s  {cpu[name][1]:6.2f} s"
            )
        if cpu["plain"][0] > 0:
            print(
                "  JVM CPU alone vs plain: Python source transport "
                f"{cpu['passthrough'][0] / cpu['plain'][0]:.2f}x, hiveacid {cpu['hiveacid'][0] / cpu['plain'][0]:.2f}x"
            )
        goals.report(
            "13",
            "Spark read through hiveacid (10% deleted) vs spark.read.orc of the same rows",
            acid_s / plain_s,
            1.3,
            command=COMMAND,
            smoke=args.smoke,
        )

        source = spark.range(args.write_rows).selectExpr(
            "id",
            "concat('customer-', cast(id % 100003 as string)) as name",
            "cast(id % 10000 as double) / 100 as price",
        )
        target = root / "plain-write"

        def plain_write() -> float:
            shutil.rmtree(target, ignore_errors=True)
            start = time.perf_counter()
            source.write.orc(str(target))
            return time.perf_counter() - start

        def acid_write() -> float:
            start = time.perf_counter()
            source.write.format("hiveacid").option("warehouse", warehouse).mode("append").save("bench.w")
            return time.perf_counter() - start

        plain_w = _best(plain_write, args.repeat)
        acid_w = _best(acid_write, args.repeat)
        print(f"write {args.write_rows:,} rows:")
        print(f"  plain ORC (df.write.orc)       {plain_w:7.2f} s  1.00x")
        print(f"  hiveacid append (1 txn)        {acid_w:7.2f} s  {acid_w / plain_w:.2f}x")
        spark.stop()

        print("peak RSS of the merging process while reading through hiveacid (fresh session per read):")
        print("          table rows   JVM reader: the JVM   engine='python': its Python worker")
        for rows in [int(r) for r in args.memory_rows.split(",") if r]:
            peaks = []
            for engine in ("jvm", "python"):
                command = [sys.executable, "-m", "bench.bench_spark_read", "--child", "--rows", str(rows)]
                command += ["--master", args.master, "--dir", args.dir, "--engine", engine]
                out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
                peaks.append(json.loads(out.strip().splitlines()[-1])["peak_mib"])
            print(f"  {rows:>18,}   {peaks[0]:10.1f} MiB   {peaks[1]:10.1f} MiB")
        return 0
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
