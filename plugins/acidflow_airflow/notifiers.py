"""Alerts: a critical backlog, failed or stuck compactions, a cleaner blocked by an old open transaction.

::

    backlog_alerts(rows, summary, config)   -> [Alert]         (pure: which alerts, to which channels)
    deliver(alert)                          -> log / webhook:<url> / email:<address> /
                                               notifier:<module.Class>?arg=value&...  (any Airflow
                                               BaseNotifier, e.g. a provider's Slack notifier; its
                                               template fields see {{ acidflow_alert.message }} ...)
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
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseNotifier

from acid_core.errors import failed_service
from acidflow_airflow.config import AcidflowConfig, load_config_for_task
from acidflow_airflow.trends import human_duration

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["AcidBacklogNotifier", "Alert", "backlog_alerts", "deliver", "failure_alert"]

_LOG = logging.getLogger("acidflow.alerts")


@dataclass(frozen=True)
class Alert:
    """One alert: what, about which table, and where it goes."""

    # backlog_critical | compaction_failed | queue_stuck | working_stuck | repeated_failures |
    # cleaner_blocked | cleaning_stuck
    kind: str
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


def _where(table: str, partition: str | None) -> str:
    return table if partition is None else f"{table} partition {partition}"


def _failure_streaks(entries: list[dict[str, Any]]) -> dict[tuple[str, str | None], list[dict[str, Any]]]:
    """Per table/partition, its latest compactions that all failed (in ID order, newest last)."""
    streaks: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for entry in sorted(entries, key=lambda e: e["id"]):
        key = (entry["table"], entry.get("partition"))
        if entry.get("state") == "failed":
            streaks.setdefault(key, []).append(entry)
        elif entry.get("state") in ("succeeded", "ready_for_cleaning"):
            # A compaction that worked ends the streak; queued/working/refused ones do not count.
            streaks.pop(key, None)
    return streaks


def backlog_alerts(
    rows: list[dict[str, Any]],
    summary: dict[str, Any],
    config: AcidflowConfig,
    now: float | None = None,
) -> list[Alert]:
    """The alerts a backlog measurement and the compaction queue call for.

    ``backlog_critical``: a table/partition over its critical delta count (or unreadable);
    ``queue_stuck``: a compaction waiting (initiated) past ``critical_enqueue_age``;
    ``working_stuck``: a compaction running (working) past ``critical_working_age``;
    ``repeated_failures``: the last ``failure_streak`` compactions of a partition all failed;
    ``cleaner_blocked``: cleaning waits past ``critical_cleaning_age`` behind a transaction that
    was open when the compaction committed (each named, with how long it has been open: Hive's
    HIVE-26704 / HIVE-24291 pain) or a reader lease; ``cleaning_stuck``: the same with no
    visible reader.
    """
    import time

    now = time.time() if now is None else now
    levels = config.levels
    alerts = []
    owners = {row["table"]: row.get("owner") for row in rows}
    channels = {row["table"]: tuple(row.get("channels") or config.default_channels) for row in rows}

    def route(table: str) -> tuple[str, ...]:
        return channels.get(table) or config.channels_for(table, owners.get(table))

    for row in rows:
        if row.get("level") != "critical":
            continue
        where = _where(row["table"], row.get("partition"))
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
    entries = summary.get("entries", [])
    waiting = summary.get("oldest_enqueue_age", 0.0) or 0.0
    if waiting > levels.critical_enqueue_age_seconds:
        queued = [e for e in entries if e.get("state") == "initiated"]
        oldest = (
            min(queued, key=lambda e: e.get("enqueue_time") or now) if queued else {"table": "?", "id": None}
        )
        alerts.append(
            Alert(
                "queue_stuck",
                oldest["table"],
                f"compaction {oldest['id']} of {oldest['table']} has waited {waiting:.0f} s in the queue "
                f"(> {levels.critical_enqueue_age_seconds:.0f} s): are the compaction DAG and its pool running?",
                route(oldest["table"]),
                oldest.get("partition"),
                owners.get(oldest["table"]),
                details={"compaction_id": oldest["id"], "oldest_enqueue_age": waiting},
            )
        )
    for entry in entries:
        started = entry.get("start_time")
        if entry.get("state") != "working" or started is None:
            continue
        running = now - started
        if running <= levels.critical_working_age_seconds:
            continue
        alerts.append(
            Alert(
                "working_stuck",
                entry["table"],
                f"compaction {entry['id']} of {_where(entry['table'], entry.get('partition'))} has been "
                f"working for {human_duration(running)} (> {human_duration(levels.critical_working_age_seconds)}) "
                f"on worker {entry.get('worker_id')}: is the worker alive? (a dead one's compaction is "
                "re-queued by the next worker run)",
                route(entry["table"]),
                entry.get("partition"),
                owners.get(entry["table"]),
                details={"compaction_id": entry["id"], "worker_id": entry.get("worker_id"), "age": running},
            )
        )
    for (table, partition), failed in sorted(
        _failure_streaks(entries).items(), key=lambda item: (item[0][0], item[0][1] or "")
    ):
        if len(failed) < levels.failure_streak:
            continue
        last = failed[-1]
        alerts.append(
            Alert(
                "repeated_failures",
                table,
                f"the last {len(failed)} compactions of {_where(table, partition)} failed "
                f"(ids {', '.join(str(e['id']) for e in failed)}); latest error: {last.get('error_message')}",
                route(table),
                partition,
                owners.get(table),
                details={"compaction_ids": [e["id"] for e in failed], "error": last.get("error_message")},
            )
        )
    limit = levels.critical_cleaning_age_seconds
    for entry in summary.get("cleaning", []):
        since = entry.get("commit_time") or entry.get("end_time")
        if since is None or now - since <= limit:
            continue
        readers = sorted(
            (
                t
                for t in summary.get("open_txns", [])
                if entry.get("next_txn_id") is None or t["txn_id"] < entry["next_txn_id"]
            ),
            key=lambda t: t["txn_id"],
        )
        leases = [lease for lease in summary.get("leases", []) if lease["table"] == entry["table"]]
        blockers = [
            f"open transaction {t['txn_id']} of {t['user']}@{t['host']}, open for "
            f"{human_duration(now - t['started'])}"
            for t in readers
        ] + [f"lease {lease['lease_id']} of {lease['owner']}" for lease in leases]
        where = _where(entry["table"], entry.get("partition"))
        waited = human_duration(now - since)
        if blockers:
            kind = "cleaner_blocked"
            hint = (
                f"obsolete files stay until it ends: finish it, or ABORT TRANSACTIONS {readers[0]['txn_id']}"
                if readers
                else "obsolete files stay until the lease is released or expires"
            )
            message = (
                f"cleaning of compaction {entry['id']} of {where} is blocked for {waited} "
                f"(> {human_duration(limit)}) behind an old reader: {'; '.join(blockers)}; {hint}"
            )
        else:
            kind = "cleaning_stuck"
            message = (
                f"cleaning of compaction {entry['id']} of {where} is stuck for {waited} "
                f"(> {human_duration(limit)}) with no visible reader: is the cleaner DAG running? "
                "(check its log)"
            )
        alerts.append(
            Alert(
                kind,
                entry["table"],
                message,
                route(entry["table"]),
                entry.get("partition"),
                owners.get(entry["table"]),
                details={
                    "compaction_id": entry["id"],
                    "blockers": blockers,
                    "blocking_txn_ids": [t["txn_id"] for t in readers],
                    "oldest_blocking_txn_age": (now - readers[0]["started"]) if readers else None,
                },
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


def _send_to_notifier(target: str, alert: Alert) -> None:
    """Build the Airflow notifier named by ``target`` and call it with the alert in its context."""
    import importlib
    from urllib.parse import parse_qsl

    path, _, query = target.partition("?")
    module, _, name = path.rpartition(".")
    notifier_class = getattr(importlib.import_module(module), name)
    if not (isinstance(notifier_class, type) and issubclass(notifier_class, BaseNotifier)):
        raise TypeError(f"alert channel notifier:{path}: {notifier_class!r} is not an Airflow BaseNotifier")
    notifier = notifier_class(**dict(parse_qsl(query, keep_blank_values=True)))
    # BaseNotifier.__call__ renders the template fields with this context, then notify()s.
    notifier({"acidflow_alert": alert.to_dict()})


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
            elif kind == "notifier":
                _send_to_notifier(target, alert)
        except Exception:  # one channel down must not hide the alert from the others
            _LOG.exception("alert channel %s failed for %s", channel, alert.table)
            failed.append(channel)
    return failed


class AcidBacklogNotifier(BaseNotifier):
    """Airflow notifier sending acidflow alerts through the configured, per-owner routes.

    As a callback (``on_failure_callback=AcidBacklogNotifier()``) it sends a ``compaction_failed``
    alert naming the DAG, task, table (from the task's ``table`` attribute or map index) and the
    exception; a service fault (``acid_core.errors.failed_service``: PostgreSQL, Hive Metastore,
    ZooKeeper, storage) is named in the message (``... (PostgreSQL fault): ...``) and in
    ``details["service"]``. ``notify_alerts`` sends alerts a task computed (backlog, cleaning).

    Args:
        message: the alert's text (templated); empty: built from the failure.
        config: the configuration (default: loaded on first use).
        task_kind: what the failed task does, for the message: ``compaction`` (``compaction task
            <dag>.<task>[i] failed for <table> ...``) or ``cleaning`` (the cleaner works on every
            table: ``cleaning task <dag>.<task>[i] failed ...``).
    """

    template_fields = ("message",)

    def __init__(
        self, message: str = "", config: AcidflowConfig | None = None, task_kind: str = "compaction"
    ) -> None:
        super().__init__()
        self.message = message
        self._config = config
        self.task_kind = task_kind

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
        service = failed_service(error) if isinstance(error, BaseException) else None
        fault = f" ({service} fault)" if service else ""
        if self.task_kind == "compaction":
            message = self.message or f"compaction task {where} failed for {table}{fault}: {error}"
        else:
            message = self.message or f"{self.task_kind} task {where} failed{fault}: {error}"
        alert = failure_alert(self.config, table, message)
        if service:
            alert = replace(alert, details={**alert.details, "service": service})
        deliver(alert)
