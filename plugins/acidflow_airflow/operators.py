"""Operators: plan and run compactions (embedded or on Spark), and clean.

::

    plan_compactions(config, targets, executor)       validate EVERY target, then enqueue them;
        -> {"embedded": [kwargs...], "spark": [[spark args]...], "ids": [...]}
    AcidCompactionOperator(table, partition, compaction_type, compaction_id)
        claim queued compactions until ours has run (run_worker's loop; another worker may run it)
    SparkSubmitOperator(application=spark_jobs/compact.py, application_args=--warehouse ...
                        --compaction-id A --compaction-id B ...)
        the provider's operator, for large tables: ONE application for every large compaction of
        the run; its driver claims them, runs their tasks on its executors, commits each alone
    check_compactions(config, ids)                    fail the run (and alert) if any failed
    AcidCleanerOperator                               Hive's cleaner (leases, old readers, retention)

Error mapping (STYLE 3): bad input (unknown table, bad partition, bad type) ->
``AirflowFailException`` before anything is queued; a service down while checking the input
(``acid_core.errors.failed_service``: the metastore, its database) re-raises its own one-line error
(the task retries, its failure callback names the service); a failed compaction -> ``AirflowFailException``
with the queue's error message and a ``compaction_failed`` alert; lock/commit conflicts re-raise
(the task retries).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from acidflow_airflow.config import AcidflowConfig, load_config_for_task

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = [
    "AcidCleanerOperator",
    "AcidCompactionOperator",
    "check_compactions",
    "plan_compactions",
    "spark_application",
    "validate_targets",
]

_DONE_STATES = frozenset({"ready_for_cleaning", "succeeded"})
_BAD_STATES = frozenset({"failed", "refused", "aborted", "did_not_initiate"})


def spark_application() -> str:
    """``spark_jobs/compact.py``: ``$ACIDFLOW_SPARK_APPLICATION``, else next to the plugins folder."""
    import os

    configured = os.environ.get("ACIDFLOW_SPARK_APPLICATION")
    if configured:
        return configured
    return str(Path(__file__).resolve().parents[2] / "spark_jobs" / "compact.py")


def _fail(message: str) -> Exception:
    from airflow.sdk.exceptions import AirflowFailException

    return AirflowFailException(message)


def validate_targets(metastore: Any, targets: list[dict[str, Any]]) -> list[dict[str, Any]]:  # noqa: ANN401
    """Check each target against the catalog (table exists and is ACID, partition exists, type).

    Raises:
        InvalidCompactStatementError: the first invalid target (nothing is queued).
    """
    from acid_core.errors import InvalidCompactStatementError, InvalidRebalanceError, NoSuchTableError
    from acid_core.metastore import TableType

    checked = []
    for target in targets:
        what = f"{target.get('table')} partition={target.get('partition')!r} type={target.get('compaction_type')!r}"
        if target.get("compaction_type") not in ("minor", "major", "rebalance"):
            raise InvalidCompactStatementError(
                what, f"compaction type {target.get('compaction_type')!r} is not minor, major or rebalance"
            )
        try:
            table = metastore.get_table(target["table"])
        except NoSuchTableError:
            raise InvalidCompactStatementError(what, f"table {target['table']!r} does not exist") from None
        if table.table_type is TableType.PLAIN:
            raise InvalidCompactStatementError(what, f"table {table.full_name!r} is not transactional")
        if target.get("compaction_type") == "rebalance":
            from acid_core.compaction.rebalance import format_order_by, parse_order_by

            if table.num_buckets > 0 or table.table_type is not TableType.ACID:
                # Hive 4's Worker refuses these once queued; the form refuses them before.
                raise InvalidCompactStatementError(
                    what,
                    f"table {table.full_name!r} is {'explicitly bucketed' if table.num_buckets > 0 else 'insert-only'}:"
                    " rebalance needs a full-ACID table without CLUSTERED BY",
                )
            try:
                keys = parse_order_by(target.get("order_by"), [c.name for c in table.columns])
            except InvalidRebalanceError as error:
                raise InvalidCompactStatementError(what, str(error).split("; hint:")[0]) from error
            target = {**target, "order_by": format_order_by(keys)}
        partition = target.get("partition")
        if table.partition_keys:
            names = {p.name for p in metastore.list_partitions(table.full_name)}
            if partition is None:
                raise InvalidCompactStatementError(
                    what,
                    f"table {table.full_name!r} is partitioned: name a partition (one of {sorted(names)[:5]})",
                )
            if partition not in names:
                raise InvalidCompactStatementError(
                    what,
                    f"partition {partition!r} of {table.full_name!r} does not exist (known: {sorted(names)[:5]})",
                )
        elif partition is not None:
            raise InvalidCompactStatementError(what, f"table {table.full_name!r} is not partitioned")
        checked.append({**target, "table": table.full_name})
    return checked


def plan_compactions(
    config: AcidflowConfig,
    targets: list[dict[str, Any]],
    executor: str | None = None,
    initiator_id: str = "airflow",
) -> dict[str, Any]:
    """Validate every target, then queue each one and split them between embedded and Spark.

    ``spark`` holds at most one argument list: one Spark application runs every large compaction.

    Raises:
        AirflowFailException: an invalid target (unknown table, partition or type); nothing queued.
    """
    from acid_core.compaction.backlog import collect_facts
    from acid_core.errors import AcidError, failed_service
    from acid_core.metastore import CompactionType
    from acidflow_airflow.hooks import AcidMetastoreHook

    executor = executor or config.executor
    embedded: list[dict[str, Any]] = []
    spark_ids: list[int] = []
    with AcidMetastoreHook(config).metastore() as metastore:
        try:
            checked = validate_targets(metastore, targets)
        except AcidError as error:
            if failed_service(error) is not None:
                raise  # a service down is no bad request: the task fails with its line (and retries)
            raise _fail(f"compaction request refused: {error}") from error
        for target in checked:
            table = metastore.get_table(target["table"])
            if executor == "auto":
                facts = collect_facts(metastore, table, target.get("partition"))
                large = facts.base_bytes + facts.delta_bytes >= config.spark_threshold_bytes
            else:
                large = executor == "spark"
            compaction_id = metastore.enqueue_compaction(
                table.full_name,
                target.get("partition"),
                CompactionType(target["compaction_type"]),
                initiator_id=initiator_id,
                number_of_buckets=int(target.get("number_of_buckets") or 0),
                order_by=target.get("order_by"),
            )
            item = {
                "table": table.full_name,
                "partition": target.get("partition"),
                "compaction_type": target["compaction_type"],
                "compaction_id": compaction_id,
            }
            if large:
                spark_ids.append(compaction_id)
            else:
                embedded.append(item)
    from acid_core.fs import resolve_warehouse

    # Absolute for the Spark driver's directory; an s3:// or hdfs:// warehouse stays a URI.
    args = ["--warehouse", resolve_warehouse(config.warehouse, source="acidflow.yaml warehouse")]
    if config.metastore:
        args += ["--metastore", config.metastore]
    return {
        "embedded": embedded,
        # One Spark application for every large compaction of the run: it claims exactly these
        # entries, runs their tasks as concurrent jobs on its executors and commits each alone.
        "spark": [[*args, *(arg for i in spark_ids for arg in ("--compaction-id", str(i)))]]
        if spark_ids
        else [],
        "ids": [item["compaction_id"] for item in embedded] + spark_ids,
    }


class AcidCompactionOperator(BaseOperator):
    """Run the queued compaction of one table/partition with the embedded worker.

    Claims queued compactions (oldest first, as Hive's workers do) until ``compaction_id`` is no
    longer waiting: usually the first claim is ours; one queued earlier is run too (it is due).

    Args:
        table: ``db.table``.
        partition: ``k=v[/k2=v2]`` or None.
        compaction_type: ``minor`` or ``major`` (queued if ``compaction_id`` is None).
        compaction_id: the queue entry to run.
    """

    template_fields = ("table", "partition", "compaction_type")

    def __init__(
        self,
        *,
        table: str,
        partition: str | None = None,
        compaction_type: str = "major",
        compaction_id: int | None = None,
        config: AcidflowConfig | None = None,
        **kwargs: Any,  # noqa: ANN401 - BaseOperator arguments
    ) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.partition = partition
        self.compaction_type = compaction_type
        self.compaction_id = compaction_id
        self._config = config

    def execute(self, context: Context) -> dict[str, Any]:
        """Run it; returns the outcome (XCom)."""
        from acid_core.compaction.worker import (
            WorkerOptions,
            default_worker_id,
            execute_compaction,
            recover_abandoned_compactions,
        )
        from acid_core.errors import AcidError, CommitConflictError, LockTimeoutError, failed_service
        from acid_core.metastore import CompactionType
        from acidflow_airflow.hooks import AcidMetastoreHook

        config = self._config or load_config_for_task()
        worker_id = f"{default_worker_id()}-airflow"
        hook = AcidMetastoreHook(config)
        with hook.metastore() as metastore, hook.lock_manager() as locks:
            compaction_id = self.compaction_id
            if compaction_id is None:
                try:
                    validate_targets(
                        metastore,
                        [
                            {
                                "table": self.table,
                                "partition": self.partition,
                                "compaction_type": self.compaction_type,
                            }
                        ],
                    )
                except AcidError as error:
                    if failed_service(error) is not None:
                        raise  # a service down is no bad input: the task fails with its line
                    raise _fail(f"task {self.task_id}: {error}") from error
                compaction_id = metastore.enqueue_compaction(
                    self.table, self.partition, CompactionType(self.compaction_type), initiator_id="airflow"
                )
            recover_abandoned_compactions(metastore)
            outcomes: list[dict[str, Any]] = []
            errors: dict[int, AcidError] = {}
            while metastore.get_compaction(compaction_id).state.value == "initiated":
                claimed = metastore.find_next_to_compact(worker_id)
                if claimed is None:
                    break
                try:
                    outcome = execute_compaction(
                        metastore, claimed, options=WorkerOptions(), lock_manager=locks
                    )
                    outcomes.append(
                        {
                            "compaction_id": outcome.compaction_id,
                            "status": outcome.status,
                            "message": outcome.message,
                            "outputs": list(outcome.outputs),
                            "seconds": round(outcome.seconds, 3),
                        }
                    )
                except (CommitConflictError, LockTimeoutError):
                    raise
                except AcidError as error:
                    errors[claimed.id] = error
                    self.log.error("compaction %d of %s failed: %s", claimed.id, claimed.table, error)
            final = metastore.get_compaction(compaction_id)
        state = final.state.value
        if state in _BAD_STATES:
            # Chained to the error that failed it, so the failure callback names the service
            # (acid_core.errors.failed_service reads the chain: a read-only disk is storage).
            raise _fail(
                f"task {self.task_id}: compaction {compaction_id} of {self.table} "
                f"{self.partition or ''} {state}: {final.error_message}".replace("  ", " ")
            ) from errors.get(compaction_id)
        self.log.info("acidflow: compaction %d of %s: %s; ran %s", compaction_id, self.table, state, outcomes)
        return {
            "compaction_id": compaction_id,
            "table": self.table,
            "partition": self.partition,
            "state": state,
            "outcomes": outcomes,
        }


def check_compactions(config: AcidflowConfig, ids: list[int]) -> dict[str, Any]:
    """The final state of each compaction; alerts and ``AirflowFailException`` if any failed."""
    from acidflow_airflow.hooks import AcidMetastoreHook
    from acidflow_airflow.notifiers import AcidBacklogNotifier, failure_alert
    from acidflow_airflow.sensors import emit_metrics

    states: dict[str, str] = {}
    failed = []
    with AcidMetastoreHook(config).metastore() as metastore:
        for compaction_id in ids:
            entry = metastore.get_compaction(compaction_id)
            states[str(compaction_id)] = entry.state.value
            if entry.state.value in _BAD_STATES or entry.state.value in {"initiated", "working"}:
                owner = metastore.get_table(entry.table).owner
                failed.append((entry, owner))
    emit_metrics({"compaction_num_failed_in_run": float(len(failed))})
    if failed:
        alerts = [
            failure_alert(
                config,
                entry.table,
                f"compaction {entry.id} ({entry.compaction_type.value}) of {entry.table}"
                f"{' partition ' + entry.partition if entry.partition else ''} is {entry.state.value}: {entry.error_message}",
                owner,
                entry.partition,
            )
            for entry, owner in failed
        ]
        AcidBacklogNotifier(config=config).notify_alerts(alerts)
        raise _fail("; ".join(alert.message for alert in alerts))
    return states


class AcidCleanerOperator(BaseOperator):
    """Hive's cleaner: delete what compactions made obsolete once no reader (txn or lease) needs it.

    Args:
        dry_run: list only.
        quarantine: move into the table's trash instead of deleting (default: configuration).
        retention_seconds: wait after the compaction committed (default: configuration).
    """

    def __init__(
        self,
        *,
        dry_run: bool = False,
        quarantine: bool | None = None,
        retention_seconds: float | None = None,
        config: AcidflowConfig | None = None,
        **kwargs: Any,  # noqa: ANN401 - BaseOperator arguments
    ) -> None:
        super().__init__(**kwargs)
        self.dry_run = dry_run
        self.quarantine = quarantine
        self.retention_seconds = retention_seconds
        self._config = config

    def execute(self, context: Context) -> dict[str, Any]:
        """Clean; record the cleaning metrics; alert when cleaning is stuck behind an old reader."""
        from acid_core.compaction.cleaner import CleanerOptions, run_cleaner
        from acidflow_airflow.backlog import queue_metrics, queue_summary
        from acidflow_airflow.hooks import AcidMetastoreHook
        from acidflow_airflow.notifiers import AcidBacklogNotifier, backlog_alerts
        from acidflow_airflow.sensors import emit_metrics

        config = self._config or load_config_for_task()
        options = CleanerOptions(
            retention_seconds=config.cleaner_retention_seconds
            if self.retention_seconds is None
            else self.retention_seconds,
            dry_run=self.dry_run,
            quarantine=config.cleaner_quarantine if self.quarantine is None else self.quarantine,
        )
        started = time.time()
        with AcidMetastoreHook(config).metastore() as metastore:
            results = run_cleaner(metastore, options)
            summary = queue_summary(metastore)
        cleaned = [
            {
                "compaction_id": r.compaction_id,
                "status": r.status,
                "message": r.message,
                "actions": [{"path": a.path, "reason": a.reason, "action": a.action} for a in r.actions],
            }
            for r in results
        ]
        for result in cleaned:
            self.log.info(
                "acidflow: compaction %s: %s: %s",
                result["compaction_id"],
                result["status"],
                result["message"],
            )
            for action in result["actions"]:
                self.log.info("  %s %s %s", action["action"], action["reason"], action["path"])
        # Every cleaner run (hourly) sends the queue and transaction gauges, so a cleaner blocked
        # by an old transaction shows in oldest_open_non_repl_txn_age_in_sec between sensor runs.
        emit_metrics({**queue_metrics(summary), "compaction_cleaner_cycle_seconds": time.time() - started})
        alerts = backlog_alerts([], summary, config)
        AcidBacklogNotifier(config=config).notify_alerts(alerts)
        failed = [r for r in cleaned if r["status"] == "failed"]
        if failed:
            # The failed compactions stay ready (the next run retries them); this run failed.
            raise _fail(
                f"task {self.task_id}: cleaning failed for "
                + "; ".join(f"compaction {r['compaction_id']}: {r['message']}" for r in failed)
            )
        return {
            "cleaned": cleaned,
            "waiting": [c["id"] for c in summary["cleaning"]],
            "alerts": [a.to_dict() for a in alerts],
        }
