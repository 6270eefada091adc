"""A whole Airflow task under a service fault: the compaction DAG while PostgreSQL is stopped (issue 24).

The compaction DAG runs for real (``airflow dags test``, as ``tests/integration/test_airflow_dags.py``
runs it) over the demo warehouse whose metastore is a private PostgreSQL cluster of this module
(``private_postgres``), stopped with ``pg_ctl stop -m immediate`` before the run. Checked: the run
fails; the task's error in its log is the one line naming PostgreSQL (no other line of acidflow's);
the failure callback (``AcidBacklogNotifier`` on the DAG's plan and compaction tasks) sends an alert
that names the service; nothing was queued or changed; once PostgreSQL is back the next run
compacts, once, and every row is still there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demo.run_platform import build_demo_warehouse, read_rows
from tests.fixtures.airflow import run_airflow

pytestmark = [pytest.mark.integration("airflow"), pytest.mark.slow, pytest.mark.timeout(900)]


def _snapshot(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".acidflow" not in p.parts)


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
