"""Compaction on a real Spark standalone cluster (master + two one-core workers, ``spark_cluster``).

The executors are JVMs of the workers, their Python workers start with no PYTHONPATH in a directory
outside the checkout: they import the acid_core zip the driver ships and reach the table through
its location only. The driver is ``spark-submit --master spark://127.0.0.1:<port>
spark_jobs/compact.py`` with the arguments ``plan_compactions`` gives the DAG's
SparkSubmitOperator. Expected rows are read before any compaction; expected directories follow
Hive's rules (a major compaction leaves one ``base_N_vT`` per partition once cleaned).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from acidflow_airflow.config import AcidflowConfig
from acidflow_airflow.operators import plan_compactions

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.spark_runner import find_spark_submit, spark_job_path
from acid_core.metastore import CompactionState
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history, read_rows

pytestmark = [pytest.mark.integration("spark"), pytest.mark.slow, pytest.mark.timeout(900)]


def _submit(cluster, args, *extra, timeout=600):
    return subprocess.run(
        [
            find_spark_submit(),
            "--master",
            cluster.master_url,
            *cluster.conf_args(),
            *extra,
            spark_job_path(),
            *args,
        ],
        capture_output=True,
        text=True,
        env=cluster.submit_env(),
        timeout=timeout,
        check=False,
    )


def _dirs(path):
    return sorted(p.name for p in Path(path).iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def _executor_dirs(cluster):
    """Executor work directories (<app>/<executor>) each worker created."""
    return {
        worker.name: sorted(str(p.relative_to(worker)) for p in worker.glob("app-*/*"))
        for worker in sorted(cluster.workdir.glob("worker-*"))
        if worker.is_dir()
    }


def test_spark_cluster_dag_job_compacts_partitions_and_cleaner_keeps_rows(tmp_path, spark_cluster):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 23, partitioned=True, buckets=2, txns=12)
    before = read_rows(history)
    partitions = [p.name for p in wh.metastore.list_partitions("default.t")]
    assert len(partitions) >= 2
    executors_before = _executor_dirs(spark_cluster)

    plan = plan_compactions(
        AcidflowConfig(warehouse=wh.location),
        [{"table": "default.t", "partition": p, "compaction_type": "major"} for p in partitions],
        "spark",
    )
    assert plan["spark"], plan
    for args in plan["spark"]:
        job = _submit(spark_cluster, args)
        assert job.returncode == 0, (job.stdout + job.stderr)[-4000:]
    for compaction_id in plan["ids"]:
        entry = wh.metastore.get_compaction(compaction_id)
        assert entry.state is CompactionState.READY_FOR_CLEANING, (entry.state, entry.error_message)
    # The tasks ran in executors of both workers (other JVMs), not in the driver.
    executors_after = _executor_dirs(spark_cluster)
    for worker, dirs in executors_after.items():
        assert set(dirs) - set(executors_before.get(worker, [])), (worker, executors_after)
    assert read_rows(history) == before

    run_cleaner(wh.metastore)
    assert read_rows(history) == before
    location = wh.metastore.get_table("default.t").location
    for partition in partitions:
        names = _dirs(Path(location) / partition)
        assert len(names) == 1, names
        assert names[0].startswith("base_"), names
        assert "_v" in names[0], names
    wh.close()
