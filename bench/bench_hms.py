"""acidflow against a real Hive 2.3.10 Metastore: transaction and snapshot latency, initiator scaling.

    python -m bench.bench_hms [--uri thrift://host:9083] [--hms-db postgresql://...]
                              [--repeat 200] [--partitions 1000] [--smoke]

Without ``--uri`` the benchmark starts its own server with ``tests/fixtures/hms23/start_hms.sh
postgres`` (PySpark's Hive 2.3.10 jars, Java 17, a throw-away PostgreSQL database, as the tests
do) and stops it at the end. It prints:

- open + commit of a compaction transaction (``open_txn(COMPACTION)`` then ``commit_txn``): p50/p99;
- one snapshot read (``get_valid_txns`` + ``get_valid_write_ids`` of a table): p50/p99;
- a reader lease taken and released (``take_lease``: open txn, SHARED_READ lock, snapshot, side-store
  record; ``release_lease``: commit, delete the record): p50/p99;
- the initiator (``run_initiator(dry_run=True)``) over one table with ``--partitions`` partitions,
  each holding one delta directory, against the HMS listing calls alone (``get_table`` +
  ``get_partitions`` + ``show_compactions`` as the initiator makes them): the ratio, target < 2x,
  reported with ``bench.goals.report`` (goal ``12``).

``--smoke`` (CI): 5 repeats and 20 partitions; the goal line says SMOKE instead of a verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from acid_core.metastore import Column, TableDefinition, TxnType
from acid_core.metastore.factory import open_metastore
from bench import goals

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_LAUNCHER = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "hms23" / "start_hms.sh"


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def _time_ms(action: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _start_server(work: Path, admin_url: str) -> tuple[str, str, int, str]:
    import pyspark
    from sqlalchemy import make_url

    from tests.fixtures.hms import ensure_jdbc_driver

    ensure_jdbc_driver()
    database = f"hms23_bench_{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "HMS_DIR": str(work),
        "PG_DB": database,
        "PG_PORT": str(make_url(admin_url).port or 5432),
        "PYSPARK_JARS": str(Path(pyspark.__file__).parent / "jars"),
    }
    subprocess.run(["bash", str(_LAUNCHER), "postgres"], check=True, env=env, timeout=300)
    port = int((work / "port").read_text())
    pid = int((work / "hms.pid").read_text())
    return (
        f"thrift://127.0.0.1:{port}",
        make_url(admin_url).set(database=database).render_as_string(hide_password=False),
        pid,
        database,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", default=None, help="an existing HMS (default: start one)")
    parser.add_argument("--hms-db", default=None, help="its backend database (SQLAlchemy URL)")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI): 5 repeats, 20 partitions")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeat, args.partitions = 5, 20

    work = Path(tempfile.mkdtemp(prefix="bench-hms-"))
    pid, database, admin_url = 0, None, ""
    server = contextlib.ExitStack()
    try:
        if args.uri is None:
            from tests.fixtures.postgres import running_postgres

            admin_url = server.enter_context(running_postgres())
            uri, hms_db, pid, database = _start_server(work, admin_url)
        else:
            uri, hms_db = args.uri, args.hms_db
        os.environ.setdefault("ACIDFLOW_LEASE_STORE", f"sqlite:///{work / 'side.sqlite'}")
        store = open_metastore(uri, str(work / "wh"), hms_db=hms_db or "")
        name = f"bench_{uuid.uuid4().hex[:6]}"
        store.create_database(name)
        columns = (Column("id", "int"), Column("name", "string"), Column("salary", "int"))
        acid = {"transactional": "true", "transactional_properties": "default"}
        table = store.create_table(
            TableDefinition(f"{name}.t", columns, bucket_columns=("id",), num_buckets=1, properties=acid)
        )

        def compaction_txn() -> None:
            store.commit_txn(store.open_txn(txn_type=TxnType.COMPACTION))

        def snapshot() -> None:
            store.get_valid_write_ids(table.full_name, store.get_valid_txns())

        def lease() -> None:
            store.release_lease(store.take_lease(table.full_name, 600).lease_id)

        for label, action in (
            ("open+commit compaction txn", compaction_txn),
            ("snapshot read", snapshot),
            ("lease take+release", lease),
        ):
            p50, p99 = _percentiles(_time_ms(action, args.repeat))
            print(f"{label:<30} n={args.repeat}  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms", flush=True)

        parted = store.create_table(
            TableDefinition(
                f"{name}.p",
                columns,
                partition_keys=(Column("ds", "string"),),
                bucket_columns=("id",),
                num_buckets=1,
                properties=acid,
            )
        )
        _add_partitions(store, parted.database, parted.name, args.partitions)
        root = parted.location.removeprefix("file://")
        for i in range(args.partitions):
            (Path(root) / f"ds={i:05d}" / "delta_0000001_0000001_0000").mkdir(parents=True, exist_ok=True)

        from acid_core.compaction.backlog import run_initiator

        def listing() -> None:
            store.get_table(parted.full_name)
            store.show_compactions(parted.full_name)
            store.list_partitions(parted.full_name)

        def initiator() -> None:
            run_initiator(store, dry_run=True, tables=[parted.full_name])

        listing_s = statistics.median(_time_ms(listing, 5)) / 1000
        initiator_s = statistics.median(_time_ms(initiator, 5)) / 1000
        print(
            f"initiator over {args.partitions} partitions: {initiator_s:.3f} s; HMS listing calls alone: "
            f"{listing_s:.3f} s",
            flush=True,
        )
        goals.report(
            "12",
            f"initiator over {args.partitions} HMS partitions vs the HMS listing calls",
            initiator_s / listing_s,
            2.0,
            command="python -m bench.bench_hms" + (" --smoke" if args.smoke else ""),
            smoke=args.smoke,
        )
        store.close()
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
        if database is not None:
            from tests.fixtures.postgres import drop_database

            drop_database(admin_url, database)
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _add_partitions(store: object, database: str, table: str, count: int) -> None:
    """``add_partitions`` in batches of 100 (one Thrift call each), as Hive's MSCK does."""
    from hive_metastore import ttypes

    hms = store._hms  # type: ignore[attr-defined]
    raw = hms.call("get_table", database, table)
    batch = []
    for i in range(count):
        sd = copy.copy(raw.sd)
        sd.location = f"{raw.sd.location}/ds={i:05d}"
        batch.append(
            ttypes.Partition(values=[f"{i:05d}"], dbName=database, tableName=table, sd=sd, parameters={})
        )
        if len(batch) == 100 or i == count - 1:
            hms.call("add_partitions", batch)
            batch = []


if __name__ == "__main__":
    raise SystemExit(main())
