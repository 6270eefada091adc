"""The backlog trigger and sensor on a real demo warehouse (no Airflow runtime needed)."""

from __future__ import annotations

import asyncio

import pytest
from acidflow_airflow.config import AcidflowConfig
from acidflow_airflow.sensors import AcidBacklogSensor
from acidflow_airflow.triggers import AcidBacklogTrigger
from airflow.sdk.exceptions import AirflowException

from demo.run_platform import build_demo_warehouse

WEB_EVENTS = [
    {
        "table": "default.web_events",
        "partition": f"ds=2024-01-0{day}",
        "compaction_type": "major",
        "reason": "no_base_and_delta_num_over_threshold",
    }
    for day in (1, 2, 3)
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sensor") / "warehouse")
    build_demo_warehouse(path)
    return path


async def _first_event(trigger, timeout=60):
    agen = trigger.run()
    try:
        return await asyncio.wait_for(agen.__anext__(), timeout)
    finally:
        await agen.aclose()


def test_trigger_serializes_and_fires_with_the_groups_rows(warehouse):
    trigger = AcidBacklogTrigger(group="all", poke_interval=0.1, warehouse=warehouse)
    classpath, kwargs = trigger.serialize()
    assert classpath == "acidflow_airflow.triggers.AcidBacklogTrigger"
    rebuilt = AcidBacklogTrigger(**kwargs)
    event = asyncio.run(_first_event(rebuilt))
    assert event.payload["status"] == "work"
    targets = [r for r in event.payload["rows"] if r["compaction_type"]]
    assert [r["partition"] for r in targets] == ["ds=2024-01-01", "ds=2024-01-02", "ds=2024-01-03"]


def test_trigger_reports_an_unknown_group_as_error_event(warehouse):
    event = asyncio.run(_first_event(AcidBacklogTrigger(group="nope", warehouse=warehouse)))
    assert event.payload["status"] == "error"
    assert "groups='nope'" in event.payload["message"]


def test_sensor_poke_returns_targets_and_execute_complete_fails_on_error(warehouse):
    sensor = AcidBacklogSensor(
        task_id="watch_all", group="all", deferrable=False, config=AcidflowConfig(warehouse=warehouse)
    )
    result = sensor.poke({})
    assert result.is_done
    assert result.xcom_value == WEB_EVENTS
    assert sensor.execute_complete({}, {"status": "work", "rows": []}) == []
    with pytest.raises(AirflowException, match="acidflow sensor watch_all \\(group all\\): boom"):
        sensor.execute_complete({}, {"status": "error", "message": "boom"})


def test_sensor_poke_not_done_below_thresholds(tmp_path):
    from acid_core.sql.engine import SqlSession
    from acid_core.writes import Warehouse

    path = str(tmp_path / "quiet")
    with Warehouse.open(path) as store:
        SqlSession(store).execute(
            "CREATE TABLE t (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true'); INSERT INTO t VALUES (1)"
        )
    sensor = AcidBacklogSensor(task_id="watch_all", deferrable=False, config=AcidflowConfig(warehouse=path))
    assert not sensor.poke({}).is_done
