"""Lock manager cost: acquire+release latency and throughput, and writer starvation (issue 5).

    python -m bench.bench_locks [--ops 500] [--threads 4] [--seconds 3] [--zookeeper HOST:PORT]
                                [--postgres ADMIN_URL] [--only memory,zookeeper,sqlite,postgres]

Without ``--zookeeper`` a throw-away ZooKeeper server (the jar shipped with pyspark) is started on
a loopback port. The SQL lock manager runs on a throw-away SQLite file (WAL) and on a throw-away
database of the PostgreSQL at ``--postgres`` (default: ``ACIDFLOW_TEST_PG_ADMIN_URL``, else a private
cluster started for the run as the tests start one; left out with a note if none can be had). Measured, for the in-memory manager (the baseline),
KazooLockManager and SqlLockManager:

* latency of one ``acquire`` + ``release`` of ``X bench.t/p=N`` (so 2 lock nodes: S on the table
  too), single thread, p50 and p99 over --ops operations;
* throughput: --threads sessions, each on its own partition, for --seconds;
* writer wait: 3 readers keep S on ``bench.w`` continuously (each holds 60 ms and re-acquires at
  once, staggered); a writer asks for X with retries every <= 50 ms for up to 3 s; without fair
  mode it is expected to starve, with fair mode to get in once the current readers leave.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from acid_core.errors import LockRefusedError
from acid_core.locks import InMemoryLockManager, LockManager, LockMode, LockRequest, parse_lock_object

Factory = Callable[[bool], LockManager]


def _req(name: str, mode: LockMode) -> LockRequest:
    return LockRequest(parse_lock_object(name), mode)


def latency(factory: Factory, ops: int) -> tuple[float, float]:
    manager = factory(False)
    samples = []
    try:
        for i in range(ops):
            request = [_req(f"bench.t/p={i % 10}", LockMode.EXCLUSIVE)]
            start = time.perf_counter()
            manager.release(manager.acquire(request, holder="bench", retries=0))
            samples.append(time.perf_counter() - start)
    finally:
        manager.close()
    samples.sort()
    return statistics.median(samples) * 1000, samples[int(len(samples) * 0.99) - 1] * 1000


def throughput(factory: Factory, threads: int, seconds: float) -> float:
    counts = [0] * threads
    stop = threading.Event()

    def run(index: int) -> None:
        manager = factory(False)
        request = [_req(f"bench.tp/p={index}", LockMode.EXCLUSIVE)]
        try:
            while not stop.is_set():
                manager.release(manager.acquire(request, holder=f"t{index}", retries=100, wait_seconds=0.001))
                counts[index] += 1
        finally:
            manager.close()

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    time.sleep(seconds)
    stop.set()
    for w in workers:
        w.join()
    return sum(counts) / seconds


def writer_wait(factory: Factory, *, fair: bool, budget: float = 3.0, hold: float = 0.06) -> float | None:
    stop = threading.Event()
    managers: list[LockManager] = []

    def read_loop(index: int) -> None:
        manager = factory(False)
        managers.append(manager)
        time.sleep(index * hold / 3)
        while not stop.is_set():
            try:
                handle = manager.acquire(
                    [_req("bench.w", LockMode.SHARED)], holder=f"r{index}", retries=1000, wait_seconds=0.01
                )
            except LockRefusedError:
                continue
            time.sleep(hold)
            manager.release(handle)

    readers = [threading.Thread(target=read_loop, args=(i,), daemon=True) for i in range(3)]
    for r in readers:
        r.start()
    time.sleep(0.4)
    writer = factory(fair)
    start = time.monotonic()
    try:
        handle = writer.acquire(
            [_req("bench.w", LockMode.EXCLUSIVE)],
            holder="writer",
            retries=int(budget / 0.0375),
            wait_seconds=0.05,
        )
    except LockRefusedError:
        waited = None
    else:
        waited = time.monotonic() - start
        writer.release(handle)
    stop.set()
    for r in readers:
        r.join(10)
    writer.close()
    for m in managers:
        m.close()
    return waited


def _fmt_wait(waits: list[float | None]) -> str:
    shown = ["starved" if w is None else f"{w * 1000:.0f} ms" for w in waits]
    return ", ".join(shown)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3, help="writer-wait rounds per mode")
    parser.add_argument("--zookeeper", default=None, help="use this server instead of starting one")
    parser.add_argument(
        "--postgres", default=None, help="admin URL of a PostgreSQL (default: a private one started here)"
    )
    parser.add_argument("--only", default="memory,zookeeper,sqlite,postgres", help="comma-separated managers")
    parser.add_argument(
        "--smoke", action="store_true", help="CI-sized run: proves the benchmark works, not timed"
    )
    args = parser.parse_args(argv)
    budget = 3.0
    if args.smoke:  # no ZooKeeper or PostgreSQL to start; a writer starved for 0.3 s is enough to see
        args.ops, args.threads, args.seconds, args.rounds = 20, 2, 0.3, 1
        args.only, budget = "memory,sqlite", 0.3

    only = set(args.only.split(","))
    server = None
    hosts = args.zookeeper
    pg_admin = None
    postgres_server = contextlib.ExitStack()
    pg_name = f"acidflow_bench_{uuid.uuid4().hex[:8]}"
    if hosts is None and "zookeeper" in only:
        from tests.fixtures.zookeeper import ZooKeeperServer

        server = ZooKeeperServer(Path(tempfile.mkdtemp(prefix="bench-zk-")))
        server.start()
        hosts = server.hosts
    try:
        from acid_core.locks.sql import SqlLockManager
        from acid_core.locks.zookeeper import KazooLockManager

        shared = InMemoryLockManager()
        root = f"/acidflow-bench/{uuid.uuid4().hex}/locks"
        sqlite_url = f"sqlite:///{tempfile.mkdtemp(prefix='bench-sql-')}/metastore.sqlite"
        factories: dict[str, Factory] = {
            "memory": lambda fair: shared.session(fair=fair),
            "zookeeper": lambda fair: KazooLockManager(hosts, root=root, fair=fair),
            "sqlite": lambda fair: SqlLockManager(sqlite_url, fair=fair),
        }
        if "postgres" in only:
            try:
                import psycopg2
                from sqlalchemy import make_url

                if args.postgres is None:
                    from tests.fixtures.postgres import running_postgres

                    args.postgres = postgres_server.enter_context(running_postgres())
                admin_url = make_url(args.postgres)
                pg_admin = psycopg2.connect(
                    host=admin_url.host,
                    port=admin_url.port or 5432,
                    user=admin_url.username,
                    dbname=admin_url.database or "postgres",
                    connect_timeout=3,
                )
                pg_admin.autocommit = True
                with pg_admin.cursor() as cursor:
                    cursor.execute(f'CREATE DATABASE "{pg_name}"')
                pg_url = admin_url.set(database=pg_name).render_as_string(hide_password=False)
                factories["postgres"] = lambda fair: SqlLockManager(pg_url, fair=fair)
            except Exception as e:  # the bench still reports the other managers
                print(f"postgres left out: {type(e).__name__}: {e}")
        factories = {k: v for k, v in factories.items() if k in only}
        results: dict[str, dict[str, float]] = {}
        for name, factory in factories.items():
            p50, p99 = latency(factory, args.ops)
            ops = throughput(factory, args.threads, args.seconds)
            results[name] = {"p50": p50, "p99": p99, "ops": ops}
            print(
                f"{name:10s} acquire+release p50 {p50:8.3f} ms  p99 {p99:8.3f} ms  "
                f"throughput {ops:10.0f} ops/s ({args.threads} threads)",
                flush=True,
            )
        mem = results.get("memory")
        for name, r in results.items():
            if mem is not None and name != "memory":
                print(
                    f"ratio {name}/memory: p50 {r['p50'] / mem['p50']:.0f}x, p99 {r['p99'] / mem['p99']:.0f}x, "
                    f"throughput {mem['ops'] / r['ops']:.0f}x lower"
                )
        for name, factory in factories.items():
            unfair = [writer_wait(factory, fair=False, budget=budget) for _ in range(args.rounds)]
            fair = [writer_wait(factory, fair=True, budget=budget) for _ in range(args.rounds)]
            print(
                f"{name:10s} writer wait under steady reads: unfair [{_fmt_wait(unfair)}]  fair [{_fmt_wait(fair)}]"
            )
            done_fair = [w for w in fair if w is not None]
            if done_fair:
                unfair_ms = [budget if w is None else w for w in unfair]
                print(
                    f"{name:10s} ratio unfair/fair writer wait >= "
                    f"{statistics.median(unfair_ms) / statistics.median(done_fair):.1f}x "
                    "(a starved writer counted as its 3 s budget)"
                )
    finally:
        if server is not None:
            server.stop()
        if pg_admin is not None:
            with pg_admin.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
            pg_admin.close()
        postgres_server.close()
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
