"""No compaction stays 'working' forever; a compaction naming no partition is refused before queueing.

Hive's model (``CompactionTxnHandler.revokeFromLocalWorkers`` / ``revokeTimedoutWorkers``): an
entry whose worker is a dead process of this host, or that has been 'working' longer than
``hive.compactor.worker.timeout`` (86400 s), goes back to the queue. Hive's
``AlterTableCompactOperation`` refuses a partition spec that names no partition.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from acid_core.cli.app import build_parser
from acid_core.compaction.worker import (
    DEFAULT_WORKER_TIMEOUT_SECONDS,
    check_compaction_target,
    execute_compaction,
    recover_abandoned_compactions,
)
from acid_core.errors import (
    InvalidPartitionError,
    InvalidPlatformConfigError,
    NoSuchPartitionError,
    NoSuchTxnError,
)
from acid_core.metastore import CompactionState, CompactionType, TxnState
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history, read_rows


def run(argv):
    parser = build_parser(["initiate", "compact", "clean"])
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(warehouse, 7, partitioned=True, buckets=1, txns=6)
    yield warehouse, history
    warehouse.close()


def _dead_worker_id() -> str:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    import socket

    return f"{socket.gethostname()}-{int(done.stdout)}"


def test_default_worker_timeout_is_hive_default():
    assert DEFAULT_WORKER_TIMEOUT_SECONDS == 86400.0


@pytest.mark.parametrize(
    ("partition", "error", "match"),
    [
        ("../..", NoSuchPartitionError, r"No such partition '\.\./\.\.' in table 'default\.t'"),
        ("p=zz", NoSuchPartitionError, r"No such partition 'p=zz'"),
        (
            None,
            InvalidPartitionError,
            r"Invalid partition None of table 'default\.t': expected a partition p=\.\.\.",
        ),
    ],
    ids=["escape", "missing", "none-for-partitioned"],
)
def test_check_compaction_target_bad_partition_raises(wh, partition, error, match):
    warehouse, _ = wh
    table = warehouse.metastore.get_table("default.t")
    with pytest.raises(error, match=match):
        check_compaction_target(warehouse.metastore, table, partition)


def test_execute_compaction_unknown_partition_marks_failed_not_working(wh):
    warehouse, history = wh
    metastore = warehouse.metastore
    expected = read_rows(history)
    metastore.enqueue_compaction("default.t", "../..", CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact("w-1")
    with pytest.raises(NoSuchPartitionError):
        execute_compaction(metastore, claimed)
    entry = metastore.get_compaction(claimed.id)
    assert entry.state is CompactionState.FAILED
    assert (
        entry.error_message
        == "NoSuchPartitionError: No such partition '../..' in table 'default.t'; hint: list_partitions"
    )
    assert read_rows(history) == expected


def test_recover_timed_out_working_entry_is_failed_and_queued_again(wh):
    warehouse, _ = wh
    metastore = warehouse.metastore
    partition = metastore.list_partitions("default.t")[0].name
    metastore.enqueue_compaction("default.t", partition, CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact("remote-host-4242")  # alive or not, we cannot tell
    started = metastore.get_compaction(claimed.id).start_time
    assert recover_abandoned_compactions(metastore, now=started + 100) == []
    assert recover_abandoned_compactions(metastore, worker_timeout_seconds=60, now=started + 100) == [
        claimed.id
    ]
    entries = {c.id: c for c in metastore.show_compactions()}
    assert entries[claimed.id].state is CompactionState.FAILED
    assert entries[claimed.id].error_message == (
        "worker remote-host-4242 ran longer than the worker timeout (60 s); compaction queued again"
    )
    [queued] = [c for c in entries.values() if c.id != claimed.id]
    assert (queued.state, queued.partition) == (CompactionState.INITIATED, partition)


def test_recover_dead_local_worker_entry_naming_no_partition_touches_nothing(wh, tmp_path):
    warehouse, _ = wh
    metastore = warehouse.metastore
    # A sibling the old recovery would have listed (table location/../..) must stay.
    outside = tmp_path / ".acidflow-staging-c1-t1"
    outside.mkdir()
    metastore.enqueue_compaction("default.t", "../..", CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact(_dead_worker_id())
    assert recover_abandoned_compactions(metastore) == [claimed.id]
    entries = metastore.show_compactions()
    assert [c.state for c in entries] == [CompactionState.FAILED]
    assert "not queued again: NoSuchPartitionError" in (entries[0].error_message or "")
    assert outside.is_dir()


def test_cli_compact_missing_partition_refused_before_queueing(wh, capsys):
    warehouse, _ = wh
    with pytest.raises(NoSuchPartitionError):
        run(["compact", "--warehouse", warehouse.location, "--table", "default.t", "--partition", "p=zz"])
    assert warehouse.metastore.show_compactions() == []


def test_cli_compact_worker_timeout_option_and_env(wh, capsys, monkeypatch):
    warehouse, _ = wh
    metastore = warehouse.metastore
    partition = metastore.list_partitions("default.t")[0].name
    metastore.enqueue_compaction("default.t", partition, CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact("remote-host-4242")
    assert run(["compact", "--warehouse", warehouse.location, "--executor", "embedded"]) == 0
    assert metastore.get_compaction(claimed.id).state is CompactionState.WORKING  # 86400 s by default
    capsys.readouterr()
    monkeypatch.setenv("ACIDFLOW_COMPACTOR_WORKER_TIMEOUT", "0.001")
    assert run(["compact", "--warehouse", warehouse.location, "--executor", "embedded"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"compaction {claimed.id}: recovered: worker remote-host-4242 ran longer than the worker timeout "
        "(0.001 s); compaction queued again"
    )
    assert f"compaction {claimed.id + 1}: compacted" in out
    assert metastore.get_compaction(claimed.id).state is CompactionState.FAILED


def test_cli_compact_worker_timeout_env_invalid_is_one_line_error(wh, monkeypatch):
    warehouse, _ = wh
    monkeypatch.setenv("ACIDFLOW_COMPACTOR_WORKER_TIMEOUT", "soon")
    with pytest.raises(
        InvalidPlatformConfigError, match=r"Invalid acidflow setting ACIDFLOW_COMPACTOR_WORKER_TIMEOUT='soon'"
    ):
        run(["compact", "--warehouse", warehouse.location])


def test_cli_compact_worker_timeout_option_rejects_non_positive(wh, capsys):
    warehouse, _ = wh
    with pytest.raises(SystemExit) as exit_info:
        run(["compact", "--warehouse", warehouse.location, "--worker-timeout", "0"])
    assert exit_info.value.code == 2
    assert "invalid value '0': expected a positive number of seconds" in capsys.readouterr().err


def test_dead_worker_id_helper_names_no_live_process():
    host, _, pid = _dead_worker_id().rpartition("-")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)
    assert host


@pytest.mark.parametrize("suffix", ["", "-airflow"], ids=["plain", "airflow-operator"])
def test_recover_dead_local_worker_with_role_suffix_is_recovered(wh, suffix):
    warehouse, _ = wh
    metastore = warehouse.metastore
    partition = metastore.list_partitions("default.t")[0].name
    metastore.enqueue_compaction("default.t", partition, CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact(_dead_worker_id() + suffix)
    assert recover_abandoned_compactions(metastore) == [claimed.id]
    assert metastore.get_compaction(claimed.id).state is CompactionState.FAILED


def test_recover_dead_worker_right_after_open_compaction_txn_aborts_it(wh):
    # Killed between open_compaction_txn and update_compactor_state: the txn is named on the entry
    # from the start, so recovery aborts it at once (no orphan txn waiting for the reaper).
    warehouse, _ = wh
    metastore = warehouse.metastore
    partition = metastore.list_partitions("default.t")[0].name
    metastore.enqueue_compaction("default.t", partition, CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact(_dead_worker_id())
    txn_id = metastore.open_compaction_txn(claimed.id)
    assert metastore.get_compaction(claimed.id).txn_id == txn_id

    assert recover_abandoned_compactions(metastore) == [claimed.id]

    assert metastore.get_txn(txn_id).state is TxnState.ABORTED
    assert [t.txn_id for t in metastore.show_transactions() if t.state is TxnState.OPEN] == []
    assert metastore.get_compaction(claimed.id).state is CompactionState.FAILED


def test_recover_entry_whose_committed_txn_was_housekept_queues_it_again(wh):
    # Killed after commit_txn, before mark_compacted; housekeeping then deleted the committed txn.
    # Recovery used to raise NoSuchTxnError (at every run); Hive's revokeFromLocalWorkers
    # queues the compaction again, which finds the committed output and makes it cleanable.
    warehouse, history = wh
    metastore = warehouse.metastore
    expected = read_rows(history)
    partition = metastore.list_partitions("default.t")[0].name
    metastore.enqueue_compaction("default.t", partition, CompactionType.MAJOR)
    claimed = metastore.find_next_to_compact(_dead_worker_id())
    txn_id = metastore.open_compaction_txn(claimed.id)
    metastore.update_compactor_state(claimed.id, txn_id, 1)
    metastore.commit_txn(txn_id)
    metastore.open_txn()  # newer than the compaction txn: housekeeping may delete it
    metastore.housekeeping(now=metastore.get_txn(txn_id).started + 3600)
    with pytest.raises(NoSuchTxnError):
        metastore.get_txn(txn_id)

    assert recover_abandoned_compactions(metastore) == [claimed.id]

    entries = {c.id: c for c in metastore.show_compactions()}
    assert entries[claimed.id].state is CompactionState.FAILED
    assert entries[claimed.id].error_message.endswith(
        f"died; compaction queued again (its transaction {txn_id} ended and was housekept)"
    )
    [queued] = [c for c in entries.values() if c.id != claimed.id]
    assert (queued.state, queued.partition) == (CompactionState.INITIATED, partition)
    assert recover_abandoned_compactions(metastore) == []  # recovered once, not at every run
    assert read_rows(history) == expected
