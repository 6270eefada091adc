"""The Spark compaction job (spark_jobs/compact.py) on an S3 warehouse (moto's server).

One real ``spark-submit`` (local[2], the way the compaction DAG runs it: ``--compaction-id`` for
each entry) runs a minor compaction of one table and a major compaction of another. Its Python
workers open the tables through acidflow's pyarrow S3 filesystem with the same ``AWS_*`` variables
the driver has (nothing else is configured); the outputs are ``delta_x_y_vT`` and ``base_N_vT``
objects in the bucket, the rows are unchanged, and nothing is written to the local disk but the
metastore file.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from acid_core.compaction.spark_runner import find_spark_submit, spark_job_path
from acid_core.metastore import CompactionState, CompactionType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history, read_rows

pytestmark = [
    pytest.mark.integration("spark"),
    pytest.mark.integration("s3"),
    pytest.mark.slow,
    pytest.mark.timeout(600),
]


def _names(s3, table: str) -> set[str]:
    return {key.split("/")[2] for key in s3.object_keys(f"warehouse/{table}/")}


def test_spark_job_minor_and_major_on_s3(s3_env, tmp_path, monkeypatch):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    metastore = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    wh = Warehouse.open(s3_env.warehouse, metastore, heartbeat_seconds=None)
    try:
        minor_history = random_history(wh, 3, partitioned=False, buckets=1, txns=4, table="default.minor_t")
        major_history = random_history(wh, 4, partitioned=True, buckets=2, txns=4, table="default.major_t")
        minor_rows, major_rows = read_rows(minor_history), read_rows(major_history)
        minor = wh.metastore.enqueue_compaction("default.minor_t", None, CompactionType.MINOR)
        partition = wh.metastore.list_partitions("default.major_t")[0].name
        major = wh.metastore.enqueue_compaction("default.major_t", partition, CompactionType.MAJOR)
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        assert env["AWS_ENDPOINT_URL"] == s3_env.server.endpoint  # the only S3 setting given
        mark = s3_env.server.mark()
        argv = ["--warehouse", s3_env.warehouse, "--metastore", metastore]
        argv += ["--compaction-id", str(minor), "--compaction-id", str(major)]
        job = subprocess.run(
            [find_spark_submit(), "--master", "local[2]", spark_job_path(), *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=540,
            check=False,
        )
        assert job.returncode == 0, job.stderr[-3000:]
        assert f"compaction {minor}: compacted" in job.stdout, job.stdout
        assert f"compaction {major}: compacted" in job.stdout, job.stdout
        puts = [path for method, path, _ in s3_env.server.requests(since=mark) if method == "PUT"]
        assert any("/bucket_0000" in path for path in puts), puts  # the workers wrote to the bucket
        for compaction_id in (minor, major):
            assert wh.metastore.get_compaction(compaction_id).state is CompactionState.READY_FOR_CLEANING
        assert any(
            n.startswith("delta_") and "_v" in n and n.count("_") == 3 for n in _names(s3_env, "minor_t")
        )
        based = {key.split("/")[3] for key in s3_env.object_keys("warehouse/major_t/") if "/base_" in key}
        assert based
        assert all("_v" in name for name in based)
        assert read_rows(minor_history) == minor_rows
        assert read_rows(major_history) == major_rows
    finally:
        wh.close()
    assert os.listdir(work) == []  # no ./s3: directory, no spark-warehouse
