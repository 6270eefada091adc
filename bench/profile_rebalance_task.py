"""Issue 23: what task k of n of a rebalance (no ORDER BY) spends, embedded, and its reads before/after.

    python -m bench.profile_rebalance_task [--rows 1000000] [--deltas 4] [--repeat 3] [--profile]
    python -m bench.profile_rebalance_task --pinned-pair [--rows 4000000] [--repeat 3]

Not a goal benchmark (no ``bench_`` prefix: ``python -m bench`` and the smoke test skip it); the
measurement behind the "rebalance's wasted decode" section of ``bench/RESULTS.md``. Input:
``bench.bench_rebalance.build`` (one partition, ``--rows`` rows in ``--deltas`` single-bucket
deltas), rebalanced into 2 buckets through ``run_worker`` with a task runner that times each
``compact_bucket`` (wall and process CPU: on a loaded machine CPU is the steadier figure);
``--profile`` prints cProfile's top of task 1. Then, ``--repeat`` times, the reads of task 1 of 2
without the writer: the count pass and the slice pass as they were before (the whole stream,
rows before the slice decoded and dropped) and as they are (``_drop_files_before``), with the
number of rows each returns checked equal.

``--pinned-pair``: does a second pinned CPU give a second CPU's worth of a rebalance task? Task 0
of 2 alone on CPU 0, then tasks 0 and 1 at once on CPUs 0 and 1 (processes of their own, each
task as the driver ships it, with the footer layout), wall and process CPU time of each run.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import tempfile
import time
from typing import TYPE_CHECKING

import pyarrow as pa

from acid_core.compaction import bucket_merge
from acid_core.compaction.rebalance import bucket_slice
from acid_core.compaction.worker import run_worker
from acid_core.fs import LocalFileIO
from acid_core.metastore import open_metastore
from acid_core.orc.files import plan_scan
from acid_core.orc.reader import scan
from acid_core.writeids import ValidWriteIdList
from bench.bench_rebalance import ROW_TYPE, build

if TYPE_CHECKING:
    from collections.abc import Callable


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(work: Callable[[], int]) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), _cpu()
    result = work()
    return time.perf_counter() - wall, _cpu() - cpu, result


def _pinned_task(
    warehouse: str, cpu: int, bucket: int, repeat: int, counting: bool = False
) -> list[tuple[float, float]]:
    """Task ``bucket`` of 2, as the driver ships it (layout from the footers), pinned to ``cpu``.

    ``counting``: without the layout, the task counts every input row first (as before the layout).
    """
    import os

    from acid_core.compaction.bucket_merge import BucketTask, compact_bucket, plan_rebalance_layout
    from acid_core.writeids import ValidCompactorWriteIdList, ValidTxnList

    os.sched_setaffinity(0, {cpu})
    root = f"{warehouse}/r/part=big"
    names = tuple(sorted(n for n in os.listdir(root) if n.startswith("delta_")))
    write_ids = ValidCompactorWriteIdList(high_watermark=len(names))
    layout = plan_rebalance_layout(LocalFileIO(), root, names, write_ids, ValidTxnList())
    assert layout is not None
    times = []
    for number in range(repeat):
        task = BucketTask(
            1,
            root,
            f".pinned-{os.getpid()}-{number}",
            bucket,
            (f"base_{len(names):07d}",),
            names,
            (),
            write_ids.to_string(),
            ValidTxnList(high_watermark=len(names) + 1).to_string(),
            ROW_TYPE.to_orc(),
            rebalance_buckets=2,
            rebalance_rows=-1 if counting else layout[0],
            rebalance_marks=() if counting else layout[1],
        )
        times.append(_timed(lambda task=task: len(compact_bucket(task).outputs))[:2])
    return times


def _pinned_pair(args: argparse.Namespace) -> None:
    """Task 0 of 2 alone on CPU 0, then tasks 0 and 1 at once on CPUs 0 and 1 (separate processes).

    Process CPU time does not count waiting for a CPU: if it stays the same when both CPUs work,
    the two CPUs do not slow each other down (no shared core, cache or memory bandwidth limit for
    this work), and any longer wall time is waiting for other processes of the machine.
    """
    import json
    import subprocess

    with tempfile.TemporaryDirectory(prefix="acidflow-profile-rebalance-") as scratch:
        build(scratch, args.rows, args.deltas, 2)

        def start(cpu: int, bucket: int, counting: bool = False) -> subprocess.Popen[str]:
            command = [sys.executable, "-m", "bench.profile_rebalance_task", "--run-pinned", scratch]
            command += [str(cpu), str(bucket), str(args.repeat), "count" if counting else "layout"]
            return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)

        def report(label: str, process: subprocess.Popen[str]) -> None:
            out, _ = process.communicate()
            if process.returncode:
                raise SystemExit(f"{label}: the pinned task failed ({process.returncode})")
            runs = ", ".join(f"wall {wall:.2f} s cpu {cpu:.3f} s" for wall, cpu in json.loads(out))
            print(f"  {label}: {runs}", flush=True)

        print(f"{args.rows:,} rows in {args.deltas} deltas; one 2-bucket task pinned per CPU, layout given:")
        report("task 0 alone on CPU 0, counting the rows first (before)", start(0, 0, counting=True))
        report("task 0 alone on CPU 0", start(0, 0))
        together = start(0, 0), start(1, 1)
        report("task 0 on CPU 0, at once with task 1 on CPU 1", together[0])
        report("task 1 on CPU 1, at once with task 0 on CPU 0", together[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="profile_rebalance_task", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--deltas", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile task 1 of 2")
    parser.add_argument(
        "--pinned-pair", action="store_true", help="CPU of a task pinned alone against two pinned at once"
    )
    parser.add_argument(
        "--run-pinned", nargs=5, metavar=("WH", "CPU", "BUCKET", "N", "MODE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.run_pinned:
        import json

        warehouse, cpu, bucket, repeat, mode = args.run_pinned
        print(json.dumps(_pinned_task(warehouse, int(cpu), int(bucket), int(repeat), mode == "count")))
        return 0
    if args.pinned_pair:
        _pinned_pair(args)
        return 0
    with tempfile.TemporaryDirectory(prefix="acidflow-profile-rebalance-") as scratch:
        build(scratch, args.rows, args.deltas, 2)
        root, io = f"{scratch}/r/part=big", LocalFileIO()
        schema = pa.schema(list(ROW_TYPE.to_arrow()))
        snapshot = ValidWriteIdList(high_watermark=args.deltas)

        def read(**options: object) -> pa.RecordBatchReader:
            return scan(io, root, snapshot, with_row_id=True, ordered=True, schema=schema, **options)  # type: ignore[arg-type]

        def before() -> int:
            total = sum(b.num_rows for b in read(columns=[]))
            start, stop = bucket_slice(1, total, 2)
            stream = bucket_merge._slice_stream(read(batch_rows=65536), start, stop, 1, ROW_TYPE)
            return sum(b.num_rows for b in stream)

        def after() -> int:
            plan = plan_scan(io, root, snapshot)
            total, marks = bucket_merge._count_with_marks(read(columns=[], plan=plan))
            start, stop = bucket_slice(1, total, 2)
            position, key = bucket_merge._mark_at_or_before(marks, start)
            kept = bucket_merge._drop_files_before(io, root, plan, key)
            print(f"  (task 1 reads {len(kept.data_files)} of {len(plan.data_files)} data files)")
            stream = bucket_merge._slice_stream(
                read(batch_rows=65536, plan=kept), start, stop, 1, ROW_TYPE, position, key
            )
            return sum(b.num_rows for b in stream)

        print(f"{args.rows:,} rows in {args.deltas} deltas; task 1 of 2's reads (count + slice), no writer:")
        for _ in range(args.repeat):
            old, new = _timed(before), _timed(after)
            if old[2] != new[2]:
                raise SystemExit(f"the slice has {new[2]} rows; expected {old[2]} as before")
            print(
                f"  before: wall {old[0]:6.2f} s cpu {old[1]:6.3f} s | after: wall {new[0]:6.2f} s "
                f"cpu {new[1]:6.3f} s",
                flush=True,
            )

        def runner(tasks, heartbeat):  # type: ignore[no-untyped-def]
            results = []
            for task in tasks:
                profile = cProfile.Profile() if args.profile and task.bucket_id == 1 else None
                if profile is not None:
                    profile.enable()
                wall, cpu = time.perf_counter(), _cpu()
                results.append(bucket_merge.compact_bucket(task))
                wall, cpu = time.perf_counter() - wall, _cpu() - cpu
                if profile is not None:
                    profile.disable()
                    pstats.Stats(profile).sort_stats("cumulative").print_stats(20)
                print(
                    f"  task {task.bucket_id} of {len(tasks)}: wall {wall:6.2f} s cpu {cpu:6.3f} s",
                    flush=True,
                )
                heartbeat()
            return results

        print("the whole rebalance, embedded, one task after the other:")
        with open_metastore(None, scratch) as metastore:
            [outcome] = run_worker(metastore, worker_id="profile", run_tasks=runner)
        print(f"  {outcome.status}: {outcome.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
