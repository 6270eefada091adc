"""The worker's maintenance lock: two compactions of one partition never overlap (issue 5 and 6).

Expected behaviour from the issues: "a compaction worker holds a maintenance lock so two
compactions of one partition never overlap" (X on ``db.t[/k=v]#maintenance``, S on the table and
the partition, so the partition cannot be dropped while it is compacted).
"""

from __future__ import annotations

import pytest

from acid_core.compaction.worker import execute_compaction, run_worker
from acid_core.locks import InMemoryLockManager, InMemoryLockTable, LockMode, LockRequest, parse_lock_object
from acid_core.metastore import CompactionState, CompactionType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import data_rows, model_rows, random_history, read_rows


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield warehouse
    warehouse.close()


def _locks_seen_during(wh, manager, observer):
    """Run one queued compaction with ``manager`` and return what ``observer`` saw while it wrote."""
    seen = []

    def on_step(step):
        if step == "writing":
            seen.extend((info.object, info.mode) for info in observer.show())

    claimed = wh.metastore.find_next_to_compact("worker-a")
    outcome = execute_compaction(wh.metastore, claimed, on_step=on_step, lock_manager=manager)
    return outcome, seen


def test_compaction_holds_the_maintenance_lock_while_it_writes(wh):
    random_history(wh, 11, partitioned=False, buckets=1)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    table = InMemoryLockTable()
    outcome, seen = _locks_seen_during(wh, InMemoryLockManager(table), InMemoryLockManager(table))
    assert outcome.status == "compacted"
    held = {(str(obj), str(mode)) for obj, mode in seen}
    assert (str(parse_lock_object("default.t#maintenance")), str(LockMode.EXCLUSIVE)) in held
    assert (str(parse_lock_object("default.t")), str(LockMode.SHARED)) in held
    assert InMemoryLockManager(table).show() == []  # released after the commit


def test_second_compaction_of_a_locked_partition_is_refused_and_changes_nothing(wh):
    history = random_history(wh, 12, partitioned=False, buckets=1)
    before = read_rows(history)
    table = InMemoryLockTable()
    other_worker = InMemoryLockManager(table)
    held = other_worker.acquire(
        [LockRequest(parse_lock_object("default.t#maintenance"), LockMode.EXCLUSIVE)], holder="worker-b"
    )
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    claimed = wh.metastore.find_next_to_compact("worker-a")
    manager = InMemoryLockManager(table)
    outcome = execute_compaction(wh.metastore, claimed, lock_manager=manager)
    assert outcome.status == "refused"
    assert "maintenance lock of default.t" in outcome.message
    assert "worker-b" in outcome.message  # the refusal names the holder
    [entry] = [c for c in wh.metastore.show_compactions() if c.id == claimed.id]
    assert entry.state is CompactionState.REFUSED
    assert read_rows(history) == before

    other_worker.release(held)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    outcomes = run_worker(wh.metastore, worker_id="worker-a", lock_manager=manager)
    assert [o.status for o in outcomes] == ["compacted"]
    assert data_rows(read_rows(history)) == model_rows(history)
