"""A slow store under a compaction, a clean and a lease reader (issue 24, storage faults).

The warehouse is the real local disk behind ``slow_store`` (``DelayingFileIO``, installed with
``acid_core.fs.set_file_io_hook``): every file operation on the table waits first, as an object
store or a loaded HDFS answers. The metastore (SQLite) is not slow. What must still hold:

- a compaction heartbeats its transaction (after each bucket, and from a thread every half timeout:
  without the thread the listing and the first bucket outlasted the timeout and the reaper aborted
  it, found by this test), so the reaper (Hive's AcidHouseKeeperService, which every initiator and
  cleaner run calls) never aborts it although it runs longer than the transaction timeout, and a
  second worker neither claims nor "recovers" it; it commits once;
- a reader whose lease TTL is shorter than its read keeps the lease alive (``LeaseHeartbeat``): the
  cleaners running meanwhile wait and delete nothing it reads; its rows are its snapshot's;
- two cleaners on one slow clean (the cleaner holds no claim: every step is idempotent) leave the
  compaction cleaned once, the base and every row intact.

Timing: the delays are sleeps (they do not stretch under load); what the tests compare with the
transaction timeout is how long the compaction's transaction was open, measured, not assumed.
"""

from __future__ import annotations

import os
import threading
import time

import pyarrow as pa
import pytest

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.common import reap_timed_out_transactions
from acid_core.compaction.worker import WorkerOptions, default_worker_id, execute_compaction, run_worker
from acid_core.metastore import (
    Column,
    CompactionState,
    CompactionType,
    SqlMetastore,
    TableDefinition,
    TxnState,
)
from acid_core.metastore.lease_heartbeat import LeaseHeartbeat
from acid_core.writes import Warehouse
from acid_core.writes.reading import read_table
from tests.reliability.faults import slow_store

pytestmark = pytest.mark.timeout(300)

_BUCKETS = 4
_TXN_TIMEOUT_SECONDS = 4.0  # the reaper's timeout in these tests (Hive's hive.txn.timeout, 300 s)
# Heartbeats every quarter timeout (Hive's: every half): a host that stalls this process for up to
# 3 s (CI did once) must not let the reaper, which wakes with the heartbeat thread, see a lapse.
_HEARTBEAT_SECONDS = _TXN_TIMEOUT_SECONDS / 4
_LEASE_TTL_SECONDS = 4.0  # shorter than the slow read (about 7 s), long against a stalled host


def _url(tmp_path):
    return f"sqlite:///{tmp_path / 'metastore.sqlite'}"


@pytest.fixture
def wh(tmp_path):
    root = str(tmp_path / "wh")
    with Warehouse(root, SqlMetastore(_url(tmp_path), warehouse=root), heartbeat_seconds=None) as warehouse:
        yield warehouse


def _other_store(tmp_path, wh):
    """A second process's view of the same metastore (another worker, cleaner or reader)."""
    return SqlMetastore(_url(tmp_path), warehouse=wh.location)


def _table_with_deltas(wh, buckets=1):
    wh.metastore.create_table(
        TableDefinition(
            "t",
            (Column("id", "int"),),
            bucket_columns=("id",) if buckets > 1 else (),
            num_buckets=buckets if buckets > 1 else 0,
            properties={"transactional": "true"},
        )
    )
    for first in (0, 100, 200):
        with wh.transaction() as txn:
            txn.insert("t", pa.table({"id": pa.array(range(first, first + 12), pa.int32())}))
    return sorted(wh.read("t").column("id").to_pylist())


def _location(wh):
    return wh.metastore.get_table("t").location


def _ids(wh):
    return sorted(wh.read("t").column("id").to_pylist())


def _directories(wh):
    return sorted(d for d in os.listdir(_location(wh)) if not d.startswith(("_", ".")))


