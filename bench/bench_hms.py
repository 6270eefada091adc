"""acidflow against real Hive Metastores (2.3.10, 3.1.3 on PostgreSQL and MariaDB, 4.0.1): latency, initiator.

    python -m bench.bench_hms [--hive {2.3.10,3.1.3,3.1.3-mariadb,4.0.1,all}]
                              [--uri thrift://host:9083 [--hms-db postgresql://...]]
                              [--repeat 200] [--partitions 1000] [--smoke]

Without ``--uri`` the benchmark starts the ``--hive`` server(s) (default 2.3.10) the way the tests do,
with the plain functions behind the fixtures of ``tests/fixtures/hms.py`` (no pytest runs here):
2.3.10 from PySpark's jars (``hms23/start_hms.sh postgres``), 3.1.3 and 4.0.1 from Maven Central's
standalone metastore jars with their schema made by Hive's ``schematool``, on a throw-away
PostgreSQL (``running_postgres``) or, for ``3.1.3-mariadb``, a throw-away MariaDB
(``running_mariadb``). ``all`` runs the four one after the other (one server at a time) and prints a
table at the end. Each server is stopped and its database dropped when its turn ends. acidflow
opens every server with its backend database (``hms_db``), as the tests do: on 2.3 and 3.1 the
compaction queue is read by SQL; on 4.0.1 acidflow uses Hive 4's calls (``get_table_req``,
``get_open_txns_req``, ``show_compact`` plus Hive 4's queue columns), so what is measured there is
what acidflow really does against Hive 4. Per server it prints:

- open + commit of a compaction transaction (``open_txn(COMPACTION)`` then ``commit_txn``): p50/p99;
- one snapshot read (``get_valid_txns`` + ``get_valid_write_ids`` of a table): p50/p99;
- a reader lease taken and released (``take_lease``: open txn, SHARED_READ lock, snapshot, side-store
  record; ``release_lease``: commit, delete the record): p50/p99;
- the initiator (``run_initiator(dry_run=True)``) over one table with ``--partitions`` partitions,
  each holding one delta directory, against the HMS listing calls alone (``get_table`` +
  ``show_compactions`` + ``list_partitions`` as the initiator makes them): the ratio, target <= 2x,
  reported with ``bench.goals.report`` (goal ``12``, the server's version in the line), and the
  Thrift calls one initiator run made, by name;
- the initiator's skip (issue 22 item 4): three real cycles over another table of ``--partitions``
  partitions, each by a fresh adapter (a restart), with the backend database and by Thrift alone:
  the second cycle (nothing written) must list no partition (goals ``hms-skip-db`` and
  ``hms-skip-thrift``, target 0.00x), the third, after a write into one partition, lists that
  one (backend database) or the table (Thrift alone).

``--smoke`` (CI): 5 repeats and 20 partitions on Hive 2.3.10 (the cheapest server to start: no
schematool); the goal line says SMOKE instead of a verdict.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import functools
import os
import shutil
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acid_core.metastore import Column, TableDefinition, TxnType
from acid_core.metastore.factory import open_metastore
from bench import goals

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tests.fixtures.hms import HiveMetastoreServer

VERSIONS = ("2.3.10", "3.1.3", "3.1.3-mariadb", "4.0.1")


@dataclass(frozen=True)
class HmsResult:
    """One server's figures (milliseconds for the latencies, seconds for the initiator)."""

    label: str
    server_version: str
    txn: tuple[float, float]
    snapshot: tuple[float, float]
    lease: tuple[float, float]
    initiator_s: float
    listing_s: float
    goal: goals.Goal
    skip_goals: tuple[goals.Goal, ...] = ()

    def row(self) -> str:
        def pair(p: tuple[float, float]) -> str:
            return f"{p[0]:.1f} / {p[1]:.1f}"

        return (
            f"| {self.label} | {pair(self.txn)} | {pair(self.snapshot)} | {pair(self.lease)} | "
            f"{self.initiator_s:.2f} s / {self.listing_s:.2f} s | {self.goal.ratio:.2f}x "
            f"{self.goal.verdict} | "
            + ", ".join(
                f"{g.goal.removeprefix('hms-skip-')} {g.ratio:.2f}x {g.verdict}" for g in self.skip_goals
            )
            + " |"
        )


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


