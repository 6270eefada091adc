"""The Hive Metastore process killed (kill -9) and restarted during a compaction and a clean (issue 24).

The server is a real Hive metastore of this module's own (``restartable_hive_metastore``: its own
PostgreSQL database; the restart keeps the port and the database, as a deploy or a supervisor
would). The two commit tests, the clean test and the compaction killed while it writes run on Hive
2.3.10, 3.1.3 and 4.0.1 (the commit read-back is ``get_open_txns_info`` on each; Hive 4 names its
outputs ``_vT`` and asks ``get_table_req``), on one server start per version. The compaction and
cleaner DAGs under ``airflow dags test`` with the server killed run on 3.1.3 (what they exercise is
the Airflow side: the task's line, the callback's alert, the next runs). acidflow writes, compacts and cleans through it
(Thrift; the 3.1 queue by SQL on the backend, ``ACIDFLOW_HMS_DB``). Each test kills the server at a
chosen point (``at_thrift_call``: just before a call is sent, or ``CuttingProxy``: after the server
carried a call out, its answer lost), restarts it from a thread, and checks what the issue asks:
no committed row lost, no compaction committed twice, the queue converges after the restart, the
error is one line naming the Hive Metastore and what acidflow does next, and a ``commit_txn`` whose
answer was lost is read back, never re-sent.
"""

from __future__ import annotations

import os
import threading
import uuid

import pyarrow as pa
import pytest

from acid_core.compaction.cleaner import CleanerOptions, run_cleaner
from acid_core.compaction.worker import execute_compaction, run_worker
from acid_core.errors import HiveMetastoreLostCommitAbortedError, HiveMetastoreUnavailableError
from acid_core.metastore import Column, CompactionState, CompactionType, TableDefinition, TxnState
from acid_core.metastore.hive.metastore import HiveMetastore
from acid_core.metastore.hive.queue_sql import HiveQueueSql
from acid_core.metastore.hive.thrift import ThriftHmsConnection, parse_metastore_uris
from acid_core.writes import Warehouse
from tests.reliability.faults import CuttingProxy, at_thrift_call, thrift_client_port

pytestmark = [pytest.mark.integration("hive"), pytest.mark.slow, pytest.mark.timeout(900)]

_EVERY_VERSION = pytest.mark.parametrize(
    "restartable_hive_metastore", ["2.3.10", "3.1.3", "4.0.1"], indirect=True, ids=lambda v: f"hive-{v}"
)
_HIVE_31 = pytest.mark.parametrize(
    "restartable_hive_metastore", ["3.1.3"], indirect=True, ids=lambda v: f"hive-{v}"
)

DB = "faults"
_CHECK_SECONDS = 600.0  # a restart takes ~15 s on quiet cores, minutes when the machine is loaded


@pytest.fixture(scope="module")
def hms(restartable_hive_metastore):
    """The module's server, running at the start of each test."""
    return restartable_hive_metastore


@pytest.fixture
def restart_later(hms):
    """``restart_later()`` kills the server now and starts it again from a thread (a restart mid-call)."""
    threads = []

    def fault(*_):
        hms.kill()
        thread = threading.Thread(target=hms.restart, daemon=True)
        threads.append(thread)
        thread.start()

    yield fault
    for thread in threads:
        thread.join()
    if not hms.is_running():
        hms.restart()


def _store(hms, tmp_path, port=None):
    uri = hms.server.uri if port is None else f"thrift://127.0.0.1:{port}"
    connection = ThriftHmsConnection(parse_metastore_uris(uri), timeout_seconds=60.0)
    store = HiveMetastore(
        connection,
        queue_sql=HiveQueueSql(hms.server.backend_url),
        lease_store=None,
        warehouse=str(hms.server.warehouse),
        commit_check_seconds=_CHECK_SECONDS,
    )
    if DB not in store.list_databases():
        store.create_database(DB)
    return store


def _table(store):
    name = f"{DB}.t_{uuid.uuid4().hex[:8]}"
    store.create_table(
        TableDefinition(
            name,
            (Column("id", "int"),),
            bucket_columns=("id",),  # Hive 2.3 refuses an ACID table that is not bucketed
            num_buckets=1,
            properties={"transactional": "true", "transactional_properties": "default"},
        )
    )
    return name


