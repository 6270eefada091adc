"""A whole Airflow task under a service fault: the compaction DAG with PostgreSQL, ZooKeeper or storage down (issue 24).

The compaction DAG runs for real (``airflow dags test``, as ``tests/integration/test_airflow_dags.py``
runs it), one run per fault, ``compaction.retries: 0``:

- PostgreSQL: the demo warehouse's metastore is a private cluster of this module
  (``private_postgres``), stopped with ``pg_ctl stop -m immediate`` before the run;
- ZooKeeper: the locks are configured for the session's ZooKeeper (``zookeeper_server``), stopped
  before the run and started again after it (same port and data directory);
- storage: the warehouse lives on the module's tmpfs (``remountable_tmpfs``), remounted read-only
  before the run (the metastore, SQLite, is on another disk).

Checked: the run fails; the failing task's error in its log is the one line naming the service; the
failure callback (``AcidBacklogNotifier`` on the DAG's plan and compaction tasks) sends an alert
that names the service (``details.service``); nothing half-done (no file changed, nothing claimed
or committed); once the service is back the next run compacts, once, and every row is still there.
The Hive Metastore killed under the compaction and cleaner DAGs is in ``test_hms_faults.py`` (on the
server that module already starts).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demo.run_platform import build_demo_warehouse, read_rows
from tests.fixtures.airflow import logged_errors, run_airflow

pytestmark = [pytest.mark.integration("airflow"), pytest.mark.slow, pytest.mark.timeout(900)]


def _snapshot(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".acidflow" not in p.parts)


def _small_table(warehouse: str, metastore_url: str) -> list:
    """``default.t`` with three inserts (three deltas); returns its rows."""
    from acid_core.sql.engine import SqlSession
    from acid_core.writes import Warehouse

    with Warehouse.open(warehouse, metastore_url) as store:
        session = SqlSession(store)
        session.execute("CREATE TABLE t (id int) STORED AS ORC TBLPROPERTIES ('transactional' = 'true')")
        for row in (1, 2, 3):
            session.execute(f"INSERT INTO t VALUES ({row})")
    return read_rows(warehouse, "default.t", metastore_url)


def _fault_env(airflow_env, tmp_path, warehouse, metastore_url, hook_url, **extra):
    config = tmp_path / "acidflow.yaml"
    # retries: 0 so that the first failure is final (the default, 2, retries after 1 and 2 min)
    config.write_text(f"compaction: {{retries: 0}}\nalerts:\n  default: [log, '{hook_url}']\n")
    return airflow_env(
        warehouse, metastore_url, ACIDFLOW_CONFIG=str(config), AIRFLOW__LOGGING__LOGGING_LEVEL="INFO", **extra
    )


def _service_alert(alerts, service):
    """The one alert of a failure callback that named a service: it names ``service``."""
    [alert] = [a for a in alerts if a["kind"] == "compaction_failed" and a["details"].get("service")]
    assert alert["details"]["service"] == service, alert
    assert "\n" not in alert["message"]
    return alert


def _newest_run_state(env) -> str:
    listed = run_airflow(env, "dags", "list-runs", "acidflow_compaction", "-o", "json").stdout
    [runs] = [json.loads(line) for line in listed.splitlines() if line.startswith("[{")]
    return max(runs, key=lambda run: run["start_date"] or "")["state"]


def test_compaction_dag_postgres_stopped_fails_in_one_line_alerts_the_service_next_run_compacts(
    tmp_path, airflow_env, private_postgres, private_postgres_url, webhook
):
    from acid_core.metastore import CompactionState, open_metastore

    hook_url, alerts = webhook
    warehouse = str(tmp_path / "warehouse")
    build_demo_warehouse(warehouse, private_postgres_url)
    before = read_rows(warehouse, "default.employee", private_postgres_url)
    config = tmp_path / "acidflow.yaml"
    # retries: 0 so that the first failure is final (the default, 2, retries after 1 and 2 min)
    config.write_text(f"compaction: {{retries: 0}}\nalerts:\n  default: [log, '{hook_url}']\n")
    env = airflow_env(
        warehouse, private_postgres_url, ACIDFLOW_CONFIG=str(config), AIRFLOW__LOGGING__LOGGING_LEVEL="INFO"
    )
    conf = json.dumps({"table": "default.employee", "type": "major", "executor": "embedded"})
    files = _snapshot(Path(warehouse))

    private_postgres.kill()
    try:
        failed = run_airflow(env, "dags", "test", "acidflow_compaction", "-c", conf, check=False)
    finally:
        private_postgres.resume()
    output = failed.stdout + failed.stderr
    lines = [line for line in output.splitlines() if "PostgreSQL (the metastore database " in line]
    assert lines, output[-5000:]
    error = lines[0][lines[0].index("PostgreSQL (the metastore database ") :]
    assert "could not be reached during " in error
    assert "acidflow stops this run and the next run starts from the state the database holds" in error
    assert _newest_run_state(env) == "failed"
    [alert] = [a for a in alerts if a["kind"] == "compaction_failed"]
    assert alert["details"]["service"] == "PostgreSQL"
    assert alert["message"].startswith(
        "compaction task acidflow_compaction.plan[-1] failed for unknown table (PostgreSQL fault): "
        "PostgreSQL (the metastore database "
    )
    assert "\n" not in alert["message"]
    assert _snapshot(Path(warehouse)) == files  # nothing written while the metastore was down
    with open_metastore(private_postgres_url, warehouse) as metastore:
        assert metastore.show_compactions() == []  # nothing queued

    run_airflow(env, "dags", "test", "acidflow_compaction", "-c", conf)
    with open_metastore(private_postgres_url, warehouse) as metastore:
        history = [c for c in metastore.show_compactions() if c.table == "default.employee"]
    assert [c.state for c in history] == [CompactionState.READY_FOR_CLEANING]  # compacted once
    assert read_rows(warehouse, "default.employee", private_postgres_url) == before
    assert [a for a in alerts if a["kind"] == "compaction_failed"] == [alert]  # no alert for the good run


def test_compaction_dag_zookeeper_stopped_fails_in_one_line_alerts_the_service_next_run_compacts(
    tmp_path, airflow_env, zookeeper_server, webhook
):
    """Locks on ZooKeeper, ZooKeeper stopped: ``plan`` queues the compaction (it takes no lock), the
    compaction task cannot open its lock manager and fails with the one line naming ZooKeeper, its
    alert names the service; nothing claimed or written. ZooKeeper back: the next run runs the
    queued entry, once."""
    from acid_core.metastore import CompactionState, open_metastore

    hook_url, alerts = webhook
    warehouse = str(tmp_path / "warehouse")
    metastore_url = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    before = _small_table(warehouse, metastore_url)
    env = _fault_env(
        airflow_env,
        tmp_path,
        warehouse,
        metastore_url,
        hook_url,
        ACIDFLOW_LOCK_MANAGER="zookeeper",
        ACIDFLOW_ZOOKEEPER=zookeeper_server.hosts,
    )
    conf = json.dumps({"table": "default.t", "type": "major", "executor": "embedded"})
    files = _snapshot(Path(warehouse))

    zookeeper_server.stop()
    try:
        failed = run_airflow(env, "dags", "test", "acidflow_compaction", "-c", conf, check=False)
    finally:
        zookeeper_server.start()
    prefix = f"Could not connect to ZooKeeper at {zookeeper_server.hosts!r} within "
    [error] = logged_errors(failed, prefix)  # the one line, however often the task logged it
    assert "nothing was locked: acidflow stops this run and the next run starts from the state" in error
    assert _newest_run_state(env) == "failed"
    alert = _service_alert(alerts, "ZooKeeper")
    assert alert["message"] == (
        "compaction task acidflow_compaction.compact_embedded[0] failed for default.t (ZooKeeper fault): "
        + error
    )
    assert _snapshot(Path(warehouse)) == files  # nothing written without the lock
    with open_metastore(metastore_url, warehouse) as metastore:
        [queued] = metastore.show_compactions()
        assert queued.state is CompactionState.INITIATED  # queued by plan, never claimed
        assert [t for t in metastore.show_transactions() if t.state.value == "open"] == []

    run_airflow(env, "dags", "test", "acidflow_compaction", "-c", conf)
    with open_metastore(metastore_url, warehouse) as metastore:
        history = metastore.show_compactions()
    assert [(c.id, c.state) for c in history] == [(queued.id, CompactionState.READY_FOR_CLEANING)]
    assert read_rows(warehouse, "default.t", metastore_url) == before
    assert len([a for a in alerts if a["details"].get("service")]) == 1  # no alert for the good run


def test_compaction_dag_storage_read_only_fails_in_one_line_alerts_the_service_next_run_compacts(
    tmp_path, airflow_env, remountable_tmpfs, webhook
):
    """The warehouse's file system remounted read-only: the compaction task fails with the one line
    naming the read-only file system, its alert names storage; no file changed, the entry failed and
    its transaction aborted. Remounted read-write: the next run compacts once, every row intact."""
    import uuid

    from acid_core.metastore import CompactionState, open_metastore

    hook_url, alerts = webhook
    warehouse = str(remountable_tmpfs.path / f"wh_{uuid.uuid4().hex[:8]}")
    metastore_url = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    before = _small_table(warehouse, metastore_url)
    env = _fault_env(airflow_env, tmp_path, warehouse, metastore_url, hook_url)
    conf = json.dumps({"table": "default.t", "type": "major", "executor": "embedded"})
    files = _snapshot(Path(warehouse))

    remountable_tmpfs.read_only()
    try:
        failed = run_airflow(env, "dags", "test", "acidflow_compaction", "-c", conf, check=False)
        assert read_rows(warehouse, "default.t", metastore_url) == before  # readable while read-only
    finally:
        remountable_tmpfs.writable()
    [error] = logged_errors(failed, "Read-only file system: ")
    assert error.endswith(
        "expected a writable file system under the table; acidflow stops this step and the next run goes "
        "on from what is on disk; hint: remount it read-write (check the kernel log for why it went "
        "read-only) and rerun"
    )
    assert _newest_run_state(env) == "failed"
    alert = _service_alert(alerts, "storage")
    head = "compaction task acidflow_compaction.compact_embedded[0] failed for default.t (storage fault): "
    assert alert["message"].startswith(head)
    assert alert["message"].endswith(error)  # the task's error: the compaction failed with that line
    assert _snapshot(Path(warehouse)) == files  # nothing half-written (no staging left either)
    with open_metastore(metastore_url, warehouse) as metastore:
        [failed_entry] = metastore.show_compactions()
        assert failed_entry.state is CompactionState.FAILED
        assert [t for t in metastore.show_transactions() if t.state.value == "open"] == []

    run_airflow(env, "dags", "test", "acidflow_compaction", "-c", conf)
    with open_metastore(metastore_url, warehouse) as metastore:
        history = sorted(metastore.show_compactions(), key=lambda c: c.id)
    assert [c.state for c in history] == [CompactionState.FAILED, CompactionState.READY_FOR_CLEANING]
    assert read_rows(warehouse, "default.t", metastore_url) == before
    assert len([a for a in alerts if a["details"].get("service")]) == 1  # no alert for the good run