class _Servers:
    """Starts each ``--hive`` server as the tests' fixtures do; one PostgreSQL and one MariaDB for all."""

    def __init__(self, work: Path, services: contextlib.ExitStack) -> None:
        self._work, self._services = work, services
        self._admin_urls: dict[str, str] = {}

    def _admin_url(self, backend: str) -> str:
        if backend not in self._admin_urls:
            from tests.fixtures.mariadb import running_mariadb
            from tests.fixtures.postgres import running_postgres

            context = running_mariadb() if backend == "mariadb" else running_postgres()
            self._admin_urls[backend] = self._services.enter_context(context)
        return self._admin_urls[backend]

    def started(self, label: str) -> contextlib.AbstractContextManager[HiveMetastoreServer]:
        """The ``label`` server for a with-block (stopped and its database dropped at its end)."""
        from tests.fixtures import hms

        directory = self._work / label
        directory.mkdir()
        if label == "3.1.3-mariadb":
            return hms.running_mariadb_metastore(hms.HIVE_31, self._admin_url("mariadb"), directory)
        if label == "2.3.10":
            return hms.running_hive23_metastore(self._admin_url("postgres"), directory)
        release = {"3.1.3": hms.HIVE_31, "4.0.1": hms.HIVE_4}[label]
        return hms.running_postgres_metastore(release, self._admin_url("postgres"), directory)


def _count_calls(connection: object) -> collections.Counter[str]:
    """Count the Thrift calls sent through ``connection`` by method name (wraps its ``call`` in place).

    ``call_optional`` goes through ``call`` unless it already knows the server lacks the method
    (then nothing is sent, and nothing is counted).
    """
    counts: collections.Counter[str] = collections.Counter()
    original = connection.call  # type: ignore[attr-defined]

    def counted(method: str, *args: object) -> object:
        counts[method] += 1
        return original(method, *args)

    connection.call = counted  # type: ignore[attr-defined]
    return counts


def measure(
    label: str,
    uri: str,
    hms_db: str | None,
    work: Path,
    *,
    repeat: int,
    partitions: int,
    smoke: bool,
    profile: int = 0,
) -> HmsResult:
    """Every figure of the module docstring for the server at ``uri``."""
    from acid_core.compaction.backlog import run_initiator

    store = open_metastore(uri, str(work / "wh"), hms_db=hms_db or "")
    try:
        hms = store._hms  # type: ignore[union-attr]
        answer = hms.call_optional("getVersion")
        server_version = str(answer) if isinstance(answer, str) else "unknown"
        # Hive 2.3.10 and 3.1.3 answer "3.0" whatever their release; 4.0.1 answers "4.0.1"
        print(f"== Hive {label} at {uri}: getVersion() = {server_version}", flush=True)
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

        figures = {}
        for key, what, action in (
            ("txn", "open+commit compaction txn", compaction_txn),
            ("snapshot", "snapshot read", snapshot),
            ("lease", "lease take+release", lease),
        ):
            action()  # one warm-up: the first call opens connections and probes the server's calls
            figures[key] = _percentiles(_time_ms(action, repeat))
            p50, p99 = figures[key]
            print(f"{what:<30} n={repeat}  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms", flush=True)

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
        _add_partitions(store, parted.database, parted.name, partitions)
        root = parted.location.removeprefix("file://")
        for i in range(partitions):
            (Path(root) / f"ds={i:05d}" / "delta_0000001_0000001_0000").mkdir(parents=True, exist_ok=True)

        def listing() -> None:
            store.get_table(parted.full_name)
            store.show_compactions(parted.full_name)
            store.list_partitions(parted.full_name)

        def initiator() -> None:
            entries = run_initiator(store, dry_run=True, tables=[parted.full_name])
            if len(entries) != partitions:
                raise RuntimeError(f"the initiator decided {len(entries)} partitions; expected {partitions}")

        counts = _count_calls(hms)
        if profile:
            _profile(initiator, profile)
        else:
            initiator()
        calls = ", ".join(f"{method} x{n}" for method, n in sorted(counts.items()))
        print(f"Thrift calls of one initiator run: {calls}", flush=True)
        counts.clear()
        listing()
        print(
            f"Thrift calls of the listing alone: {', '.join(f'{m} x{n}' for m, n in sorted(counts.items()))}"
        )
        # Alternate the two so that a burst of load on the shared machine hits both alike.
        listing_samples, initiator_samples = [], []
        for _ in range(5):
            listing_samples += _time_ms(listing, 1)
            initiator_samples += _time_ms(initiator, 1)
        listing_s = statistics.median(listing_samples) / 1000
        initiator_s = statistics.median(initiator_samples) / 1000
        print(
            f"initiator over {partitions} partitions: {initiator_s:.3f} s; HMS listing calls alone: "
            f"{listing_s:.3f} s",
            flush=True,
        )
        goal = goals.report(
            "12",
            f"initiator over {partitions} HMS partitions vs the HMS listing calls (Hive {label})",
            initiator_s / listing_s,
            2.0,
            command="python -m bench.bench_hms " + ("--smoke" if smoke else f"--hive {label}"),
            smoke=smoke,
        )
        skip_goals = [
            _measure_skip(label, uri, db, work, partitions=partitions, smoke=smoke, database=name)
            for db in ([hms_db, None] if hms_db else [None])
        ]
        return HmsResult(
            label,
            server_version,
            figures["txn"],
            figures["snapshot"],
            figures["lease"],
            initiator_s,
            listing_s,
            goal,
            tuple(skip_goals),
        )
    finally:
        store.close()


