"""Merge-on-read of N million rows with 10% deleted vs a bare ``pyarrow.orc`` read of the same files.

    python -m bench.bench_read [--rows 5000000] [--memory-base-rows N] [--repeat 3] [--dir D] [--smoke]

The table (written once with acidflow's writer, ZLIB, 64 MiB stripes, into --dir or a temp dir)::

    base_0000005/bucket_00000                  50% of the rows, write IDs 1..5 (mixed write IDs)
    delta_000000w_000000w_0000/bucket_00000    10% each, w = 6..10
    delete_delta_0000011_0000011_0000/...      10% of all rows, chosen at random

Rows: ``struct<id:bigint, name:string, price:double>``.

Timed, best of --repeat, interleaved:

- ``bare``: every file (base, deltas and the delete delta), all columns, in batches of 65,536 rows
  through a ``pyarrow.dataset`` ORC fragment (the reader's own I/O path, and the fastest bare read
  measured): no snapshot check, no delete, no row__id;
- ``read_stripe``: the same with ``pyarrow.orc.ORCFile.read_stripe`` (whole stripes), for reference;
- ``scan``: ``acid_core.orc.reader.scan`` at "everything committed", all row columns, the batches
  consumed and dropped (``scan+row__id`` adds the row__id column; ``scan-sort-merged`` forces the
  streaming delete registry with ``delete_events_in_memory=0``).

Goal 2 (issue 14): ``scan`` wall <= 1.2x ``bare`` wall, best of --repeat, reported with
``bench.goals.report``.

Peak memory (goal 3): one subprocess per run (``VmHWM``, and the pyarrow pool's ``max_memory``) of
``bare``, ``scan``, ``scan-sort-merged`` and ``acidflow-read`` (the CLI, ``acidflow read DIR
--format csv`` to /dev/null: rows in row-ID order, written batch by batch) on a small table
(``--memory-base-rows``, default rows/10, 2.5% deleted), on 10x its rows and on 10x its deletes;
each ratio to the small table must stay <= 1.5x. ``scan`` holds the delete set in memory (24 bytes
an event, below Hive's 10M-event ``hive.transactional.events.mem``); ``scan-sort-merged`` is the
streaming registry Hive uses above it (a window per delete file, never the whole set).

``--smoke`` (CI): 20,000 rows, a 2,000-row small table, one run; goal lines say SMOKE.
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

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.orc as orc
from pyarrow.fs import LocalFileSystem

from acid_core.fs import LocalFileIO
from acid_core.orc.reader import DEFAULT_BATCH_ROWS, scan
from acid_core.orc.schema import RowType
from acid_core.orc.writer import delete_events, insert_events, write_acid_dir
from acid_core.paths import BaseDir, DeleteDeltaDir, DeltaDir
from acid_core.writeids import ValidWriteIdList
from bench import goals

ROW_TYPE = RowType.of([("id", "bigint"), ("name", "string"), ("price", "double")])
BATCH_ROWS = 256 * 1024
BUCKET_V1 = 1 << 29


def _rows(start: int, count: int) -> pa.RecordBatch:
    ids = np.arange(start, start + count, dtype=np.int64)
    names = pa.array(np.char.add("customer-", (ids % 100_003).astype(str)), pa.string())
    prices = (ids % 10_000).astype(np.float64) / 100.0
    return pa.record_batch([pa.array(ids), names, pa.array(prices)], names=["id", "name", "price"])


def _insert_batches(write_id: int, start: int, count: int):
    for offset in range(0, count, BATCH_ROWS):
        n = min(BATCH_ROWS, count - offset)
        yield insert_events(_rows(start + offset, n), write_id=write_id, bucket_id=0, first_row_id=offset)


def generate(table_dir: Path, rows: int, seed: int = 7, delete_fraction: float = 0.1) -> dict[str, int]:
    """Write the benchmark table; returns counts. Idempotent per (dir, rows, deletes) through a marker file."""
    marker = table_dir / f".generated-{rows}-{delete_fraction}"
    if marker.exists():
        return json.loads(marker.read_text())
    shutil.rmtree(table_dir, ignore_errors=True)
    table_dir.mkdir(parents=True)
    file_io = LocalFileIO()
    per_write_id = rows // 10
    rng = np.random.default_rng(seed)
    plan = [(w, per_write_id) for w in range(1, 11)]
    plan[-1] = (10, rows - per_write_id * 9)

    def base_batches():
        start = 0
        for write_id, count in plan[:5]:
            yield from _insert_batches(write_id, start, count)
            start += count

    write_acid_dir(file_io, str(table_dir), BaseDir(5), {0: base_batches()}, ROW_TYPE)
    start = sum(count for _, count in plan[:5])
    for write_id, count in plan[5:]:
        write_acid_dir(
            file_io,
            str(table_dir),
            DeltaDir(write_id, write_id, 0),
            {0: _insert_batches(write_id, start, count)},
            ROW_TYPE,
        )
        start += count
    # delete_fraction (10%) of every write ID's rows, sorted by key, deleted by write ID 11.
    originals, row_ids = [], []
    for write_id, count in plan:
        size = int(count * delete_fraction)
        chosen = np.sort(rng.choice(count, size=size, replace=False)).astype(np.int64)
        originals.append(np.full(chosen.size, write_id, dtype=np.int64))
        row_ids.append(chosen)
    o, r = np.concatenate(originals), np.concatenate(row_ids)
    deleted = int(o.size)

    def delete_batches():
        for offset in range(0, deleted, BATCH_ROWS):
            part = slice(offset, offset + BATCH_ROWS)
            keys = (
                pa.array(o[part]),
                pa.array(np.full(o[part].size, BUCKET_V1, dtype=np.int32)),
                pa.array(r[part]),
            )
            yield delete_events(keys, write_id=11, row_type=ROW_TYPE)

    write_acid_dir(file_io, str(table_dir), DeleteDeltaDir(11, 11, 0), {0: delete_batches()}, ROW_TYPE)
    counts = {"rows": rows, "deleted": deleted, "visible": rows - deleted}
    marker.write_text(json.dumps(counts))
    return counts


def _files(table_dir: Path) -> list[Path]:
    return sorted(p for p in table_dir.rglob("bucket_*") if p.is_file())


def bare_read(table_dir: Path) -> int:
    """The same files, all columns, through the reader's own I/O path (a dataset ORC fragment)."""
    rows = 0
    for path in _files(table_dir):
        fragment = ds.OrcFileFormat().make_fragment(str(path), filesystem=LocalFileSystem())
        for batch in fragment.to_batches(batch_size=DEFAULT_BATCH_ROWS, use_threads=False):
            rows += batch.num_rows
    return rows


