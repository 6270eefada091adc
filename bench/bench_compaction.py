"""Major and minor compaction vs the bare pyarrow read+write of the same bytes and Hive 2.3's and
3.1.3's CompactorMR; peak memory as the table and the delete set grow; Spark (issue 14 goals 1 and 3).

    python -m bench.bench_compaction [--rows 5000000] [--deltas 50] [--delete-fraction 0.1]
                                     [--buckets 1] [--repeat 2] [--memory-base-rows N]
                                     [--spark-rows 0] [--spark-buckets 4] [--no-hive]
                                     [--hive 2.3|3.1|both] [--cli-repeat 3] [--cli-only] [--smoke]

Input (built before timing, through the metastore and the ACID writer): ``--deltas`` insert deltas
of N/deltas rows each (``struct<id:bigint, name:string, price:double>``), then ten delete deltas
deleting ``--delete-fraction`` of the rows at random. Each measurement runs in a fresh process on
its own copy of the input (so peak RSS is that run's own), bare and acidflow interleaved; each
process imports what it runs (pyarrow.dataset, and for acidflow the per-bucket merge) before its
clock starts, so neither side's time includes imports (command start-up is ``bench_startup``'s):

- ``bare major|minor`` (the baseline) -- one thread of pyarrow: every input file read through a
  ``pyarrow.dataset`` ORC fragment (65,536-row batches) and the insert events written with one
  ``pyarrow.orc.ORCWriter`` (ZLIB, 64 MiB stripes); for minor the delete events to a second file.
  No merge, no deletes applied, no validation, no ACID metadata, no verification;
- ``acidflow major|minor`` -- ``execute_compaction`` (embedded): compaction transaction, the
  merge-on-read of every input in a producer thread while the writer encodes (both cores), the
  output staged, verified by re-reading its keys, renamed and committed (goals 1a, 1b: <= 1.0x);
- ``Hive CompactorMR`` -- Apache Hive 2.3.10's own ``CompactorMR.run`` (major, from
  ``pyspark/jars``) on a copy of the same input, in a JVM of its own (``-Xmx4g``), its MapReduce
  job under Hadoop's ``LocalJobRunner``; see
  ``tests/java/org/apache/hadoop/hive/ql/txn/compactor/HiveCompactorRunner.java``. Reported: the
  wall of ``CompactorMR.run`` inside the JVM and of the whole process, the process's CPU and peak
  RSS; both outputs' row counts are checked equal (goal 1c: Hive / acidflow >= 3x);
- ``Hive 3.1.3 CompactorMR`` -- the same with Hive 3.1.3's own ``CompactorMR.run`` (hive-exec
  3.1.3 core and its dependencies from Maven Central, ``tests/fixtures/hive31/pom.xml``; a
  ``ValidCompactorWriteIdList``; see ``tests/java_hive31/.../Hive31CompactorRunner.java``), goal 1d;
- ``acidflow compact`` (goal 23e, issue 23) -- the real command line as a process of its own, run
  as the console script runs it (``from acid_core.cli import main``): ``acidflow compact --warehouse
  W --executor embedded --json`` on a copy whose embedded SQLite metastore holds one queued major
  compaction of the table (queued before the clock starts), timed from ``exec`` to exit (start-up,
  imports, the metastore, recovery, the claim, the compaction, its verification and commit, the
  output), acid_core's bytecode compiled first as an install does. Baseline:
  ``bench/bare_orc_rewrite.py``, also a fresh process, one thread of pyarrow reading every input
  file and writing the surviving rows, in two read modes (``read_stripe`` and goal 1a's dataset
  fragment); the faster one's median is the baseline. ``--cli-repeat`` rounds
  (default 3), the three processes interleaved, the order rotated each round; medians of the
  wall. The base's row count is checked against the bare writer's. With Hive 2.3 in the run, Hive
  2.3.10's ``CompactorMR.run`` wall over the command's median wall is reported too (>= 3x). For
  the record, each round also runs the command once more on the then empty queue (its fixed
  cost: start-up, SQLAlchemy and the metastore, recovery, an empty claim; no pyarrow);
  ``--cli-only`` runs just this (and Hive 2.3 unless ``--no-hive``);
- peak RSS of ``acidflow major`` on a small table (``--memory-base-rows``, default rows/10, with a
  quarter of the delete fraction), on 10x its rows and on 10x its deletes (goals 3a, 3b: <= 1.5x);
- with ``--spark-rows``: the Spark executor on ``local[1]`` vs ``local[2]``.

``--no-hive`` leaves Hive's CompactorMR out (it needs ``java`` and ``javac``, JDK 17; 3.1.3 also
``mvn``); ``--hive`` picks the version (default both). ``--smoke``
(CI): 20,000 rows, 5 deltas, one run, no Hive or Spark; the goal lines say SMOKE, not PASS/MISS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc

from acid_core.fs import LocalFileIO
from acid_core.metastore import Column, CompactionType, TableDefinition, open_metastore
from acid_core.orc.schema import RowType
from acid_core.orc.writer import delete_events, insert_events, write_acid_dir
from acid_core.paths import DeleteDeltaDir, DeltaDir
from bench import goals

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


def child_compact(warehouse: str, master: str | None, kind: str = "major") -> dict[str, float]:
    import pyarrow.dataset  # noqa: F401  (the bare run imports it before its clock starts too)

    import acid_core.compaction.bucket_merge  # noqa: F401  (the worker imports it lazily: not timed)
    from acid_core.compaction.spark_runner import SparkSubmitRunner
    from acid_core.compaction.worker import WorkerOptions, execute_compaction

    metastore = open_metastore(None, warehouse)
    metastore.enqueue_compaction("default.b", None, CompactionType(kind))
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


def child_physical(warehouse: str, kind: str = "major") -> dict[str, float]:
    """The bare single-threaded pyarrow read + write of the same bytes (no merge, checks or metadata).

    Every input file is read through a ``pyarrow.dataset`` ORC fragment (``use_threads=False``,
    65,536-row batches: the fastest bare read measured, see bench_read) and the insert events are
    written with one ``pyarrow.orc.ORCWriter`` (ZLIB, 64 MiB stripes); for ``minor`` the delete
    events are written too, to a second file, as a minor compaction writes a delete delta.
    """
    import pyarrow.dataset as ds
    from pyarrow.fs import LocalFileSystem

    location = os.path.join(warehouse, "b")
    inputs = sorted(
        os.path.join(top, name)
        for top, _, names in os.walk(location)
        for name in names
        if name.startswith("bucket_")
    )
    out_dir = tempfile.mkdtemp(dir=warehouse)
    before = _rss_mb()
    started, cpu = time.perf_counter(), time.process_time()
    writers: dict[bool, paorc.ORCWriter] = {}
    deleted = 0
    local = LocalFileSystem()
    for path in inputs:
        is_delete = "delete_delta_" in path
        fragment = ds.OrcFileFormat().make_fragment(path, filesystem=local)
        for batch in fragment.to_batches(batch_size=65536, use_threads=False):
            if is_delete:
                deleted += batch.num_rows
                if kind != "minor":
                    continue
            if is_delete not in writers:
                target = os.path.join(out_dir, f"bucket_{len(writers):05d}")
                writers[is_delete] = paorc.ORCWriter(target, compression="zlib", stripe_size=64 * 1024 * 1024)
            writers[is_delete].write(pa.Table.from_batches([batch]))
    for writer in writers.values():
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


def _hive31_class_path(work: str) -> str:
    """Hive 3.1.3's class path (hive-exec core and its dependencies from Maven Central, see
    tests/fixtures/hive31/pom.xml) plus the Hive 3.1 test helpers compiled against it."""
    from pathlib import Path

    from tests.fixtures.hive_oracles import _compile, oracle_class_path

    class_path = oracle_class_path("3.1.3")
    classes = _compile("3.1.3", class_path, Path(work) / "classes31")
    return os.pathsep.join([str(classes), *class_path])


HIVE_FULL_VERSIONS = {"2.3": "2.3", "3.1": "3.1.3"}
HIVE_RUNNERS = {
    "2.3": "org.apache.hadoop.hive.ql.txn.compactor.HiveCompactorRunner",
    "3.1": "org.apache.hadoop.hive.ql.txn.compactor.Hive31CompactorRunner",
}


def run_hive_compactor(
    class_path: str, location: str, buckets: int, high_watermark: int, version: str = "2.3"
) -> dict[str, float]:
    """Hive ``version``'s CompactorMR (major) on ``location``, in a JVM of its own (2.3.10 or 3.1.3)."""
    work = tempfile.mkdtemp(prefix="acidflow-bench-hive-")
    command = [
        "java",
        *HIVE_JVM_OPTIONS,
        f"-Djava.io.tmpdir={work}",
        "-cp",
        class_path,
        HIVE_RUNNERS[version],
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
        raise SystemExit(f"Hive {version} CompactorMR failed ({process.returncode}):\n{stdout}{tail}")
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


def _run_child(
    kind: str, warehouse: str, master: str | None = None, compaction: str = "major"
) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.bench_compaction", "--child", kind, "--warehouse", warehouse]
    command += ["--type", compaction]
    if master:
        command += ["--master", master]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"child {kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _copy(warehouse: str, suffix: str) -> str:
    """A copy of a built warehouse (cheaper than building it again), its table pointed at the copy."""
    target = tempfile.mkdtemp(prefix=f"acidflow-bench-compaction-{suffix}-")
    shutil.copytree(warehouse, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("hive-copy"))
    # The embedded metastore stores the table's absolute location: re-point it at the copy.
    database = sqlite3.connect(os.path.join(target, ".acidflow", "metastore.sqlite"))
    with database:
        database.execute("UPDATE TBLS SET LOCATION = ? WHERE TBL_NAME = 'b'", (os.path.join(target, "b"),))
    database.close()
    return target


_REPO = Path(__file__).resolve().parents[1]
_BARE_SCRIPT = _REPO / "bench" / "bare_orc_rewrite.py"
_ACIDFLOW = "import sys; from acid_core.cli import main; sys.exit(main())"
BARE_MODES = ("stripe", "dataset")


def _timed_process(argv: list[str]) -> tuple[float, float, str]:
    """Wall (fork to exit) and CPU seconds of one fresh process, and its stdout; exit 0 required."""
    path = os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")]))
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
    )
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - started
    # communicate() reaped it: the children's usage now includes its CPU (one child at a time here).
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])} ... failed ({process.returncode}):\n{stderr[-3000:]}")
    return wall, cpu, stdout


