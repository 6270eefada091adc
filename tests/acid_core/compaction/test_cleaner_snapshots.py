"""The cleaner and the snapshots readers hold (issue 11, parts 2 and 3).

A lease is a full snapshot (write IDs and txns): the cleaner keeps what it reads however many
compactions run. An older compaction never blocks cleaning forever: it is cleaned as of its own
commit, or found superseded, or retried with back-off until it fails with a reason.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from acid_core.compaction.cleaner import (
    CleanerOptions,
    ReaderSnapshot,
    reader_snapshots,
    run_cleaner,
    snapshot_read_set,
)
from acid_core.compaction.planner import HIVE31_NAMES
from acid_core.compaction.worker import run_worker
from acid_core.errors import SnapshotLostError
from acid_core.fs import file_io_for
from acid_core.metastore import CompactionState, CompactionType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import History, create_table, read_rows_at

TABLE = "default.t"


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield warehouse
    warehouse.close()


def _table(wh, properties=None):
    create_table(wh, TABLE, partitioned=False, buckets=1, properties=properties)
    return wh.metastore.get_table(TABLE).location


def _insert(wh, key):
    with wh.transaction(heartbeat_seconds=None) as txn:
        txn.insert(TABLE, pa.table({"id": pa.array([key], pa.int32()), "v": [f"v{key}"]}))


def _compact(wh, kind):
    wh.metastore.enqueue_compaction(TABLE, None, kind)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "compacted", outcome.message
    return outcome


def _visible(location):
    return sorted(n for n in os.listdir(location) if not n.startswith(("_", ".")))


def _lease_rows(wh, lease):
    return read_rows_at(History(wh, TABLE, False), lease.write_ids, lease.txns)


def test_cleaner_keeps_a_lease_snapshot_across_two_major_compactions(wh):
    """The issue's example: lease after 3 inserts; insert, major, clean; 2 inserts, major, clean."""
    location = _table(wh)
    for key in (1, 2, 3):
        _insert(wh, key)
    lease = wh.metastore.take_lease(TABLE, ttl_seconds=3600)
    before = _lease_rows(wh, lease)
    assert [row[3] for row in before] == [1, 2, 3]

    _insert(wh, 4)
    _compact(wh, CompactionType.MAJOR)
    assert {r.status for r in run_cleaner(wh.metastore)} == {"waiting"}
    _insert(wh, 5)
    _insert(wh, 6)
    _compact(wh, CompactionType.MAJOR)
    results = run_cleaner(wh.metastore)

    assert [r.status for r in results] == ["waiting"]
    assert "reader lease 1" in results[0].message
    assert {"delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000003_0000003_0000"} <= set(
        _visible(location)
    )
    assert _lease_rows(wh, lease) == before

    wh.metastore.release_lease(lease.lease_id)
    assert {r.status for r in run_cleaner(wh.metastore)} == {"cleaned"}
    assert _visible(location) == ["base_0000006_v0000008"]
    assert sorted(r["id"] for r in wh.read(TABLE).to_pylist()) == [1, 2, 3, 4, 5, 6]


def test_cleaner_keeps_a_lease_snapshot_when_compactions_outpace_it(wh):
    """A minor and a major after the lease: the lease still reads its own deltas, exactly."""
    location = _table(wh)
    for key in (1, 2):
        _insert(wh, key)
    lease = wh.metastore.take_lease(TABLE, ttl_seconds=3600)
    before = _lease_rows(wh, lease)
    for key in (3, 4):
        _insert(wh, key)
    _compact(wh, CompactionType.MINOR)
    _insert(wh, 5)
    _compact(wh, CompactionType.MAJOR)
    for _ in range(3):
        run_cleaner(wh.metastore)
        assert _lease_rows(wh, lease) == before
    assert {"delta_0000001_0000001_0000", "delta_0000002_0000002_0000"} <= set(_visible(location))


def test_cleaner_minor_then_major_before_cleaning_converges_in_one_run(wh):
    """Issue 11 part 3: the minor used to fail with NotEnoughHistoryError on every run."""
    location = _table(wh)
    for key in (1, 2, 3):
        _insert(wh, key)
    minor = _compact(wh, CompactionType.MINOR)
    _insert(wh, 4)
    _insert(wh, 5)
    major = _compact(wh, CompactionType.MAJOR)

    results = run_cleaner(wh.metastore)

    assert [(r.compaction_id, r.status) for r in results] == [
        (minor.compaction_id, "cleaned"),
        (major.compaction_id, "cleaned"),
    ]
    assert _visible(location) == list(major.outputs)
    states = {c.id: c.state for c in wh.metastore.show_compactions(TABLE)}
    assert states == {
        minor.compaction_id: CompactionState.SUCCEEDED,
        major.compaction_id: CompactionState.SUCCEEDED,
    }
    assert sorted(r["id"] for r in wh.read(TABLE).to_pylist()) == [1, 2, 3, 4, 5]


