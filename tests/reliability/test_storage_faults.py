"""The table's file system remounted read-only in the middle of a clean (issue 24, storage faults).

The warehouse lives on a tmpfs of the module's own (``remountable_tmpfs``) that the test remounts
``ro`` between two deletes of the cleaner, as the kernel does to a file system after an I/O error;
the metastore (SQLite) is on another, writable, disk. Checked: the run stops with one line saying
the file system is read-only, nothing of the base or of a live snapshot is deleted, no row is lost,
and once the file system is writable again the next run finishes from its ledger, once.
"""

from __future__ import annotations

import os
import time
import uuid

import pyarrow as pa

from acid_core.compaction.cleaner import CleanerOptions, run_cleaner
from acid_core.compaction.worker import run_worker
from acid_core.errors import ReadOnlyFileSystemError, failed_service
from acid_core.metastore import Column, CompactionState, CompactionType, SqlMetastore, TableDefinition
from acid_core.writes import Warehouse


def _warehouse(tmp_path, tmpfs):
    root = str(tmpfs.path / f"wh_{uuid.uuid4().hex[:8]}")
    metastore = SqlMetastore(f"sqlite:///{tmp_path / 'metastore.sqlite'}", warehouse=root)
    return Warehouse(root, metastore, heartbeat_seconds=None)


def _ids(wh):
    return sorted(wh.read("t").column("id").to_pylist())


def _directories(wh):
    return sorted(d for d in os.listdir(wh.metastore.get_table("t").location) if not d.startswith("_"))


def test_clean_read_only_remount_stops_in_one_line_next_run_finishes(tmp_path, remountable_tmpfs):
    """Remounted ro between two deletes: the run reports it (retrying, one line), deletes nothing more;
    remounted rw, the next run finishes the ledger and marks the compaction cleaned once."""
    with _warehouse(tmp_path, remountable_tmpfs) as wh:
        wh.metastore.create_table(
            TableDefinition("t", (Column("id", "int"),), properties={"transactional": "true"})
        )
        for row in (1, 2, 3):
            with wh.transaction() as txn:
                txn.insert("t", pa.table({"id": pa.array([row], pa.int32())}))
        wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
        [outcome] = run_worker(wh.metastore, worker_id="worker-1")
        assert outcome.status == "compacted"
        deleting = []

        def on_step(step, path):
            if step == "deleting":
                deleting.append(path)
                if len(deleting) == 2:
                    remountable_tmpfs.read_only()

        sleeps = []
        try:
            [result] = run_cleaner(wh.metastore, CleanerOptions(on_step=on_step, sleep=sleeps.append))
            assert _ids(wh) == [1, 2, 3]  # readable while read-only
        finally:
            remountable_tmpfs.writable()
        assert result.status == "retrying"
        assert "\n" not in result.message
        assert result.message.startswith(
            "cleaning failed (retry 1 of 5 after 300 s): Read-only file system: "
        )
        assert "could not change" in result.message
        assert result.message.endswith(
            "expected a writable file system under the table; acidflow stops this step and the next run goes "
            "on from what is on disk; hint: remount it read-write (check the kernel log for why it went "
            "read-only) and rerun"
        )
        assert len(sleeps) == 3  # the store's retries, then the run gives up on this entry
        left = _directories(wh)
        assert set(outcome.outputs) <= set(left)
        assert len([d for d in left if d.startswith("delta_")]) == 2  # the first delete went through
        [entry] = wh.metastore.show_compactions()
        assert entry.state is CompactionState.READY_FOR_CLEANING
        # The next run (after the back-off) finishes what the ledger planned, once.
        later = time.time() + 3600
        assert [r.status for r in run_cleaner(wh.metastore, now=later)] == ["cleaned"]
        assert run_cleaner(wh.metastore, now=later + 1) == []
        [entry] = wh.metastore.show_compactions()
        assert entry.state is CompactionState.SUCCEEDED
        assert _directories(wh) == list(outcome.outputs)
        assert _ids(wh) == [1, 2, 3]


def test_read_only_file_system_error_names_storage():
    """The alert's service for a read-only table file system is storage."""
    error = ReadOnlyFileSystemError(
        "/wh/t/delta_1", "delete directory on local", "[Errno 30] Read-only file system"
    )
    assert failed_service(error) == "storage"
    assert str(error).startswith(
        "Read-only file system: delete directory on local could not change '/wh/t/delta_1'"
    )