def stripe_read(table_dir: Path) -> int:
    """The same files with ``ORCFile.read_stripe`` (whole stripes at once)."""
    rows = 0
    for path in _files(table_dir):
        with pa.OSFile(str(path)) as source:
            reader = orc.ORCFile(source)
            for index in range(reader.nstripes):
                rows += reader.read_stripe(index).num_rows
    return rows


def scan_read(table_dir: Path, with_row_id: bool = False, in_memory: int = 10_000_000) -> int:
    rows = 0
    reader = scan(
        LocalFileIO(),
        str(table_dir),
        ValidWriteIdList(),
        with_row_id=with_row_id,
        delete_events_in_memory=in_memory,
    )
    for batch in reader:
        rows += batch.num_rows
    return rows


def sort_merged_read(table_dir: Path) -> int:
    return scan_read(table_dir, in_memory=0)


def _timed(function, *args) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _cli_read(table_dir: Path) -> int:
    """``acidflow read TABLE_DIR --format csv`` with its output to /dev/null (the CLI's own code path)."""
    from acid_core.cli import main as acidflow

    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stdout.flush()
        os.dup2(devnull, 1)
        code = acidflow(["read", str(table_dir), "--format", "csv"])
        sys.stdout.flush()
    finally:
        os.dup2(saved, 1)
        os.close(devnull)
        os.close(saved)
    if code:
        raise SystemExit(f"acidflow read failed with exit code {code}")
    return -1  # rows are not counted: they went to /dev/null


def _child(mode: str, table_dir: str) -> int:
    path = Path(table_dir)
    modes = {
        "bare": bare_read,
        "read_stripe": stripe_read,
        "scan": scan_read,
        "scan-sort-merged": sort_merged_read,
    }
    rows = _cli_read(path) if mode == "acidflow-read" else modes[mode](path)
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over execve from the forking parent.
    status = Path("/proc/self/status").read_text()
    peak_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    pool = pa.default_memory_pool()
    print(
        json.dumps({"rows": rows, "peak_rss_mib": peak_kib / 1024, "pool_max_mib": pool.max_memory() / 2**20})
    )
    return 0