def test_cleaner_superseded_compaction_is_marked_cleaned_without_deleting(wh):
    """Hive 3.1 names (no ``_v``): the newer base hides nothing by txn, so the older is superseded."""
    location = _table(wh, {HIVE31_NAMES: "true"})
    for key in (1, 2, 3):
        _insert(wh, key)
    minor = _compact(wh, CompactionType.MINOR)
    _insert(wh, 4)
    major = _compact(wh, CompactionType.MAJOR)

    results = run_cleaner(wh.metastore)

    assert [(r.compaction_id, r.status) for r in results] == [
        (minor.compaction_id, "superseded"),
        (major.compaction_id, "cleaned"),
    ]
    assert results[0].actions == ()
    assert f"compaction {major.compaction_id}" in results[0].message
    assert _visible(location) == list(major.outputs)
    assert sorted(r["id"] for r in wh.read(TABLE).to_pylist()) == [1, 2, 3, 4]


def test_cleaner_retries_with_back_off_then_fails_with_the_reason(wh):
    """Hive's handleCleanerAttemptFailure: retention 300 s * 2**n, failed after max attempts."""
    location = _table(wh)
    for key in (1, 2, 3):
        _insert(wh, key)
    _compact(wh, CompactionType.MAJOR)
    [entry] = wh.metastore.find_ready_to_clean()
    # A persistent failure: a malformed ledger file stops this compaction's cleaning (StorageError).
    ledger = os.path.join(location, "_acidflow_cleaner", "ledger")
    os.makedirs(ledger)
    with open(os.path.join(ledger, f"c{entry.id}.json"), "w") as f:
        f.write("not json")
    before = _visible(location)
    options = CleanerOptions(max_attempts=2, retry_retention_seconds=100)
    start = entry.commit_time + 1

    [first] = run_cleaner(wh.metastore, options, now=start)
    assert first.status == "retrying"
    assert "retry 1 of 2 after 100 s" in first.message
    assert "is not JSON" in first.message
    assert wh.metastore.get_compaction(entry.id).retry_retention == 100
    assert run_cleaner(wh.metastore, options, now=start + 50) == []  # backing off
    [second] = run_cleaner(wh.metastore, options, now=start + 101)
    assert "retry 2 of 2 after 200 s" in second.message
    # As Hive's findReadyToClean: commit time + retention + CQ_RETRY_RETENTION.
    assert run_cleaner(wh.metastore, options, now=start + 150) == []
    [last] = run_cleaner(wh.metastore, options, now=start + 201)
    assert last.status == "failed"

    info = wh.metastore.get_compaction(entry.id)
    assert info.state is CompactionState.FAILED
    assert info.error_message is not None
    assert info.error_message.startswith("cleaning failed 3 time(s), giving up: Ledger file ")
    assert run_cleaner(wh.metastore, options, now=start + 10_000) == []
    assert _visible(location) == before


def test_cleaner_lost_lease_snapshot_is_an_error_and_nothing_is_deleted(wh):
    """A live lease that cannot read its snapshot any more is a bug to surface, not 'needs nothing'."""
    location = _table(wh)
    for key in (1, 2):
        _insert(wh, key)
    lease = wh.metastore.take_lease(TABLE, ttl_seconds=3600)
    _insert(wh, 3)
    _compact(wh, CompactionType.MAJOR)
    # Simulate the bug: the lease's stored txn list sees the compactor's base_3_v, which its
    # write IDs (high watermark 2) cannot use: getAcidState raises NotEnoughHistory for it.
    current = wh.metastore.get_valid_txns()
    with wh.metastore._engine.begin() as connection:
        connection.exec_driver_sql(
            'UPDATE "READER_LEASES" SET "RL_TXN_LIST" = ? WHERE "RL_ID" = ?',
            (current.to_string(), lease.lease_id),
        )
    io, root = file_io_for(location)
    broken = ReaderSnapshot("reader lease 1", lease.write_ids, (current,))
    with pytest.raises(SnapshotLostError, match=r"The snapshot of reader lease 1 \(write IDs 'default\.t:2:"):
        snapshot_read_set(io, root, broken)
    listing = _visible(location)

    [result] = run_cleaner(wh.metastore)

    assert result.status == "retrying"
    assert "reader lease 1" in result.message
    assert "is no longer readable" in result.message
    assert _visible(location) == listing


