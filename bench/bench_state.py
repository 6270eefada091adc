"""`acidflow state` and the initiator against a bare listing of the same tree (issues 2 and 14).

    python -m bench.bench_state [--dirs 100000] [--partitions 1,100,10000,100000] [--repeat 5] [--smoke]

Part 1, one partition of --dirs directories. Baseline: ``[(e.name, e.is_dir()) for e in
os.scandir(d)]``, the least any directory-state computation must do. Measured:
``load_directory_state`` with the local FileIO for a committed snapshot and for one with open and
aborted write IDs.

Part 2 (issue 14 goal 4), a table of P partitions (``p=00000``...; each a base and three deltas
with a bucket file each) for every P of --partitions. Baseline: a bare recursive listing of the
table (``os.scandir`` per directory, ``stat`` per file: names, kinds and sizes, as ``hdfs dfs -ls
-R`` returns them). Measured: the directory state of every partition (``acidflow state`` per
partition) listed partition by partition, the same through one ``PrelistedFileIO`` of the table,
and one dry-run initiator cycle over the table (SQLite metastore, partitions bulk-inserted). Next
to each: the FileIO calls it made, counted as round trips on an object store (a recursive listing
is one call there). Goal: <= 2x the bare listing, from 1 to 100,000 partitions (the default range;
100,000 partitions are 900,000 directories and files, made in about a minute, and measured once
rather than --repeat times, so the whole run takes a few minutes on 2 cores).

Best of --repeat runs each, interleaved so all see the same machine load; wall-clock and process
CPU time are both reported (CPU is the steadier ratio on a busy machine; goals use CPU).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
from typing import TYPE_CHECKING
from unittest import mock

from acid_core.directory import load_directory_state
from acid_core.fs import FileInfo, FileIO, LocalFileIO, PrelistedFileIO
from acid_core.writeids import ValidWriteIdList, parse_valid_write_id_list
from bench import goals

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from acid_core.metastore import TableDefinition

_DELTAS_PER_PARTITION = 3
_ONCE_FROM = 50_000  # partitions from which each variant runs once (a run takes seconds there)


def make_partition(root: str, dirs: int, seed: int = 7) -> None:
    """A realistic busy partition: a base, streaming and per-statement deltas, delete deltas, aborts."""
    rng = random.Random(seed)
    os.mkdir(os.path.join(root, "base_0000100"))
    made, write_id = 1, 101
    while made < dirs:
        kind = rng.random()
        if kind < 0.6:
            names = [f"delta_{write_id:07d}_{write_id:07d}_0000"]
        elif kind < 0.9:
            names = [
                f"delta_{write_id:07d}_{write_id:07d}_0000",
                f"delete_delta_{write_id:07d}_{write_id:07d}_0000",
            ]
        else:
            names = [f"delta_{write_id:07d}_{write_id + 9:07d}"]
            write_id += 9
        for name in names[: dirs - made]:
            os.mkdir(os.path.join(root, name))
            made += 1
        write_id += 1
    for i in range(3):
        with open(os.path.join(root, f"00000{i}_0"), "wb") as f:
            f.write(b"x")


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


class SqlStatementCounter:
    """Counts the SQL statements a ``SqlMetastore`` sends (an N+1 shows as a count growing with N)."""

    def __init__(self, store: object) -> None:
        from sqlalchemy import event

        self.count = 0
        event.listen(store._engine, "before_cursor_execute", self._seen)  # type: ignore[attr-defined]

    def _seen(self, *_: object) -> None:
        self.count += 1


class CountingFileIO(LocalFileIO):
    """The local FileIO, counting calls as an object store's round trips (``list_tree``: one)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self._in_tree = False

    def list_dir(self, path: str) -> list[FileInfo]:
        self.calls += not self._in_tree
        return super().list_dir(path)

    def list_entries(self, path: str) -> list[tuple[str, bool, int]]:
        self.calls += 1
        return super().list_entries(path)

    def list_tree(self, path: str) -> list[FileInfo]:
        self.calls += 1
        self._in_tree = True
        try:
            return super().list_tree(path)
        finally:
            self._in_tree = False

    def info(self, path: str) -> FileInfo | None:
        self.calls += 1
        return super().info(path)

    def read_bytes(self, path: str) -> bytes:
        self.calls += 1
        return super().read_bytes(path)


