"""The locks of a ``hiveacid`` write: taken before any task writes, held for the transaction, released
when it ends (commit, abort, or the reaper's abort of a killed job).

Real embedded metastore and SQL lock manager; the writer's ``writer()``/``commit()``/``abort()`` run in
this process (what Spark runs in its Python workers) and the holder runs as its own process, as
under Spark. No Spark session.
"""

from __future__ import annotations

import pytest

from acid_core.errors import LockTimeoutError, WriteLockError
from acid_core.locks import LockMode, LockObject, LockRequest, open_lock_manager
from acid_core.metastore.port import TxnState
from acid_core.writes.transaction import Warehouse
from pyspark_hiveacid.options import parse_source_options
from pyspark_hiveacid.source import HiveAcidWriter, spark_schema_of
from pyspark_hiveacid.write_locks import plan_write_locks
from tests.acid_core.compaction.histories import create_table

TABLE = LockObject("default", "t")


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    create_table(warehouse, "default.t", partitioned=False, buckets=1)
    yield warehouse
    warehouse.close()


@pytest.fixture
def locks(wh):
    manager = open_lock_manager({}, metastore_url=None, warehouse=wh.location)
    yield manager
    manager.close()


def _writer(wh, overwrite: bool) -> HiveAcidWriter:
    options = parse_source_options({"path": "default.t", "warehouse": wh.location}, {})
    schema = spark_schema_of(wh.metastore.get_table("default.t"))
    return HiveAcidWriter(options, schema, overwrite)


def _held(locks, txn_id):
    return {(i.object.to_name(), i.mode) for i in locks.show(TABLE, extended=True) if i.txn_id == txn_id}


@pytest.mark.parametrize(
    ("overwrite", "mode"), [(False, LockMode.SHARED), (True, LockMode.EXCLUSIVE)], ids=["append", "overwrite"]
)
def test_plan_write_locks_follows_hives_writer(overwrite, mode):
    assert plan_write_locks("default.t", overwrite) == [LockRequest(TABLE, mode)]


@pytest.mark.parametrize(
    ("overwrite", "mode"), [(False, LockMode.SHARED), (True, LockMode.EXCLUSIVE)], ids=["append", "overwrite"]
)
def test_write_holds_its_lock_until_commit(wh, locks, overwrite, mode):
    writer = _writer(wh, overwrite)
    assert _held(locks, writer.txn_id) == {("default.t", mode)}
    writer.commit([])
    assert wh.metastore.get_txn(writer.txn_id).state is TxnState.COMMITTED
    assert _held(locks, writer.txn_id) == set()


def test_write_abort_releases_its_lock(wh, locks):
    writer = _writer(wh, overwrite=True)
    writer.abort([])
    assert wh.metastore.get_txn(writer.txn_id).state is TxnState.ABORTED
    assert _held(locks, writer.txn_id) == set()


def test_write_lock_is_released_when_the_reaper_aborts_a_killed_job(wh, locks):
    """A killed job never calls commit or abort: its transaction times out and is aborted."""
    from pyspark_hiveacid.write_locks import wait_for_release

    writer = _writer(wh, overwrite=False)
    wh.metastore.abort_timed_out_txns(0.0, now=writer_started_long_ago(wh, writer.txn_id))
    assert wh.metastore.get_txn(writer.txn_id).state is TxnState.ABORTED
    assert wait_for_release(writer.options, "default.t", writer.txn_id)


def writer_started_long_ago(wh, txn_id) -> float:
    return wh.metastore.get_txn(txn_id).last_heartbeat + 3600


def test_write_refused_while_an_exclusive_lock_is_held_aborts_its_transaction(wh, locks):
    handle = locks.acquire([LockRequest(TABLE, LockMode.EXCLUSIVE)], holder="drop table", retries=0)
    try:
        with pytest.raises(
            WriteLockError, match=r"^Cannot lock 'default.t' for the hiveacid write of txn \d+: "
        ) as e:
            _writer(wh, overwrite=False)
        assert isinstance(e.value, LockTimeoutError)
        assert "drop table" in str(e.value)
        assert "\n" not in str(e.value)
        assert wh.metastore.get_txn(e.value.txn_id).state is TxnState.ABORTED
    finally:
        locks.release(handle)


def test_holder_gives_up_a_dead_jobs_locks_after_the_reapers_timeout():
    from acid_core.compaction.cleaner import DEFAULT_TXN_TIMEOUT_SECONDS
    from pyspark_hiveacid.write_locks import TXN_TIMEOUT_SECONDS

    assert TXN_TIMEOUT_SECONDS == DEFAULT_TXN_TIMEOUT_SECONDS