def _measure_memory(mode: str, table_dir: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_read", "--child", mode, "--dir", str(table_dir)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_read", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument(
        "--memory-base-rows",
        type=int,
        default=None,
        help="goal 3: the small table (default rows/10); peak RSS at 10x its rows and 10x its deletes",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny tables, one run: checks it still works")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to keep generated tables (default: a temp dir)")
    parser.add_argument(
        "--child",
        choices=["bare", "read_stripe", "scan", "scan-sort-merged", "acidflow-read"],
        help=argparse.SUPPRESS,
    )
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child, args.dir)

    if args.smoke:
        args.rows, args.repeat, args.memory_base_rows = 20_000, 1, 2_000
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.bench_read", *given])  # exactly how this run was started
    small = args.memory_base_rows or max(args.rows // 10, 2_000)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="acidflow-bench-read-"))
    try:
        print(
            f"cpu count {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}, pyarrow {pa.__version__}, "
            f"tables under {root}",
            flush=True,
        )
        layouts = {
            "timed": (args.rows, 0.1),
            "small": (small, 0.025),
            "10x rows": (small * 10, 0.025),
            "10x deletes": (small, 0.25),
        }
        tables = {}
        for label, (rows, fraction) in layouts.items():
            started = time.perf_counter()
            directory = root / f"rows_{rows}_deleted_{fraction}"
            counts = generate(directory, rows, delete_fraction=fraction)
            tables[label] = directory
            print(
                f"table {label:<11} {rows:>11,} rows: {counts['deleted']:,} deleted, generated/found in "
                f"{time.perf_counter() - started:.1f}s",
                flush=True,
            )

        table_dir = tables["timed"]
        best: dict[str, tuple[float, float]] = {}
        results: dict[str, int] = {}
        for _ in range(args.repeat):
            for name, function, extra in (
                ("bare", bare_read, ()),
                ("read_stripe", stripe_read, ()),
                ("scan", scan_read, ()),
                ("scan+row__id", scan_read, (True,)),
                ("scan-sort-merged", sort_merged_read, ()),
            ):
                wall, cpu, count = _timed(function, table_dir, *extra)
                results[name] = count
                old = best.get(name)
                best[name] = (min(wall, old[0]), min(cpu, old[1])) if old else (wall, cpu)
        print(f"\nmerge-on-read of {args.rows:,} rows (best of {args.repeat}):")
        for name, (wall, cpu) in best.items():
            ratio_wall = wall / best["bare"][0]
            ratio_cpu = cpu / best["bare"][1]
            print(
                f"  {name:<16} {results[name]:>11,} rows  wall {wall:6.2f}s ({ratio_wall:4.2f}x)  "
                f"cpu {cpu:6.2f}s ({ratio_cpu:4.2f}x)"
            )
        goals.report(
            "2",
            "merge-on-read scan vs bare read, base + 5 deltas + 10% deletes (wall)",
            best["scan"][0] / best["bare"][0],
            1.2,
            command=command,
            smoke=args.smoke,
        )

        print("\npeak memory (one subprocess per run, VmHWM):")
        peaks: dict[tuple[str, str], float] = {}
        for mode in ("bare", "scan", "scan-sort-merged", "acidflow-read"):
            for label in ("small", "10x rows", "10x deletes"):
                m = _measure_memory(mode, tables[label])
                peaks[mode, label] = m["peak_rss_mib"]
                print(
                    f"  {mode:<16} {label:<11} peak RSS {m['peak_rss_mib']:7.1f} MiB  "
                    f"arrow pool max {m['pool_max_mib']:7.1f} MiB",
                    flush=True,
                )
        for goal, mode in (("3c", "scan"), ("3c-sort-merged", "scan-sort-merged"), ("3d", "acidflow-read")):
            for suffix, label in (("rows", "10x rows"), ("deletes", "10x deletes")):
                goals.report(
                    f"{goal}-{suffix}",
                    f"{mode} peak RSS, {label} / small",
                    peaks[mode, label] / peaks[mode, "small"],
                    1.5,
                    command=command,
                    smoke=args.smoke,
                )
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
