"""Issue 23: what task k of n of a rebalance (no ORDER BY) spends, embedded, and its reads before/after.

    python -m bench.profile_rebalance_task [--rows 1000000] [--deltas 4] [--repeat 3] [--profile]

Not a goal benchmark (no ``bench_`` prefix: ``python -m bench`` and the smoke test skip it); the
measurement behind the "rebalance's wasted decode" section of ``bench/RESULTS.md``. Input:
``bench.bench_rebalance.build`` (one partition, ``--rows`` rows in ``--deltas`` single-bucket
deltas), rebalanced into 2 buckets through ``run_worker`` with a task runner that times each
``compact_bucket`` (wall and process CPU: on a loaded machine CPU is the steadier figure);
``--profile`` prints cProfile's top of task 1. Then, ``--repeat`` times, the reads of task 1 of 2
without the writer: the count pass and the slice pass as they were before (the whole stream,
rows before the slice decoded and dropped) and as they are (``_drop_files_before``), with the
number of rows each returns checked equal.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="profile_rebalance_task", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--deltas", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile task 1 of 2")
    args = parser.parse_args(argv)
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