def _run_cli_compact(warehouse: str) -> dict[str, float]:
    """``acidflow compact`` on ``warehouse`` (one major compaction queued first), timed as a process."""
    metastore = open_metastore(None, warehouse)
    metastore.enqueue_compaction("default.b", None, CompactionType.MAJOR)
    metastore.close()
    argv = [sys.executable, "-c", _ACIDFLOW, "compact", "--warehouse", warehouse, "--executor", "embedded"]
    wall, cpu, stdout = _timed_process([*argv, "--json"])
    outcome = json.loads(stdout.strip().splitlines()[-1])
    if outcome["status"] != "compacted":
        raise SystemExit(f"acidflow compact did not compact: {stdout}")
    rows = float(_base_rows(os.path.join(warehouse, "b"))[1])
    # The same command again on the now empty queue: its fixed cost (start-up, the metastore,
    # recovery, an empty claim), for the record next to the goal.
    empty_wall, empty_cpu, _ = _timed_process(argv)
    return {"wall": wall, "cpu": cpu, "rows": rows, "empty_wall": empty_wall, "empty_cpu": empty_cpu}


def _run_bare(location: str, mode: str) -> dict[str, float]:
    """``bench/bare_orc_rewrite.py`` on ``location`` in ``mode``, timed as a process."""
    out_dir = tempfile.mkdtemp(prefix="acidflow-bench-bare-")
    argv = [sys.executable, str(_BARE_SCRIPT), location, os.path.join(out_dir, "bucket_00000"), mode]
    try:
        wall, cpu, stdout = _timed_process(argv)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return {"wall": wall, "cpu": cpu, "rows": float(json.loads(stdout.strip().splitlines()[-1])["written"])}


