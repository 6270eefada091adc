"""The cleaner: Hive's rule (next txn id <= min open txn), leases, dry run, quarantine, ledger, safety."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from acid_core.compaction.cleaner import (
    CleanerOptions,
    _retry,
    purge_trash,
    read_ledger,
    restore_from_trash,
    run_cleaner,
)
from acid_core.compaction.worker import run_worker
from acid_core.errors import NothingToRestoreError, StorageError, UnsafeCleanError
from acid_core.metastore import CompactionState, CompactionType, TxnType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import create_table, random_history, read_rows, read_rows_at


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield warehouse
    warehouse.close()


def visible(location):
    return sorted(n for n in os.listdir(location) if not n.startswith(("_", ".")))


def major(wh, table="default.t", partition=None):
    wh.metastore.enqueue_compaction(table, partition, CompactionType.MAJOR)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "compacted"
    return outcome


def test_cleaner_waits_for_read_txn_opened_before_the_compaction(wh):
    history = random_history(wh, 21, partitioned=False, buckets=2, txns=8)
    location = wh.metastore.get_table("default.t").location
    reader_txn = wh.metastore.open_txn(txn_type=TxnType.READ_ONLY)
    snapshot = wh.metastore.get_valid_txns(reader_txn)
    expected = read_rows(history, snapshot)
    inputs = visible(location)
    major(wh)
    assert read_rows(history, snapshot) == expected  # the old reader keeps reading its inputs
    assert run_cleaner(wh.metastore) == []
    assert set(inputs) <= set(visible(location))
    assert read_rows(history, snapshot) == expected
    wh.metastore.commit_txn(reader_txn)
    [result] = run_cleaner(wh.metastore)
    assert result.status == "cleaned"
    assert len(visible(location)) == 1
    assert read_rows(history) == expected


def test_cleaner_waits_for_a_lease_that_reads_the_inputs(wh):
    history = random_history(wh, 22, partitioned=False, buckets=2, txns=8)
    location = wh.metastore.get_table("default.t").location
    lease = wh.metastore.take_lease("default.t", ttl_seconds=3600)
    lease_id, lease_snapshot = lease.lease_id, lease.write_ids
    current = wh.metastore.get_valid_txns()
    expected = read_rows(history)
    major(wh)
    [result] = run_cleaner(wh.metastore)
    assert result.status == "waiting"
    assert "1 live reader lease(s) and 0 open transaction(s) still read" in result.message
    # The lease holder reads with its write IDs, with or without the compaction's txn visible.
    assert read_rows_at(history, lease_snapshot, current) == expected
    assert read_rows_at(history, lease_snapshot, wh.metastore.get_valid_txns()) == expected
    wh.metastore.release_lease(lease_id)
    [result] = run_cleaner(wh.metastore)
    assert result.status == "cleaned"
    assert len(visible(location)) == 1
    assert read_rows(history) == expected


def test_cleaner_ignores_expired_leases(wh):
    random_history(wh, 23, partitioned=False, buckets=1, txns=6)
    wh.metastore.take_lease("default.t", ttl_seconds=1, now=1000.0)
    major(wh)
    [result] = run_cleaner(wh.metastore)
    assert result.status == "cleaned"


def test_cleaner_dry_run_changes_nothing(wh):
    random_history(wh, 24, partitioned=True, buckets=2, txns=8)
    table = wh.metastore.get_table("default.t")
    for partition in wh.metastore.list_partitions("default.t"):
        major(wh, partition=partition.name)
    listing = {p: visible(os.path.join(table.location, p)) for p in ("p=a", "p=b")}
    results = run_cleaner(wh.metastore, CleanerOptions(dry_run=True))
    assert {r.status for r in results} == {"dry_run"}
    would = {a.path for r in results for a in r.actions}
    assert all(a.action == "would delete" for r in results for a in r.actions)
    assert {p: visible(os.path.join(table.location, p)) for p in ("p=a", "p=b")} == listing
    assert {c.state for c in wh.metastore.show_compactions()} == {CompactionState.READY_FOR_CLEANING}
    results = run_cleaner(wh.metastore)
    assert {a.path for r in results for a in r.actions} == would
    for partition in ("p=a", "p=b"):
        assert len(visible(os.path.join(table.location, partition))) == 1


def test_cleaner_ledger_records_every_path_with_compaction_and_reason(wh):
    random_history(wh, 25, partitioned=False, buckets=1, txns=10)
    location = wh.metastore.get_table("default.t").location
    before = set(visible(location))
    outcome = major(wh)
    [result] = run_cleaner(wh.metastore)
    ledger = read_ledger(location)
    assert {os.path.basename(a.path) for a in ledger} == before
    assert {a.compaction_id for a in ledger} == {outcome.compaction_id}
    assert {a.action for a in ledger} == {"deleted"}
    assert {a.reason for a in ledger} <= {"obsolete", "aborted"}
    assert sorted(ledger, key=lambda a: a.path) == sorted(result.actions, key=lambda a: a.path)


def test_cleaner_quarantine_then_restore_then_purge(wh):
    history = random_history(wh, 26, partitioned=False, buckets=1, txns=8)
    location = wh.metastore.get_table("default.t").location
    before = set(visible(location))
    expected = read_rows(history)
    outcome = major(wh)
    [result] = run_cleaner(wh.metastore, CleanerOptions(quarantine=True))
    assert {a.action for a in result.actions} == {"quarantined"}
    assert len(visible(location)) == 1
    trash = os.path.join(location, "_acidflow_trash", f"c{outcome.compaction_id}")
    assert set(os.listdir(trash)) == before
    assert read_rows(history) == expected
    restored = restore_from_trash(location, outcome.compaction_id)
    assert {os.path.basename(p) for p in restored} == before
    assert set(visible(location)) == before | set(outcome.outputs)
    assert read_rows(history) == expected
    # Issue 24: a second restore, or one of a compaction that quarantined nothing, is an error,
    # not a silent success; nothing moves.
    after = set(visible(location))
    with pytest.raises(NothingToRestoreError) as caught:
        restore_from_trash(location, outcome.compaction_id)
    assert str(caught.value) == (
        f"Nothing to restore for compaction {outcome.compaction_id} of the table at {location!r}: none of its "
        f"{len(before)} quarantined directories is in the trash any more (restored or purged before); expected "
        "a compaction whose directories `clean --quarantine` moved to the trash; hint: SHOW COMPACTIONS lists "
        "the compactions; <table>/_acidflow_cleaner/ledger what was quarantined"
    )
    with pytest.raises(NothingToRestoreError) as caught:
        restore_from_trash(location, 999999)
    assert str(caught.value).startswith(
        f"Nothing to restore for compaction 999999 of the table at {location!r}: the cleaner's ledger has no "
        "directory it quarantined; expected "
    )
    assert set(visible(location)) == after
    # Quarantine again through a new compaction of the restored (obsolete) directories, then purge.
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    run_worker(wh.metastore)
    run_cleaner(wh.metastore, CleanerOptions(quarantine=True))
    purged = purge_trash(location, older_than_seconds=0)
    assert purged
    assert all(not os.path.exists(p) for p in purged)


def _outside_partition(wh, location):
    create_table(wh, "default.x", partitioned=True, buckets=1)
    wh.metastore.add_partition("default.x", {"p": "z"}, location=location)
    for i in range(3):
        with wh.transaction(heartbeat_seconds=None) as txn:
            txn.insert("default.x", pa.table({"id": pa.array([i], pa.int32()), "v": ["a"], "p": ["z"]}))
    major(wh, "default.x", "p=z")


def test_cleaner_cleans_a_partition_outside_the_table_location_inside_its_own_location(wh, tmp_path):
    """Hive's ADD PARTITION .. LOCATION: the partition owns its own location, and only that."""
    outside = str(tmp_path / "elsewhere" / "p=z")
    sentinel = tmp_path / "elsewhere" / "delta_0000001_0000001_0000"  # a sibling it does not own
    sentinel.mkdir(parents=True)
    _outside_partition(wh, outside)
    before = visible(outside)
    [result] = run_cleaner(wh.metastore)
    assert result.status == "cleaned"
    assert {os.path.dirname(a.path) for a in result.actions} == {outside}
    assert visible(outside) == [n for n in before if n.startswith("base_")]
    assert sentinel.is_dir()


