"""Concurrent writers through the SQL front end, on a SQLite file and on a real PostgreSQL.

Every worker is its own OS process with its own Warehouse (metastore engine, files), as
separate ``acidflow sql`` invocations are. Expected outcomes (Hive's TxnHandler guarantees):
- N processes inserting at once: every row lands, each INSERT under its own write ID and
  ``delta_w_w_0000`` directory;
- N processes that all UPDATE the same table inside overlapping transactions: exactly one
  commits, the others get ``CommitConflictError`` and are aborted; the table shows exactly the
  winner's change;
- a writer killed with SIGKILL in the middle of its transaction: the reaper aborts it and every
  reader ignores its directory.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
import traceback
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from acid_core.errors import CommitConflictError
from acid_core.locks import open_lock_manager
from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse

_PROCESSES = 8
_TIMEOUT_SECONDS = 100
_CONTEXT = multiprocessing.get_context("fork")
_CREATE = "CREATE TABLE t (id int, worker int) STORED AS ORC TBLPROPERTIES ('transactional'='true')"

_PARAMS = [
    pytest.param("sqlite", marks=pytest.mark.backend("sqlite")),
    pytest.param("postgres", marks=[pytest.mark.backend("postgres"), pytest.mark.integration("postgres")]),
]


@pytest.fixture(params=_PARAMS)
def metastore_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/metastore.sqlite"
    return str(request.getfixturevalue("postgres_schema_url"))


def _open(root, url):
    return Warehouse.open(str(root), url, heartbeat_seconds=None)


def _run_workers(target, args):
    queue = _CONTEXT.Queue()
    processes = [_CONTEXT.Process(target=target, args=(queue, *a)) for a in args]
    for process in processes:
        process.start()
    results = [queue.get(timeout=_TIMEOUT_SECONDS) for _ in processes]
    for process in processes:
        process.join(timeout=_TIMEOUT_SECONDS)
    errors = [payload for kind, payload in results if kind == "error"]
    assert not errors, "worker failed:\n" + "\n".join(errors)
    return [payload for _, payload in results]


def _insert_worker(queue: Any, root: str, url: str, worker: int, barrier: Any) -> None:
    try:
        with _open(root, url) as warehouse:
            session = SqlSession(warehouse)
            barrier.wait(timeout=_TIMEOUT_SECONDS)
            values = ", ".join(f"({worker * 100 + i}, {worker})" for i in range(5))
            (result,) = session.execute(f"INSERT INTO t VALUES {values}")
        queue.put(("ok", result.message))
    except BaseException:  # report everything to the parent, which fails the test
        queue.put(("error", traceback.format_exc()))


def test_concurrent_inserts_all_land(tmp_path, metastore_url):
    root = tmp_path / "wh"
    with _open(root, metastore_url) as warehouse:
        SqlSession(warehouse).execute(_CREATE)
    barrier = _CONTEXT.Barrier(_PROCESSES)
    _run_workers(_insert_worker, [(str(root), metastore_url, w, barrier) for w in range(_PROCESSES)])
    with _open(root, metastore_url) as warehouse:
        rows = warehouse.read("t", with_row_id=True)
        location = warehouse.metastore.get_table("t").location
    assert sorted(rows["id"].to_pylist()) == sorted(w * 100 + i for w in range(_PROCESSES) for i in range(5))
    assert sorted(os.listdir(location)) == [f"delta_{w:07d}_{w:07d}_0000" for w in range(1, _PROCESSES + 1)]
    by_write_id = {}
    for row in rows.to_pylist():
        by_write_id.setdefault(row["row__id"]["writeid"], set()).add(row["worker"])
    assert all(len(workers) == 1 for workers in by_write_id.values())  # one INSERT per write ID


def _update_worker(queue: Any, root: str, url: str, worker: int, barrier: Any) -> None:
    try:
        with _open(root, url) as warehouse:
            try:
                with warehouse.transaction() as txn:
                    rows = txn.read("t", with_row_id=True)
                    rows = rows.set_column(
                        2, "worker", pc.add(rows["worker"], pa.scalar(1000 + worker, pa.int32()))
                    )
                    txn.update("t", rows)
                    barrier.wait(timeout=_TIMEOUT_SECONDS)  # every transaction is open before any commits
                outcome = ("committed", worker, txn.txn_id)
            except CommitConflictError as e:
                outcome = ("conflict", worker, str(e))
        queue.put(("ok", outcome))
    except BaseException:
        queue.put(("error", traceback.format_exc()))


def test_conflicting_updates_exactly_one_wins(tmp_path, metastore_url):
    root = tmp_path / "wh"
    with _open(root, metastore_url) as warehouse:
        SqlSession(warehouse).execute(f"{_CREATE}; INSERT INTO t VALUES (1, 0), (2, 0)")
    barrier = _CONTEXT.Barrier(_PROCESSES)
    outcomes = _run_workers(
        _update_worker, [(str(root), metastore_url, w, barrier) for w in range(_PROCESSES)]
    )
    winners = [o for o in outcomes if o[0] == "committed"]
    losers = [o for o in outcomes if o[0] == "conflict"]
    assert len(winners) == 1
    assert len(losers) == _PROCESSES - 1
    assert all("was aborted" in message and "first committer wins" in message for _, _, message in losers)
    with _open(root, metastore_url) as warehouse:
        rows = warehouse.read("t")
        states = {i.txn_id: i.state.value for i in warehouse.metastore.show_transactions()}
    winner = winners[0][1]
    assert sorted(rows["worker"].to_pylist()) == [1000 + winner, 1000 + winner]
    assert sorted(states.values()) == ["aborted"] * (_PROCESSES - 1)


_KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    import pyarrow as pa
    from acid_core.writes import Warehouse
    warehouse = Warehouse.open(sys.argv[1], sys.argv[2], heartbeat_seconds=None)
    txn = warehouse.transaction().begin()
    txn.insert("t", pa.table({"id": pa.array([99], pa.int32()), "worker": pa.array([99], pa.int32())}))
    print(txn.txn_id, flush=True)
    time.sleep(600)
    """
)