def _write(wh, table, rows):
    with wh.transaction() as txn:
        txn.insert(table, pa.table({"id": pa.array(rows, pa.int32())}))


def _ids(wh, table):
    return sorted(wh.read(table).column("id").to_pylist())


def _with_three_deltas(store, tmp_path):
    wh = Warehouse(store._warehouse, store, heartbeat_seconds=None)
    table = _table(store)
    for row in (1, 2, 3):
        _write(wh, table, [row])
    return wh, table


def _location(store, table):
    return store.get_table(table).location.removeprefix("file://")


def _directories(store, table):
    return sorted(d for d in os.listdir(_location(store, table)) if not d.startswith("_"))


def _entries(store, table):
    return [c for c in store.show_compactions() if c.table == table]


def _claim_major(store, table):
    store.enqueue_compaction(table, None, CompactionType.MAJOR)
    return store.find_next_to_compact("worker-1")


def _at_step(wanted, action):
    def on_step(step):
        if step == wanted:
            action()

    return on_step


@_EVERY_VERSION
def test_hms_killed_before_compaction_commit_aborts_then_rerun_compacts_once(hms, tmp_path, restart_later):
    """kill -9 before the compaction's commit_txn is sent: after the restart T is read back open and
    aborted (one line naming the HMS), the entry failed; the rerun compacts once, same rows."""
    store = _store(hms, tmp_path)
    try:
        wh, table = _with_three_deltas(store, tmp_path)
        claimed = _claim_major(store, table)
        with pytest.raises(HiveMetastoreLostCommitAbortedError) as info:
            execute_compaction(store, claimed, on_step=_at_step("committing", restart_later))
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(
            f"The Hive Metastore {hms.server.uri!r} went away during the commit of transaction "
        )
        assert message.endswith(
            "checked after reconnecting: the commit had not happened, so acidflow aborted the "
            "transaction and nothing it wrote is visible; expected the commit to be answered; hint: run "
            "it again"
        )
        entry = store.get_compaction(claimed.id)
        assert entry.state is CompactionState.FAILED
        # Hive 4 does not show a failed entry's txn: the error names it
        assert store.get_txn(info.value.txn_id).state is TxnState.ABORTED
        assert hms.restarts >= 1
        assert _ids(wh, table) == [1, 2, 3]
        # Hive 2.3/3.1 names have no _v<txn>: the aborted run's base_N, renamed before the commit,
        # holds exactly the committed rows up to its high watermark (as Hive 3's own compactor leaves
        # it), so the rerun finds nothing to rewrite and commits the entry. Hive 4's base_N_vT of the
        # aborted T was removed by the failed run: the rerun compacts. The cleaner then converges.
        store.enqueue_compaction(table, None, CompactionType.MAJOR)
        outcomes = run_worker(store, worker_id="worker-2")
        rerun = "compacted" if hms.server.version.startswith("4.") else "nothing_to_rewrite"
        assert [o.status for o in outcomes] == [rerun]
        assert [r.status for r in run_cleaner(store)] == ["cleaned"]
        states = [c.state for c in _entries(store, table)]
        assert states.count(CompactionState.SUCCEEDED) == 1
        assert _ids(wh, table) == [1, 2, 3]
        assert [d for d in _directories(store, table) if d.startswith("delta_")] == []
        assert [t.txn_id for t in store.show_transactions() if t.state is TxnState.OPEN] == []
    finally:
        store.close()


def _commit_calls(connection):
    """How many ``commit_txn`` calls the connection sends from now on."""
    sent = []
    call = connection.call

    def counting(name, *args):
        if name == "commit_txn":
            sent.append(args)
        return call(name, *args)

    connection.call = counting
    return sent


