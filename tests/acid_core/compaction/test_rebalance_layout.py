"""The rebalance's layout from footers: the driver counts once, the tasks skip their count pass.

``plan_rebalance_layout`` must give exactly what each task's count pass finds (the live rows, and
the position where each delta's write IDs start) when it gives anything, and nothing when a
footer's row count is not the live rows (deletes, aborted rows inside a delta, original files,
legacy update events, overlapping write-ID ranges). A task given the layout writes the same bytes
as one that counts; a layout that miscounts fails the task instead of losing or repeating rows.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as paorc
import pytest

from acid_core.compaction.bucket_merge import (
    BucketTask,
    _count_with_marks,
    compact_bucket,
    plan_rebalance_layout,
)
from acid_core.errors import CompactionVerificationError
from acid_core.fs import LocalFileIO
from acid_core.orc.reader import scan
from acid_core.orc.schema import RowType
from acid_core.orc.writer import delete_events, insert_events, write_acid_dir
from acid_core.paths import BaseDir, DeleteDeltaDir, DeltaDir
from acid_core.writeids import ValidCompactorWriteIdList, ValidTxnList, ValidWriteIdList

ROW_TYPE = RowType.of([("a", "bigint"), ("b", "string")])


def _rows(first: int, count: int) -> pa.Table:
    values = list(range(first, first + count))
    return pa.table({"a": pa.array(values, pa.int64()), "b": [f"v{v}" for v in values]})


def _write(root: str, directory: DeltaDir | BaseDir, buckets: dict[int, list[tuple[int, int]]]) -> None:
    """``buckets``: bucket -> [(write ID, rows)], each write ID's rows numbered from 0 in that file."""
    batches = {
        bucket: [
            insert_events(_rows(100 * write_id + bucket * 10, count), write_id=write_id, bucket_id=bucket)
            for write_id, count in runs
        ]
        for bucket, runs in buckets.items()
    }
    write_acid_dir(LocalFileIO(), root, directory, batches, ROW_TYPE)


def _layout_table(root: str) -> tuple[list[str], ValidCompactorWriteIdList]:
    """Write ID 1 in three bucket files (as Tez writes), 2 and 3 single, 4 aborted, 5-6 in one delta."""
    _write(root, DeltaDir(1, 1, 0), {0: [(1, 4)], 1: [(1, 3)], 2: [(1, 5)]})
    _write(root, DeltaDir(2, 2, 0), {0: [(2, 2)]})
    _write(root, DeltaDir(3, 3, 0), {1: [(3, 6)]})
    _write(root, DeltaDir(4, 4, 0), {0: [(4, 7)]})  # aborted: the reader skips the directory
    _write(root, DeltaDir(5, 6), {0: [(5, 3), (6, 2)]})
    names = [
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
        "delta_0000004_0000004_0000",
        "delta_0000005_0000006",
    ]
    return names, ValidCompactorWriteIdList(high_watermark=6, aborted_ids=(4,))


def _count_pass(root: str, write_ids: ValidCompactorWriteIdList) -> tuple[int, list[tuple[int, int]]]:
    reader = ValidWriteIdList(high_watermark=write_ids.high_watermark, aborted_ids=write_ids.aborted_ids)
    stream = scan(LocalFileIO(), root, reader, columns=[], with_row_id=True, ordered=True)
    total, marks = _count_with_marks(stream)
    return total, [(position, key[0]) for position, key in marks]


def test_plan_rebalance_layout_footers_give_the_count_pass_rows_and_marks(tmp_path):
    root = str(tmp_path / "p")
    names, write_ids = _layout_table(root)
    layout = plan_rebalance_layout(LocalFileIO(), root, names, write_ids, ValidTxnList())
    # 12 + 2 + 6 + 5 live rows (write ID 4 aborted); delta 5-6 starts at 20 with write ID 5.
    assert layout == (25, ((0, 1), (12, 2), (14, 3), (20, 5)))
    assert _count_pass(root, write_ids) == (25, [(0, 1), (12, 2), (14, 3), (20, 5)])


def test_plan_rebalance_layout_counts_a_base_before_the_deltas(tmp_path):
    root = str(tmp_path / "p")
    _write(root, BaseDir(3), {0: [(1, 4), (3, 2)], 1: [(2, 3)]})
    _write(root, DeltaDir(4, 4, 0), {0: [(4, 5)]})
    write_ids = ValidCompactorWriteIdList(high_watermark=4)
    names = ["base_0000003", "delta_0000004_0000004_0000"]
    assert plan_rebalance_layout(LocalFileIO(), root, names, write_ids, ValidTxnList()) == (14, ((9, 4),))
    assert _count_pass(root, write_ids) == (14, [(0, 1), (4, 2), (7, 3), (9, 4)])


def _with_delete(root: str) -> list[str]:
    _write(root, DeltaDir(1, 1, 0), {0: [(1, 4)]})
    row_ids = ([1], [536870912], [2])
    events = delete_events(row_ids, write_id=2, row_type=ROW_TYPE)
    write_acid_dir(LocalFileIO(), root, DeleteDeltaDir(2, 2, 0), {0: [events]}, ROW_TYPE)
    return ["delta_0000001_0000001_0000", "delete_delta_0000002_0000002_0000"]


def _with_aborted_inside_a_delta(root: str) -> list[str]:
    _write(root, DeltaDir(1, 2), {0: [(1, 4), (2, 3)]})  # write ID 2 aborted below
    return ["delta_0000001_0000002"]


