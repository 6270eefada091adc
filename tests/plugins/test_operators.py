"""Backlog rows, planning and the embedded compaction and cleaner operators on a real warehouse.

The warehouse is the demo one (``demo.run_platform.build_demo_warehouse``, embedded SQLite
metastore); expected counts come from its directories on disk, parsed here by name.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from acidflow_airflow.backlog import backlog_metrics, collect_backlog, queue_summary
from acidflow_airflow.config import AcidflowConfig, BacklogLevels
from acidflow_airflow.operators import AcidCleanerOperator, AcidCompactionOperator, plan_compactions
from airflow.sdk.exceptions import AirflowFailException

from demo.run_platform import build_demo_warehouse, read_rows

PARTITIONS = ("ds=2024-01-01", "ds=2024-01-02", "ds=2024-01-03")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("demo") / "warehouse")
    build_demo_warehouse(warehouse)
    return warehouse


def _fresh(tmp_path):
    path = str(tmp_path / "fresh")
    build_demo_warehouse(path)
    return path


def _open(warehouse):
    from acid_core.metastore import open_metastore

    return open_metastore(None, warehouse)


def _disk(warehouse, partition):
    names = [p.name for p in (Path(warehouse) / "web_events" / partition).iterdir() if p.is_dir()]
    return (
        sum(n.startswith("delta_") for n in names),
        sum(n.startswith("delete_delta_") for n in names),
        sum(n.startswith("base_") for n in names),
    )


def test_collect_backlog_counts_match_disk_and_initiator_decides(demo):
    config = AcidflowConfig(warehouse=demo, levels=BacklogLevels(warning_deltas=5, critical_deltas=12))
    with _open(demo) as metastore:
        rows = collect_backlog(metastore, config)
        summary = queue_summary(metastore)
    by_key = {(r["table"], r["partition"]): r for r in rows}
    assert set(by_key) == {("default.employee", None), ("default.employee_update", None)} | {
        ("default.web_events", p) for p in PARTITIONS
    }
    for partition in PARTITIONS:
        row = by_key[("default.web_events", partition)]
        assert (row["deltas"], row["delete_deltas"], 0) == _disk(demo, partition)
        assert row["compaction_type"] == "major"
        assert row["reason"] == "no_base_and_delta_num_over_threshold"
        assert row["level"] == "critical"
        assert row["delta_bytes"] > 0
    assert by_key[("default.employee", None)]["compaction_type"] is None
    assert summary["counts"]["initiated"] == 0
    metrics = backlog_metrics(rows, summary)
    assert metrics["compaction_num_active_deltas.default.web_events"] == 45.0
    assert metrics["compaction_num_obsolete_deltas"] == 0.0
    assert {
        "compaction_num_initiated",
        "compaction_oldest_enqueue_age_in_sec",
        "compaction_oldest_cleaning_age_in_sec",
    } <= set(metrics)


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        (
            {"table": "default.nope", "partition": None, "compaction_type": "major"},
            "table 'default.nope' does not exist",
        ),
        (
            {"table": "default.web_events", "partition": None, "compaction_type": "major"},
            "is partitioned: name a partition",
        ),
        (
            {"table": "default.web_events", "partition": "ds=1999", "compaction_type": "minor"},
            "partition 'ds=1999'",
        ),
        (
            {"table": "default.employee", "partition": "ds=1", "compaction_type": "major"},
            "is not partitioned",
        ),
        (
            {"table": "default.employee", "partition": None, "compaction_type": "huge"},
            "compaction type 'huge'",
        ),
        (
            {"table": "default.employee", "partition": None, "compaction_type": "rebalance", "order_by": "x"},
            "Invalid rebalance compaction ORDER BY column 'x'",
        ),
    ],
)
def test_plan_compactions_invalid_target_queues_nothing(demo, target, problem):
    good = {"table": "default.web_events", "partition": PARTITIONS[0], "compaction_type": "major"}
    with pytest.raises(
        AirflowFailException, match="compaction request refused: Invalid compaction request"
    ) as info:
        plan_compactions(AcidflowConfig(warehouse=demo), [good, target])
    assert problem in str(info.value)
    with _open(demo) as metastore:
        assert metastore.show_compactions() == []


def test_plan_compactions_splits_embedded_and_spark_by_size(tmp_path):
    warehouse = _fresh(tmp_path)
    config = AcidflowConfig(warehouse=warehouse, spark_threshold_bytes=12_000)
    targets = [
        {"table": "default.web_events", "partition": p, "compaction_type": "major"} for p in PARTITIONS
    ]
    targets.append({"table": "default.employee", "partition": None, "compaction_type": "minor"})
    plan = plan_compactions(config, targets, "auto")
    # web_events partitions hold about 12.7 kB of deltas each (>= 12,000 B); employee about 4.8 kB.
    assert [item["table"] for item in plan["embedded"]] == ["default.employee"]
    assert sorted(plan["ids"]) == [1, 2, 3, 4]
    with _open(warehouse) as metastore:
        queued = metastore.show_compactions()
        assert [c.state.value for c in queued] == ["initiated"] * 4
    # One Spark application for every large compaction, claiming exactly their queue entries.
    large = sorted(c.id for c in queued if c.table == "default.web_events")
    base = ["--warehouse", str(Path(warehouse).resolve())]
    expected = [*base, "--compaction-id", str(large[0]), "--compaction-id", str(large[1])]
    assert plan["spark"] == [[*expected, "--compaction-id", str(large[2])]]


def test_compaction_and_cleaner_operators_merge_deltas_and_keep_rows(tmp_path):
    warehouse = _fresh(tmp_path)
    config = AcidflowConfig(warehouse=warehouse)
    before = read_rows(warehouse, "default.web_events")
    plan = plan_compactions(
        config,
        [{"table": "default.web_events", "partition": PARTITIONS[1], "compaction_type": "major"}],
        "embedded",
    )
    item = plan["embedded"][0]
    result = AcidCompactionOperator(task_id="compact", config=config, **item).execute({})
    assert result["state"] == "ready_for_cleaning"
    assert result["outcomes"][0]["status"] == "compacted"
    assert read_rows(warehouse, "default.web_events") == before
    assert _disk(warehouse, PARTITIONS[1])[2] == 1
    cleaned = AcidCleanerOperator(task_id="clean", config=config).execute({})
    assert [c["status"] for c in cleaned["cleaned"]] == ["cleaned"]
    assert _disk(warehouse, PARTITIONS[1]) == (0, 0, 1)
    assert _disk(warehouse, PARTITIONS[0]) == (13, 2, 0)
    assert read_rows(warehouse, "default.web_events") == before


def test_rebalance_from_the_form_spreads_a_partition_over_two_buckets(tmp_path):
    warehouse = _fresh(tmp_path)
    config = AcidflowConfig(warehouse=warehouse)
    before = read_rows(warehouse, "default.web_events")
    target = {
        "table": "default.web_events",
        "partition": PARTITIONS[2],
        "compaction_type": "rebalance",
        "number_of_buckets": 2,
    }
    plan = plan_compactions(config, [target], "embedded")
    item = plan["embedded"][0]
    result = AcidCompactionOperator(task_id="compact", config=config, **item).execute({})
    assert result["outcomes"][0]["status"] == "compacted"
    [base] = [
        p for p in (Path(warehouse) / "web_events" / PARTITIONS[2]).iterdir() if p.name.startswith("base_")
    ]
    assert sorted(f.name for f in base.iterdir() if f.name.startswith("bucket_")) == [
        "bucket_00000",
        "bucket_00001",
    ]
    assert read_rows(warehouse, "default.web_events") == before


def test_compaction_operator_unknown_table_fails_without_retry(tmp_path):
    warehouse = _fresh(tmp_path)
    operator = AcidCompactionOperator(
        task_id="compact", table="default.nope", config=replace(AcidflowConfig(), warehouse=warehouse)
    )
    with pytest.raises(
        AirflowFailException,
        match=r"task compact: Invalid compaction request .*table 'default.nope' does not exist",
    ):
        operator.execute({})
