"""``AcidBacklogSensor``: waits until a table group needs compaction; records the backlog metrics.

::

    AcidBacklogSensor(group="all", deferrable=True, outlets=[COMPACTION_REQUESTS])
      deferrable: defer to AcidBacklogTrigger (triggerer) -> execute_complete(event)
      else:       poke() every poke_interval on a worker slot
      each look:  the measurement is recorded as history samples (ACIDFLOW_BACKLOG_SAMPLES)
      then:       metrics (Hive's names through Airflow's Stats), alerts for critical backlogs and
                  stuck cleaning, an Asset event on COMPACTION_REQUESTS whose extra holds the targets
                  [{table, partition, compaction_type, reason}] -> the compaction DAG runs

Returns (XCom) the targets. Only reads tables; never enqueues (the compaction DAG does).
Errors: a trigger error fails the task (``AirflowException`` naming the group); no work before
``timeout`` ends the sensor as usual (skipped with ``soft_fail``).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, BaseSensorOperator
from airflow.sdk.bases.sensor import PokeReturnValue

from acidflow_airflow.config import AcidflowConfig, load_config_for_task

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["COMPACTION_REQUESTS", "AcidBacklogSensor", "emit_metrics", "targets_of"]

_LOG = logging.getLogger(__name__)

COMPACTION_REQUESTS = Asset(name="acidflow_compaction_requests", uri="acidflow://compaction/requests")


def targets_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows the initiator wants compacted, as compaction targets."""
    return [
        {
            "table": row["table"],
            "partition": row.get("partition"),
            "compaction_type": row["compaction_type"],
            "reason": row.get("reason"),
        }
        for row in rows
        if row.get("compaction_type")
    ]


def _stats() -> Any:  # noqa: ANN401
    try:
        from airflow.sdk.observability.stats import Stats
    except ImportError:  # pragma: no cover - older task SDKs
        from airflow.observability.stats import Stats
    return Stats


def emit_metrics(metrics: dict[str, float]) -> None:
    """Send each metric as a gauge through Airflow's stats (StatsD or OpenTelemetry, as configured)."""
    stats = _stats()
    for name, value in metrics.items():
        stats.gauge(name, value)
    _LOG.info("acidflow metrics: %s", metrics)


class AcidBacklogSensor(BaseSensorOperator):
    """Waits until the initiator wants to compact a table or partition of ``group``.

    Args:
        group: the table group (``groups`` in acidflow.yaml).
        deferrable: wait on the triggerer (default) instead of a worker slot.
        config: the configuration (default: ``load_config_for_task()`` at run time).
    """

    template_fields = ("group",)

    def __init__(
        self,
        *,
        group: str = "all",
        deferrable: bool = True,
        config: AcidflowConfig | None = None,
        **kwargs: Any,  # noqa: ANN401 - BaseOperator arguments
    ) -> None:
        kwargs.setdefault("mode", "reschedule")
        kwargs.setdefault("outlets", [COMPACTION_REQUESTS])
        super().__init__(**kwargs)
        self.group = group
        self.deferrable = deferrable
        self._config = config

    @property
    def config(self) -> AcidflowConfig:
        """The configuration (loaded at run time, never at parse time)."""
        if self._config is None:
            self._config = load_config_for_task()
        return self._config

    def execute(self, context: Context) -> Any:  # noqa: ANN401
        """Defer to the trigger, or poke on a worker."""
        if not self.deferrable:
            return super().execute(context)
        from acidflow_airflow.triggers import AcidBacklogTrigger

        config = self.config
        config.group(self.group)  # an unknown group fails before deferring
        self.defer(
            trigger=AcidBacklogTrigger(
                group=self.group,
                poke_interval=self.poke_interval,
                warehouse=config.warehouse,
                metastore=config.metastore,
                config_path=None if config.source == "defaults" else config.source,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout) if self.timeout else None,
        )
        return None

    def poke(self, context: Context) -> PokeReturnValue:
        """One look at the group's backlog."""
        from acidflow_airflow.hooks import AcidWarehouseHook

        rows = AcidWarehouseHook(self.config).backlog(self.config.group(self.group), record=True)
        if not targets_of(rows):
            self.log.info("group %s: nothing to compact", self.group)
            return PokeReturnValue(is_done=False)
        return PokeReturnValue(is_done=True, xcom_value=self._finish(context, rows))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> list[dict[str, Any]]:
        """Resume after the trigger fired."""
        if event.get("status") != "work":
            from airflow.sdk.exceptions import AirflowException

            raise AirflowException(
                f"acidflow sensor {self.task_id} (group {self.group}): {event.get('message')}"
            )
        return self._finish(context, event["rows"])

    def _finish(self, context: Context, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from acidflow_airflow.backlog import backlog_metrics
        from acidflow_airflow.hooks import AcidWarehouseHook
        from acidflow_airflow.notifiers import AcidBacklogNotifier, backlog_alerts

        summary = AcidWarehouseHook(self.config).queue_summary()
        emit_metrics(backlog_metrics(rows, summary))
        alerts = backlog_alerts(rows, summary, self.config)
        AcidBacklogNotifier(config=self.config).notify_alerts(alerts)
        targets = targets_of(rows)
        for target in targets:
            self.log.info("to compact: %s", target)
        outlet_events = context.get("outlet_events")
        if outlet_events is not None:
            outlet_events[COMPACTION_REQUESTS].extra = {"group": self.group, "targets": targets}
        return targets
