"""run_initiator over real directories: facts measured from the listing, decisions queued."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from acid_core.compaction import backlog
from acid_core.compaction.backlog import collect_facts, iter_initiator, run_initiator
from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.initiator import DecisionReason
from acid_core.compaction.worker import run_worker
from acid_core.errors import StorageError
from acid_core.fs import LocalFileIO
from acid_core.metastore import CompactionState
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import create_table


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    create_table(warehouse, "default.a", partitioned=False, buckets=1)
    yield warehouse
    warehouse.close()


def insert(wh, ids, *, abort=False):
    txn = wh.transaction(heartbeat_seconds=None).begin()
    txn.insert("default.a", pa.table({"id": pa.array(ids, pa.int32()), "v": [str(i) for i in ids]}))
    if abort:
        txn.abort()
    else:
        txn.commit()


def test_collect_facts_counts_deltas_bytes_and_aborted_age(wh):
    insert(wh, [1, 2])
    insert(wh, [3], abort=True)
    insert(wh, [4])
    table = wh.metastore.get_table("default.a")
    aborted = os.path.join(table.location, "delta_0000002_0000002_0000")
    old = time.time() - 13 * 3600
    for name in os.listdir(aborted):
        os.utime(os.path.join(aborted, name), (old, old))
    facts = collect_facts(wh.metastore, table, None)
    assert (facts.delta_count, facts.aborted_count, facts.base_bytes) == (2, 1, 0)
    expected_bytes = sum(
        os.path.getsize(os.path.join(table.location, d, f))
        for d in ("delta_0000001_0000001_0000", "delta_0000003_0000003_0000")
        for f in os.listdir(os.path.join(table.location, d))
    )
    assert facts.delta_bytes == expected_bytes
    assert facts.oldest_aborted_age_seconds == pytest.approx(13 * 3600, abs=120)


def test_old_aborted_directory_triggers_major_and_is_cleaned(wh):
    insert(wh, [1, 2])
    insert(wh, [3], abort=True)
    location = wh.metastore.get_table("default.a").location
    aborted = os.path.join(location, "delta_0000002_0000002_0000")
    old = time.time() - 13 * 3600
    for name in os.listdir(aborted):
        os.utime(os.path.join(aborted, name), (old, old))
    [dry] = run_initiator(wh.metastore, dry_run=True)
    assert dry.decision.reason is DecisionReason.OLD_ABORTS
    assert dry.compaction_id is None
    assert wh.metastore.show_compactions() == []
    [entry] = run_initiator(wh.metastore)
    assert entry.compaction_id == 1
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "compacted"
    [result] = run_cleaner(wh.metastore)
    assert any(a.reason == "aborted" and a.path == aborted for a in result.actions)
    assert sorted(n for n in os.listdir(location) if not n.startswith(("_", "."))) == [
        "base_0000002_v0000003"
    ]
    assert wh.metastore.get_compaction(1).state is CompactionState.SUCCEEDED
    assert sorted(r["id"] for r in wh.read("default.a").to_pylist()) == [1, 2]
    [after] = run_initiator(wh.metastore, dry_run=True)
    assert after.decision.reason is DecisionReason.BELOW_THRESHOLDS


class _CountingFileIO(LocalFileIO):
    """The local FileIO, counting the calls that are round trips on S3/HDFS (a recursive listing: one)."""

    def __init__(self):
        super().__init__()
        self.calls = []
        self._in_tree = False

    def list_dir(self, path):
        if not self._in_tree:
            self.calls.append(("list_dir", path))
        return super().list_dir(path)

    def list_entries(self, path):
        self.calls.append(("list_entries", path))
        return super().list_entries(path)

    def list_tree(self, path):
        self.calls.append(("list_tree", path))
        self._in_tree = True
        try:
            return super().list_tree(path)
        finally:
            self._in_tree = False

    def info(self, path):
        self.calls.append(("info", path))
        return super().info(path)


def _partitioned(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    create_table(warehouse, "default.p", partitioned=True, buckets=1)
    for part in ("a", "b", "c"):
        for ids in ([1, 2], [3]):
            txn = warehouse.transaction(heartbeat_seconds=None).begin()
            txn.insert(
                "default.p",
                pa.table(
                    {"id": pa.array(ids, pa.int32()), "v": [str(i) for i in ids], "p": [part] * len(ids)}
                ),
            )
            txn.commit()
    return warehouse


def test_initiator_lists_a_partitioned_table_once_and_decides_as_partition_by_partition(
    tmp_path, monkeypatch
):
    """One recursive listing of the table (a non-empty listing proves it exists: no stat), not a
    listing per partition and per delta; the decisions (and their measured numbers) equal those of
    the partition-by-partition path."""
    wh = _partitioned(tmp_path)
    try:
        table = wh.metastore.get_table("default.p")

        def unlistable(file_io, root):
            raise StorageError(f"cannot list {root!r}")

        with monkeypatch.context() as patched:
            patched.setattr(backlog, "PrelistedFileIO", unlistable)
            one_by_one = run_initiator(wh.metastore, dry_run=True)
        counting = _CountingFileIO()
        monkeypatch.setattr(backlog, "file_io_for", lambda location: (counting, location))
        entries = run_initiator(wh.metastore, dry_run=True)
        assert [kind for kind, _ in counting.calls] == ["list_tree"]
        assert counting.calls[0][1] == table.location
        assert [e.decision for e in entries] == [e.decision for e in one_by_one]
        assert [e.decision.numbers["delta_count"] for e in entries] == [2, 2, 2]
    finally:
        wh.close()


def test_iter_initiator_yields_the_same_backlog_as_run_initiator(tmp_path):
    wh = _partitioned(tmp_path)
    try:
        listed = run_initiator(wh.metastore, dry_run=True)
        streamed = list(iter_initiator(wh.metastore, dry_run=True))
        assert [e.decision for e in streamed] == [e.decision for e in listed]
        assert len(listed) == 3
    finally:
        wh.close()


def test_initiator_lists_only_partitions_changed_since_its_last_cycle(tmp_path, monkeypatch):
    """Hive's Initiator considers only what was written, aborted or compacted since its last cycle:
    each later cycle lists (once each) only those partitions, and a settings change lists all."""
    wh = _partitioned(tmp_path)
    try:
        table = wh.metastore.get_table("default.p")
        location = {p.name: p.location for p in wh.metastore.list_partitions("default.p")}
        counting = _CountingFileIO()
        monkeypatch.setattr(backlog, "file_io_for", lambda location: (counting, location))

        def cycle(**options):
            counting.calls.clear()
            stats = backlog.InitiatorStats()
            entries = run_initiator(wh.metastore, stats=stats, lookback_seconds=0, **options)
            return [e.decision.partition for e in entries], [path for _, path in counting.calls], stats

        def write(part, *, abort=False):
            txn = wh.transaction(heartbeat_seconds=None).begin()
            txn.insert("default.p", pa.table({"id": pa.array([9], pa.int32()), "v": ["x"], "p": [part]}))
            txn.abort() if abort else txn.commit()
            # The next cycle starts in a later millisecond than the commit: "written since the
            # previous cycle" compares millisecond stamps inclusively (CTC_TIMESTAMP >= its start),
            # so a cycle begun in the commit's own millisecond counts the write in the cycle after
            # too (with no lookback here: harmless, one extra listing; it made this test flaky).
            time.sleep(0.003)

        parts, calls, stats = cycle()
        assert (parts, calls, stats.reasons) == (["p=a", "p=b", "p=c"], [table.location], {"first_cycle": 3})
        parts, calls, stats = cycle()
        assert (parts, calls, stats.skipped) == ([], [], 3)

        write("b")
        parts, calls, stats = cycle()
        assert (parts, calls, stats.skipped, stats.reasons) == (["p=b"], [location["p=b"]], 2, {"written": 1})

        # An aborted write is listed on every cycle until a compaction cleans it (its age matters).
        write("c", abort=True)
        for _ in range(2):
            parts, calls, stats = cycle()
            assert (parts, calls, stats.reasons) == (["p=c"], [location["p=c"]], {"aborted_writes": 1})

        # A dry run lists everything and records no mark.
        parts, _, stats = cycle(dry_run=True)
        assert (parts, stats.skipped) == (["p=a", "p=b", "p=c"], 0)
        assert cycle()[0] == ["p=c"]

        # A lower threshold in TBLPROPERTIES changes the decisions: every partition is listed again.
        wh.metastore.alter_table_properties(
            "default.p", {"compactorthreshold.hive.compactor.delta.num.threshold": "1"}
        )
        counting.calls.clear()
        stats = backlog.InitiatorStats()
        entries = run_initiator(wh.metastore, stats=stats, lookback_seconds=0)
        assert stats.reasons == {"settings_changed": 3}
        assert [counting.calls] == [[("list_tree", table.location)]]
        queued = {e.decision.partition: e.compaction_id for e in entries}
        assert None not in queued.values()

        # Queued compactions keep their partitions listed; a finished one (aborted long ago) does
        # not; a failed newest compaction does, whenever it failed (its retry time comes with no change).
        long_ago = time.time() - 30 * 86400
        wh.metastore.abort_compaction(queued["p=b"], now=long_ago)
        wh.metastore.claim_compaction(queued["p=a"], "test-worker")
        wh.metastore.mark_failed(queued["p=a"], "boom", now=long_ago)
        parts, _, stats = cycle()
        assert parts == ["p=a", "p=c"]
        assert stats.reasons == {"failed_compaction": 1, "aborted_writes": 1}
    finally:
        wh.close()


def test_initiator_cycle_stopped_half_way_records_no_mark_next_cycle_lists_everything(tmp_path):
    """A table's mark is written only after all its partitions were decided: a cycle that stops
    after the first partition (a crash, a consumer that stops reading) leaves no mark behind."""
    wh = _partitioned(tmp_path)
    try:
        cycle = iter_initiator(wh.metastore, lookback_seconds=0)
        assert next(cycle).decision.partition == "p=a"
        cycle.close()
        assert wh.metastore.load_initiator_marks() == {}
        stats = backlog.InitiatorStats()
        assert len(run_initiator(wh.metastore, stats=stats, lookback_seconds=0)) == 3
        assert stats.reasons == {"first_cycle": 3}
        assert list(wh.metastore.load_initiator_marks()) == ["default.p"]
    finally:
        wh.close()
