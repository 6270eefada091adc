"""Metastore transaction throughput on PostgreSQL: open + allocate write ID + commit (issue 4).

    python -m bench.bench_txn [--clients 1,4,16] [--seconds 5] [--url postgresql+psycopg2://...]
                              [--tables shared|per-client]

Each client is a separate process with its own ``SqlMetastore`` (own connection), looping
``open_txn`` -> ``allocate_write_id`` -> ``commit_txn`` for --seconds after a common start
barrier. Prints transactions per second for each client count and the ratio to the 1-client
baseline. ``--tables shared`` (default) has every client write the same table, so write-ID
allocation also contends on one NEXT_WRITE_ID row; ``per-client`` gives each client its own.

Without ``--url`` a throw-away database is created on the local server
(``ACIDFLOW_TEST_PG_ADMIN_URL``, default ``postgresql+psycopg2://postgres@127.0.0.1:5432/postgres``)
and dropped at the end. Every txn ID is allocated under ``SELECT ... FOR UPDATE`` on NEXT_TXN_ID,
so opens are serialized by design (as in Hive); expect sub-linear scaling.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
import uuid
from typing import TYPE_CHECKING, Any

from acid_core.metastore import Column, SqlMetastore, TableDefinition

if TYPE_CHECKING:
    from collections.abc import Sequence

_CONTEXT = multiprocessing.get_context("fork")
_DEFAULT_ADMIN_URL = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"


def _table_name(client: int, per_client: bool) -> str:
    return f"bench.t{client}" if per_client else "bench.t"


def _client(url: str, table: str, seconds: float, barrier: Any, queue: Any) -> None:
    store = SqlMetastore(url)
    try:
        barrier.wait()
        deadline = time.perf_counter() + seconds
        done = 0
        started = time.perf_counter()
        while time.perf_counter() < deadline:
            txn = store.open_txn("bench", "bench")
            store.allocate_write_id(txn, table)
            store.commit_txn(txn)
            done += 1
        queue.put((done, time.perf_counter() - started))
    finally:
        store.close()


def run(url: str, clients: int, seconds: float, per_client: bool) -> float:
    """Transactions per second with ``clients`` processes."""
    barrier = _CONTEXT.Barrier(clients)
    queue = _CONTEXT.Queue()
    processes = [
        _CONTEXT.Process(target=_client, args=(url, _table_name(c, per_client), seconds, barrier, queue))
        for c in range(clients)
    ]
    for process in processes:
        process.start()
    results = [queue.get(timeout=seconds + 120) for _ in processes]
    for process in processes:
        process.join()
    total = sum(done for done, _ in results)
    elapsed = max(elapsed for _, elapsed in results)
    return total / elapsed


def _throwaway_database(admin_url: str) -> tuple[str, str]:
    import psycopg2
    from sqlalchemy import make_url

    name = f"acidflow_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    parsed = make_url(admin_url)
    connection = psycopg2.connect(
        host=parsed.host,
        port=parsed.port or 5432,
        user=parsed.username,
        password=parsed.password,
        dbname=parsed.database or "postgres",
    )
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()
    return name, parsed.set(database=name).render_as_string(hide_password=False)


def _drop_database(admin_url: str, name: str) -> None:
    import psycopg2
    from sqlalchemy import make_url

    parsed = make_url(admin_url)
    connection = psycopg2.connect(
        host=parsed.host,
        port=parsed.port or 5432,
        user=parsed.username,
        password=parsed.password,
        dbname=parsed.database or "postgres",
    )
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    connection.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_txn", description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,4,16", help="comma-separated client counts (default 1,4,16)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per client count")
    parser.add_argument(
        "--url", default=None, help="PostgreSQL SQLAlchemy URL (default: a throw-away database)"
    )
    parser.add_argument("--tables", choices=["shared", "per-client"], default="shared")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.clients.split(",")]
    per_client = args.tables == "per-client"
    admin_url = os.environ.get("ACIDFLOW_TEST_PG_ADMIN_URL", _DEFAULT_ADMIN_URL)
    created = None
    url = args.url
    if url is None:
        created, url = _throwaway_database(admin_url)
    try:
        with SqlMetastore(url) as store:
            if "bench" not in store.list_databases():
                store.create_database("bench")
            for c in range(max(counts)):
                name = _table_name(c, per_client)
                if name.split(".")[1] not in store.list_tables("bench"):
                    store.create_table(
                        TableDefinition(name, (Column("a", "int"),), properties={"transactional": "true"})
                    )
            dialect = store.dialect
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"metastore: {dialect}, {args.seconds:g} s per run, tables: {args.tables}, "
            f"cpus: {os.cpu_count()}, load average before: {load}"
        )
        print(f"{'clients':>8} {'txn/s':>10} {'vs 1 client':>12}")
        baseline = None
        for count in counts:
            tps = run(url, count, args.seconds, per_client)
            baseline = baseline or tps
            print(f"{count:>8} {tps:>10.1f} {tps / baseline:>11.2f}x", flush=True)
    finally:
        if created is not None:
            _drop_database(admin_url, created)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
