"""Compact the tables the sensor hands over (Asset event), or one table by hand (a validated form)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from _common.defaults import DEFAULT_ARGS, START_DATE, TAGS
from acidflow_airflow.config import load_config_for_dag, load_config_for_task
from acidflow_airflow.notifiers import AcidBacklogNotifier
from acidflow_airflow.operators import AcidCompactionOperator, spark_application
from acidflow_airflow.sensors import COMPACTION_REQUESTS
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Param, dag, task

CONFIG = load_config_for_dag()
_ROOT = str(Path(spark_application()).resolve().parents[1])

PARAMS = {
    "statement": Param(
        "",
        type="string",
        title="ALTER TABLE ... COMPACT statement",
        description="e.g. ALTER TABLE sales.orders PARTITION (ds='2024-01-01') COMPACT 'major'. "
        "Leave empty to use the fields below.",
        maxLength=2000,
    ),
    "table": Param(
        "",
        type="string",
        title="Table",
        description="db.table (when no statement is given)",
        pattern=r"^$|^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$",
    ),
    "partition": Param(
        "",
        type=["string", "null"],
        title="Partition",
        description="k=v[/k2=v2], optional. The table and partition are checked against the metastore "
        "before anything is queued: an unknown one fails the run's plan task with the known names.",
    ),
    "type": Param("major", type="string", enum=["minor", "major", "rebalance"], title="Compaction type"),
    "buckets": Param(
        None,
        type=["integer", "null"],
        minimum=1,
        maximum=4096,
        title="Rebalance: number of buckets",
        description="CLUSTERED INTO n BUCKETS (rebalance only; empty: as many as the partition has)",
    ),
    "order_by": Param(
        "",
        type="string",
        title="Rebalance: ORDER BY",
        description="e.g. 'b DESC, a' (rebalance only; empty: ROW__ID order, write IDs kept)",
    ),
    "executor": Param("auto", type="string", enum=["auto", "embedded", "spark"], title="Executor"),
}


@dag(
    dag_id="acidflow_compaction",
    schedule=COMPACTION_REQUESTS,
    start_date=START_DATE,
    catchup=False,
    is_paused_upon_creation=CONFIG.paused_at_creation,
    max_active_runs=1,
    default_args={**DEFAULT_ARGS, "retries": CONFIG.compaction_retries},
    params=PARAMS,
    tags=[*TAGS, "compaction"],
    doc_md=(
        "Runs the compactions the sensor asked for, or the one in the form. Small tables run in the "
        "embedded worker (one mapped task per table/partition, in the pool); all large ones in one "
        "Spark application (the provider's SparkSubmitOperator): one job per compaction on its "
        "executors, each committed as soon as its own job ends, a failed one failing alone. A bad statement or unknown table fails `plan` "
        "before anything is queued."
    ),
)
def acidflow_compaction() -> None:
    # A plan or compaction that failed for good alerts, naming the service when one failed
    # (PostgreSQL, the Hive Metastore, ZooKeeper, storage); 'check' reports the rest.
    on_failure = [AcidBacklogNotifier()]

    @task(on_failure_callback=on_failure)
    def plan(**context: object) -> dict:
        from acidflow_airflow.operators import plan_compactions
        from acidflow_airflow.requests import request_from_params
        from airflow.sdk.exceptions import AirflowFailException

        from acid_core.errors import AcidError

        events = context.get("triggering_asset_events") or {}
        targets = [t for evs in events.values() for ev in evs for t in (ev.extra or {}).get("targets", [])]
        params = dict(context["params"])
        if (
            not targets
            and not (params.get("statement") or "").strip()
            and not (params.get("table") or "").strip()
        ):
            # An empty form: compact whatever the initiator says is due now (every group).
            from acidflow_airflow.hooks import AcidWarehouseHook
            from acidflow_airflow.sensors import targets_of

            targets = targets_of(AcidWarehouseHook(load_config_for_task()).backlog())
            if not targets:
                # Not an error: the mapped tasks below expand to nothing and are skipped.
                print("nothing to compact: every table is below the initiator's thresholds")
                return {"embedded": [], "spark": [], "ids": []}
        if not targets:
            try:
                targets = [request_from_params(params).to_dict()]
            except AcidError as error:
                raise AirflowFailException(f"compaction request refused: {error}") from error
        return plan_compactions(load_config_for_task(), targets, params.get("executor") or None)

    @task
    def embedded_targets(planned: dict) -> list:
        return planned["embedded"]

    @task
    def spark_jobs(planned: dict) -> list:
        return planned["spark"]

    planned = plan()
    embedded = AcidCompactionOperator.partial(
        task_id="compact_embedded", pool=CONFIG.pool, on_failure_callback=on_failure
    ).expand_kwargs(embedded_targets(planned))
    spark = SparkSubmitOperator.partial(
        task_id="compact_on_spark",
        application=spark_application(),
        conn_id=CONFIG.spark_conn_id,
        name="acidflow-compact",
        pool=CONFIG.pool,
        env_vars={
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "PYTHONPATH": _ROOT,
        },
    ).expand(application_args=spark_jobs(planned))

    @task(trigger_rule="all_done")
    def check(**context: object) -> dict:
        # Runs after the compactions whatever their outcome: failed compactions alert here, and
        # as the only leaf it decides the run's state (a failed plan fails the run too).
        from acidflow_airflow.operators import check_compactions
        from airflow.sdk.exceptions import AirflowFailException

        planned = context["ti"].xcom_pull(task_ids="plan")
        if planned is None:
            raise AirflowFailException("the compaction plan failed (see task 'plan'): nothing was compacted")
        return check_compactions(load_config_for_task(), list(planned["ids"]))

    [planned, embedded, spark] >> check()


acidflow_compaction()
