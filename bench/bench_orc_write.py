"""Writing N million insert events: acidflow's event-file writer vs a bare ``pyarrow.orc.write_table``.

    python -m bench.bench_orc_write [--rows 5000000] [--compression zlib] [--repeat 3] [--pyorc-rows 500000]

Rows: ``struct<id:bigint, name:string, price:double, day:date>``, generated before timing. Baseline:
``pyarrow.orc.write_table`` of the very same event table (already built, no validation, no ACID
metadata) with the same ORC settings (compression, 64 MiB stripes, 256 KiB compression blocks, file
version 0.12). Measured, best of --repeat, interleaved:

- ``writer(events)``: ``write_event_file`` from the prebuilt event batches (validation, stripe
  tracking, the footer rewrite with the ACID user metadata, temporary name + rename);
- ``writer(rows)``: ``insert_events`` + ``write_event_file`` from the row batches, end to end;
- ``pyorc`` (the alternative the writer did not choose, on --pyorc-rows rows and scaled): Arrow
  batches converted to Python tuples and written with ``pyorc.Writer`` plus ``set_user_metadata``.

Prints wall and CPU seconds (CPU time is robust to a busy machine) and ratios to the baseline.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyorc

from acid_core.fs import LocalFileIO
from acid_core.orc.schema import RowType, event_orc_type
from acid_core.orc.writer import DEFAULT_STRIPE_SIZE, insert_events, write_event_file

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

ROW_TYPE = RowType.of([("id", "bigint"), ("name", "string"), ("price", "double"), ("day", "date")])
BATCH_ROWS = 64 * 1024
_PYORC_COMPRESSION = {
    "none": pyorc.CompressionKind.NONE,
    "zlib": pyorc.CompressionKind.ZLIB,
    "snappy": pyorc.CompressionKind.SNAPPY,
    "lz4": pyorc.CompressionKind.LZ4,
    "zstd": pyorc.CompressionKind.ZSTD,
}


def make_row_batches(rows: int, seed: int = 11) -> list[pa.RecordBatch]:
    rng = np.random.default_rng(seed)
    batches = []
    for start in range(0, rows, BATCH_ROWS):
        count = min(BATCH_ROWS, rows - start)
        ids = np.arange(start, start + count, dtype=np.int64)
        names = pa.array([f"customer-{i % 100_003}" for i in range(start, start + count)], pa.string())
        batches.append(
            pa.record_batch(
                {
                    "id": pa.array(ids),
                    "name": names,
                    "price": pa.array(rng.random(count) * 1000.0),
                    "day": pa.array(rng.integers(18_000, 20_000, count).astype(np.int32)).cast(pa.date32()),
                }
            )
        )
    return batches


def events_of(row_batches: Sequence[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    first = 0
    for rows in row_batches:
        yield insert_events(rows, write_id=1, bucket_id=0, first_row_id=first)
        first += rows.num_rows


def timed(fn: Callable[[], object], cleanup: Callable[[], None]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): the CPU time is robust to a busy machine."""
    cleanup()
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--compression", default="zlib", choices=sorted(_PYORC_COMPRESSION))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pyorc-rows", type=int, default=300_000, help="0 to skip the pyorc measurement")
    parser.add_argument(
        "--smoke", action="store_true", help="CI-sized run: proves the benchmark works, not timed"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.repeat, args.pyorc_rows = 5_000, 1, 1_000

    row_batches = make_row_batches(args.rows)
    event_batches = list(events_of(row_batches))
    event_table = pa.Table.from_batches(event_batches)
    arrow_compression = {"none": "uncompressed"}.get(args.compression, args.compression)
    root = tempfile.mkdtemp(prefix="bench-orc-write-")
    path = os.path.join(root, "bucket_00000")
    file_io = LocalFileIO()

    def cleanup() -> None:
        if os.path.exists(path):
            os.remove(path)

    def bare() -> None:
        orc.write_table(
            event_table,
            path,
            file_version="0.12",
            stripe_size=DEFAULT_STRIPE_SIZE,
            compression=arrow_compression,
            compression_block_size=256 * 1024,
        )

    def writer_events() -> None:
        write_event_file(file_io, path, event_batches, ROW_TYPE, compression=args.compression)

    def writer_rows() -> None:
        write_event_file(file_io, path, events_of(row_batches), ROW_TYPE, compression=args.compression)

    try:
        variants = (
            ("bare pyarrow.orc.write_table", bare),
            ("writer(events)", writer_events),
            ("writer(rows)", writer_rows),
        )
        wall = {name: float("inf") for name, _ in variants}
        cpu = dict(wall)
        for _ in range(args.repeat):  # interleaved: every variant sees the same machine load
            for name, fn in variants:
                seconds, cpu_seconds = timed(fn, cleanup)
                wall[name], cpu[name] = min(wall[name], seconds), min(cpu[name], cpu_seconds)
        size = os.path.getsize(path)
        base, base_cpu = wall["bare pyarrow.orc.write_table"], cpu["bare pyarrow.orc.write_table"]
        print(
            f"{args.rows:,} insert events, {args.compression}, file {size / 1e6:.1f} MB, best of {args.repeat}"
        )
        for name, _ in variants:
            print(
                f"  {name:<30} {wall[name]:8.3f} s wall {wall[name] / base:5.2f}x  "
                f"{cpu[name]:8.3f} s CPU {cpu[name] / base_cpu:5.2f}x  {args.rows / wall[name] / 1e6:6.2f} M events/s"
            )
        if args.pyorc_rows:
            sample = event_table.slice(0, args.pyorc_rows)
            orc_type = event_orc_type(ROW_TYPE)

            def with_pyorc() -> None:
                with open(path, "wb") as f:
                    writer = pyorc.Writer(f, orc_type, compression=_PYORC_COMPRESSION[args.compression])
                    for batch in sample.to_batches():
                        columns = [batch.column(i).to_pylist() for i in range(5)]
                        row = batch.column(5)
                        fields = [row.field(i).to_pylist() for i in range(row.type.num_fields)]
                        writer.writerows(zip(*columns, zip(*fields, strict=True), strict=True))
                    writer.set_user_metadata(**{"hive.acid.stats": b"0,0,0"})
                    writer.close()

            seconds, cpu_seconds = (t * args.rows / args.pyorc_rows for t in timed(with_pyorc, cleanup))
            print(
                f"  {'pyorc from Arrow (scaled)':<30} {seconds:8.3f} s wall {seconds / base:5.2f}x  "
                f"{cpu_seconds:8.3f} s CPU {cpu_seconds / base_cpu:5.2f}x  (measured on {args.pyorc_rows:,} rows)"
            )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  peak RSS of this process {peak:.0f} MB (includes the prebuilt input batches)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