@_EVERY_VERSION
def test_hms_killed_after_compaction_commit_answer_lost_is_read_back_not_resent(hms, tmp_path, restart_later):
    """The HMS commits T, its answer is lost and the server is killed and restarted: the worker reads T
    back (committed), sends commit_txn once, marks the entry compacted; the cleaner finishes once."""
    proxy = CuttingProxy(hms.server.port, on_cut=restart_later)
    store = _store(hms, tmp_path, port=proxy.port)
    try:
        wh, table = _with_three_deltas(store, tmp_path)
        claimed = _claim_major(store, table)
        sent = _commit_calls(store._hms)
        at_thrift_call(
            store._hms, "commit_txn", lambda: proxy.cut_after_next_request(thrift_client_port(store._hms))
        )
        outcome = execute_compaction(store, claimed)
        assert outcome.status == "compacted"
        assert proxy.cuts == 1
        assert hms.restarts >= 1
        assert len(sent) == 1, "commit_txn was re-sent"
        entry = store.get_compaction(claimed.id)
        assert entry.state is CompactionState.READY_FOR_CLEANING
        assert store.get_txn(entry.txn_id).state is TxnState.COMMITTED
        assert _ids(wh, table) == [1, 2, 3]
        assert [r.status for r in run_cleaner(store)] == ["cleaned"]
        assert [c.state for c in _entries(store, table)] == [CompactionState.SUCCEEDED]
        assert _directories(store, table) == list(outcome.outputs)
        assert _ids(wh, table) == [1, 2, 3]
    finally:
        store.close()
        proxy.close()


@_EVERY_VERSION
def test_hms_killed_during_clean_run_fails_in_one_line_next_run_finishes(hms, tmp_path):
    """kill -9 between two deletes of a clean: the run stops with one line naming the HMS and what
    comes next, nothing of the base is touched; after the restart the next run finishes the ledger."""
    store = _store(hms, tmp_path)
    try:
        wh, table = _with_three_deltas(store, tmp_path)
        store.enqueue_compaction(table, None, CompactionType.MAJOR)
        [outcome] = run_worker(store, worker_id="worker-1")
        assert outcome.status == "compacted"
        deleting = []

        def on_step(step, path):
            if step == "deleting":
                deleting.append(path)
                if len(deleting) == 2:
                    hms.kill()

        try:
            with pytest.raises(HiveMetastoreUnavailableError) as info:
                run_cleaner(store, CleanerOptions(on_step=on_step))
        finally:
            hms.restart()
        message = str(info.value)
        assert "\n" not in message
        # Hive 4's client asks with get_table_req (GetTableRequest), the older ones with get_table
        call = "get_table_req" if hms.server.version.startswith("4.") else "get_table"
        assert message.startswith(f"Cannot reach the Hive Metastore {hms.server.uri!r} during {call!r}: ")
        assert message.endswith(
            "; expected a HiveMetaStore answering on thrift://host:port; acidflow stops this run and the "
            "next run starts from the state the metastore holds; hint: check that the server runs, "
            "ACIDFLOW_METASTORE (hive.metastore.uris) and ACIDFLOW_HMS_TIMEOUT, then rerun"
        )
        left = _directories(store, table)
        assert set(outcome.outputs) <= set(left)
        assert len([d for d in left if d.startswith("delta_")]) == 2  # one deleted before the kill
        assert _ids(wh, table) == [1, 2, 3]
        assert [c.state for c in _entries(store, table)] == [CompactionState.READY_FOR_CLEANING]
        # The next run (the server is back) finishes what the ledger planned, once.
        assert [r.status for r in run_cleaner(store)] == ["cleaned"]
        assert [c.state for c in _entries(store, table)] == [CompactionState.SUCCEEDED]
        assert run_cleaner(store) == []
        assert _directories(store, table) == list(outcome.outputs)
        assert _ids(wh, table) == [1, 2, 3]
    finally:
        store.close()


_WORKER = """
import os, signal, sys
from acid_core.compaction.worker import compact_bucket, default_worker_id, execute_compaction
from acid_core.errors import AcidError
from acid_core.metastore.factory import open_metastore

uri, warehouse, hms_db, table, hms_pid = sys.argv[1:6]
metastore = open_metastore(uri, warehouse, hms_db=hms_db)
claimed = metastore.find_next_to_compact(default_worker_id())
if claimed is None or claimed.table != table:
    sys.exit(f"claimed {claimed!r}, expected the compaction of {table}")

def runner(tasks, heartbeat):
    results = [compact_bucket(task) for task in tasks]  # the buckets are in the staging directory
    os.kill(int(hms_pid), signal.SIGKILL)  # the HMS dies while the compaction writes
    heartbeat()
    return results

try:
    execute_compaction(metastore, claimed, run_tasks=runner)
except AcidError as error:
    print(error, file=sys.stderr)
    sys.exit(3)
"""