def test_killed_writer_is_reaped_and_its_directory_ignored(tmp_path, metastore_url):
    root = tmp_path / "wh"
    with _open(root, metastore_url) as warehouse:
        SqlSession(warehouse).execute(f"{_CREATE}; INSERT INTO t VALUES (1, 0)")
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(root), metastore_url], stdout=subprocess.PIPE, text=True
    )
    try:
        txn_id = int(writer.stdout.readline())
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        writer.stdout.close()
    with _open(root, metastore_url) as warehouse:
        location = warehouse.metastore.get_table("t").location
        assert "delta_0000002_0000002_0000" in os.listdir(location)
        assert warehouse.metastore.get_txn(txn_id).state.value == "open"
        # The reaper, run as if the timeout (Hive's hive.txn.timeout, 300 s) had passed.
        assert warehouse.metastore.abort_timed_out_txns(300, now=time.time() + 301) == [txn_id]
        assert warehouse.read("t")["id"].to_pylist() == [1]
        snapshot = warehouse.metastore.get_valid_write_ids("t", warehouse.metastore.get_valid_txns())
        assert snapshot.is_write_id_aborted(2)
        # The next writer is unaffected.
        SqlSession(warehouse).execute("INSERT INTO t VALUES (3, 0)")
        assert sorted(warehouse.read("t")["id"].to_pylist()) == [1, 3]


@pytest.mark.backend("sqlite")
def test_concurrent_acidflow_sql_processes_with_the_default_lock_manager_all_land(tmp_path):
    """3 ``acidflow sql`` invocations at once on the embedded SQLite metastore and its sql lock manager."""
    root = tmp_path / "wh"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDFLOW_")}
    command = [sys.executable, "-m", "acid_core.cli", "sql", "--warehouse", str(root)]
    subprocess.run([*command, _CREATE], check=True, env=env, capture_output=True, timeout=_TIMEOUT_SECONDS)
    processes = [
        subprocess.Popen(
            [*command, f"INSERT INTO t VALUES ({w}, {w}), ({w + 10}, {w})"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(3)
    ]
    for process in processes:
        _, err = process.communicate(timeout=_TIMEOUT_SECONDS)
        assert process.returncode == 0, err
    with _open(root, None) as warehouse:
        assert sorted(warehouse.read("t")["id"].to_pylist()) == [0, 1, 2, 10, 11, 12]
    locks = open_lock_manager({}, warehouse=str(root))  # the CLI's default: locks in the metastore
    try:
        assert locks.show() == []  # every invocation released its locks
    finally:
        locks.close()
