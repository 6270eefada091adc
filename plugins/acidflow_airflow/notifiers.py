"""Alerts: a critical backlog, a failed compaction, a stuck queue, cleaning stuck behind an old reader.

::

    backlog_alerts(rows, summary, config)   -> [Alert]         (pure: which alerts, to which channels)
    deliver(alert)                          -> log / webhook:<url> / email:<address>
    AcidBacklogNotifier(...)                  an Airflow notifier: on_failure_callback of the DAGs,
                                              or .notify_alerts(alerts) from a task

Routing: a table's ``acidflow.alert.channels`` TBLPROPERTY, else the configured routes matching
its owner or name, else ``alerts.default`` (``log``).
Errors: a channel that cannot be reached is logged and the other channels still get the alert;
``deliver`` returns the channels that failed.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseNotifier

from acidflow_airflow.config import AcidflowConfig, load_config_for_task

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["AcidBacklogNotifier", "Alert", "backlog_alerts", "deliver", "failure_alert"]

_LOG = logging.getLogger("acidflow.alerts")


@dataclass(frozen=True)
class Alert:
    """One alert: what, about which table, and where it goes."""

    kind: str  # backlog_critical | compaction_failed | queue_stuck | cleaning_stuck
    table: str
    message: str
    channels: tuple[str, ...] = ("log",)
    partition: str | None = None
    owner: str | None = None
    severity: str = "critical"
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the webhook body)."""
        data = asdict(self)
        data["channels"] = list(self.channels)
        return data


def backlog_alerts(
    rows: list[dict[str, Any]], summary: dict[str, Any], config: AcidflowConfig
) -> list[Alert]:
    """Alerts for critical backlogs and for cleaning stuck longer than the critical cleaning age."""
    alerts = []
    owners = {row["table"]: row.get("owner") for row in rows}
    channels = {row["table"]: tuple(row.get("channels") or config.default_channels) for row in rows}
    for row in rows:
        if row.get("level") != "critical":
            continue
        where = (
            row["table"] if row.get("partition") is None else f"{row['table']} partition {row['partition']}"
        )
        count = (row.get("deltas") or 0) + (row.get("delete_deltas") or 0)
        message = (
            f"backlog of {where} is critical: {count} deltas and delete deltas > critical level "
            f"{row.get('critical_deltas')}; initiator: {row.get('message')}"
            if row.get("error") is None
            else f"backlog of {where} cannot be measured: {row['error']}"
        )
        alerts.append(
            Alert(
                "backlog_critical",
                row["table"],
                message,
                channels[row["table"]],
                row.get("partition"),
                row.get("owner"),
                details={
                    "deltas": row.get("deltas"),
                    "delete_deltas": row.get("delete_deltas"),
                    "aborted": row.get("aborted"),
                },
            )
        )
    limit = config.levels.critical_cleaning_age_seconds
    import time

    now = time.time()
    waiting = summary.get("oldest_enqueue_age", 0.0) or 0.0
    if waiting > config.levels.critical_enqueue_age_seconds:
        queued = [e for e in summary.get("entries", []) if e.get("state") == "initiated"]
        oldest = (
            min(queued, key=lambda e: e.get("enqueue_time") or now) if queued else {"table": "?", "id": None}
        )
        alerts.append(
            Alert(
                "queue_stuck",
                oldest["table"],
                f"compaction {oldest['id']} of {oldest['table']} has waited {waiting:.0f} s in the queue "
                f"(> {config.levels.critical_enqueue_age_seconds:.0f} s): are the compaction DAG and its pool running?",
                channels.get(
                    oldest["table"], config.channels_for(oldest["table"], owners.get(oldest["table"]))
                ),
                oldest.get("partition"),
                owners.get(oldest["table"]),
                details={"compaction_id": oldest["id"], "oldest_enqueue_age": waiting},
            )
        )
    for entry in summary.get("cleaning", []):
        since = entry.get("commit_time") or entry.get("end_time")
        if since is None or now - since <= limit:
            continue
        readers = [
            t
            for t in summary.get("open_txns", [])
            if entry.get("next_txn_id") is None or t["txn_id"] < entry["next_txn_id"]
        ]
        leases = [lease for lease in summary.get("leases", []) if lease["table"] == entry["table"]]
        blockers = (
            ", ".join(
                [f"open txn {t['txn_id']} of {t['user']}@{t['host']}" for t in readers]
                + [f"lease {lease['lease_id']} of {lease['owner']}" for lease in leases]
            )
            or "no visible reader (check the cleaner's log)"
        )
        alerts.append(
            Alert(
                "cleaning_stuck",
                entry["table"],
                f"cleaning of compaction {entry['id']} of {entry['table']} is stuck for {now - since:.0f} s "
                f"(> {limit:.0f} s) behind an old reader: {blockers}",
                channels.get(entry["table"], config.channels_for(entry["table"], owners.get(entry["table"]))),
                entry.get("partition"),
                owners.get(entry["table"]),
                details={"compaction_id": entry["id"], "blockers": blockers},
            )
        )
    return alerts