def test_reader_snapshots_lists_live_leases_and_open_transactions(wh):
    _table(wh)
    _insert(wh, 1)
    lease = wh.metastore.take_lease(TABLE, ttl_seconds=60, now=1_000.0)
    expired = wh.metastore.take_lease(TABLE, ttl_seconds=1, now=1_000.0)
    txn = wh.metastore.open_txn()
    table = wh.metastore.get_table(TABLE)

    snapshots = reader_snapshots(wh.metastore, table, now=1_010.0, current=wh.metastore.get_valid_txns())

    assert [s.holder for s in snapshots] == [f"reader lease {lease.lease_id}", f"open transaction {txn}"]
    assert snapshots[0].write_ids == lease.write_ids
    assert snapshots[0].views == (lease.txns,)
    assert snapshots[1].views == (wh.metastore.get_valid_txns(txn),)
    assert expired.lease_id not in {s.holder for s in snapshots}


def test_snapshot_read_set_reads_what_the_lease_reads(wh):
    location = _table(wh)
    for key in (1, 2):
        _insert(wh, key)
    lease = wh.metastore.take_lease(TABLE, ttl_seconds=60)
    _insert(wh, 3)
    _compact(wh, CompactionType.MAJOR)
    io, root = file_io_for(location)
    reads = snapshot_read_set(io, root, ReaderSnapshot("reader lease", lease.write_ids, (lease.txns,)))
    assert reads == {"delta_0000001_0000001_0000", "delta_0000002_0000002_0000"}


def test_cleaner_failed_compaction_leftovers_are_cleaned_by_the_next_one(wh):
    """A terminal failure does not strand files: the next compaction's obsolete set holds them."""
    location = _table(wh)
    for key in (1, 2):
        _insert(wh, key)
    lease = wh.metastore.take_lease(TABLE, ttl_seconds=3600)
    _insert(wh, 3)
    first = _compact(wh, CompactionType.MAJOR)
    current = wh.metastore.get_valid_txns()
    with wh.metastore._engine.begin() as connection:  # the lost-snapshot bug, as above
        connection.exec_driver_sql(
            'UPDATE "READER_LEASES" SET "RL_TXN_LIST" = ? WHERE "RL_ID" = ?',
            (current.to_string(), lease.lease_id),
        )
    [result] = run_cleaner(wh.metastore, CleanerOptions(max_attempts=0))
    assert result.status == "failed"
    assert wh.metastore.get_compaction(first.compaction_id).state is CompactionState.FAILED
    wh.metastore.release_lease(lease.lease_id)
    _insert(wh, 4)
    second = _compact(wh, CompactionType.MAJOR)

    assert [r.status for r in run_cleaner(wh.metastore)] == ["cleaned"]
    assert _visible(location) == list(second.outputs)
    assert sorted(r["id"] for r in wh.read(TABLE).to_pylist()) == [1, 2, 3, 4]


def test_cleaner_lease_taken_before_revision_0003_is_protected_or_refused_never_deleted(wh):
    """A lease without its txn list: its deltas are kept while a view reads them, then refused."""
    location = _table(wh)
    for key in (1, 2, 3):
        _insert(wh, key)
    lease = wh.metastore.take_lease(TABLE, ttl_seconds=3600)
    with wh.metastore._engine.begin() as connection:
        connection.exec_driver_sql('UPDATE "READER_LEASES" SET "RL_TXN_LIST" = NULL')
    assert wh.metastore.get_lease(lease.lease_id).txns is None
    inputs = {"delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000003_0000003_0000"}
    _insert(wh, 4)
    _compact(wh, CompactionType.MAJOR)
    assert [r.status for r in run_cleaner(wh.metastore)] == ["waiting"]
    _insert(wh, 5)
    _compact(wh, CompactionType.MAJOR)

    results = run_cleaner(wh.metastore)

    # Both views of the old lease see a base it cannot use: refused, retried later (the older
    # entry's back-off lets the newer one be tried, as Hive's findReadyToClean does), never deleted.
    assert [r.status for r in results] == ["retrying", "retrying"]
    assert all("The snapshot of reader lease 1" in r.message for r in results)
    assert inputs <= set(_visible(location))