@_EVERY_VERSION
def test_hms_killed_while_compaction_writes_next_run_aborts_its_txn_and_compacts_once(hms, tmp_path):
    """kill -9 of the HMS while a worker process writes its buckets: the worker fails in one line
    naming the HMS and exits; its txn stays open on the restarted server (nobody could abort it) and
    the entry 'working'; no partial output is visible. The next worker run recovers the dead worker's
    entry (aborts its txn, removes any staging left), compacts once; the cleaner converges."""
    import subprocess
    import sys
    from pathlib import Path

    store = _store(hms, tmp_path)
    try:
        wh, table = _with_three_deltas(store, tmp_path)
        compaction_id = store.enqueue_compaction(table, None, CompactionType.MAJOR)
        before = _directories(store, table)
        root = str(Path(__file__).resolve().parents[2])
        try:
            child = subprocess.run(
                [sys.executable, "-c", _WORKER, hms.server.uri, str(hms.server.warehouse),
                 hms.server.backend_url, table, str(hms._pid)],
                env={**os.environ, "PYTHONPATH": root}, capture_output=True, text=True, timeout=600,
                check=False,
            )  # fmt: skip
        finally:
            hms.restart()
        assert child.returncode == 3, child.stderr[-3000:]
        error = child.stderr.strip().splitlines()[-1]
        assert error.startswith(f"Cannot reach the Hive Metastore {hms.server.uri!r} during 'heartbeat': ")
        assert "acidflow stops this run and the next run starts from the state the metastore holds" in error
        entry = store.get_compaction(compaction_id)
        assert entry.state is CompactionState.WORKING  # the dead worker could not mark it
        assert store.get_txn(entry.txn_id).state is TxnState.OPEN  # nor abort its txn
        location = _location(store, table)
        assert _directories(store, table) == before  # nothing new visible
        assert _ids(wh, table) == [1, 2, 3]
        outcomes = run_worker(store, worker_id="worker-2")
        assert [o.status for o in outcomes] == ["compacted"]
        assert store.get_txn(entry.txn_id).state is TxnState.ABORTED
        assert store.get_compaction(compaction_id).state is CompactionState.FAILED
        assert not [d for d in os.listdir(location) if d.startswith(".acidflow-staging")]
        cleaned = run_cleaner(store)
        assert [r.status for r in cleaned] == ["cleaned"], (cleaned, _entries(store, table))
        states = [c.state for c in _entries(store, table)]
        assert sorted(s.value for s in states) == sorted(
            [CompactionState.FAILED.value, CompactionState.SUCCEEDED.value]
        )
        assert _directories(store, table) == list(outcomes[0].outputs)
        assert _ids(wh, table) == [1, 2, 3]
    finally:
        store.close()


