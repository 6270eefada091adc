"""spark_jobs/compact.py --compaction-id: the Spark job claims and runs exactly the named entries.

The Airflow compaction DAG hands each large compaction to its own Spark job by ID; before this,
a queue-mode job drained the whole queue. Real spark-submit, local[1], no mocks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from acid_core.compaction.spark_runner import find_spark_submit, spark_job_path
from acid_core.metastore import CompactionState, CompactionType
from acid_core.writes.transaction import Warehouse
from spark_jobs.compact import _spark_failure
from spark_jobs.compact import main as compact_main
from tests.acid_core.compaction.histories import create_table, random_history, read_rows


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield warehouse
    warehouse.close()


def test_unknown_or_claimed_ids_are_refused_before_spark_starts(wh, capsys):
    create_table(wh, "t", partitioned=False, buckets=1)
    entry = wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    wh.metastore.claim_compaction(entry, "another-worker")
    assert compact_main(["--warehouse", wh.location, "--compaction-id", "999"]) == 2
    assert "999" in capsys.readouterr().err
    assert compact_main(["--warehouse", wh.location, "--compaction-id", str(entry)]) == 2
    err = capsys.readouterr().err
    assert f"compaction {entry} is 'working'" in err
    assert "expected 'initiated'" in err


@pytest.mark.integration("spark")
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_spark_job_runs_only_the_named_compaction(wh):
    history = random_history(wh, 5, partitioned=False, buckets=2, txns=8)
    before = read_rows(history)
    first = wh.metastore.enqueue_compaction("default.t", None, CompactionType.MINOR)
    create_table(wh, "other", partitioned=False, buckets=1)
    second = wh.metastore.enqueue_compaction("default.other", None, CompactionType.MAJOR)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    job = subprocess.run(
        [
            find_spark_submit(),
            "--master",
            "local[1]",
            spark_job_path(),
            "--warehouse",
            wh.location,
            "--compaction-id",
            str(first),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=540,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert f"compaction {first}: compacted" in job.stdout, job.stdout
    # local[1]: one Python worker warmed before the claim; every task of the entry ran in it.
    assert "warmed 1 Python worker(s) (1 task(s))" in job.stdout, job.stdout
    warm = re.search(
        r"^  steps: planning .*; tasks in warm Python workers: (\d+) of (\d+)$", job.stdout, re.M
    )
    assert warm is not None, job.stdout
    assert warm.group(1) == warm.group(2) != "0", job.stdout
    assert wh.metastore.get_compaction(first).state is CompactionState.READY_FOR_CLEANING
    assert wh.metastore.get_compaction(second).state is CompactionState.INITIATED
    assert read_rows(history) == before


@pytest.mark.parametrize("value", ["0", "-2", "many"], ids=["zero", "negative", "word"])
def test_compact_parallel_not_positive_is_refused_in_one_line(wh, capsys, value):
    with pytest.raises(SystemExit) as info:
        compact_main(["--warehouse", wh.location, "--compaction-id", "1", "--parallel", value])
    assert info.value.code == 2
    assert (
        f"argument --parallel: {value!r} is not a positive integer; expected e.g. 4"
        in capsys.readouterr().err
    )


def test_compact_parallel_without_compaction_ids_is_refused(wh, capsys):
    assert compact_main(["--warehouse", wh.location, "--parallel", "2"]) == 2
    assert capsys.readouterr().err == "compact.py: error: --parallel goes with --compaction-id\n"


def test_spark_failure_is_the_python_error_line_before_the_jvm_stack():
    text = (
        "An error occurred while calling o57.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed "
        "1 times, most recent failure: Lost task 0.0 (TID 5) (127.0.0.1 executor 1): "
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/tmp/acid_core.zip/acid_core/orc/reader.py", line 10, in open\n'
        "pyarrow.lib.ArrowInvalid: ORC file is too short\n"
        "\n\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:1)\n"
        "Caused by: java.lang.IllegalStateException: other\n"
    )
    assert _spark_failure(text) == "pyarrow.lib.ArrowInvalid: ORC file is too short"
    assert _spark_failure("lost executor 1\nmore") == "lost executor 1"
