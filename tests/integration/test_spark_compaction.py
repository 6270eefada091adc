"""The Spark executor (spark_jobs/compact.py) produces exactly what the embedded worker produces.

Two warehouses get the same deterministic history (same seed: same transaction and write IDs).
One is compacted by the embedded worker; the other by Spark: minor in queue mode (spark-submit
runs the whole compaction, its driver commits) and major in tasks mode (the embedded driver plans
and commits, Spark runs the bucket tasks through SparkSubmitRunner). Rows (with ROW__IDs) and the
output event files must be identical. Real spark-submit, local[2], no mocks.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow.orc as paorc
import pytest

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.spark_runner import SparkSubmitRunner, find_spark_submit, spark_job_path
from acid_core.compaction.worker import WorkerOptions, run_worker
from acid_core.metastore import CompactionState, CompactionType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history, read_rows

pytestmark = [pytest.mark.integration("spark"), pytest.mark.slow, pytest.mark.timeout(900)]


def _enqueue(wh, kind):
    for partition in wh.metastore.list_partitions("default.t"):
        wh.metastore.enqueue_compaction("default.t", partition.name, kind)


def _files(location):
    found = {}
    for top, _dirs, names in os.walk(location):
        for name in names:
            if name.startswith("bucket_"):
                relative = os.path.relpath(os.path.join(top, name), location)
                found[relative] = paorc.ORCFile(os.path.join(top, name)).read()
    return found


def test_spark_compaction_equals_embedded(tmp_path):
    embedded = Warehouse.open(str(tmp_path / "embedded"), heartbeat_seconds=None)
    spark = Warehouse.open(str(tmp_path / "spark"), heartbeat_seconds=None)
    history_a = random_history(embedded, 7, partitioned=True, buckets=3, txns=12)
    history_b = random_history(spark, 7, partitioned=True, buckets=3, txns=12)
    before = read_rows(history_a)
    assert read_rows(history_b) == before

    _enqueue(embedded, CompactionType.MINOR)
    run_worker(embedded.metastore)
    _enqueue(spark, CompactionType.MINOR)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    job = subprocess.run(
        [find_spark_submit(), "--master", "local[2]", spark_job_path(), "--warehouse", spark.location],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert job.stdout.count(": compacted:") == 2, job.stdout
    assert read_rows(history_b) == before

    _enqueue(embedded, CompactionType.MAJOR)
    run_worker(embedded.metastore)
    _enqueue(spark, CompactionType.MAJOR)
    options = WorkerOptions(large_runner=SparkSubmitRunner(master="local[2]"), large_threshold_bytes=0)
    outcomes = run_worker(spark.metastore, options=options)
    assert [o.executor for o in outcomes] == ["large", "large"]
    assert read_rows(history_b) == before

    root_a = embedded.metastore.get_table("default.t").location
    root_b = spark.metastore.get_table("default.t").location
    assert _files(root_a).keys() == _files(root_b).keys()
    for name, table in _files(root_a).items():
        assert _files(root_b)[name].equals(table), name

    run_cleaner(embedded.metastore)
    run_cleaner(spark.metastore)
    assert read_rows(history_a) == read_rows(history_b) == before
    states = {c.state for c in spark.metastore.show_compactions()}
    assert states <= {CompactionState.SUCCEEDED, CompactionState.REFUSED}
    embedded.close()
    spark.close()


@pytest.mark.integration("hdfs")
def test_spark_compaction_on_hdfs(tmp_path, hdfs_env):
    """The Spark job (queue mode: its driver plans and commits, its tasks merge the buckets) on an
    HDFS warehouse, the SQLite metastore on the local disk: rows and ROW__IDs unchanged, one base
    per partition on HDFS. One spark-submit (~2 min on loaded cores): the tasks-only mode runs the
    same merge code and stays on the local disk's test above."""
    metastore = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    spark = Warehouse.open(hdfs_env.warehouse, metastore, heartbeat_seconds=None)
    history = random_history(spark, 7, partitioned=True, buckets=3, txns=8)
    before = read_rows(history)
    assert spark.metastore.get_table("default.t").location.startswith("hdfs://")

    _enqueue(spark, CompactionType.MAJOR)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    job = subprocess.run(
        [
            find_spark_submit(),
            "--master",
            "local[2]",
            spark_job_path(),
            "--warehouse",
            hdfs_env.warehouse,
            "--metastore",
            metastore,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert job.stdout.count(": compacted:") == 2, job.stdout
    assert read_rows(history) == before
    names = [p.rsplit("/", 1)[-1] for p in hdfs_env.paths("warehouse/t")]
    assert len([n for n in names if n.startswith("base_")]) == 2, names  # one per partition, on HDFS
    spark.close()