@_HIVE_31
@pytest.mark.integration("airflow")
def test_compaction_and_cleaner_dags_hms_killed_fail_in_one_line_alert_the_service_next_runs_converge(
    hms, tmp_path, airflow_env, webhook
):
    """The compaction and cleaner DAGs (``airflow dags test``, HMS mode: ``ACIDFLOW_METASTORE`` the
    server's thrift:// URI, ``ACIDFLOW_HMS_DB`` its backend) with the server killed (kill -9): each run
    fails, the failing task's error is the one line naming the Hive Metastore, the failure callback's
    alert names the service; nothing queued, claimed or deleted. Restarted: the next compaction run
    compacts once, the next cleaner run cleans both tables once, every row intact."""
    import json

    from tests.fixtures.airflow import logged_errors, run_airflow

    hook_url, alerts = webhook
    store = _store(hms, tmp_path)
    try:
        wh, cleanable = _with_three_deltas(store, tmp_path)  # compacted: the cleaner has work
        store.enqueue_compaction(cleanable, None, CompactionType.MAJOR)
        [compacted] = run_worker(store, worker_id="worker-1")
        assert compacted.status == "compacted"
        table = _table(store)  # three deltas: the compaction DAG's work
        for row in (1, 2, 3):
            _write(wh, table, [row])
        before = {name: _directories(store, name) for name in (cleanable, table)}
        entries = {name: _entries(store, name) for name in (cleanable, table)}
    finally:
        store.close()
    config = tmp_path / "acidflow.yaml"
    # retries: 0 so that the first failure is final (the default, 2, retries after 1 and 2 min)
    config.write_text(
        f"compaction: {{retries: 0}}\ncleaner: {{retries: 0}}\nalerts:\n  default: [log, '{hook_url}']\n"
    )
    env = airflow_env(
        str(hms.server.warehouse),
        hms.server.uri,
        ACIDFLOW_CONFIG=str(config),
        ACIDFLOW_HMS_DB=hms.server.backend_url,
        ACIDFLOW_LEASE_STORE=f"sqlite:///{tmp_path / 'side.sqlite'}",
        AIRFLOW__LOGGING__LOGGING_LEVEL="INFO",
    )
    conf = json.dumps({"table": table, "type": "major", "executor": "embedded"})
    prefix = f"Cannot reach the Hive Metastore {hms.server.uri!r} during "

    def failed_with_one_line(dag_id, *args):
        result = run_airflow(env, "dags", "test", dag_id, *args, check=False)
        errors = logged_errors(result, prefix)
        assert errors, (result.stdout + result.stderr)[-5000:]
        for error in errors:
            assert error.endswith(
                "acidflow stops this run and the next run starts from the state the metastore holds; hint: "
                "check that the server runs, ACIDFLOW_METASTORE (hive.metastore.uris) and "
                "ACIDFLOW_HMS_TIMEOUT, then rerun"
            ), error
        listed = run_airflow(env, "dags", "list-runs", dag_id, "-o", "json").stdout
        [runs] = [json.loads(line) for line in listed.splitlines() if line.startswith("[{")]
        assert max(runs, key=lambda run: run["start_date"] or "")["state"] == "failed"
        return errors

    hms.kill()
    try:
        compaction_errors = failed_with_one_line("acidflow_compaction", "-c", conf)
        cleaner_errors = failed_with_one_line("acidflow_cleaner")
    finally:
        hms.restart()
    service_alerts = [a for a in alerts if a["details"].get("service")]
    assert [a["details"]["service"] for a in service_alerts] == ["Hive Metastore", "Hive Metastore"]
    # each alert carries the one line the failed task logged
    for alert, head, logged in (
        (
            service_alerts[0],
            "compaction task acidflow_compaction.plan[-1] failed for unknown table (Hive Metastore fault): ",
            compaction_errors,
        ),
        (
            service_alerts[1],
            "cleaning task acidflow_cleaner.clean_obsolete[-1] failed (Hive Metastore fault): ",
            cleaner_errors,
        ),
    ):
        assert alert["message"].startswith(head), alert["message"]
        assert alert["message"][len(head) :] in logged, (alert["message"], logged)
        assert "\n" not in alert["message"]
    store = _store(hms, tmp_path)
    try:
        # nothing queued, claimed or deleted while the server was down
        assert {name: _entries(store, name) for name in (cleanable, table)} == entries
        assert {name: _directories(store, name) for name in (cleanable, table)} == before

        run_airflow(env, "dags", "test", "acidflow_compaction", "-c", conf)
        [entry] = _entries(store, table)
        assert entry.state is CompactionState.READY_FOR_CLEANING  # compacted once
        run_airflow(env, "dags", "test", "acidflow_cleaner")
        for name in (cleanable, table):
            assert [c.state for c in _entries(store, name)] == [CompactionState.SUCCEEDED]
            [base] = _directories(store, name)
            assert base.startswith("base_")
            assert _ids(Warehouse(store._warehouse, store, heartbeat_seconds=None), name) == [1, 2, 3]
        assert [t.txn_id for t in store.show_transactions() if t.state is TxnState.OPEN] == []
    finally:
        store.close()
    assert len([a for a in alerts if a["details"].get("service")]) == 2  # none for the good runs