def failure_alert(
    config: AcidflowConfig, table: str, message: str, owner: str | None = None, partition: str | None = None
) -> Alert:
    """The alert for a failed compaction of ``table``."""
    return Alert("compaction_failed", table, message, config.channels_for(table, owner), partition, owner)


def _send_email(address: str, alert: Alert) -> None:
    from airflow.utils.email import send_email

    send_email(address, f"[acidflow] {alert.kind}: {alert.table}", f"<pre>{alert.message}</pre>")


def deliver(alert: Alert, timeout: float = 10.0) -> list[str]:
    """Send ``alert`` to each of its channels; returns the channels that failed (logged)."""
    failed = []
    for channel in alert.channels:
        kind, _, target = channel.partition(":")
        try:
            if kind == "log":
                _LOG.warning("ACIDFLOW ALERT %s %s: %s", alert.kind, alert.table, alert.message)
            elif kind == "webhook":
                body = json.dumps(alert.to_dict()).encode()
                request = urllib.request.Request(
                    target, body, {"Content-Type": "application/json"}, method="POST"
                )
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    response.read()
            elif kind == "email":
                _send_email(target, alert)
        except Exception:  # one channel down must not hide the alert from the others
            _LOG.exception("alert channel %s failed for %s", channel, alert.table)
            failed.append(channel)
    return failed


class AcidBacklogNotifier(BaseNotifier):
    """Airflow notifier sending acidflow alerts through the configured, per-owner routes.

    As a callback (``on_failure_callback=AcidBacklogNotifier()``) it sends a ``compaction_failed``
    alert naming the DAG, task, table (from the task's ``table`` attribute or map index) and the
    exception. ``notify_alerts`` sends alerts a task computed (backlog, cleaning).
    """

    template_fields = ("message",)

    def __init__(self, message: str = "", config: AcidflowConfig | None = None) -> None:
        super().__init__()
        self.message = message
        self._config = config

    @property
    def config(self) -> AcidflowConfig:
        """The configuration (loaded on first use)."""
        if self._config is None:
            self._config = load_config_for_task()
        return self._config

    def notify_alerts(self, alerts: list[Alert]) -> list[Alert]:
        """Deliver each alert; returns them (for XCom and tests)."""
        for alert in alerts:
            deliver(alert)
        return alerts

    def notify(self, context: Context) -> None:
        """Send a failure alert for the task instance in ``context``."""
        ti = context.get("ti")
        task = context.get("task")
        table = getattr(task, "table", None) or "unknown table"
        if not isinstance(table, str):
            table = str(table)
        error = context.get("exception")
        where = f"{getattr(ti, 'dag_id', '?')}.{getattr(ti, 'task_id', '?')}[{getattr(ti, 'map_index', -1)}]"
        message = self.message or f"compaction task {where} failed for {table}: {error}"
        deliver(failure_alert(self.config, table, message))
