"""Insert throughput: acidflow's transactional INSERT vs a bare ``pyarrow.orc.write_table`` of the same rows.

    python -m bench.bench_insert [--rows 1000000] [--repeat 3] [--bucketed-rows 1000000] [--metastore URL]

Rows: ``(id int, name string, salary int)``, generated before timing. Measured, best of --repeat:

- ``pyarrow.orc.write_table``: the baseline, the same rows as a plain ORC file (ZLIB, as Hive);
- ``Transaction.insert``: open txn, write-set record, insert events, ``delta_w_w_0000`` with
  ``_orc_acid_version`` and ACID metadata, commit (the embedded SQLite metastore by default);
- ``acidflow sql INSERT .. SELECT``: the same through the SQL front end (sqlglot, DuckDB over
  Arrow reading a staging plain table, the type checks and casts, then the write);
- ``Transaction.insert`` into ``CLUSTERED BY (id) INTO 4 BUCKETS`` on --bucketed-rows rows (Hive's
  Murmur3 bucketing hash, vectorized for integer columns, then one file per bucket).

Prints rows/second and the ratio to the baseline (acidflow / pyarrow; 1.0 = as fast).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.orc as orc

from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_CREATE = "CREATE TABLE {name} (id int, name string, salary int) STORED AS ORC {extra}"
_ACID = "TBLPROPERTIES ('transactional'='true')"


def make_rows(rows: int) -> pa.Table:
    ids = pa.array(range(rows), pa.int32())
    names = pa.array([f"employee-{i % 100_003}" for i in range(rows)], pa.string())
    salaries = pa.array([1000 + (i * 7919) % 9000 for i in range(rows)], pa.int32())
    return pa.table({"id": ids, "name": names, "salary": salaries})


def _best(repeat: int, setup: Callable[[], object], run: Callable[[object], None]) -> float:
    best = float("inf")
    for _ in range(repeat):
        state = setup()
        start = time.perf_counter()
        run(state)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_insert", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--bucketed-rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--metastore", default=None, help="metastore URL (default: SQLite in the warehouse)")
    parser.add_argument(
        "--smoke", action="store_true", help="CI-sized run: proves the benchmark works, not timed"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.bucketed_rows, args.repeat = 2_000, 2_000, 1
    rows = make_rows(args.rows)
    bucketed_rows = rows.slice(0, args.bucketed_rows)
    work = tempfile.mkdtemp(prefix="bench-insert-")
    try:
        counter = iter(range(1_000_000))

        def fresh_dir() -> str:
            path = f"{work}/run{next(counter)}"
            shutil.rmtree(path, ignore_errors=True)
            return path

        def baseline(path: object) -> None:
            os.makedirs(str(path))
            orc.write_table(rows, f"{path}/000000_0", compression="ZLIB")

        warehouse = Warehouse.open(f"{work}/wh", args.metastore, heartbeat_seconds=None)
        session = SqlSession(warehouse)
        session.execute(_CREATE.format(name="staging", extra=""))
        with warehouse.transaction() as txn:
            txn.insert("staging", rows)
        tables = iter(range(1_000_000))

        def new_table(extra: str) -> Callable[[], object]:
            def setup() -> object:
                name = f"t{next(tables)}"
                session.execute(_CREATE.format(name=name, extra=extra))
                return name

            return setup

        def api_insert(data: pa.Table) -> Callable[[object], None]:
            def run(name: object) -> None:
                with warehouse.transaction() as txn:
                    txn.insert(str(name), data)

            return run

        def sql_insert(name: object) -> None:
            session.execute(f"INSERT INTO {name} SELECT id, name, salary FROM staging")

        bucketed = f"CLUSTERED BY (id) INTO 4 BUCKETS {_ACID}"
        timings = {
            "pyarrow.orc.write_table (baseline)": (_best(args.repeat, fresh_dir, baseline), args.rows),
            "Transaction.insert": (_best(args.repeat, new_table(_ACID), api_insert(rows)), args.rows),
            "acidflow sql INSERT .. SELECT": (_best(args.repeat, new_table(_ACID), sql_insert), args.rows),
        }
        base_rate = args.rows / timings["pyarrow.orc.write_table (baseline)"][0]
        bucketed_seconds = _best(args.repeat, new_table(bucketed), api_insert(bucketed_rows))
        timings["Transaction.insert, 4 buckets"] = (bucketed_seconds, args.bucketed_rows)
        warehouse.close()
        print(
            f"insert throughput, {args.rows:,} rows (id int, name string, salary int), best of {args.repeat}"
        )
        for label, (seconds, count) in timings.items():
            rate = count / seconds
            print(
                f"  {label:<38} {count:>10,} rows  {seconds:8.3f} s  {rate:>12,.0f} rows/s  ratio {rate / base_rate:5.2f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