def test_compaction_on_slow_store_heartbeats_reaper_and_second_worker_spare_it(wh, tmp_path):
    """A compaction longer than the txn timeout on a slow store: the reaper (every 0.2 s) never aborts
    its transaction, a second worker run takes nothing, the compaction commits once, no row lost."""
    rows = _table_with_deltas(wh, buckets=_BUCKETS)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    claimed = wh.metastore.find_next_to_compact(default_worker_id())
    other = _other_store(tmp_path, wh)
    stop, reaped, second_worker, open_since = threading.Event(), [], [], []

    def housekeeper():
        while not stop.wait(0.2):
            reaped.extend(reap_timed_out_transactions(other, _TXN_TIMEOUT_SECONDS))
            if open_since and not second_worker and time.time() - open_since[0] > _TXN_TIMEOUT_SECONDS:
                second_worker.append(run_worker(other, worker_id="worker-2"))

    def on_step(step):
        if step == "writing":
            open_since.append(time.time())  # the txn opened just before (listing and planning)

    thread = threading.Thread(target=housekeeper)
    thread.start()
    try:
        with slow_store(_location(wh), delay_seconds=0.3) as calls:
            outcome = execute_compaction(
                wh.metastore,
                claimed,
                on_step=on_step,
                options=WorkerOptions(heartbeat_seconds=_HEARTBEAT_SECONDS),
            )
    finally:
        stop.set()
        thread.join()
        other.close()
    open_seconds = time.time() - open_since[0]
    assert outcome.status == "compacted"
    assert open_seconds > _TXN_TIMEOUT_SECONDS, "the store was not slow enough to prove anything"
    assert second_worker == [[]]  # ran while the compaction wrote: nothing claimed, nothing recovered
    assert calls.count("open_input") >= _BUCKETS
    entry = wh.metastore.get_compaction(claimed.id)
    assert reaped == []
    assert entry.state is CompactionState.READY_FOR_CLEANING
    assert wh.metastore.get_txn(entry.txn_id).state is TxnState.COMMITTED
    assert [c.id for c in wh.metastore.show_compactions()] == [claimed.id]  # compacted once
    assert _ids(wh) == rows


def test_lease_reader_on_slow_store_keeps_its_snapshot_while_cleaners_run(wh, tmp_path):
    """A lease of TTL 4 s renewed every 0.3 s, a read that takes about 7 s on the slow store, a
    cleaner every 0.2 s meanwhile: it waits, deletes nothing the reader reads; the reader gets its rows.

    The TTL is 13 beats long: a CI host that stalled this process for 3 s expired a 1 s lease (its
    renewal came late, the test failed on ``heartbeat.error``, nothing was deleted)."""
    rows = _table_with_deltas(wh)
    lease = wh.metastore.take_lease("default.t", _LEASE_TTL_SECONDS)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    [outcome] = run_worker(wh.metastore, worker_id="worker-1")
    assert outcome.status == "compacted"
    with wh.transaction() as txn:  # a row the lease's snapshot must not show
        txn.insert("t", pa.table({"id": pa.array([999], pa.int32())}))
    table = wh.metastore.get_table("t")
    stop, statuses = threading.Event(), []

    def cleaners():
        store = _other_store(tmp_path, wh)
        try:
            while not stop.wait(0.2):
                statuses.extend(r.status for r in run_cleaner(store))
        finally:
            store.close()

    thread = threading.Thread(target=cleaners)
    started = time.monotonic()
    with (
        LeaseHeartbeat(
            lambda: _other_store(tmp_path, wh), lease.lease_id, _LEASE_TTL_SECONDS, 0.3
        ) as heartbeat,
        slow_store(_location(wh), delay_seconds=0.5) as calls,
    ):
        thread.start()
        try:
            seen = read_table(wh, table, lease.write_ids, lease.txns, False, True)
        finally:
            stop.set()
            thread.join()
    assert time.monotonic() - started > _LEASE_TTL_SECONDS, "the read did not outlast the lease's TTL"
    assert heartbeat.error is None
    assert heartbeat.renewals >= 2  # the first beat at once, then at least one during the read
    assert calls.count("open_input") >= 3  # the three deltas, each read late
    assert sorted(seen.column("id").to_pylist()) == rows
    assert statuses
    assert set(statuses) == {"waiting"}
    assert len([d for d in _directories(wh) if d.startswith("delta_")]) == 4  # 3 read + the new row
    wh.metastore.release_lease(lease.lease_id)
    assert [r.status for r in run_cleaner(wh.metastore)] == ["cleaned"]
    assert _ids(wh) == [*rows, 999]


def test_two_cleaners_on_a_slow_clean_clean_once_and_lose_nothing(wh, tmp_path):
    """Two cleaner runs at once on one slow clean: the deltas go once, the compaction is cleaned once
    (one 'succeeded' entry), the base and every row intact; a third run finds nothing to do."""
    rows = _table_with_deltas(wh)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    [outcome] = run_worker(wh.metastore, worker_id="worker-1")
    results, errors = [], []

    def cleaner():
        store = _other_store(tmp_path, wh)
        try:
            results.append([r.status for r in run_cleaner(store)])
        except Exception as error:  # reported below: the test fails with it
            errors.append(error)
        finally:
            store.close()

    with slow_store(_location(wh), delay_seconds=0.2):
        threads = [threading.Thread(target=cleaner) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert sorted(status for run in results for status in run).count("cleaned") >= 1
    assert [c.state for c in wh.metastore.show_compactions()] == [CompactionState.SUCCEEDED]
    assert run_cleaner(wh.metastore) == []
    assert _directories(wh) == list(outcome.outputs)
    assert _ids(wh) == rows