def test_cleaner_refuses_a_partition_location_that_holds_the_table(wh, tmp_path):
    """A metastore row whose partition location is an ancestor of the table is input, not trust."""
    _outside_partition(wh, str(tmp_path))
    before = visible(str(tmp_path))
    entry = wh.metastore.find_ready_to_clean()[0]
    from acid_core.compaction.cleaner import clean_compaction

    with pytest.raises(UnsafeCleanError, match=r"Refusing to clean .*: it is not inside the table location"):
        clean_compaction(wh.metastore, entry)
    [result] = run_cleaner(wh.metastore)  # logged and reported; retried after a back-off
    assert (result.compaction_id, result.status, result.actions) == (entry.id, "retrying", ())
    assert "it is not inside the table location" in result.message
    assert visible(str(tmp_path)) == before
    assert wh.metastore.get_compaction(entry.id).state is CompactionState.READY_FOR_CLEANING


def test_cleaner_retention_delays_cleaning(wh):
    random_history(wh, 27, partitioned=False, buckets=1, txns=6)
    major(wh)
    committed = wh.metastore.show_compactions()[0].commit_time
    options = CleanerOptions(retention_seconds=600)
    assert run_cleaner(wh.metastore, options, now=committed + 10) == []
    [result] = run_cleaner(wh.metastore, options, now=committed + 601)
    assert result.status == "cleaned"


def test_retry_backs_off_exponentially_then_succeeds():
    sleeps, calls = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise StorageError("store hiccup")

    _retry(CleanerOptions(retries=4, backoff_seconds=0.5, sleep=sleeps.append), "delete x", flaky)
    assert sleeps == [0.5, 1.0]
    assert len(calls) == 3


def test_retry_gives_up_after_the_last_attempt():
    sleeps = []

    def broken():
        raise StorageError("store down")

    with pytest.raises(StorageError, match="store down"):
        _retry(CleanerOptions(retries=3, backoff_seconds=0.1, sleep=sleeps.append), "delete x", broken)
    assert sleeps == [0.1, 0.2]
