"""The initiator and the cleaner over a big metastore: 10,000 tables x 100 partitions (issue 14 goal 6).

    python -m bench.bench_scale [--tables 100,1000,10000] [--partitions 100] [--work 100] [--smoke]

For each table count T: a SQLite metastore with T partitioned full-ACID tables of --partitions
partitions each, rows bulk-inserted (no directories exist, so the initiator finds nothing to
compact). Measured, each as one cycle:

- ``run_initiator`` (not a dry run: the reaper runs too) with nothing to do;
- ``run_cleaner`` with nothing ready (reaper, ``find_ready_to_clean``, housekeeping);
- ``run_cleaner`` with some work: --work compactions ready for cleaning (their directories are
  gone, so each is marked cleaned after its checks).

Next to each: wall and CPU time, the SQL statements it sent (an N+1 shows as statements growing
with T), and the peak of Python allocations during the cycle (``tracemalloc``, a separate run so
the timing is not slowed). Goal 6: one cycle of each within minutes at 10,000 x 100 (reported as
the ratio to a 180 s budget: target <= 1x), and memory flat (the peak at the largest T over the
peak at the smallest T: target <= 1.5x). The initiator cycle is consumed as ``iter_initiator``
yields it (as ``acidflow initiate`` prints it), not collected into a list.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import tracemalloc
from typing import TYPE_CHECKING

import sqlalchemy as sa

from acid_core.compaction.backlog import iter_initiator
from acid_core.compaction.cleaner import run_cleaner
from acid_core.metastore import CompactionType, SqlMetastore
from acid_core.metastore.sql.models import NextWriteId, PartitionRow, TableRow
from bench import goals
from bench.bench_state import SqlStatementCounter, partitioned_acid_table

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_BUDGET_SECONDS = 180.0


def build(work: str, tables: int, partitions: int) -> SqlMetastore:
    """T partitioned ACID tables of P partitions, rows inserted in bulk."""
    store = SqlMetastore(f"sqlite:///{work}/metastore.sqlite", warehouse=f"{work}/wh")
    store.create_table(partitioned_acid_table("default.t00000"))
    tbls, parts = TableRow.__table__, PartitionRow.__table__
    with store._engine.begin() as connection:
        template = dict(connection.execute(sa.select(tbls)).mappings().one())
        template.pop("TBL_ID")
        location = template["LOCATION"].rsplit("/", 1)[0]
        for start in range(0, tables, 500):
            names = [f"t{i:05d}" for i in range(max(start, 1), min(start + 500, tables))]
            if names:
                connection.execute(
                    sa.insert(tbls),
                    [{**template, "TBL_NAME": n, "LOCATION": f"{location}/{n}"} for n in names],
                )
                connection.execute(
                    sa.insert(NextWriteId.__table__),
                    [{"NWI_DATABASE": "default", "NWI_TABLE": n, "NWI_NEXT": 1} for n in names],
                )
        ids = connection.execute(sa.select(tbls.c.TBL_ID, tbls.c.LOCATION)).all()
        batch: list[dict[str, object]] = []
        for table_id, table_location in ids:
            for p in range(partitions):
                batch.append(
                    {
                        "TBL_ID": table_id,
                        "PART_NAME": f"p={p:03d}",
                        "PART_KEY_VALS": [f"{p:03d}"],
                        "LOCATION": f"{table_location}/p={p:03d}",
                        "CREATE_TIME": 0,
                    }
                )
            if len(batch) >= 50_000:
                connection.execute(sa.insert(parts), batch)
                batch = []
        if batch:
            connection.execute(sa.insert(parts), batch)
    return store


def make_cleaner_work(store: SqlMetastore, count: int) -> None:
    """``count`` compactions of distinct tables, compacted and ready for cleaning."""
    for i in range(count):
        table = f"default.t{i:05d}"
        compaction_id = store.enqueue_compaction(table, "p=000", CompactionType.MAJOR)
        store.claim_compaction(compaction_id, "bench-worker")
        store.mark_compacted(compaction_id)


def _cycle(fn: Callable[[], object], counter: SqlStatementCounter) -> tuple[float, float, int, int]:
    """(wall s, CPU s, SQL statements, peak traced bytes) of one call, memory from a second call."""
    before = counter.count
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    statements = counter.count - before
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return wall, cpu, statements, peak


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_scale", description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="100,1000,10000", help="comma-separated table counts")
    parser.add_argument("--partitions", type=int, default=100, help="partitions per table")
    parser.add_argument("--work", type=int, default=100, help="compactions ready for cleaning")
    parser.add_argument("--smoke", action="store_true", help="CI-sized run: 10 and 40 tables of 5 partitions")
    args = parser.parse_args(argv)
    if args.smoke:
        args.tables, args.partitions, args.work = "10,40", 5, 3
    counts = [int(t) for t in args.tables.split(",")]
    print(
        f"{'tables':>7s} {'partitions':>10s} {'cycle':28s} {'wall s':>8s} {'cpu s':>8s} {'SQL':>7s} {'peak MiB':>9s}"
    )
    peaks: dict[str, dict[int, int]] = {}
    seconds: dict[str, dict[int, float]] = {}
    for tables in counts:
        work = tempfile.mkdtemp(prefix="acidflow-bench-scale-")
        try:
            build_started = time.perf_counter()
            store = build(work, tables, args.partitions)
            build_seconds = time.perf_counter() - build_started
            counter = SqlStatementCounter(store)
            cycles: list[tuple[str, Callable[[], object]]] = [
                ("initiator, nothing to do", lambda s=store: sum(1 for _ in iter_initiator(s))),
                ("cleaner, nothing to do", lambda s=store: run_cleaner(s)),
            ]
            for label, fn in cycles:
                wall, cpu, statements, peak = _cycle(fn, counter)
                peaks.setdefault(label, {})[tables] = peak
                seconds.setdefault(label, {})[tables] = wall
                print(
                    f"{tables:>7d} {tables * args.partitions:>10d} {label:28s} {wall:8.2f} {cpu:8.2f} "
                    f"{statements:>7d} {peak / 2**20:9.1f}",
                    flush=True,
                )
            work_count = min(args.work, tables)
            make_cleaner_work(store, work_count)
            before = counter.count
            wall, cpu = time.perf_counter(), time.process_time()
            results = run_cleaner(store)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            seconds.setdefault("cleaner, some work", {})[tables] = wall
            print(
                f"{tables:>7d} {tables * args.partitions:>10d} {f'cleaner, {len(results)} ready':28s} "
                f"{wall:8.2f} {cpu:8.2f} {counter.count - before:>7d} {'':>9s}   (build {build_seconds:.1f} s)",
                flush=True,
            )
            store.close()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    top, bottom = max(counts), min(counts)
    command = f"python -m bench.bench_scale --tables {args.tables} --partitions {args.partitions}"
    for label in ("initiator, nothing to do", "cleaner, nothing to do", "cleaner, some work"):
        goals.report(
            "6",
            f"{label.split(',')[0]} cycle{label.split(',')[1]}, {top} x {args.partitions} vs a {_BUDGET_SECONDS:.0f} s budget",
            seconds[label][top] / _BUDGET_SECONDS,
            1.0,
            command=command,
            smoke=args.smoke,
        )
    for label in ("initiator, nothing to do", "cleaner, nothing to do"):
        goals.report(
            "6",
            f"{label.split(',')[0]} peak memory, {top} vs {bottom} tables",
            peaks[label][top] / max(peaks[label][bottom], 1),
            1.5,
            command=command,
            smoke=args.smoke,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