def compile_acid_core() -> None:
    """Write ``acid_core``'s bytecode (``__pycache__``, ignored by git), as ``pip install`` does.

    The command is timed as installed: the libraries it imports come with their bytecode, and an
    editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` (the build machine's environment) would
    otherwise compile every acid_core module at each start (~0.1 s of CPU). Python reads bytecode
    even when told not to write it.
    """
    import compileall

    if not compileall.compile_dir(str(_REPO / "acid_core"), quiet=1):
        raise SystemExit(f"compileall of {_REPO / 'acid_core'} failed")


def measure_cli(warehouse: str, repeat: int) -> dict[str, list[dict[str, float]]]:
    """Goal 23e's runs: ``acidflow compact`` and both bare modes, interleaved, the order rotated."""
    compile_acid_core()
    order = ["cli", *BARE_MODES]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in order}
    for round_ in range(repeat):
        shift = round_ % len(order)
        for name in order[shift:] + order[:shift]:
            if name == "cli":
                copy = _copy(warehouse, "cli")
                runs[name].append(_run_cli_compact(copy))
                shutil.rmtree(copy, ignore_errors=True)
            else:
                runs[name].append(_run_bare(os.path.join(warehouse, "b"), name))
    rows = {run["rows"] for name in order for run in runs[name]}
    if len(rows) != 1:
        raise SystemExit(f"acidflow's base and the bare writer's output disagree on the row count: {rows}")
    return runs


