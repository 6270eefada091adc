"""Issue 14 goal 5: the Spark executor's overhead on a small table, and its speed-up from 1 to 2 cores.

    python -m bench.bench_spark_executor [--small-rows 20000] [--large-rows 2000000] [--buckets 4]
                                         [--deltas 20] [--smoke]

Input: ``bench.bench_compaction``'s table (``--deltas`` insert deltas, then delete deltas deleting
10% of the rows, ``--buckets`` buckets), built fresh for every run; one major compaction with
``execute_compaction`` in a fresh process each, wall time including ``spark-submit``'s start:

- small table: ``embedded`` vs ``auto`` (what ``acidflow compact`` does by default: the Spark
  runner is configured, and the worker routes inputs below ``--spark-threshold-bytes`` to the
  embedded executor, logging why) vs ``spark`` (forced, ``local[2]``, for the record);
- large table: Spark ``local[1]`` vs ``local[2]`` (one task per bucket).

Goals (``bench.goals.report``): 5a ``auto`` vs embedded on the small table <= 1.2x (the overhead
is routing, not Spark); 5b speed-up ``local[1]`` / ``local[2]`` >= 1.8x (near-linear). Runs on a
machine shared with other work: walls are noisy, the speed-up most of all. ``--smoke``: tiny
tables, goal lines marked SMOKE.
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

from bench import goals
from bench.bench_compaction import build

MODES = ("embedded", "auto", "spark", "local[1]", "local[2]")


def _child(warehouse: str, mode: str) -> dict[str, float]:
    from acid_core.compaction.spark_runner import SparkSubmitRunner
    from acid_core.compaction.worker import WorkerOptions, execute_compaction
    from acid_core.metastore import CompactionType
    from acid_core.metastore.factory import open_metastore

    metastore = open_metastore(None, warehouse)
    metastore.enqueue_compaction("default.b", None, CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact("bench")
    if mode == "embedded":
        options = WorkerOptions()
    elif mode == "auto":  # acidflow compact's default: Spark configured, the default threshold
        options = WorkerOptions(large_runner=SparkSubmitRunner(master="local[2]"))
    else:
        master = "local[2]" if mode == "spark" else mode
        options = WorkerOptions(large_runner=SparkSubmitRunner(master=master), large_threshold_bytes=0)
    started = time.perf_counter()
    outcome = execute_compaction(metastore, claimed, options=options)
    metastore.close()
    return {"wall": time.perf_counter() - started, "input_bytes": float(outcome.input_bytes)}


def _run(mode: str, rows: int, deltas: int, buckets: int) -> float:
    warehouse = tempfile.mkdtemp(prefix="acidflow-bench-spark-executor-")
    try:
        build(warehouse, rows, deltas, 0.1, buckets)
        command = [
            sys.executable,
            "-m",
            "bench.bench_spark_executor",
            "--child",
            mode,
            "--warehouse",
            warehouse,
        ]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        if done.returncode != 0:
            raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"  {mode:<9} {rows:>10,} rows: wall {result['wall']:7.2f} s", flush=True)
        return float(result["wall"])
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_spark_executor", description=__doc__.splitlines()[0])
    parser.add_argument("--small-rows", type=int, default=20_000)
    parser.add_argument("--large-rows", type=int, default=2_000_000)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--deltas", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="tiny tables, no verdict")
    parser.add_argument("--child", choices=MODES, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(_child(args.warehouse, args.child)))
        return 0
    if args.smoke:
        args.small_rows, args.large_rows, args.deltas, args.buckets = 2_000, 8_000, 3, 2
    print(f"small table ({args.small_rows:,} rows, {args.deltas} deltas, {args.buckets} buckets):")
    embedded = _run("embedded", args.small_rows, args.deltas, args.buckets)
    auto = _run("auto", args.small_rows, args.deltas, args.buckets)
    spark = _run("spark", args.small_rows, args.deltas, args.buckets)
    print(f"  overhead: auto {auto - embedded:+.2f} s, forced Spark {spark - embedded:+.2f} s over embedded")
    print(f"large table ({args.large_rows:,} rows, {args.buckets} buckets, one Spark task per bucket):")
    one = _run("local[1]", args.large_rows, args.deltas, args.buckets)
    two = _run("local[2]", args.large_rows, args.deltas, args.buckets)
    command = (
        "python -m bench.bench_spark_executor --smoke"
        if args.smoke
        else f"python -m bench.bench_spark_executor --small-rows {args.small_rows} "
        f"--large-rows {args.large_rows} --buckets {args.buckets} --deltas {args.deltas}"
    )
    goals.report(
        "5a",
        "Spark executor configured (auto) vs embedded, small table",
        auto / embedded,
        1.2,
        command=command,
        smoke=args.smoke,
    )
    goals.report(
        "5b",
        "Spark executor speed-up local[1] -> local[2], large table",
        one / two,
        1.8,
        command=command,
        smoke=args.smoke,
        higher_is_better=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
