"""The sensor, compaction (embedded and Spark) and cleaner DAGs through real Airflow (``airflow dags test``).

The Spark connection points at a real standalone cluster (``spark_cluster``).
``make run WAREHOUSE=hdfs://...`` is proven by its parts on a MiniDFSCluster (``hdfs_env``): the demo
warehouse built on HDFS, the compaction DAG (embedded executor, the initiator's choice) and the
cleaner DAG, the demo reset rules; the Spark executor on HDFS is ``test_spark_compaction_on_hdfs``'s.

The warehouse is built through ``acid_core.sql`` with the PostgreSQL metastore and ZooKeeper
locks; Airflow runs on SQLite in the session's AIRFLOW_HOME. Expected facts come from the
warehouse itself (rows read before any DAG ran) and from Hive's rules (a major compaction leaves
one ``base_N_vT`` per partition; the cleaner removes every input directory).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from demo.run_platform import DEMO_TABLES, build_demo_warehouse, read_rows, refuse_to_reset
from tests.fixtures.airflow import run_airflow

pytestmark = [pytest.mark.integration("airflow"), pytest.mark.slow]


def _dirs(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def _snapshot(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".acidflow" not in p.parts)


@pytest.mark.timeout(900)
def test_platform_dags_compact_and_clean_on_postgres_and_zookeeper(
    tmp_path, airflow_env, postgres_schema_url, zookeeper_server, webhook, spark_cluster
):
    from acid_core.locks import open_lock_manager
    from acid_core.metastore import open_metastore

    hook_url, alerts = webhook
    warehouse = str(tmp_path / "warehouse")
    locks = open_lock_manager(
        {"ACIDFLOW_LOCK_MANAGER": "zookeeper", "ACIDFLOW_ZOOKEEPER": zookeeper_server.hosts}
    )
    try:
        build_demo_warehouse(warehouse, postgres_schema_url, locks)
    finally:
        locks.close()
    before = {table: read_rows(warehouse, table, postgres_schema_url) for table in DEMO_TABLES}
    assert len(before["default.web_events"]) > 90
    config = tmp_path / "acidflow.yaml"
    config.write_text(
        "backlog: {warning_deltas: 5, critical_deltas: 12}\n"
        "alerts:\n"
        "  default: [log]\n"
        f"  routes: [{{tables: ['default.web_events'], channels: ['log', '{hook_url}']}}]\n"
    )
    env = airflow_env(
        warehouse,
        postgres_schema_url,
        ACIDFLOW_CONFIG=str(config),
        ACIDFLOW_LOCK_MANAGER="zookeeper",
        ACIDFLOW_ZOOKEEPER=zookeeper_server.hosts,
        AIRFLOW__LOGGING__LOGGING_LEVEL="INFO",
        AIRFLOW__METRICS__OTEL_ON="True",
        AIRFLOW__METRICS__OTEL_DEBUGGING_ON="True",
        AIRFLOW__METRICS__OTEL_INTERVAL_MILLISECONDS="200",
        # The Spark connection points at the standalone cluster (make run keeps local mode).
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps(
            {
                "conn_type": "spark",
                "host": spark_cluster.master_url.rsplit(":", 1)[0],
                "port": int(spark_cluster.master_url.rsplit(":", 1)[1]),
            }
        ),
        SPARK_LOCAL_IP="127.0.0.1",
    )

    sensor = run_airflow(env, "dags", "test", "acidflow_sensor")
    output = sensor.stdout + sensor.stderr
    # The initiator's decision for each web_events partition: no base and 15 deltas > 10 -> major.
    for ds in ("2024-01-01", "2024-01-02", "2024-01-03"):
        assert f"'table': 'default.web_events', 'partition': 'ds={ds}', 'compaction_type': 'major'" in output
    assert "'table': 'default.employee'" not in output.split("to compact:", 1)[-1].split("\n", 1)[0]
    # Hive's metric names went through Airflow's stats (OpenTelemetry console exporter).
    for name in (
        "compaction_num_initiated",
        "compaction_oldest_enqueue_age_in_sec",
        "compaction_oldest_cleaning_age_in_sec",
        "compaction_num_obsolete_deltas",
        "compaction_num_active_deltas.default.web_events",
    ):
        assert name in output, name
    # 15 deltas and delete deltas > critical level 12: one alert per partition, to the routed webhook.
    critical = [a for a in alerts if a["kind"] == "backlog_critical"]
    assert sorted(a["partition"] for a in critical) == ["ds=2024-01-01", "ds=2024-01-02", "ds=2024-01-03"]
    assert all(a["table"] == "default.web_events" and "15 deltas" in a["message"] for a in critical)

    table_dir = Path(warehouse) / "web_events"
    assert all(len(_dirs(table_dir / f"ds={ds}")) == 15 for ds in ("2024-01-01", "2024-01-02", "2024-01-03"))
    run_airflow(env, "dags", "test", "acidflow_compaction", "-c", json.dumps({"executor": "embedded"}))
    spark = run_airflow(
        env,
        "dags",
        "test",
        "acidflow_compaction",
        "-c",
        json.dumps({"statement": "ALTER TABLE default.employee COMPACT 'major'", "executor": "spark"}),
    )
    spark_output = spark.stdout + spark.stderr
    # The provider's SparkSubmitOperator ran spark_jobs/compact.py on the cluster; its driver ran
    # the compaction.
    assert "spark-submit" in spark_output
    assert spark_cluster.master_url in spark_output
    assert re.search(r"compaction \d+: compacted: major compaction wrote base_0000003_v\d+", spark_output)
    run_airflow(env, "dags", "test", "acidflow_cleaner")

    after = {table: read_rows(warehouse, table, postgres_schema_url) for table in DEMO_TABLES}
    assert after == before
    for ds in ("2024-01-01", "2024-01-02", "2024-01-03"):
        names = _dirs(table_dir / f"ds={ds}")
        assert len(names) == 1, names
        assert names[0].startswith("base_0000038_v"), names
    employee = _dirs(Path(warehouse) / "employee")
    assert len(employee) == 1, employee
    assert employee[0].startswith("base_"), employee
    with open_metastore(postgres_schema_url, warehouse) as metastore:
        history = {(c.table, c.partition): c for c in metastore.show_compactions()}
    assert {c.state.value for c in history.values()} == {"succeeded"}
    assert sorted(history) == [("default.employee", None)] + [
        ("default.web_events", f"ds={ds}") for ds in ("2024-01-01", "2024-01-02", "2024-01-03")
    ]


@pytest.mark.timeout(300)
def test_compaction_dag_unknown_table_or_other_statement_fails_clearly_and_touches_nothing(
    tmp_path, airflow_env
):
    warehouse = tmp_path / "warehouse"
    build_demo_warehouse(str(warehouse))
    before = _snapshot(warehouse)
    env = airflow_env(str(warehouse), AIRFLOW__LOGGING__LOGGING_LEVEL="INFO")
    for conf, message in (
        ({"statement": "ALTER TABLE default.nope COMPACT 'major'"}, "table 'default.nope' does not exist"),
        ({"statement": "DROP TABLE default.employee"}, "it is not an ALTER TABLE ... COMPACT statement"),
    ):
        result = run_airflow(env, "dags", "test", "acidflow_compaction", "-c", json.dumps(conf), check=False)
        output = result.stdout + result.stderr
        assert "compaction request refused: Invalid compaction request" in output
        assert message in output
        assert "nothing was queued" in output
        assert _snapshot(warehouse) == before
    from acid_core.metastore import open_metastore

    with open_metastore(None, str(warehouse)) as metastore:
        assert metastore.show_compactions() == []


@pytest.mark.integration("hdfs")
@pytest.mark.timeout(600)
def test_compaction_and_cleaner_dags_on_an_hdfs_warehouse(tmp_path, airflow_env, hdfs_env):
    """The DAGs of ``make run WAREHOUSE=hdfs://nn:port/dir`` on HDFS, the metastore a local SQLite file.

    The compaction DAG with an empty form compacts what the initiator finds due (web_events' three
    partitions, 15 deltas each) in the embedded worker; the cleaner DAG removes the inputs. The
    NameNode's own listing shows one ``base_N_vT`` per partition after; every table reads the same rows.
    """
    warehouse = hdfs_env.warehouse
    metastore = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    assert refuse_to_reset(warehouse) is None  # absent: make run may build it
    build_demo_warehouse(warehouse, metastore)
    assert refuse_to_reset(warehouse) is None  # marked as a demo warehouse: make run may rebuild it
    assert f"{hdfs_env.root[1:]}/warehouse/.acidflow/demo-warehouse" in {
        f"{hdfs_env.root[1:]}/{p}" for p in hdfs_env.paths()
    }
    before = {table: read_rows(warehouse, table, metastore) for table in DEMO_TABLES}
    assert len(before["default.web_events"]) > 90

    def partition_dirs(ds: str) -> list[str]:
        prefix = f"warehouse/web_events/ds={ds}/"
        return sorted({p[len(prefix) :].split("/")[0] for p in hdfs_env.paths() if p.startswith(prefix)})

    partitions = ("2024-01-01", "2024-01-02", "2024-01-03")
    assert all(len(partition_dirs(ds)) == 15 for ds in partitions)
    env = airflow_env(warehouse, metastore, AIRFLOW__LOGGING__LOGGING_LEVEL="INFO")
    compaction = run_airflow(
        env, "dags", "test", "acidflow_compaction", "-c", json.dumps({"executor": "embedded"})
    )
    output = compaction.stdout + compaction.stderr
    # The check task's outcome: three compactions (web_events' partitions) by the embedded worker.
    checked = re.search(r"Returned value was: (\{'\d+': '\w+'(?:, '\d+': '\w+')*\})", output)
    assert checked is not None, output[-4000:]
    assert sorted(ast.literal_eval(checked.group(1)).values()) == ["ready_for_cleaning"] * 3
    run_airflow(env, "dags", "test", "acidflow_cleaner")

    assert {table: read_rows(warehouse, table, metastore) for table in DEMO_TABLES} == before
    for ds in partitions:
        names = partition_dirs(ds)
        assert len(names) == 1, names
        assert names[0].startswith("base_0000038_v"), names

    # A directory that is not a demo warehouse is never wiped by make run: refused in one line.
    hdfs_env.cluster.client().mkdirs(f"{hdfs_env.root}/data/keep", 0o755, True)
    other = f"{hdfs_env.cluster.uri}{hdfs_env.root}/data"
    assert refuse_to_reset(other) == (
        f"Refusing to rebuild the demo warehouse in {other!r}: it exists and is not a demo warehouse "
        "built by acidflow (no .acidflow/demo-warehouse); expected a new, empty or demo directory; "
        f"hint: make run WAREHOUSE={hdfs_env.cluster.uri}/<new directory>"
    )
