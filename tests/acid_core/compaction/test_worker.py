"""The embedded worker over random histories written by the real write path.

Oracle: the rows every snapshot read before compaction (the reader is itself checked against a
dict model in tests/acid_core/orc), plus the naive dict model of the history for the newest
snapshot. After a minor compaction, old write-ID snapshots that see the compacted ``_vT`` delta must
read the same rows (events keep their write IDs); after a major one they read the same rows or
raise NotEnoughHistoryError (never other rows).
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading

import pyarrow as pa
import pyarrow.orc as paorc
import pytest

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.planner import HIVE31_NAMES
from acid_core.compaction.worker import (
    BucketResult,
    BucketTask,
    execute_compaction,
    is_key_ordered,
    run_tasks_embedded,
    run_worker,
)
from acid_core.errors import AcidError, CompactionVerificationError, NotEnoughHistoryError
from acid_core.metastore import Column, CompactionState, CompactionType, TableDefinition, TxnState
from acid_core.orc.schema import RowType
from acid_core.orc.writer import insert_events, write_acid_dir
from acid_core.paths import DeltaDir
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import (
    create_table,
    data_rows,
    model_rows,
    random_history,
    read_rows,
    read_rows_at,
)


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield warehouse
    warehouse.close()


def compact(wh, table, partitions, kind, **kwargs):
    for partition in partitions:
        wh.metastore.enqueue_compaction(table, partition, kind, **kwargs)
    return run_worker(wh.metastore, worker_id="test-worker")


def partitions_of(wh, table):
    return [p.name for p in wh.metastore.list_partitions(table)] or [None]


def check_all_snapshots(wh, history, before, *, major: bool):
    current = wh.metastore.get_valid_txns()
    for snapshot, expected in zip(history.snapshots, before, strict=True):
        assert read_rows(history, snapshot) == expected
        old_write_ids = wh.metastore.get_valid_write_ids(history.table, snapshot)
        try:
            # A reader holding its old write-ID snapshot, with the compactions committed since.
            seen = read_rows_at(history, old_write_ids, current)
        except NotEnoughHistoryError:
            assert major, "a minor compaction must keep every snapshot readable"
            continue
        assert seen == expected
    assert read_rows(history) == before[-1]
    assert data_rows(read_rows(history)) == model_rows(history)


@pytest.mark.parametrize("seed", range(6))
def test_compaction_random_history_reads_same_rows_at_every_snapshot(wh, seed):
    history = random_history(wh, seed, partitioned=seed % 2 == 0, buckets=1 + seed % 3, leave_open=seed == 3)
    before = [read_rows(history, s) for s in history.snapshots]
    assert data_rows(before[-1]) == model_rows(history)
    partitions = partitions_of(wh, "default.t")

    outcomes = compact(wh, "default.t", partitions, CompactionType.MINOR)
    assert {o.status for o in outcomes} <= {"compacted", "refused"}
    check_all_snapshots(wh, history, before, major=False)

    outcomes = compact(wh, "default.t", partitions, CompactionType.MAJOR)
    assert [o.status for o in outcomes] == ["compacted"] * len(partitions)
    check_all_snapshots(wh, history, before, major=True)

    if history.open_txns:
        # Hive's rule: the open transaction started before the compactions committed.
        assert run_cleaner(wh.metastore) == []
        for txn in history.open_txns:
            txn.abort()
    results = run_cleaner(wh.metastore)
    assert {r.status for r in results} == {"cleaned"}
    assert read_rows(history) == before[-1]
    for partition in partitions:
        root = os.path.join(wh.metastore.get_table("default.t").location, partition or "")
        names = [n for n in os.listdir(root) if not n.startswith(("_", "."))]
        if not history.open_txns:  # else the deltas from the open write ID on stay
            assert len(names) == 1, names
            assert names[0].startswith("base_"), names
    states = {c.state for c in wh.metastore.show_compactions()}
    assert states <= {CompactionState.SUCCEEDED, CompactionState.REFUSED}


def test_compaction_hive31_names_write_no_visibility_suffix(wh):
    history = random_history(wh, 11, partitioned=False, buckets=2, properties={HIVE31_NAMES: "true"})
    before = read_rows(history)
    compact(wh, "default.t", [None], CompactionType.MINOR)
    compact(wh, "default.t", [None], CompactionType.MAJOR)
    root = wh.metastore.get_table("default.t").location
    names = sorted(os.listdir(root))
    base = [n for n in names if n.startswith("base_")]
    assert base == [f"base_{14:07d}"]
    minor = [n for n in names if re.fullmatch(r"(delete_)?delta_\d{7}_0000014", n)]
    assert len(minor) == 2, names
    with open(os.path.join(root, base[0], "_metadata_acid")) as marker:
        assert marker.read() == '{"thisFileVersion":"0","dataFormat":"compacted"}'
    assert read_rows(history) == before


def test_compaction_drops_aborted_events_inside_a_streaming_delta(wh):
    """One delta_1_3 holds write IDs 1, 2, 3 (streaming); 2 aborts: compaction drops its events."""
    create_table(wh, "default.s", partitioned=False, buckets=1)
    ms = wh.metastore
    txns = [ms.open_txn() for _ in range(3)]
    write_ids = [ms.allocate_write_id(t, "default.s") for t in txns]
    assert write_ids == [1, 2, 3]
    row_type = RowType.of({"id": "int", "v": "string"})
    batches = [
        insert_events(
            pa.table({"id": pa.array([w * 10 + i for i in range(3)], pa.int32()), "v": [f"w{w}"] * 3}),
            write_id=w,
            bucket_id=0,
        )
        for w in write_ids
    ]
    location = ms.get_table("default.s").location
    write_acid_dir(wh.table_dir(location)[0], location, DeltaDir(1, 3), {0: batches}, row_type)
    ms.commit_txn(txns[0])
    ms.abort_txn(txns[1])
    ms.commit_txn(txns[2])
    rows = sorted(r["id"] for r in wh.read("default.s").to_pylist())
    assert rows == [10, 11, 12, 30, 31, 32]
    # A second delta so that minor has two ranges to merge.
    with wh.transaction(heartbeat_seconds=None) as txn:
        txn.insert("default.s", pa.table({"id": pa.array([99], pa.int32()), "v": ["x"]}))
    ms.enqueue_compaction("default.s", None, CompactionType.MINOR)
    [outcome] = run_worker(ms)
    assert outcome.events == {"delta_0000001_0000004_v0000005": 7}
    out = paorc.ORCFile(os.path.join(location, "delta_0000001_0000004_v0000005", "bucket_00000")).read()
    assert sorted(out.column("currentTransaction").to_pylist()) == [1, 1, 1, 3, 3, 3, 4]
    ms.enqueue_compaction("default.s", None, CompactionType.MAJOR)
    [outcome] = run_worker(ms)
    assert outcome.events == {"base_0000004_v0000006": 7}
    assert sorted(r["id"] for r in wh.read("default.s").to_pylist()) == [10, 11, 12, 30, 31, 32, 99]


def test_compaction_major_folds_in_original_files_with_their_row_ids(wh, tmp_path):
    create_table(wh, "default.o", partitioned=False, buckets=1)
    location = wh.metastore.get_table("default.o").location
    os.makedirs(location, exist_ok=True)
    paorc.write_table(
        pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]}),
        os.path.join(location, "000000_0"),
    )
    paorc.write_table(
        pa.table({"id": pa.array([4], pa.int32()), "v": ["d"]}), os.path.join(location, "000000_0_copy_1")
    )
    live = wh.read("default.o", with_row_id=True)
    with wh.transaction(heartbeat_seconds=None) as txn:
        txn.delete("default.o", live.filter(pa.compute.equal(live.column("id"), 2)).select(["row__id"]))
    before = sorted(map(repr, wh.read("default.o", with_row_id=True).to_pylist()))
    assert len(before) == 3
    wh.metastore.enqueue_compaction("default.o", None, CompactionType.MAJOR)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "compacted"
    assert sorted(map(repr, wh.read("default.o", with_row_id=True).to_pylist())) == before
    run_cleaner(wh.metastore)
    assert sorted(n for n in os.listdir(location) if not n.startswith("_")) == ["base_0000001_v0000002"]
    assert sorted(map(repr, wh.read("default.o", with_row_id=True).to_pylist())) == before


def test_compaction_verification_failure_commits_nothing(wh):
    history = random_history(wh, 5, partitioned=False, buckets=2)
    before = read_rows(history)
    root = wh.metastore.get_table("default.t").location
    listing = sorted(os.listdir(root))

    def lying_runner(tasks: list[BucketTask], heartbeat) -> list[BucketResult]:
        results = run_tasks_embedded(tasks, heartbeat)
        first = results[0].outputs[0]
        bad = type(first)(first.directory, first.path, first.events, first.checksum ^ 1)
        return [BucketResult(results[0].bucket_id, (bad, *results[0].outputs[1:])), *results[1:]]

    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    claimed = wh.metastore.find_next_to_compact("w")
    with pytest.raises(CompactionVerificationError, match=r"Compaction 1 failed verification: key checksum"):
        execute_compaction(wh.metastore, claimed, run_tasks=lying_runner)
    info = wh.metastore.get_compaction(claimed.id)
    assert info.state is CompactionState.FAILED
    assert "key checksum" in (info.error_message or "")
    assert wh.metastore.get_txn(info.txn_id).state is TxnState.ABORTED
    assert sorted(os.listdir(root)) == listing
    assert read_rows(history) == before


def test_compaction_verification_failure_of_the_last_of_three_rebalanced_files_commits_nothing(wh):
    """The outputs are checked a few at a time: a bad checksum in the last of three still fails the
    compaction, names that file, and leaves the partition as it was."""
    history = random_history(wh, 7, partitioned=False, buckets=1, txns=6)
    before = read_rows(history)
    root = wh.metastore.get_table("default.t").location
    listing = sorted(os.listdir(root))

    def lying_runner(tasks: list[BucketTask], heartbeat) -> list[BucketResult]:
        results = run_tasks_embedded(tasks, heartbeat)
        *good, last = results
        [output] = last.outputs
        return [
            *good,
            BucketResult(last.bucket_id, (dataclasses.replace(output, checksum=output.checksum ^ 1),)),
        ]

    wh.metastore.enqueue_compaction("default.t", None, CompactionType.REBALANCE, number_of_buckets=3)
    claimed = wh.metastore.find_next_to_compact("w")
    with pytest.raises(
        CompactionVerificationError,
        match=r"Compaction 1 failed verification: key checksum of .*/bucket_00002",
    ):
        execute_compaction(wh.metastore, claimed, run_tasks=lying_runner)
    info = wh.metastore.get_compaction(claimed.id)
    assert info.state is CompactionState.FAILED
    assert wh.metastore.get_txn(info.txn_id).state is TxnState.ABORTED
    assert sorted(os.listdir(root)) == listing
    assert read_rows(history) == before


def test_verify_outputs_checks_files_at_the_same_time():
    """Two outputs on a machine with two cores: both checks run at once (each waits for the other at
    a barrier, which a one-after-the-other loop would never pass)."""
    from acid_core.compaction.bucket_merge import BucketOutput, embedded_parallelism
    from acid_core.compaction.worker import _verify_outputs

    assert embedded_parallelism() >= 2, "the test machine has two cores"
    barrier = threading.Barrier(2, timeout=60)
    checked = []

    def verify(io, compaction_id, output):
        barrier.wait()
        checked.append(output.path)

    outputs = [BucketOutput("base_0000001", f"/wh/t/bucket_0000{n}", 1, 0) for n in range(2)]
    _verify_outputs(None, 1, outputs, verify)
    assert sorted(checked) == [o.path for o in outputs]


def test_compaction_minor_with_single_range_is_refused(wh):
    with wh.transaction(heartbeat_seconds=None) as txn:
        create_table(wh, "default.r", partitioned=False, buckets=1)
        txn.insert("default.r", pa.table({"id": pa.array([1], pa.int32()), "v": ["a"]}))
    wh.metastore.enqueue_compaction("default.r", None, CompactionType.MINOR)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "refused"
    assert "at least two ranges" in outcome.message
    assert wh.metastore.get_compaction(1).state is CompactionState.REFUSED


def test_execute_compaction_reports_steps_in_order(wh):
    random_history(wh, 2, partitioned=False, buckets=1, txns=5)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    steps = []
    claimed = wh.metastore.find_next_to_compact("w")
    execute_compaction(wh.metastore, claimed, on_step=steps.append)
    assert steps == ["writing", "verifying", "renaming", "renamed", "committing", "marking"]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["base_5", "delta_6_6_0000", "delta_7_9", "delete_delta_3_3_0000"], True),
        (["delta_1_1_0000", "delta_1_1_0001", "delta_2_2_0000"], True),
        (["000000_0", "delta_1_1_0000"], True),
        (["base_5", "delta_3_7"], False),
        (["delta_1_5", "delta_3_3_0000"], False),
        (["delta_2_2", "delta_2_2"], False),
    ],
    ids=[
        "base_then_deltas",
        "statements_in_order",
        "originals_first",
        "delta_overlaps_base",
        "nested",
        "twins",
    ],
)
def test_is_key_ordered(names, expected):
    assert is_key_ordered(names) is expected


def test_compaction_of_insert_only_table_is_refused(wh):
    wh.metastore.create_table(
        TableDefinition(
            "default.mm",
            columns=(Column("id", "int"),),
            properties={"transactional": "true", "transactional_properties": "insert_only"},
        )
    )
    wh.metastore.enqueue_compaction("default.mm", None, CompactionType.MAJOR)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "refused"
    assert outcome.message == "default.mm is insert_only: acidflow compacts full-ACID (ORC event) tables only"
    assert wh.metastore.get_compaction(1).state is CompactionState.REFUSED


@pytest.mark.parametrize("parallel", [1, 3])
def test_run_tasks_embedded_parallel_buckets_give_the_same_rows(wh, parallel):
    history = random_history(wh, 7, partitioned=False, buckets=3)
    before = read_rows(history)
    beats: list[int] = []
    task_count: list[int] = []

    def runner(tasks, heartbeat):
        def beat():
            beats.append(1)
            heartbeat()

        results = run_tasks_embedded(tasks, beat, parallel=parallel)
        assert [r.bucket_id for r in results] == [t.bucket_id for t in tasks]  # in task order
        task_count.append(len(tasks))
        return results

    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    claimed = wh.metastore.find_next_to_compact("w")
    execute_compaction(wh.metastore, claimed, run_tasks=runner)
    assert task_count == [3]
    assert len(beats) == 3  # one heartbeat per finished bucket
    assert read_rows(history) == before
    assert not [t for t in threading.enumerate() if t.name.startswith(("acidflow-bucket", "acidflow-merge"))]


def test_execute_compaction_heartbeats_after_verifying_before_it_renames(wh, monkeypatch):
    # Verifying reads every output's footer (minutes for a big base on an object store): the
    # transaction is heartbeated once it is done, as while the tasks run.
    random_history(wh, 9, partitioned=False, buckets=2)
    events: list[str] = []
    heartbeat = wh.metastore.heartbeat
    monkeypatch.setattr(
        wh.metastore, "heartbeat", lambda txn_id: (events.append("heartbeat"), heartbeat(txn_id))[1]
    )
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    claimed = wh.metastore.find_next_to_compact("w")
    execute_compaction(wh.metastore, claimed, on_step=events.append)
    assert events[events.index("verifying") :][:3] == ["verifying", "heartbeat", "renaming"]


def test_run_tasks_embedded_parallel_failure_is_raised_and_threads_end(wh, tmp_path):
    history = random_history(wh, 8, partitioned=False, buckets=2)
    before = read_rows(history)

    def runner(tasks, heartbeat):
        broken = [*tasks, dataclasses.replace(tasks[0], location=str(tmp_path / "missing"))]
        return run_tasks_embedded(broken, heartbeat, parallel=2)

    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    claimed = wh.metastore.find_next_to_compact("w")
    with pytest.raises(AcidError):
        execute_compaction(wh.metastore, claimed, run_tasks=runner)
    assert wh.metastore.get_compaction(claimed.id).state is CompactionState.FAILED
    assert read_rows(history) == before
    assert not [t for t in threading.enumerate() if t.name.startswith(("acidflow-bucket", "acidflow-merge"))]


def test_major_compaction_during_an_open_streaming_batch_keeps_its_committed_rows(wh):
    """Regression (found by ``make soak``): a streaming batch ``delta_w_w+1`` whose first
    transaction committed while the second is still open straddles the compactor's high watermark
    (w). A major compaction then must not write ``base_w``: it cannot read the batch's file, so
    ``base_w`` would claim write w's rows without holding them, and once w+1 aborts a reader reads
    the batch only above the base: the committed rows would vanish, and a later major plus the
    cleaner would delete them for good. The base stops at w-1 (Hive's CompactorMR names its base
    after its highest input), so the rows stay readable through every step."""
    from acid_core.writes.streaming import StreamingConnection

    create_table(wh, "default.t", partitioned=False, buckets=1)
    with wh.transaction(heartbeat_seconds=None) as txn:
        txn.insert("default.t", pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    with StreamingConnection(wh, "default.t", txns_per_batch=2) as connection:
        connection.begin_transaction()
        connection.write(pa.table({"id": pa.array([10, 11], pa.int32()), "v": ["s", "s"]}))
        connection.commit_transaction()
        connection.begin_transaction()
        connection.write(pa.table({"id": pa.array([12], pa.int32()), "v": ["open"]}))
        expected = _rows(wh)
        assert expected == [(1, "a"), (2, "b"), (10, "s"), (11, "s")]
        compact(wh, "default.t", [None], CompactionType.MAJOR)
        table_dir = wh.metastore.get_table("default.t").location
        assert [n for n in os.listdir(table_dir) if n.startswith("base_")] == [
            f"base_0000001_v{_last_compaction_txn(wh):07d}"
        ]
        assert _rows(wh) == expected
        connection.abort_transaction()
    assert _rows(wh) == expected
    run_cleaner(wh.metastore)
    assert _rows(wh) == expected
    compact(wh, "default.t", [None], CompactionType.MAJOR)
    run_cleaner(wh.metastore)
    assert _rows(wh) == expected


def _rows(wh) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in wh.read("default.t").to_pylist())


def _last_compaction_txn(wh) -> int:
    return max(c.txn_id for c in wh.metastore.show_compactions("default.t") if c.txn_id is not None)
