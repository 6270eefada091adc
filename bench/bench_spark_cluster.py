"""Issue 23: many compactions in one Spark application vs one ``spark-submit`` per compaction.

    python -m bench.bench_spark_cluster [--compactions 200] [--rows 50000] [--deltas 5] [--sample N]
                                        [--overhead-rows 10] [--smoke]

A Spark standalone cluster (master + two one-core workers, 1 GB each, from PySpark's jars:
``tests.fixtures.spark_cluster.start_cluster``) runs every job. Input: a table partitioned by
``part`` with ``--compactions`` partitions, each ``--rows`` rows in ``--deltas`` insert deltas (one
committed transaction per delta, writing every partition), one major compaction queued per
partition. Built twice, identically:

- **one application** (this change, what the compaction DAG runs): ``spark-submit compact.py
  --compaction-id ID`` for all N entries at once; wall time from submit to exit;
- **one spark-submit per compaction** (the design before, one mapped SparkSubmitOperator per
  entry, run one after another since each application takes every core of the cluster): the wall
  of ``--sample`` of them (default all), scaled to N (each submission is independent).

Per-entry overhead of the one application: on a third table whose partitions hold
``--overhead-rows`` rows each (nothing to merge), ``(wall(N entries) - wall(1 entry)) / (N - 1)``:
what one more entry costs the application beyond its merge.

Goals (``bench.goals.report``): 23a one application >= 5x faster than one spark-submit per
compaction; 23b per-entry overhead <= 0.5 s (reported as overhead / 0.5 s, target <= 1.00x).
``--smoke``: 3 tiny partitions, goal lines marked SMOKE.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from acid_core.fs import LocalFileIO
from acid_core.metastore import Column, CompactionState, CompactionType, TableDefinition, open_metastore
from acid_core.orc.schema import RowType
from acid_core.orc.writer import insert_events, write_acid_dir
from acid_core.paths import DeltaDir
from bench import goals

ROW_TYPE = RowType.of([("id", "bigint"), ("name", "string"), ("price", "double")])
TABLE = "default.p"


def build(warehouse: str, partitions: int, rows: int, deltas: int) -> list[int]:
    """Write the partitioned table through the metastore and the ACID writer; queue one major each."""
    with open_metastore(None, warehouse) as metastore:
        metastore.create_table(
            TableDefinition(
                TABLE,
                columns=(Column("id", "bigint"), Column("name", "string"), Column("price", "double")),
                partition_keys=(Column("part", "string"),),
                properties={"transactional": "true"},
            )
        )
        locations = [metastore.add_partition(TABLE, {"part": f"{i:04d}"}).location for i in range(partitions)]
        io = LocalFileIO()
        per_delta = max(1, rows // deltas)
        for _ in range(deltas):
            txn = metastore.open_txn()
            write_id = metastore.allocate_write_id(txn, TABLE)
            for number, location in enumerate(locations):
                ids = (
                    np.arange(number * rows, number * rows + per_delta, dtype=np.int64) + write_id * per_delta
                )
                data = pa.table(
                    {
                        "id": ids,
                        "name": pa.array(np.char.add("n", (ids % 1000).astype(str))),
                        "price": ids * 0.5,
                    }
                )
                events = [insert_events(data, write_id=write_id, bucket_id=0, first_row_id=0)]
                write_acid_dir(io, location, DeltaDir(write_id, write_id, 0), {0: events}, ROW_TYPE)
            metastore.commit_txn(txn)
        return [
            metastore.enqueue_compaction(TABLE, f"part={i:04d}", CompactionType.MAJOR)
            for i in range(partitions)
        ]


def _submit(cluster: object, warehouse: str, ids: list[int]) -> float:
    from acid_core.compaction.spark_runner import find_spark_submit, spark_job_path

    command = [
        find_spark_submit(),
        "--master",
        cluster.master_url,  # type: ignore[attr-defined]
        *cluster.conf_args(),  # type: ignore[attr-defined]
        spark_job_path(),
        "--warehouse",
        warehouse,
        *(arg for i in ids for arg in ("--compaction-id", str(i))),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=cluster.submit_env(), check=False)  # type: ignore[attr-defined]
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"spark-submit failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}")
    with open_metastore(None, warehouse) as metastore:
        states = {metastore.get_compaction(i).state for i in ids}
    if states != {CompactionState.READY_FOR_CLEANING}:
        raise SystemExit(f"compactions {ids} ended {states}; expected ready for cleaning")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_spark_cluster", description=__doc__.splitlines()[0])
    parser.add_argument("--compactions", type=int, default=200)
    parser.add_argument("--rows", type=int, default=50_000, help="rows per partition")
    parser.add_argument("--deltas", type=int, default=5)
    parser.add_argument("--sample", type=int, default=None, help="one-per-submit runs measured (default all)")
    parser.add_argument("--overhead-rows", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="tiny input, no verdict")
    args = parser.parse_args(argv)
    if args.smoke:
        args.compactions, args.rows, args.deltas, args.sample = 3, 200, 2, 1
    count = args.compactions
    sample = min(count, args.sample or count)
    from tests.fixtures.spark_cluster import start_cluster

    with tempfile.TemporaryDirectory(prefix="acidflow-bench-cluster-") as scratch:
        root = Path(scratch)
        cluster = start_cluster(root / "cluster")
        try:
            print(
                f"{count} partitions x {args.rows:,} rows in {args.deltas} deltas; cluster {cluster.master_url}"
            )
            one_ids = build(str(root / "one"), count, args.rows, args.deltas)
            one = _submit(cluster, str(root / "one"), one_ids)
            print(f"  one application, {count} compactions: {one:8.2f} s", flush=True)
            each_ids = build(str(root / "each"), count, args.rows, args.deltas)
            walls = [_submit(cluster, str(root / "each"), [i]) for i in each_ids[:sample]]
            each = sum(walls) / len(walls) * count
            print(
                f"  one spark-submit per compaction: {sum(walls) / len(walls):6.2f} s each "
                f"({sample} measured) -> {each:8.2f} s for {count}",
                flush=True,
            )
            tiny_ids = build(str(root / "tiny"), count + 1, args.overhead_rows, 1)
            single = _submit(cluster, str(root / "tiny"), tiny_ids[:1])
            many = _submit(cluster, str(root / "tiny"), tiny_ids[1:])
            overhead = (many - single) / max(1, count - 1)
            print(
                f"  nothing to merge: 1 entry {single:6.2f} s, {count} entries {many:6.2f} s -> "
                f"{overhead:.3f} s per extra entry",
                flush=True,
            )
        finally:
            cluster.stop()
    command = (
        "python -m bench.bench_spark_cluster --smoke"
        if args.smoke
        else f"python -m bench.bench_spark_cluster --compactions {count} --rows {args.rows} "
        f"--deltas {args.deltas} --sample {sample} --overhead-rows {args.overhead_rows}"
    )
    goals.report(
        "23a",
        "one Spark application vs one spark-submit per compaction (standalone cluster)",
        each / one,
        5.0,
        command=command,
        smoke=args.smoke,
        higher_is_better=True,
    )
    goals.report(
        "23b",
        f"per-entry overhead in one application ({overhead:.3f} s / 0.5 s)",
        overhead / 0.5,
        1.0,
        command=command,
        smoke=args.smoke,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
