"""A compaction stops at an input whose struct values pyarrow's writer shifted (``orc.nested_nulls``).

The damaged delta is written the way acidflow wrote it before the fix: the insert path with the
workaround switched off. Every reader reads its values shifted; a compaction would write them so
into a base that ``acidflow check`` passes, and the cleaner would then delete the delta. So each
kind of compaction (minor, major, rebalance) fails with one line naming the file, its columns and
``acidflow check``, and leaves every directory as it was; so does a compaction whose bucket tasks
run in Spark. A correct table with the same nullable struct column compacts (its files are decoded
once more, nothing else changes).
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa
import pytest

import acid_core.orc.writer as orc_writer
from acid_core.cli import main
from acid_core.compaction.worker import run_worker
from acid_core.metastore import Column, CompactionState, CompactionType, TableDefinition
from acid_core.writes import Warehouse

ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.int32())])


def _rows(first: int, count: int) -> pa.Table:
    ids = range(first, first + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "addr": pa.array([None if i % 3 == 0 else {"city": f"c{i}", "zip": i} for i in ids], ADDRESS),
        }
    )


@pytest.fixture
def wh(tmp_path):
    with Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None) as warehouse:
        warehouse.metastore.create_table(
            TableDefinition(
                "t",
                (Column("id", "bigint"), Column("addr", "struct<city:string,zip:int>")),
                properties={"transactional": "true"},
            )
        )
        yield warehouse


def _insert(wh: Warehouse, rows: pa.Table) -> None:
    with wh.transaction(heartbeat_seconds=None) as txn:
        txn.insert("t", rows)


def _listing(location: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), location) for d, _, files in os.walk(location) for f in files
    )


@pytest.mark.parametrize("kind", [CompactionType.MINOR, CompactionType.MAJOR, CompactionType.REBALANCE])
def test_a_compaction_stops_at_a_delta_with_shifted_struct_values(wh, monkeypatch, kind, capsys):
    _insert(wh, _rows(0, 30))
    with monkeypatch.context() as before_the_fix:
        before_the_fix.setattr(orc_writer, "with_struct_nulls_in_children", lambda batch: batch)
        _insert(wh, _rows(30, 30))
    _insert(wh, _rows(60, 30))
    location = wh.metastore.get_table("t").location
    files, read = _listing(location), wh.read("t").to_pylist()
    assert read[31]["addr"] != {"city": "c31", "zip": 31}  # what every reader reads of delta 2

    wh.metastore.enqueue_compaction("default.t", None, kind)
    assert run_worker(wh.metastore) == []
    [entry] = wh.metastore.show_compactions()
    assert entry.state is CompactionState.FAILED
    assert "delta_0000002_0000002_0000/bucket_00000" in entry.error_message
    assert "row.addr.city, row.addr.zip hold values written shifted" in entry.error_message
    assert "`acidflow check`" in entry.error_message
    assert _listing(location) == files  # no output, no staging left, no input touched
    assert wh.read("t").to_pylist() == read
    assert main(["check", location]) == 1
    assert "damaged" in capsys.readouterr().out


def test_a_correct_table_with_struct_nulls_compacts(wh):
    for first in (0, 30, 60):
        _insert(wh, _rows(first, 30))
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "compacted", outcome.message
    assert wh.read("t").to_pylist() == _rows(0, 90).to_pylist()


@pytest.mark.integration("spark")
@pytest.mark.timeout(600)
def test_a_spark_task_stops_at_the_shifted_delta_too(wh, monkeypatch):
    """The bucket tasks run in Spark's Python workers (spark-submit, local[2]): same refusal."""
    from acid_core.compaction.spark_runner import SparkSubmitRunner
    from acid_core.compaction.worker import WorkerOptions

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    _insert(wh, _rows(0, 30))
    with monkeypatch.context() as before_the_fix:
        before_the_fix.setattr(orc_writer, "with_struct_nulls_in_children", lambda batch: batch)
        _insert(wh, _rows(30, 30))
    location = wh.metastore.get_table("t").location
    files = _listing(location)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    options = WorkerOptions(large_runner=SparkSubmitRunner(master="local[2]"), large_threshold_bytes=0)
    assert run_worker(wh.metastore, options=options) == []
    [entry] = wh.metastore.show_compactions()
    assert entry.state is CompactionState.FAILED
    assert "delta_0000002_0000002_0000/bucket_00000" in entry.error_message
    assert "written shifted" in entry.error_message
    assert "Spark compaction job failed" in entry.error_message  # it ran in spark-submit
    assert _listing(location) == files


def test_a_delta_whose_stripe_does_not_decode_fails_the_compaction_as_before(wh):
    """The check decodes stripes first: a corrupt one is the merge's CorruptDataError, not a crash."""
    _insert(wh, _rows(0, 3000))
    _insert(wh, _rows(3000, 3000))
    location = wh.metastore.get_table("t").location
    path = os.path.join(location, "delta_0000002_0000002_0000", "bucket_00000")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[3:400] = bytes(397)  # the first stripe's streams, after the "ORC" magic: zeros
    with open(path, "wb") as f:
        f.write(data)
    files = _listing(location)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    assert run_worker(wh.metastore) == []
    [entry] = wh.metastore.show_compactions()
    assert entry.state is CompactionState.FAILED
    assert f"Corrupt ACID data at {path!r}: its ORC data does not decode" in entry.error_message
    assert _listing(location) == files