class _CountingIO:
    """The ``FileIO`` the initiator gets, recording the directories it lists (wraps ``file_io_for``)."""

    def __init__(self, io: object, listed: list[str]) -> None:
        self._io, self._listed = io, listed

    def __getattr__(self, name: str) -> object:
        return getattr(self._io, name)

    def _list(self, method: str, path: str) -> object:
        self._listed.append(path.rstrip("/"))
        return getattr(self._io, method)(path)

    def list_dir(self, path: str) -> object:
        return self._list("list_dir", path)

    def list_entries(self, path: str) -> object:
        return self._list("list_entries", path)

    def list_tree(self, path: str) -> object:
        return self._list("list_tree", path)


def _measure_skip(
    label: str, uri: str, hms_db: str | None, work: Path, *, partitions: int, smoke: bool, database: str
) -> goals.Goal:
    """Issue 22 item 4 in HMS mode: three initiator cycles over ``partitions`` partitions, each by a
    fresh adapter (a restarted process), the marks in the side store.

    Cycle 1 lists everything; cycle 2, nothing written since: the partitions it lists (directly or
    through a listing of the table) over the partitions (GOAL, target 0.00x); cycle 3, after one
    Hive-style write (open_txns, allocate + lock, commit_txn) into one partition: what it lists
    (with the backend database: that partition; by Thrift alone: the table).
    """
    from acid_core.compaction import backlog
    from acid_core.metastore import WriteOperation

    mode = "backend DB" if hms_db else "Thrift only"
    listed: list[str] = []
    original = backlog.file_io_for

    def counting(location: str) -> tuple[object, str]:
        io, root = original(location)
        return _CountingIO(io, listed), root

    store = open_metastore(uri, str(work / "wh"), hms_db=hms_db or "")
    try:
        columns = (Column("id", "int"), Column("name", "string"), Column("salary", "int"))
        acid = {"transactional": "true", "transactional_properties": "default"}
        table = store.create_table(
            TableDefinition(
                f"{database}.skip_{'db' if hms_db else 'thrift'}",
                columns,
                partition_keys=(Column("ds", "string"),),
                bucket_columns=("id",),
                num_buckets=1,
                properties=acid,
            )
        )
        _add_partitions(store, table.database, table.name, partitions)
        root = table.location.removeprefix("file://").rstrip("/")
        for i in range(partitions):
            (Path(root) / f"ds={i:05d}" / "delta_0000001_0000001_0000").mkdir(parents=True, exist_ok=True)
    finally:
        store.close()

    def cycle() -> tuple[set[str], float]:
        """(partitions listed, seconds) of one cycle by a fresh adapter."""
        listed.clear()
        fresh = open_metastore(uri, str(work / "wh"), hms_db=hms_db or "")
        backlog.file_io_for = counting  # type: ignore[assignment]
        try:
            started = time.perf_counter()
            backlog.run_initiator(fresh, tables=[table.full_name], lookback_seconds=0)
            seconds = time.perf_counter() - started
        finally:
            backlog.file_io_for = original
            fresh.close()
        names = {f"ds={i:05d}" for i in range(partitions)}
        seen: set[str] = set()
        for path in listed:
            if path == root:
                seen |= names  # the table at once: every partition
            elif path.startswith(root + "/"):
                seen.add(path[len(root) + 1 :].split("/")[0])
        return seen, seconds

    first, first_s = cycle()
    second, second_s = cycle()
    writer = open_metastore(uri, str(work / "wh"), hms_db="")
    try:
        txn = writer.open_txn()
        writer.add_write_component(txn, table.full_name, "ds=00007", WriteOperation.INSERT)
        writer.commit_txn(txn)
    finally:
        writer.close()
    third, third_s = cycle()
    print(
        f"initiator skip ({mode}), {partitions} partitions: cycle 1 listed {len(first)} in {first_s:.2f} s; "
        f"cycle 2 (nothing written) {len(second)} in {second_s:.2f} s; cycle 3 (one partition "
        f"written) {len(third)} in {third_s:.2f} s",
        flush=True,
    )
    if len(first) != partitions:
        raise RuntimeError(f"the first cycle listed {len(first)} partitions; expected {partitions}")
    if hms_db and third != {"ds=00007"}:
        raise RuntimeError(
            f"after a write into ds=00007 the cycle listed {sorted(third)[:5]}...; expected it alone"
        )
    return goals.report(
        f"hms-skip-{'db' if hms_db else 'thrift'}",
        f"second initiator cycle in HMS mode ({mode}, Hive {label}): LISTs of unchanged partitions / "
        "unchanged partitions",
        len(second) / partitions,
        0.0,
        command="python -m bench.bench_hms " + ("--smoke" if smoke else f"--hive {label}"),
        smoke=smoke,
    )


