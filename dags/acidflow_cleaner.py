"""Clean what compactions made obsolete, with Hive's cleaner rules (old readers, leases, retention)."""

from __future__ import annotations

from _common.defaults import DEFAULT_ARGS, START_DATE, TAGS
from acidflow_airflow.config import load_config_for_dag
from acidflow_airflow.notifiers import AcidBacklogNotifier
from acidflow_airflow.operators import AcidCleanerOperator
from airflow.sdk import dag

CONFIG = load_config_for_dag()


@dag(
    dag_id="acidflow_cleaner",
    schedule=CONFIG.cleaner_schedule,
    start_date=START_DATE,
    catchup=False,
    is_paused_upon_creation=CONFIG.paused_at_creation,
    max_active_runs=1,
    default_args={**DEFAULT_ARGS, "retries": CONFIG.cleaner_retries},
    tags=[*TAGS, "cleaner"],
    doc_md=(
        "Deletes obsolete and aborted directories of compactions ready for cleaning, once no open "
        "transaction or reader lease still reads them; alerts when cleaning is stuck behind an old reader."
    ),
)
def acidflow_cleaner() -> None:
    # A cleaner run that failed alerts, naming the service when one failed (PostgreSQL, the Hive
    # Metastore, storage); the compactions it could not clean stay ready for the next run.
    AcidCleanerOperator(
        task_id="clean_obsolete", on_failure_callback=[AcidBacklogNotifier(task_kind="cleaning")]
    )


acidflow_cleaner()