def report_cli(runs: dict[str, list[dict[str, float]]], command: str, smoke: bool) -> float:
    """Print goal 23e from ``measure_cli``'s runs (medians); return the command's median wall."""
    median = {
        name: {key: statistics.median(run[key] for run in name_runs) for key in ("wall", "cpu")}
        for name, name_runs in runs.items()
    }
    base_mode = min(BARE_MODES, key=lambda mode: median[mode]["wall"])
    cli, base = median["cli"], median[base_mode]
    for name, label in (
        ("stripe", "bare, read_stripe"),
        ("dataset", "bare, dataset"),
        ("cli", "acidflow compact"),
    ):
        walls = ", ".join(f"{run['wall']:.2f}" for run in runs[name])
        print(
            f"  {label:<17}: wall {median[name]['wall']:6.2f} s  cpu {median[name]['cpu']:6.2f} s"
            f"  (process, median of {len(runs[name])}; walls {walls})",
            flush=True,
        )
    empty_wall = statistics.median(run["empty_wall"] for run in runs["cli"])
    empty_cpu = statistics.median(run["empty_cpu"] for run in runs["cli"])
    print(
        f"  acidflow compact on the empty queue afterwards (its fixed cost, no pyarrow): wall {empty_wall:6.2f} s"
        f"  cpu {empty_cpu:6.2f} s (median)",
        flush=True,
    )
    print(
        f"  acidflow compact / bare {base_mode}: {cli['wall'] / base['wall']:.2f}x wall, "
        f"{cli['cpu'] / base['cpu']:.2f}x cpu; {int(runs['cli'][0]['rows']):,} rows in each output",
        flush=True,
    )
    goals.report(
        "23e",
        "embedded major compaction through the CLI / bare pyarrow read+write (process wall)",
        cli["wall"] / base["wall"],
        1.0,
        command=command,
        smoke=smoke,
    )
    return cli["wall"]


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