def _with_original_file(root: str) -> list[str]:
    LocalFileIO().mkdirs(root)
    paorc.write_table(_rows(0, 5), f"{root}/000000_0")
    _write(root, DeltaDir(1, 1, 0), {0: [(1, 4)]})
    return ["000000_0", "delta_0000001_0000001_0000"]


def _with_overlapping_ranges(root: str) -> list[str]:
    # Neither contains the other (both are read), and their rows interleave in ROW__ID order.
    _write(root, DeltaDir(1, 3), {0: [(1, 2), (3, 2)]})
    _write(root, DeltaDir(2, 4), {0: [(2, 2), (4, 2)]})
    return ["delta_0000001_0000003", "delta_0000002_0000004"]


@pytest.mark.parametrize(
    ("build", "aborted"),
    [
        pytest.param(_with_delete, (), id="delete-delta"),
        pytest.param(_with_aborted_inside_a_delta, (2,), id="aborted-write-id-inside-a-delta"),
        pytest.param(_with_original_file, (), id="original-file"),
        pytest.param(_with_overlapping_ranges, (), id="overlapping-ranges"),
    ],
)
def test_plan_rebalance_layout_none_when_footers_are_not_the_live_rows(tmp_path, build, aborted):
    root = str(tmp_path / "p")
    names = build(root)
    write_ids = ValidCompactorWriteIdList(high_watermark=4, aborted_ids=aborted)
    assert plan_rebalance_layout(LocalFileIO(), root, names, write_ids, ValidTxnList()) is None


def _task(
    root: str, names: list[str], write_ids, bucket: int, buckets: int, staging: str, layout
) -> BucketTask:
    task = BucketTask(
        compaction_id=9,
        location=root,
        staging=staging,
        bucket_id=bucket,
        outputs=("base_0000006_v0000010",),
        insert_inputs=tuple(names),
        delete_inputs=(),
        write_ids=write_ids.to_string(),
        txns=ValidTxnList(high_watermark=10).to_string(),
        row_type=ROW_TYPE.to_orc(),
        rebalance_buckets=buckets,
        rebalance_rows=-1 if layout is None else layout[0],
        rebalance_marks=() if layout is None else layout[1],
    )
    return BucketTask.from_json(task.to_json())  # as Spark ships it


@pytest.mark.parametrize("buckets", [2, 3, 7])
def test_rebalance_task_with_the_layout_writes_the_bytes_of_a_counting_task(tmp_path, buckets):
    root = str(tmp_path / "p")
    names, write_ids = _layout_table(root)
    layout = plan_rebalance_layout(LocalFileIO(), root, names, write_ids, ValidTxnList())
    assert layout is not None
    for bucket in range(buckets):
        counted = compact_bucket(_task(root, names, write_ids, bucket, buckets, ".counted", None))
        given = compact_bucket(_task(root, names, write_ids, bucket, buckets, ".given", layout))
        assert [(o.events, o.checksum) for o in given.outputs] == [
            (o.events, o.checksum) for o in counted.outputs
        ]
        for ours, theirs in zip(given.outputs, counted.outputs, strict=True):
            with open(ours.path, "rb") as a, open(theirs.path, "rb") as b:
                assert a.read() == b.read()


@pytest.mark.parametrize(
    ("error", "message"),
    [(-1, "a footer count below the live rows"), (1, "event count of")],
    ids=["rows-below-the-live-rows", "rows-above-the-live-rows"],
)
def test_rebalance_task_layout_miscount_fails_the_task(tmp_path, error, message):
    """Too few rows: the last slice finds a row after it; too many: it ends short of its count.

    Either way the task fails (the worker then deletes its staging directory, commits nothing).
    """
    root = str(tmp_path / "p")
    names, write_ids = _layout_table(root)
    total, marks = plan_rebalance_layout(LocalFileIO(), root, names, write_ids, ValidTxnList())
    with pytest.raises(CompactionVerificationError, match=message):
        compact_bucket(_task(root, names, write_ids, 1, 2, ".wrong", (total + error, marks)))


def test_rebalance_worker_hands_the_footer_layout_to_its_tasks_and_counts_after_deletes(tmp_path):
    from acid_core.compaction.bucket_merge import run_tasks_embedded
    from acid_core.compaction.worker import run_worker
    from acid_core.sql.engine import SqlSession
    from acid_core.writes import Warehouse

    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    try:
        session = SqlSession(warehouse)
        session.execute(
            "CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
        )
        for write_id in range(1, 4):
            session.execute("INSERT INTO t VALUES " + ", ".join(f"('w{write_id}', {i})" for i in range(5)))
        seen: list[BucketTask] = []

        def runner(tasks, heartbeat):
            seen.extend(tasks)
            return run_tasks_embedded(tasks, heartbeat)

        def rebalance() -> list[tuple[int, tuple[tuple[int, int], ...]]]:
            seen.clear()
            session.execute("ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 2 BUCKETS")
            [outcome] = run_worker(warehouse.metastore, worker_id="test", run_tasks=runner)
            assert outcome.status == "compacted"
            return [(task.rebalance_rows, task.rebalance_marks) for task in seen]

        assert rebalance() == [(15, ((0, 1), (5, 2), (10, 3)))] * 2
        session.execute("DELETE FROM t WHERE b = 0")
        assert rebalance() == [(-1, ())] * 2  # a delete delta: the tasks count
        (result,) = session.execute("SELECT count(*) AS n FROM t")
        assert result.rows.to_pylist() == [{"n": 12}]
    finally:
        warehouse.close()
