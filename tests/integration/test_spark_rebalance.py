"""The Spark job rebalances exactly as the embedded worker does: one Spark task per output bucket.

Two warehouses get the same deterministic history of an unbucketed, partitioned table (all rows in
``bucket_00000``). One is rebalanced by the embedded worker, the other by ``spark_jobs/compact.py``
in queue mode (``spark-submit``, local[2]: its driver claims the entries and runs each output
bucket as a Spark task): one partition into 3 buckets in ROW__ID order, the other into 2 with
ORDER BY. Rows (with ROW__IDs) and the output event files must be identical.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from acid_core.compaction.spark_runner import find_spark_submit, spark_job_path
from acid_core.compaction.worker import run_worker
from acid_core.metastore import CompactionType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import data_rows, random_history, read_rows
from tests.integration.test_spark_compaction import _files

pytestmark = [pytest.mark.integration("spark"), pytest.mark.slow, pytest.mark.timeout(900)]


def _enqueue(wh):
    first, second = wh.metastore.list_partitions("default.t")[:2]
    wh.metastore.enqueue_compaction("default.t", first.name, CompactionType.REBALANCE, number_of_buckets=3)
    wh.metastore.enqueue_compaction(
        "default.t", second.name, CompactionType.REBALANCE, number_of_buckets=2, order_by="ORDER BY id DESC"
    )


def test_spark_rebalance_equals_embedded(tmp_path):
    embedded = Warehouse.open(str(tmp_path / "embedded"), heartbeat_seconds=None)
    spark = Warehouse.open(str(tmp_path / "spark"), heartbeat_seconds=None)
    history_a = random_history(embedded, 11, partitioned=True, buckets=1, txns=10)
    history_b = random_history(spark, 11, partitioned=True, buckets=1, txns=10)
    before = read_rows(history_a)
    assert read_rows(history_b) == before

    _enqueue(embedded)
    outcomes = run_worker(embedded.metastore)
    assert [o.status for o in outcomes] == ["compacted", "compacted"]
    _enqueue(spark)
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
    assert job.stdout.count(": compacted: rebalance compaction wrote base_") == 2, job.stdout

    root_a = embedded.metastore.get_table("default.t").location
    root_b = spark.metastore.get_table("default.t").location
    files_a, files_b = _files(root_a), _files(root_b)
    assert files_a.keys() == files_b.keys()
    for name, table in files_a.items():
        assert files_b[name].equals(table), name
    bases = sorted({os.path.dirname(name) for name in files_b if "/base_" in name})
    assert [sum(name.startswith(base + "/") for name in files_b) for base in bases] == [3, 2]
    assert read_rows(history_b) == read_rows(history_a)
    assert data_rows(read_rows(history_b)) == data_rows(before)
    embedded.close()
    spark.close()