def _profile(action: Callable[[], object], lines: int) -> None:
    """Run ``action`` once under cProfile; print its ``lines`` costliest calls, cumulative and own time."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(action)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(lines)
    stats.sort_stats("tottime").print_stats(lines)
    print(out.getvalue(), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hive",
        choices=[*VERSIONS, "all"],
        default="2.3.10",
        help="the server(s) to start and measure (default 2.3.10; all: the four in turn)",
    )
    parser.add_argument("--uri", default=None, help="an existing HMS instead (--hive then only names it)")
    parser.add_argument("--hms-db", default=None, help="its backend database (SQLAlchemy URL)")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI): 5 repeats, 20 partitions")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="run the first initiator cycle under cProfile and print its N costliest calls",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeat, args.partitions = 5, 20
    if args.repeat < 1 or args.partitions < 1 or args.profile < 0:
        parser.error(
            f"--repeat {args.repeat} --partitions {args.partitions} --profile {args.profile}: "
            "expected repeat and partitions >= 1, profile >= 0"
        )
    if args.uri is not None and args.hive == "all":
        parser.error("--uri names one server: expected --hive to be one version, not all")

    labels = list(VERSIONS) if args.hive == "all" else [args.hive]
    work = Path(tempfile.mkdtemp(prefix="bench-hms-"))
    # One lease side store per server (lease IDs are its transaction IDs), unless the caller set one.
    own_side_store = "ACIDFLOW_LEASE_STORE" not in os.environ
    results = []
    try:
        run = functools.partial(
            measure,
            work=work,
            repeat=args.repeat,
            partitions=args.partitions,
            smoke=args.smoke,
            profile=args.profile,
        )
        with contextlib.ExitStack() as services:
            servers = _Servers(work, services)
            for label in labels:
                if own_side_store:
                    os.environ["ACIDFLOW_LEASE_STORE"] = f"sqlite:///{work / f'side-{label}.sqlite'}"
                if args.uri is not None:
                    results.append(run(label, args.uri, args.hms_db))
                    continue
                with servers.started(label) as server:
                    results.append(run(label, server.uri, server.backend_url))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        "\n| Hive (getVersion) | compaction txn open+commit p50 / p99 ms | snapshot read p50 / p99 ms "
        "| lease take+release p50 / p99 ms | initiator / listing (median of 5) | GOAL 12 (<= 2x) "
        "| GOAL hms-skip (second cycle) |"
    )
    print("|---|---|---|---|---|---|---|")
    for result in results:
        print(result.row().replace(f"| {result.label} |", f"| {result.label} ({result.server_version}) |", 1))
    return 0


def _add_partitions(store: object, database: str, table: str, count: int) -> None:
    """``add_partitions`` in batches of 100 (one Thrift call each), as Hive's MSCK does."""
    from hive_metastore import ttypes

    hms = store._hms  # type: ignore[attr-defined]
    raw = store._raw_table(database, table)  # type: ignore[attr-defined]  # get_table_req on Hive 4
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