def make_table(root: str, partitions: int) -> list[str]:
    """P partitions, each ``base_0000001`` and three deltas holding one small bucket file each."""
    names = []
    for p in range(partitions):
        name = f"p={p:05d}"
        names.append(name)
        dirs = ["base_0000001"] + [f"delta_{w:07d}_{w:07d}_0000" for w in range(2, 2 + _DELTAS_PER_PARTITION)]
        for d in dirs:
            path = os.path.join(root, name, d)
            os.makedirs(path)
            with open(os.path.join(path, "bucket_00000"), "wb") as f:
                f.write(b"x" * 100)
    return names


def bare_tree(root: str) -> list[tuple[str, bool, int]]:
    """The baseline: names, kinds and sizes of everything below ``root``."""
    found: list[tuple[str, bool, int]] = []
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as it:
            for e in it:
                if e.is_dir():
                    found.append((e.path, True, 0))
                    pending.append(e.path)
                else:
                    found.append((e.path, False, e.stat().st_size))
    return found


def partitioned_acid_table(name: str, location: str | None = None) -> TableDefinition:
    """A full-ACID table ``(id int)`` partitioned by ``p string``."""
    from acid_core.metastore import Column, TableDefinition

    return TableDefinition(
        name,
        (Column("id", "int"),),
        partition_keys=(Column("p", "string"),),
        properties={"transactional": "true"},
        location=location,
    )


def _bulk_metastore(work: str, table_root: str, partitions: list[str]) -> object:
    """A SQLite metastore with one partitioned ACID table at ``table_root``, rows inserted at once."""
    import sqlalchemy as sa

    from acid_core.metastore import SqlMetastore
    from acid_core.metastore.sql.models import PartitionRow, TableRow

    store = SqlMetastore(f"sqlite:///{work}/metastore.sqlite", warehouse=f"{work}/wh")
    store.create_table(partitioned_acid_table("default.t", table_root))
    with store._engine.begin() as connection:
        table_id = connection.execute(sa.select(TableRow.tbl_id).where(TableRow.name == "t")).scalar_one()
        connection.execute(
            sa.insert(PartitionRow.__table__),
            [
                {
                    "TBL_ID": table_id,
                    "PART_NAME": name,
                    "PART_KEY_VALS": [name.split("=", 1)[1]],
                    "LOCATION": os.path.join(table_root, name),
                    "CREATE_TIME": 0,
                }
                for name in partitions
            ],
        )
    return store


def partitions_axis(counts: list[int], repeat: int, smoke: bool) -> None:
    """Part 2: state and initiator over P partitions against the bare recursive listing."""

    committed = ValidWriteIdList(table_name="default.t")
    print(
        f"{'partitions':>10s} {'variant':34s} {'wall ms':>9s} {'cpu ms':>9s} {'cpu ratio':>9s} {'fs calls':>9s}"
        f" {'SQL':>5s}"
    )
    for count in counts:
        _one_table(count, repeat, smoke, committed)