def _ratio_line(label: str, ours: dict[str, float], base: dict[str, float]) -> None:
    print(
        f"  {label:<15}: wall {ours['wall']:7.2f} s  cpu {ours['cpu']:7.2f} s  peak {ours['peak_rss_mb']:.0f} MB"
        f"  = {ours['wall'] / base['wall']:.2f}x wall, {ours['cpu'] / base['cpu']:.2f}x cpu of the bare read+write",
        flush=True,
    )


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    return min(runs, key=lambda r: r["wall"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_compaction")
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--deltas", type=int, default=50)
    parser.add_argument("--delete-fraction", type=float, default=0.1)
    parser.add_argument("--buckets", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2, help="timed runs of each variant (best wall kept)")
    parser.add_argument(
        "--memory-base-rows",
        type=int,
        default=None,
        help="goal 3: the small table (default rows/10); peak RSS at 10x rows and at 10x the deletes",
    )
    parser.add_argument("--spark-rows", type=int, default=0)
    parser.add_argument("--spark-buckets", type=int, default=4)
    parser.add_argument("--no-hive", action="store_true", help="leave Hive's CompactorMR out")
    parser.add_argument(
        "--hive",
        choices=("2.3", "3.1", "both"),
        default="both",
        help="which Hive's CompactorMR: 2.3.10 (pyspark's jars), 3.1.3 (Maven Central), or both",
    )
    parser.add_argument(
        "--cli-repeat",
        type=int,
        default=3,
        help="goal 23e: rounds of acidflow compact and the bare processes",
    )
    parser.add_argument(
        "--cli-only", action="store_true", help="only goal 23e (and Hive 2.3's ratio to it unless --no-hive)"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny input, no Hive or Spark: checks it still works"
    )
    parser.add_argument("--child", choices=("compact", "physical"), default=None)
    parser.add_argument("--type", choices=("major", "minor"), default="major")
    parser.add_argument("--warehouse", default=None)
    parser.add_argument("--master", default=None)
    args = parser.parse_args(argv)
    if args.child is not None:
        result = (
            child_compact(args.warehouse, args.master, args.type)
            if args.child == "compact"
            else child_physical(args.warehouse, args.type)
        )
        print(json.dumps(result))
        return 0
    if args.smoke:
        args.rows, args.deltas, args.repeat, args.no_hive, args.spark_rows = 20_000, 5, 1, True, 0
        args.cli_repeat = 1
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.bench_compaction", *given])  # exactly how this run was started

    print(
        f"compaction of {args.rows:,} rows, {args.deltas} deltas, {args.delete_fraction:.0%} deletes, "
        f"{args.buckets} bucket(s); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        flush=True,
    )
    warehouse = _fresh(args.rows, args.deltas, args.delete_fraction, args.buckets)
    hive_versions = [] if args.no_hive else ["2.3", "3.1"] if args.hive == "both" else [args.hive]
    if args.cli_only:
        hive_versions = [version for version in hive_versions if version == "2.3"]
    class_paths = {
        version: (_hive_class_path if version == "2.3" else _hive31_class_path)(warehouse)
        for version in hive_versions
    }
    results: dict[str, dict[str, float]] = {}
    for compaction in () if args.cli_only else ("major", "minor"):
        physical, ours = [], []
        for _ in range(args.repeat):
            # Interleaved, each on its own copy: the machine's load hits both alike.
            copy = _copy(warehouse, compaction)
            physical.append(_run_child("physical", copy, compaction=compaction))
            ours.append(_run_child("compact", copy, compaction=compaction))
            shutil.rmtree(copy, ignore_errors=True)
        results[f"physical {compaction}"], results[compaction] = _best(physical), _best(ours)
        base = results[f"physical {compaction}"]
        print(
            f"  bare {compaction:<10}: wall {base['wall']:7.2f} s  cpu {base['cpu']:7.2f} s  "
            f"peak {base['peak_rss_mb']:.0f} MB",
            flush=True,
        )
        _ratio_line(f"acidflow {compaction}", results[compaction], base)
        goals.report(
            "1a" if compaction == "major" else "1b",
            f"{compaction} compaction vs bare pyarrow read+write (wall)",
            results[compaction]["wall"] / base["wall"],
            1.0,
            command=command,
            smoke=args.smoke,
        )
    print(
        f"acidflow compact (the CLI, a process) vs the bare read+write (a process), {args.cli_repeat} round(s):",
        flush=True,
    )
    cli_wall = report_cli(measure_cli(warehouse, args.cli_repeat), command, args.smoke)
    ours_base = ours_rows = None
    if hive_versions:
        ours_run = _copy(warehouse, "check")
        _run_child("compact", ours_run)
        ours_base, ours_rows = _base_rows(os.path.join(ours_run, "b"))
        shutil.rmtree(ours_run, ignore_errors=True)
    for version in hive_versions:
        hive_copy = os.path.join(warehouse, f"hive-copy-{version}")
        shutil.copytree(os.path.join(warehouse, "b"), hive_copy)
        hive = run_hive_compactor(
            class_paths[version], hive_copy, args.buckets, args.deltas + DELETE_TXNS, version
        )
        hive_base, hive_rows = _base_rows(hive_copy)
        shutil.rmtree(hive_copy, ignore_errors=True)
        if ours_rows != hive_rows:
            raise SystemExit(
                f"acidflow's {ours_base} has {ours_rows:,} rows, Hive {version}'s {hive_base} {hive_rows:,}"
            )
        print(f"  outputs        : acidflow {ours_base}, Hive {version} {hive_base}, {ours_rows:,} rows each")
        print(
            f"  Hive {version} CompactorMR: wall {hive['wall']:7.2f} s  (process {hive['process_wall']:.2f} s)"
            f"  cpu {hive['cpu']:7.2f} s (process)  peak {hive['peak_rss_mb']:.0f} MB",
            flush=True,
        )
        if not args.cli_only:
            goals.report(
                "1c" if version == "2.3" else "1d",
                f"Hive {HIVE_FULL_VERSIONS[version]} CompactorMR major / acidflow major (wall, same input)",
                hive["wall"] / results["major"]["wall"],
                3.0,
                command=command,
                higher_is_better=True,
            )
        if version == "2.3":
            goals.report(
                "23e",
                "Hive 2.3.10 CompactorMR major (CompactorMR.run wall) / acidflow compact through the CLI (process wall)",
                hive["wall"] / cli_wall,
                3.0,
                command=command,
                higher_is_better=True,
            )
    shutil.rmtree(warehouse, ignore_errors=True)
    if args.cli_only:
        return 0

    # Goal 3: peak RSS flat when the table grows 10x and when the delete set grows 10x.
    small = args.memory_base_rows or max(args.rows // 10, 2_000)
    fraction = args.delete_fraction
    print(f"peak RSS of acidflow major (fresh process each): {small:,} vs {small * 10:,} rows; deletes x10")
    peaks: dict[str, float] = {}
    for label, rows, share in (
        ("small", small, fraction / 4),
        ("10x rows", small * 10, fraction / 4),
        ("10x deletes", small, fraction * 2.5),
    ):
        built = _fresh(rows, args.deltas, share, args.buckets)
        run = _run_child("compact", built)
        shutil.rmtree(built, ignore_errors=True)
        peaks[label] = run["peak_rss_mb"]
        print(
            f"  {label:<12} {rows:>11,} rows, {share:.1%} deleted: peak {run['peak_rss_mb']:.0f} MB "
            f"(after imports {run['rss_before_mb']:.0f} MB), wall {run['wall']:.2f} s",
            flush=True,
        )
    for goal, label in (("3a", "10x rows"), ("3b", "10x deletes")):
        goals.report(
            goal,
            f"compaction peak RSS, {label} / small",
            peaks[label] / peaks["small"],
            1.5,
            command=command,
            smoke=args.smoke,
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
