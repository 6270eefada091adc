"""Manual compaction through the REST API of a running ``airflow api-server``.

A bad type is refused by the DAG's Params form (JSON schema: enum minor/major); a bad statement
passes the form (it is free text) and fails the run's ``plan`` task with the parser's message.
Neither changes anything on disk or in the compaction queue.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.fixtures.airflow import run_airflow

pytestmark = [pytest.mark.integration("airflow"), pytest.mark.slow]


def _snapshot(root: Path) -> list[tuple[str, int]]:
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size)
        for p in root.rglob("*")
        if ".acidflow" not in p.parts and p.is_file()
    )


def _queue(warehouse: str) -> list:
    from acid_core.metastore import open_metastore

    with open_metastore(None, warehouse) as metastore:
        return metastore.show_compactions()


@pytest.mark.timeout(300)
def test_rest_trigger_with_bad_type_is_refused_by_the_form(airflow_api_server):
    server = airflow_api_server
    before = _snapshot(Path(server.warehouse))
    headers = {"Authorization": f"Bearer {server.token}"}
    response = httpx.post(
        f"{server.url}/api/v2/dags/acidflow_compaction/dagRuns",
        headers=headers,
        json={
            "logical_date": None,
            "conf": {"table": "default.web_events", "partition": "ds=2024-01-01", "type": "huge"},
        },
        timeout=60,
    )
    assert response.status_code == 400, response.text
    assert "huge" in response.text
    assert "'minor', 'major'" in response.text or "minor" in response.text
    assert _snapshot(Path(server.warehouse)) == before
    runs = httpx.get(
        f"{server.url}/api/v2/dags/acidflow_compaction/dagRuns", headers=headers, timeout=30
    ).json()
    assert all(run["conf"].get("type") != "huge" for run in runs["dag_runs"])


@pytest.mark.timeout(400)
def test_rest_trigger_with_bad_statement_fails_the_run_clearly(airflow_api_server):
    server = airflow_api_server
    before = _snapshot(Path(server.warehouse))
    queue_before = _queue(server.warehouse)
    headers = {"Authorization": f"Bearer {server.token}"}
    statement = "ALTER TABLE default.web_events PARTITION (ds='2024-01-01') COMPACT 'mega'"
    response = httpx.post(
        f"{server.url}/api/v2/dags/acidflow_compaction/dagRuns",
        headers=headers,
        json={"logical_date": None, "conf": {"statement": statement}},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    run_id = response.json()["dag_run_id"]
    # Run the run's plan task (what a worker would do for this run, with its conf).
    result = run_airflow(server.env, "tasks", "test", "acidflow_compaction", "plan", run_id, check=False)
    output = result.stdout + result.stderr
    assert (
        f"compaction request refused: Invalid compaction request {statement!r}: compaction type 'mega' is "
        "not 'minor', 'major' or 'rebalance'; expected ALTER TABLE db.t [PARTITION (k='v')] COMPACT "
        "'minor'|'major'|'rebalance' [CLUSTERED INTO n BUCKETS] [ORDER BY ..], or a known table with type "
        "minor, major or rebalance; nothing was queued"
    ) in output
    assert _snapshot(Path(server.warehouse)) == before
    assert _queue(server.warehouse) == queue_before
