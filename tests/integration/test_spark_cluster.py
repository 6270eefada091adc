"""Compaction on a real Spark standalone cluster (master + two one-core workers, ``spark_cluster``).

The executors are JVMs of the workers, their Python workers start with no PYTHONPATH in a directory
outside the checkout: they import the acid_core zip the driver ships and reach the table through
its location only. The driver is ``spark-submit --master spark://127.0.0.1:<port>
spark_jobs/compact.py`` with the arguments ``plan_compactions`` gives the DAG's
SparkSubmitOperator. Expected rows are read before any compaction; expected directories follow
Hive's rules (a major compaction leaves one ``base_N_vT`` per partition once cleaned).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from acidflow_airflow.config import AcidflowConfig
from acidflow_airflow.operators import plan_compactions

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.spark_runner import find_spark_submit, spark_job_path
from acid_core.compaction.worker import run_worker
from acid_core.metastore import CompactionState, CompactionType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import data_rows, random_history, read_rows

pytestmark = [pytest.mark.integration("spark"), pytest.mark.slow, pytest.mark.timeout(900)]


def _command(cluster, args, *extra):
    return [
        find_spark_submit(),
        "--master",
        cluster.master_url,
        *cluster.conf_args(),
        *extra,
        spark_job_path(),
        *args,
    ]


def _submit(cluster, args, *extra, timeout=600):
    return subprocess.run(
        _command(cluster, args, *extra),
        capture_output=True,
        text=True,
        env=cluster.submit_env(),
        timeout=timeout,
        check=False,
    )


def _tables(wh, seed, names):
    """A random history per table, each partitioned in two (p=a, p=b); returns name -> history."""
    return {name: random_history(wh, seed + i, table=name, buckets=2, txns=8) for i, name in enumerate(names)}


def _enqueue_all(wh, tables):
    ids = {}
    for table in tables:
        for partition in wh.metastore.list_partitions(table):
            ids[(table, partition.name)] = wh.metastore.enqueue_compaction(
                table, partition.name, CompactionType.MAJOR
            )
    return ids


def _id_args(wh, ids):
    return ["--warehouse", wh.location, *(arg for i in ids for arg in ("--compaction-id", str(i)))]


def _all_compacted_and_cleaned(wh, histories, before):
    assert {name: read_rows(h) for name, h in histories.items()} == before
    run_cleaner(wh.metastore)
    assert {name: read_rows(h) for name, h in histories.items()} == before
    for name in histories:
        for partition in wh.metastore.list_partitions(name):
            names = _dirs(partition.location)
            assert len(names) == 1, (name, partition.name, names)
            assert names[0].startswith("base_"), names


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
        # Every executor registered before the work starts: the warm-up reaches both workers.
        job = _submit(
            spark_cluster,
            args,
            "--conf",
            "spark.scheduler.minRegisteredResourcesRatio=1.0",
            "--conf",
            "spark.scheduler.maxRegisteredResourcesWaitingTime=600s",
        )
        assert job.returncode == 0, (job.stdout + job.stderr)[-4000:]
        # One warm Python worker per one-core executor, and every task of every entry ran in one.
        assert "warmed 2 Python worker(s) (2 task(s))" in job.stdout, job.stdout
        warm = re.findall(r"; tasks in warm Python workers: (\d+) of (\d+)$", job.stdout, re.M)
        assert warm, job.stdout
        assert all(ran == tasks != "0" for ran, tasks in warm), job.stdout
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


def test_spark_cluster_one_application_commits_each_entry_and_a_failed_one_fails_alone(
    tmp_path, spark_cluster
):
    """Seven entries in one application (--compaction-id x7): the one whose input is corrupt fails
    alone, the four majors and two rebalances (Hive 4's, one Spark task per output bucket) commit.
    A reaper aborting every txn silent for 10 s runs throughout (Hive's default is 300 s): the
    driver's heartbeats (every second) keep every entry's txn alive while its job waits for the
    executors, which takes far longer."""
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    histories = _tables(wh, 40, ["default.a", "default.b"])
    rebalanced = random_history(wh, 45, table="default.r", partitioned=True, buckets=1, txns=8)
    random_history(wh, 50, table="default.bad", partitioned=False, buckets=1, txns=4)
    before = {name: read_rows(h) for name, h in histories.items()}
    rebalanced_before = data_rows(read_rows(rebalanced))
    ids = _enqueue_all(wh, ["default.a", "default.b"])
    for partition in wh.metastore.list_partitions("default.r"):
        ids[("default.r", partition.name)] = wh.metastore.enqueue_compaction(
            "default.r", partition.name, CompactionType.REBALANCE, number_of_buckets=2
        )
    bad = wh.metastore.enqueue_compaction("default.bad", None, CompactionType.MAJOR)
    bad_root = Path(wh.metastore.get_table("default.bad").location)
    for victim in bad_root.glob("*delta_*/bucket_*"):  # every one: aborted deltas are never read
        victim.write_bytes(b"not an ORC file" * 10)
    bad_dirs = sorted(p.name for p in bad_root.iterdir())

    stop = threading.Event()
    reaped = []

    def reaper():
        while not stop.is_set():
            reaped.extend(wh.metastore.abort_timed_out_txns(10.0))
            time.sleep(0.5)

    thread = threading.Thread(target=reaper, daemon=True)
    thread.start()
    try:
        job = _submit(
            spark_cluster,
            [*_id_args(wh, [*ids.values(), bad]), "--heartbeat-seconds", "1"],
            "--conf",
            "spark.task.maxFailures=1",
        )
    finally:
        stop.set()
        thread.join()
    output = job.stdout + "\n" + job.stderr[-3000:]
    assert job.returncode == 1, output
    assert reaped == [], reaped
    for (table, _), compaction_id in ids.items():
        kind = "rebalance" if table == "default.r" else "major"
        assert f"compaction {compaction_id}: compacted: {kind} compaction wrote base_" in job.stdout, output[
            -4000:
        ]
        assert wh.metastore.get_compaction(compaction_id).state is CompactionState.READY_FOR_CLEANING
    failed = wh.metastore.get_compaction(bad)
    assert failed.state is CompactionState.FAILED
    assert f"The Spark job of compaction {bad} failed: " in failed.error_message
    assert f"compaction {bad}: failed: " in job.stdout
    # Nothing of the failed entry is left: no staging directory, no output, its txn aborted.
    assert sorted(p.name for p in bad_root.iterdir()) == bad_dirs
    assert wh.metastore.get_txn(failed.txn_id).state.value == "aborted"
    _all_compacted_and_cleaned(wh, histories, before)
    # The rebalanced partitions: the same rows (new row IDs: their positions), in one base of two
    # bucket files each.
    assert data_rows(read_rows(rebalanced)) == rebalanced_before
    for partition in wh.metastore.list_partitions("default.r"):
        [base] = _dirs(partition.location)
        assert base.startswith("base_"), base
        assert sorted(p.name for p in (Path(partition.location) / base).glob("bucket_*")) == [
            "bucket_00000",
            "bucket_00001",
        ]
    wh.close()


def test_spark_cluster_driver_killed_half_way_leaves_every_entry_recoverable(tmp_path, spark_cluster):
    """kill -9 of the one application's driver after its first commit: the next run (the worker's
    recovery, as today) finishes or re-queues every claimed entry, and all rows survive."""
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    histories = _tables(wh, 60, ["default.a", "default.b", "default.c"])
    before = {name: read_rows(h) for name, h in histories.items()}
    ids = list(_enqueue_all(wh, histories).values())
    log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(
        _command(spark_cluster, [*_id_args(wh, ids), "--parallel", "1"]),
        stdout=log,
        stderr=subprocess.STDOUT,
        env=spark_cluster.submit_env(),
    )
    deadline = time.monotonic() + 600
    states = {}
    while time.monotonic() < deadline and driver.poll() is None:
        states = {i: wh.metastore.get_compaction(i) for i in ids}
        if any(e.state is CompactionState.READY_FOR_CLEANING for e in states.values()):
            break
        time.sleep(0.2)
    assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-4000:]
    working = [e for e in states.values() if e.state is CompactionState.WORKING]
    assert working, states
    # The Python driver's pid is in the worker ID the entries were claimed with (<host>-<pid>).
    os.kill(int(working[0].worker_id.rsplit("-", 1)[1]), signal.SIGKILL)
    driver.wait(timeout=120)
    log.close()
    assert {e.state for e in (wh.metastore.get_compaction(i) for i in ids)} == {
        CompactionState.READY_FOR_CLEANING,
        CompactionState.WORKING,
    }

    outcomes = run_worker(wh.metastore)
    for compaction_id in ids:
        entry = wh.metastore.get_compaction(compaction_id)
        assert entry.state in (CompactionState.READY_FOR_CLEANING, CompactionState.FAILED), entry
        if entry.state is CompactionState.FAILED:
            assert "died; compaction queued again" in entry.error_message
    assert len(outcomes) == sum(wh.metastore.get_compaction(i).state is CompactionState.FAILED for i in ids)
    assert all(o.status == "compacted" for o in outcomes), outcomes
    _all_compacted_and_cleaned(wh, histories, before)
    wh.close()
