"""Metastore transaction throughput on PostgreSQL: open + allocate write ID + commit (issue 4).

    python -m bench.bench_txn [--clients 1,4,16] [--seconds 5] [--tables shared|per-client] [--smoke]

Each client is a separate process with its own ``SqlMetastore`` (own connection), looping
``open_txn`` -> ``allocate_write_id`` -> ``commit_txn`` for --seconds after a common start
barrier. Prints transactions per second for each client count and the ratio to the 1-client
baseline. ``--tables shared`` (default) has every client write the same table, so write-ID
allocation also contends on one NEXT_WRITE_ID row; ``per-client`` gives each client its own.

Two designs are measured side by side, each in its own throw-away database on the local server
(``ACIDFLOW_TEST_PG_ADMIN_URL``, else a private cluster started for the run as the tests start one):
``counter`` (the baseline, Hive 3: every open holds the NEXT_TXN_ID row lock ``FOR UPDATE``
through its commit and disk sync) and ``sequence`` (Hive 4, what ``SqlMetastore`` does on
PostgreSQL: IDs from ``TXN_ID_SEQ`` under a share lock; only writers' commits take it exclusively).
Issue 14 goal 7: ``sequence`` with the most clients >= 10x ``counter`` with as many.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from acid_core.metastore import Column, SqlMetastore, TableDefinition
from bench import goals

if TYPE_CHECKING:
    from collections.abc import Sequence

_CONTEXT = multiprocessing.get_context("fork")


def _table_name(client: int, per_client: bool) -> str:
    return f"bench.t{client}" if per_client else "bench.t"


def _client(url: str, table: str, seconds: float, counter: bool, barrier: Any, queue: Any) -> None:
    store = SqlMetastore(url)
    # The baseline: the SQLite code path (NEXT_TXN_ID as a counter locked FOR UPDATE) on PostgreSQL.
    store._txn_id_sequence = not counter
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


class _WaitSampler(threading.Thread):
    """Samples ``pg_stat_activity`` of one database: how many sessions wait on a row lock, and
    how many wait for their client (``ClientRead``: the client is busy, i.e. CPU-bound)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop, self.samples = url, threading.Event(), 0
        self.lock_waits = self.client_waits = 0

    def run(self) -> None:
        import psycopg2
        from sqlalchemy import make_url

        parsed = make_url(self.url)
        connection = psycopg2.connect(
            host=parsed.host, port=parsed.port or 5432, user=parsed.username, dbname=parsed.database
        )
        connection.autocommit = True
        try:
            with connection.cursor() as cursor:
                while not self.stop.wait(0.05):
                    cursor.execute(
                        "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), "
                        "count(*) FILTER (WHERE wait_event = 'ClientRead') FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                    locks, client = cursor.fetchone()
                    self.samples += 1
                    self.lock_waits += locks
                    self.client_waits += client
        finally:
            connection.close()

    def averages(self) -> tuple[float, float]:
        n = max(self.samples, 1)
        return self.lock_waits / n, self.client_waits / n


def run(
    url: str, clients: int, seconds: float, per_client: bool, counter: bool = False
) -> tuple[float, float, float]:
    """Transactions per second with ``clients`` processes (``counter``: the Hive 3 baseline design),
    and the mean number of sessions waiting on a row lock and on their client while they ran."""
    barrier = _CONTEXT.Barrier(clients)
    queue = _CONTEXT.Queue()
    processes = [
        _CONTEXT.Process(
            target=_client, args=(url, _table_name(c, per_client), seconds, counter, barrier, queue)
        )
        for c in range(clients)
    ]
    sampler = _WaitSampler(url)
    for process in processes:
        process.start()
    sampler.start()
    results = [queue.get(timeout=seconds + 120) for _ in processes]
    sampler.stop.set()
    sampler.join()
    for process in processes:
        process.join()
    total = sum(done for done, _ in results)
    elapsed = max(elapsed for _, elapsed in results)
    return (total / elapsed, *sampler.averages())


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


def _prepare(url: str, tables: int, per_client: bool) -> str:
    with SqlMetastore(url) as store:
        if "bench" not in store.list_databases():
            store.create_database("bench")
        for c in range(tables):
            name = _table_name(c, per_client)
            if name.split(".")[1] not in store.list_tables("bench"):
                store.create_table(
                    TableDefinition(name, (Column("a", "int"),), properties={"transactional": "true"})
                )
        return store.dialect


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_txn", description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,4,16", help="comma-separated client counts (default 1,4,16)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per client count")
    parser.add_argument("--tables", choices=["shared", "per-client"], default="shared")
    parser.add_argument(
        "--smoke", action="store_true", help="CI-sized run: 1 and 2 clients, 0.5 s (not timed)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.clients, args.seconds = "1,2", 0.5
    counts = [int(c) for c in args.clients.split(",")]
    per_client = args.tables == "per-client"
    from tests.fixtures.postgres import running_postgres

    server = contextlib.ExitStack()
    admin_url = server.enter_context(running_postgres())
    created: list[str] = []
    try:
        urls = {}
        for design in ("counter", "sequence"):
            name, urls[design] = _throwaway_database(admin_url)
            created.append(name)
            dialect = _prepare(urls[design], max(counts), per_client)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"metastore: {dialect}, {args.seconds:g} s per run, tables: {args.tables}, "
            f"cpus: {os.cpu_count()}, load average before: {load}"
        )
        print(
            f"{'clients':>8} {'counter txn/s':>14} {'sequence txn/s':>15} {'sequence/counter':>17}"
            "   sessions waiting on a row lock / on their client (counter; sequence)"
        )
        tps: dict[str, dict[int, float]] = {"counter": {}, "sequence": {}}
        for count in counts:
            # Interleaved, so both designs see the same machine load.
            waits = {}
            for design in ("counter", "sequence"):
                tps[design][count], *waits[design] = run(
                    urls[design], count, args.seconds, per_client, design == "counter"
                )
            ratio = tps["sequence"][count] / tps["counter"][count]
            print(
                f"{count:>8} {tps['counter'][count]:>14.1f} {tps['sequence'][count]:>15.1f} {ratio:>16.2f}x"
                f"   {waits['counter'][0]:.1f} / {waits['counter'][1]:.1f}; "
                f"{waits['sequence'][0]:.1f} / {waits['sequence'][1]:.1f}",
                flush=True,
            )
        top = max(counts)
        goals.report(
            "7",
            f"txn/s, {top} clients ({args.tables} table), Hive 4 sequence vs Hive 3 counter",
            tps["sequence"][top] / tps["counter"][top],
            10.0,
            higher_is_better=True,
            command=f"python -m bench.bench_txn --clients {args.clients} --tables {args.tables}",
            smoke=args.smoke,
        )
    finally:
        with server:
            for name in created:
                _drop_database(admin_url, name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
