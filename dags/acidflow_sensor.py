"""Watch table groups: one deferrable sensor per group; work found -> an Asset event for compaction."""

from __future__ import annotations

from _common.defaults import DEFAULT_ARGS, START_DATE, TAGS
from acidflow_airflow.config import load_config_for_dag
from acidflow_airflow.sensors import AcidBacklogSensor
from airflow.sdk import dag

CONFIG = load_config_for_dag()


@dag(
    dag_id="acidflow_sensor",
    schedule=CONFIG.sensor_schedule,
    start_date=START_DATE,
    catchup=False,
    is_paused_upon_creation=CONFIG.paused_at_creation,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=[*TAGS, "sensor"],
    doc_md=(
        "Counts delta, delete-delta and aborted directories per table and partition of each group "
        "against the initiator's thresholds (waiting on the triggerer), records the backlog metrics, "
        "alerts on critical backlogs, and hands the tables needing work to `acidflow_compaction`."
    ),
)
def acidflow_sensor() -> None:
    for group in CONFIG.groups:
        AcidBacklogSensor(
            task_id=f"watch_{group.name.replace('-', '_')}",
            group=group.name,
            deferrable=True,
            poke_interval=CONFIG.sensor_poke_seconds,
            timeout=CONFIG.sensor_timeout_seconds,
            soft_fail=True,
        )


acidflow_sensor()
