"""What the compaction's check for shifted struct values costs (``bucket_merge.refuse_shifted_inputs``).

    python -m bench.bench_struct_guard [--rows 1000000] [--repeat 3] [--smoke]

A table (id bigint, name string, addr struct<city:string,zip:int>, tags array<struct<...>>) with
nulls at every level, written by acidflow in 10 inserts (its own files: the ORC C++ library, a null
struct in every footer, so every input is decoded once more: the worst case). Each round writes
the table twice and runs one embedded major compaction (``run_worker``) on each, with the check and
with it switched off, in alternating order (only the compaction is timed); medians of wall and process CPU, and their ratio. A
table without a struct column pays nothing (the check returns before opening a file).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

import pyarrow as pa

from acid_core.compaction import bucket_merge
from acid_core.compaction.worker import run_worker
from acid_core.metastore import Column, CompactionType, TableDefinition
from acid_core.writes import Warehouse

_ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.int32())])


def _rows(first: int, count: int) -> pa.Table:
    ids = range(first, first + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"name-{i}" for i in ids]),
            "addr": pa.array(
                [None if i % 3 == 0 else {"city": f"c{i % 997}", "zip": i} for i in ids], _ADDRESS
            ),
            "tags": pa.array(
                [None if i % 4 == 0 else [None, {"city": "t", "zip": i % 13}] for i in ids],
                pa.list_(_ADDRESS),
            ),
        }
    )


def _build(root: Path, rows: int) -> None:
    with Warehouse.open(str(root), heartbeat_seconds=None) as wh:
        wh.metastore.create_table(
            TableDefinition(
                "t",
                (
                    Column("id", "bigint"),
                    Column("name", "string"),
                    Column("addr", "struct<city:string,zip:int>"),
                    Column("tags", "array<struct<city:string,zip:int>>"),
                ),
                properties={"transactional": "true"},
            )
        )
        step = max(1, rows // 10)
        for first in range(0, rows, step):
            with wh.transaction(heartbeat_seconds=None) as txn:
                txn.insert("t", _rows(first, min(step, rows - first)))


def _compact(work: Path, rows: int, guard: bool) -> tuple[float, float]:
    _build(work, rows)  # a new directory each time: the metastore records the table's absolute location
    with Warehouse.open(str(work), heartbeat_seconds=None) as wh:
        wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
        check = (
            contextlib.nullcontext() if guard else mock.patch.object(bucket_merge, "refuse_shifted_inputs")
        )
        wall, cpu = time.perf_counter(), time.process_time()
        with check:
            outcomes = run_worker(wh.metastore)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if [o.status for o in outcomes] != ["compacted"]:
        raise RuntimeError(f"the compaction did not run: {outcomes}")
    return wall, cpu


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="20,000 rows, one round")
    args = parser.parse_args(argv)
    rows, repeat = (20_000, 1) if args.smoke else (args.rows, args.repeat)
    with tempfile.TemporaryDirectory(prefix="acidflow-bench-guard-") as tmp:
        timings: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for round_ in range(repeat):
            for guard in (True, False) if round_ % 2 == 0 else (False, True):
                work = Path(tmp) / f"wh-{round_}-{'on' if guard else 'off'}"  # removed with tmp
                timings[guard].append(_compact(work, rows, guard))
    medians = {
        guard: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for guard, runs in timings.items()
    }
    (wall_on, cpu_on), (wall_off, cpu_off) = medians[True], medians[False]
    print(f"major compaction of {rows:,} rows with nested struct nulls, median of {repeat}:")
    print(f"  check off  wall {wall_off:.2f} s  CPU {cpu_off:.2f} s")
    print(f"  check on   wall {wall_on:.2f} s  CPU {cpu_on:.2f} s")
    print(f"  ratio      wall {wall_on / wall_off:.2f}x  CPU {cpu_on / cpu_off:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(__import__("sys").argv[1:]))
