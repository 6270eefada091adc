"""The backlog history: the sensor records samples, the page turns them into trends; Hive's metric names.

A real demo warehouse (embedded SQLite metastore); the backlog grows by real INSERTs between
measurements taken at chosen times. Expected counts come from the directories on disk.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from acidflow_airflow.backlog import (
    add_history,
    backlog_metrics,
    collect_backlog,
    queue_summary,
    record_backlog,
)
from acidflow_airflow.config import AcidflowConfig, BacklogLevels, load_config
from acidflow_airflow.hooks import AcidWarehouseHook
from acidflow_airflow.sensors import AcidBacklogSensor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_core.errors import InvalidPlatformConfigError
from acid_core.metastore import open_metastore
from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse

HOUR = 3600.0
DAY = 86400.0


def _warehouse(tmp_path) -> str:
    path = str(tmp_path / "warehouse")
    with Warehouse.open(path) as store:
        SqlSession(store).execute(
            "CREATE TABLE clicks (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
        )
    return path


def _insert(warehouse: str, count: int) -> None:
    with Warehouse.open(warehouse) as store:
        session = SqlSession(store)
        for i in range(count):
            session.execute(f"INSERT INTO clicks VALUES ({i})")


def _disk_deltas(warehouse: str) -> int:
    return sum(p.name.startswith("delta_") for p in (Path(warehouse) / "clicks").iterdir())


def test_config_history_and_alert_levels_parse_and_validate(tmp_path):
    path = tmp_path / "acidflow.yaml"
    path.write_text(
        "backlog: {critical_working_age: 2h, failure_streak: 5}\n"
        "history: {retention: 30d, sample_interval: 10m, window: 3d}\n"
    )
    config = load_config(str(path), {})
    assert (config.levels.critical_working_age_seconds, config.levels.failure_streak) == (7200.0, 5)
    assert (
        config.history_retention_seconds,
        config.history_sample_seconds,
        config.history_window_seconds,
    ) == (
        30 * DAY,
        600.0,
        3 * DAY,
    )
    path.write_text("backlog: {failure_streak: 0}\n")
    with pytest.raises(InvalidPlatformConfigError, match=r"backlog.failure_streak=0 .*expected at least 1"):
        load_config(str(path), {})
    path.write_text("history: {keep: 3d}\n")
    with pytest.raises(InvalidPlatformConfigError, match=r"history.keep=.*expected one of the keys"):
        load_config(str(path), {})


def test_record_backlog_one_sample_per_interval_and_prunes_past_retention(tmp_path):
    warehouse = _warehouse(tmp_path)
    _insert(warehouse, 2)
    config = AcidflowConfig(warehouse=warehouse, history_sample_seconds=300.0, history_retention_seconds=DAY)
    t0 = 1_000_000_000.0
    with open_metastore(None, warehouse) as metastore:
        rows = collect_backlog(metastore, config, now=t0)
        assert record_backlog(metastore, rows, config, now=t0) == 1
        assert record_backlog(metastore, rows, config, now=t0 + 299) == 0  # within the interval
        assert record_backlog(metastore, rows, config, now=t0 + 300) == 1
        assert record_backlog(metastore, rows, config, now=t0 + DAY + 301) == 1  # prunes t0 and t0+300
        samples = metastore.list_backlog_samples(0.0)
    assert [s.sampled_at for s in samples] == [t0 + DAY + 301]
    sample = samples[0]
    assert (sample.table, sample.partition, sample.deltas, sample.delete_deltas) == (
        "default.clicks",
        None,
        2,
        0,
    )
    assert sample.delta_bytes == rows[0]["delta_bytes"] > 0
    assert sample.oldest_delta_time == pytest.approx(
        rows[0]["oldest_delta_time"], abs=0.001
    )  # ms in the store


def test_growing_backlog_gives_sparkline_and_time_to_critical(tmp_path):
    warehouse = _warehouse(tmp_path)
    config = AcidflowConfig(warehouse=warehouse, levels=BacklogLevels(warning_deltas=5, critical_deltas=20))
    hook = AcidWarehouseHook(config)
    t0 = 1_000_000_000.0
    for day in range(4):  # 3 more deltas a day, measured once a day by the "sensor"
        _insert(warehouse, 3)
        hook.backlog(record=True, now=t0 + day * DAY)
    _insert(warehouse, 3)
    now = t0 + 4 * DAY
    assert _disk_deltas(warehouse) == 15
    with open_metastore(None, warehouse) as metastore:
        rows = collect_backlog(metastore, config, now=now)
        samples = metastore.list_backlog_samples(now - config.history_window_seconds)
    [row] = add_history(rows, samples, config, now)
    assert [s.deltas for s in samples] == [3, 6, 9, 12]
    assert row["deltas"] == 15
    # 3 deltas a day, 15 now, critical above 20 (21): 2 days to go.
    assert row["time_to_critical"] == pytest.approx(2 * DAY)
    assert row["time_to_critical_human"] == "2d"
    svg = ET.fromstring(row["history"]["deltas"]["svg"])
    assert svg.get("data-points") == "5"
    assert row["history"]["bytes"]["points"] == 5
    assert row["total_bytes_human"].endswith(("B", "KiB"))
    assert row["last_compaction"] is None


def test_add_history_of_a_shrinking_backlog_is_not_growing(tmp_path):
    warehouse = _warehouse(tmp_path)
    _insert(warehouse, 2)
    config = AcidflowConfig(warehouse=warehouse)
    with open_metastore(None, warehouse) as metastore:
        rows = collect_backlog(metastore, config, now=2000.0)
        from acid_core.metastore import BacklogSample

        past = [BacklogSample("default.clicks", None, 1000.0, 9, 0, 900, 0)]
    [row] = add_history(rows, past, config, now=2000.0)
    assert row["time_to_critical"] is None
    assert row["time_to_critical_human"] == ""


def test_sensor_poke_records_a_sample(tmp_path):
    warehouse = _warehouse(tmp_path)
    _insert(warehouse, 1)
    sensor = AcidBacklogSensor(
        task_id="watch_all", deferrable=False, config=AcidflowConfig(warehouse=warehouse)
    )
    assert not sensor.poke({}).is_done
    with open_metastore(None, warehouse) as metastore:
        assert [(s.table, s.deltas) for s in metastore.list_backlog_samples(0.0)] == [("default.clicks", 1)]


def test_metrics_use_hive_names_for_open_and_aborted_transactions(tmp_path):
    warehouse = _warehouse(tmp_path)
    config = AcidflowConfig(warehouse=warehouse)
    with open_metastore(None, warehouse) as metastore:
        aborted = metastore.open_txn("bob", "etl1")
        metastore.abort_txn(aborted)
        first = metastore.open_txn("alice", "etl2")
        metastore.open_txn("carol", "etl3")
        started = {t.txn_id: t.started for t in metastore.show_transactions()}
        now = started[first] + 125.0
        summary = queue_summary(metastore, now)
        metrics = backlog_metrics(collect_backlog(metastore, config, now=now), summary)
    assert metrics["num_open_non_repl_transactions"] == 2.0
    assert metrics["oldest_open_non_repl_txn_id"] == float(first)
    assert metrics["oldest_open_non_repl_txn_age_in_sec"] == pytest.approx(125.0)
    assert metrics["num_aborted_transactions"] == 1.0
    assert metrics["oldest_aborted_txn_id"] == float(aborted)
    assert metrics["oldest_ready_for_cleaning_age_in_sec"] == 0.0
    assert [t["txn_id"] for t in summary["open_txns"]] == [first, first + 1]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 2 * 3600), st.sets(st.sampled_from(["ds=1", "ds=2", "ds=3"]), min_size=1)),
        min_size=1,
        max_size=12,
    )
)
def test_record_backlog_matches_a_model_of_interval_and_retention(steps):
    """Model: a partition gets a sample iff its last kept one is at least the interval old; the
    retention drops samples older than it whenever something is recorded."""
    from acid_core.metastore import InMemoryMetastore

    config = AcidflowConfig(history_sample_seconds=600.0, history_retention_seconds=3 * 3600.0)
    model: list[tuple[str, float]] = []
    now = 1_000_000.0
    with InMemoryMetastore() as metastore:
        for gap, partitions in steps:
            now += gap
            rows = [
                {
                    "table": "db.t",
                    "partition": p,
                    "deltas": 1,
                    "delete_deltas": 0,
                    "delta_bytes": 10,
                    "delete_delta_bytes": 0,
                    "aborted": 0,
                    "oldest_delta_time": None,
                    "error": None,
                }
                for p in sorted(partitions)
            ]
            due = [p for p in sorted(partitions) if not any(q == p and t > now - 600.0 for q, t in model)]
            written = record_backlog(metastore, rows, config, now=now)
            assert written == len(due)
            if due:
                model = [(p, t) for p, t in model if t >= now - 3 * 3600.0] + [(p, now) for p in due]
            stored = [(s.partition, s.sampled_at) for s in metastore.list_backlog_samples(0.0)]
            assert stored == sorted(model)
