"""Alerts: which ones a backlog and a queue produce, and their delivery to a real webhook."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from acidflow_airflow.config import AcidflowConfig, AlertRoute, BacklogLevels, load_config
from acidflow_airflow.notifiers import AcidBacklogNotifier, Alert, backlog_alerts, deliver


def _row(table, partition, deltas, level, channels=("log",)):
    return {
        "table": table,
        "partition": partition,
        "owner": "alice",
        "deltas": deltas,
        "delete_deltas": 0,
        "aborted": 0,
        "level": level,
        "critical_deltas": 50,
        "message": f"{table}: {deltas} deltas",
        "error": None,
        "channels": list(channels),
    }


def test_backlog_alerts_fire_only_for_critical_rows():
    rows = [_row("db.a", "ds=1", 51, "critical", ["email:a@x.org"]), _row("db.b", None, 30, "warning")]
    alerts = backlog_alerts(rows, {"cleaning": []}, AcidflowConfig())
    assert [(a.kind, a.table, a.partition, a.channels) for a in alerts] == [
        ("backlog_critical", "db.a", "ds=1", ("email:a@x.org",))
    ]
    assert alerts[0].message.startswith(
        "backlog of db.a partition ds=1 is critical: 51 deltas and delete deltas"
    )


def test_backlog_alerts_cleaning_stuck_behind_old_reader_names_the_reader():
    now = time.time()
    config = AcidflowConfig(levels=BacklogLevels(critical_cleaning_age_seconds=3600.0))
    summary = {
        "cleaning": [
            {
                "id": 7,
                "table": "db.a",
                "partition": None,
                "commit_time": now - 7200,
                "end_time": None,
                "next_txn_id": 40,
            },
            {
                "id": 8,
                "table": "db.a",
                "partition": None,
                "commit_time": now - 60,
                "end_time": None,
                "next_txn_id": 41,
            },
        ],
        "open_txns": [{"txn_id": 12, "user": "bob", "host": "etl1", "started": now - 9000}],
        "leases": [],
    }
    alerts = backlog_alerts([], summary, config, now=now)
    assert [(a.kind, a.details["compaction_id"]) for a in alerts] == [("cleaner_blocked", 7)]
    assert alerts[0].message == (
        "cleaning of compaction 7 of db.a is blocked for 2h (> 1h) behind an old reader: "
        "open transaction 12 of bob@etl1, open for 2h 30m; obsolete files stay until it ends: "
        "finish it, or ABORT TRANSACTIONS 12"
    )
    assert alerts[0].details["blocking_txn_ids"] == [12]
    assert alerts[0].details["oldest_blocking_txn_age"] == 9000


def test_backlog_alerts_cleaning_past_limit_without_reader_is_cleaning_stuck():
    now = 1_000_000.0
    config = AcidflowConfig(levels=BacklogLevels(critical_cleaning_age_seconds=3600.0))
    summary = {
        "cleaning": [
            {"id": 9, "table": "db.a", "partition": "ds=1", "commit_time": now - 4000, "next_txn_id": 5}
        ],
        # Opened after the compaction committed (txn 6 >= next txn 5): it reads the new base only.
        "open_txns": [{"txn_id": 6, "user": "bob", "host": "etl1", "started": now - 3900}],
        "leases": [],
    }
    alerts = backlog_alerts([], summary, config, now=now)
    assert [(a.kind, a.partition) for a in alerts] == [("cleaning_stuck", "ds=1")]
    assert alerts[0].message.startswith(
        "cleaning of compaction 9 of db.a partition ds=1 is stuck for 1h 6m (> 1h) with no visible reader"
    )


def test_backlog_alerts_working_past_limit_is_working_stuck():
    now = 1_000_000.0
    config = AcidflowConfig(levels=BacklogLevels(critical_working_age_seconds=1800.0))
    entries = [
        {
            "id": 1,
            "table": "db.a",
            "partition": None,
            "state": "working",
            "start_time": now - 3600,
            "worker_id": "w1",
        },
        {
            "id": 2,
            "table": "db.b",
            "partition": None,
            "state": "working",
            "start_time": now - 60,
            "worker_id": "w2",
        },
    ]
    alerts = backlog_alerts([], {"entries": entries, "cleaning": []}, config, now=now)
    assert [(a.kind, a.table, a.details["worker_id"]) for a in alerts] == [("working_stuck", "db.a", "w1")]
    assert alerts[0].message.startswith("compaction 1 of db.a has been working for 1h (> 30m) on worker w1")


def test_backlog_alerts_repeated_failures_only_after_the_streak_length():
    config = AcidflowConfig(levels=BacklogLevels(failure_streak=3))

    def entry(i, partition, state, error=None):
        return {"id": i, "table": "db.a", "partition": partition, "state": state, "error_message": error}

    entries = [
        entry(1, "ds=1", "failed", "disk full"),
        entry(2, "ds=1", "succeeded"),  # ends the first streak
        entry(3, "ds=1", "failed", "e3"),
        entry(4, "ds=2", "failed", "x"),
        entry(5, "ds=1", "failed", "e5"),
        entry(6, "ds=2", "failed", "y"),
        entry(7, "ds=1", "failed", "lock timeout"),
    ]
    alerts = backlog_alerts([], {"entries": entries, "cleaning": []}, config, now=0.0)
    assert [(a.kind, a.partition, a.details["compaction_ids"]) for a in alerts] == [
        ("repeated_failures", "ds=1", [3, 5, 7])
    ]
    assert alerts[0].message == (
        "the last 3 compactions of db.a partition ds=1 failed (ids 3, 5, 7); latest error: lock timeout"
    )


def test_routes_pick_channels_by_owner_then_default():
    config = AcidflowConfig(routes=(AlertRoute(("email:alice@x.org",), owner="alice"),))
    assert config.channels_for("db.t", "ALICE") == ("email:alice@x.org",)
    assert config.channels_for("db.t", "bob") == ("log",)


def test_deliver_posts_the_alert_and_reports_failed_channels(webhook):
    channel, inbox = webhook
    alert = Alert(
        "backlog_critical", "db.t", "too many deltas", (channel, "log", "webhook:http://127.0.0.1:9/x")
    )
    failed = deliver(alert, timeout=5)
    assert failed == ["webhook:http://127.0.0.1:9/x"]
    assert inbox == [alert.to_dict()]


def test_notifier_callback_sends_compaction_failed_alert(webhook):
    channel, inbox = webhook
    notifier = AcidBacklogNotifier(config=AcidflowConfig(default_channels=(channel,)))
    context = {
        "ti": SimpleNamespace(dag_id="acidflow_compaction", task_id="compact_embedded", map_index=2),
        "task": SimpleNamespace(table="db.orders"),
        "exception": RuntimeError("disk full"),
    }
    notifier.notify(context)
    assert len(inbox) == 1
    assert inbox[0]["kind"] == "compaction_failed"
    assert inbox[0]["table"] == "db.orders"
    assert (
        inbox[0]["message"]
        == "compaction task acidflow_compaction.compact_embedded[2] failed for db.orders: disk full"
    )


def test_backlog_alerts_queue_waiting_past_critical_age():
    now = time.time()
    config = AcidflowConfig(levels=BacklogLevels(critical_enqueue_age_seconds=600.0))
    entries = [
        {"id": 3, "table": "db.a", "partition": "ds=1", "state": "initiated", "enqueue_time": now - 900},
        {"id": 4, "table": "db.b", "partition": None, "state": "initiated", "enqueue_time": now - 100},
    ]
    summary = {"oldest_enqueue_age": 900.0, "entries": entries, "cleaning": []}
    alerts = backlog_alerts([], summary, config)
    assert [(a.kind, a.table, a.partition) for a in alerts] == [("queue_stuck", "db.a", "ds=1")]
    assert alerts[0].message.startswith("compaction 3 of db.a has waited 900 s in the queue (> 600 s)")
    assert backlog_alerts([], {**summary, "oldest_enqueue_age": 300.0}, config) == []


def test_deliver_through_an_airflow_notifier_renders_its_template(tmp_path):
    path = tmp_path / "sent.txt"
    channel = (
        "notifier:tests.plugins.recording_notifier.RecordingNotifier"
        f"?text=[{{{{ acidflow_alert.kind }}}}] {{{{ acidflow_alert.message }}}}&path={path}"
    )
    assert load_config(None, {"ACIDFLOW_ALERT_CHANNELS": channel}).default_channels == (channel,)
    alert = Alert("cleaner_blocked", "db.t", "blocked behind transaction 12", (channel,))
    assert deliver(alert) == []
    assert path.read_text() == "[cleaner_blocked] blocked behind transaction 12\n"


def test_deliver_to_a_class_that_is_not_a_notifier_fails_that_channel_only(tmp_path):
    alert = Alert("backlog_critical", "db.t", "too many deltas", ("notifier:pathlib.Path", "log"))
    assert deliver(alert) == ["notifier:pathlib.Path"]


def _dead_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once closed


def _postgres_down(tmp_path):
    from acid_core.metastore import SqlMetastore

    SqlMetastore(f"postgresql+psycopg2://postgres@127.0.0.1:{_dead_port()}/m", warehouse=str(tmp_path))


def _hive_metastore_down(tmp_path):
    from acid_core.metastore.factory import open_metastore

    open_metastore(f"thrift://127.0.0.1:{_dead_port()}", str(tmp_path)).list_databases()


def _zookeeper_down(tmp_path):
    from acid_core.locks.zookeeper import KazooLockManager

    KazooLockManager(f"127.0.0.1:{_dead_port()}", connect_timeout=0.5)


def _disk_full(tmp_path):
    from acid_core.errors import DiskFullError

    try:
        with open("/dev/full", "wb") as full:  # a real ENOSPC from the kernel
            full.write(b"x")
    except OSError as error:
        raise DiskFullError("/dev/full", "write", str(error)) from error


@pytest.mark.parametrize(
    ("fault", "service"),
    [
        (_postgres_down, "PostgreSQL"),
        (_hive_metastore_down, "Hive Metastore"),
        (_zookeeper_down, "ZooKeeper"),
        (_disk_full, "storage"),
    ],
    ids=["postgres", "hive-metastore", "zookeeper", "storage"],
)
def test_notifier_callback_names_the_service_of_a_service_fault(webhook, tmp_path, fault, service):
    """The error a real client raised against a service that is down: the alert names that service."""
    channel, inbox = webhook
    with pytest.raises(Exception) as info:  # noqa: PT011 - each fault raises its own AcidError
        fault(tmp_path)
    error = info.value
    assert "\n" not in str(error)
    notifier = AcidBacklogNotifier(config=AcidflowConfig(default_channels=(channel,)))
    context = {
        "ti": SimpleNamespace(dag_id="acidflow_compaction", task_id="compact_embedded", map_index=0),
        "task": SimpleNamespace(table="db.orders"),
        "exception": error,
    }
    notifier.notify(context)
    [alert] = inbox
    assert alert["message"] == (
        f"compaction task acidflow_compaction.compact_embedded[0] failed for db.orders ({service} fault): {error}"
    )
    assert alert["details"] == {"service": service}


def test_notifier_callback_of_the_cleaner_names_the_task_and_the_service(webhook, tmp_path):
    """The cleaner DAG's callback (``task_kind="cleaning"``): no table, the task and the service named."""
    channel, inbox = webhook
    with pytest.raises(Exception) as info:  # noqa: PT011 - the client's own AcidError
        _hive_metastore_down(tmp_path)
    notifier = AcidBacklogNotifier(config=AcidflowConfig(default_channels=(channel,)), task_kind="cleaning")
    context = {
        "ti": SimpleNamespace(dag_id="acidflow_cleaner", task_id="clean_obsolete", map_index=-1),
        "task": SimpleNamespace(),
        "exception": info.value,
    }
    notifier.notify(context)
    [alert] = inbox
    assert alert["message"] == (
        f"cleaning task acidflow_cleaner.clean_obsolete[-1] failed (Hive Metastore fault): {info.value}"
    )
    assert alert["details"] == {"service": "Hive Metastore"}