def _one_table(count: int, repeat: int, smoke: bool, committed: ValidWriteIdList) -> None:
    from acid_core.compaction import backlog

    if count >= _ONCE_FROM:
        repeat = 1

    work = tempfile.mkdtemp(prefix="acidflow-bench-state-table-")
    try:
        table_root = os.path.join(work, "t")
        names = make_table(table_root, count)
        store = _bulk_metastore(work, table_root, names)
        statements = SqlStatementCounter(store)
        calls: dict[str, int] = {}
        sql: dict[str, int] = {}

        def states(label: str, prelist: bool) -> Callable[[], object]:
            def run() -> object:
                io = CountingFileIO()
                table_io: FileIO = PrelistedFileIO(io, table_root) if prelist else io
                for name in names:
                    load_directory_state(table_io, os.path.join(table_root, name), committed)
                calls[label] = io.calls
                return io

            return run

        per_partition = states("state, partition by partition", prelist=False)
        prelisted = states("state, one PrelistedFileIO", prelist=True)

        def initiator() -> object:
            io = CountingFileIO()
            before = statements.count
            with mock.patch.object(backlog, "file_io_for", lambda location: (io, location)):
                backlog.run_initiator(store, dry_run=True, tables=["default.t"])  # type: ignore[arg-type]
            calls["initiator cycle (dry run)"] = io.calls
            sql["initiator cycle (dry run)"] = statements.count - before
            return io

        runs: dict[str, Callable[[], object]] = {
            "bare recursive listing (baseline)": lambda: bare_tree(table_root),
            "state, partition by partition": per_partition,
            "state, one PrelistedFileIO": prelisted,
            "initiator cycle (dry run)": initiator,
        }
        calls["bare recursive listing (baseline)"] = 1
        results: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
        bare_tree(table_root)  # warm the OS's directory cache, so the first variant timed pays no more
        for _ in range(repeat):
            for label, fn in runs.items():
                results[label].append(measure(fn))
        base_cpu = max(min(c for _, c in results["bare recursive listing (baseline)"]), 1e-6)
        for label, samples in results.items():
            wall, cpu = min(w for w, _ in samples), min(c for _, c in samples)
            print(
                f"{count:>10d} {label:34s} {wall * 1000:9.1f} {cpu * 1000:9.1f} "
                f"{cpu / base_cpu:8.2f}x {calls[label]:>9d} {sql.get(label, 0):>5d}",
                flush=True,
            )
        command = f"python -m bench.bench_state --partitions {count}"
        for label, goal_id in (
            ("state, partition by partition", "4a"),
            ("state, one PrelistedFileIO", "4a"),
            ("initiator cycle (dry run)", "4b"),
        ):
            cpu = min(c for _, c in results[label])
            goals.report(
                goal_id,
                f"{label} over {count} partitions vs bare recursive listing (CPU, {calls[label]} fs calls)",
                cpu / base_cpu,
                2.0,
                command=command,
                smoke=smoke,
            )
        store.close()  # type: ignore[attr-defined]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dirs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--partitions", default="1,100,10000,100000", help="comma-separated partition counts")
    parser.add_argument("--smoke", action="store_true", help="CI-sized run (not timed)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.dirs, args.repeat, args.partitions = 300, 1, "1,20"
    with tempfile.TemporaryDirectory(prefix="acidflow-bench-state-") as root:
        make_partition(root, args.dirs)
        file_io = LocalFileIO()
        committed = ValidWriteIdList(table_name="db.t")
        hwm = 100 + args.dirs
        busy = parse_valid_write_id_list(
            f"db.t:{hwm}:{hwm - 50}:{hwm - 50},{hwm - 20}:{','.join(str(i) for i in range(200, min(2000, hwm - 60), 7))}"
        )

        def baseline() -> object:
            with os.scandir(root) as it:
                return [(e.name, e.is_dir()) for e in it]

        runs: dict[str, Callable[[], object]] = {
            "scandir (baseline)": baseline,
            "state (all committed)": lambda: load_directory_state(file_io, root, committed),
            "state (open+aborted)": lambda: load_directory_state(file_io, root, busy),
        }
        results: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
        for _ in range(args.repeat):  # interleaved, so every variant sees the same machine load
            for label, fn in runs.items():
                results[label].append(measure(fn))
        state = load_directory_state(file_io, root, committed)
        base_wall = min(wall for wall, _ in results["scandir (baseline)"])
        base_cpu = min(cpu for _, cpu in results["scandir (baseline)"])
        print(f"partition: {args.dirs} directories; state reads {state.base} + {len(state.deltas)} deltas")
        print(
            f"{'':24s} {'wall ms':>9s} {'ratio':>7s} {'cpu ms':>9s} {'ratio':>7s}   (best of {args.repeat})"
        )
        for label, samples in results.items():
            wall = min(w for w, _ in samples)
            cpu = min(c for _, c in samples)
            print(
                f"{label:24s} {wall * 1000:9.1f} {wall / base_wall:6.2f}x {cpu * 1000:9.1f} {cpu / base_cpu:6.2f}x"
            )
    partitions_axis([int(p) for p in args.partitions.split(",") if p], args.repeat, args.smoke)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
