"""scan(ordered=True) streams file by file when that already is row-ID order (memory: one open file).

Before: every ordered scan was a k-way merge holding one stripe of EVERY data file at once, so
``acidflow read`` of a table with many deltas grew with the table. Now a history of disjoint,
insert-only deltas in one bucket is read one file at a time; anything else still merges. Either
way the rows and their order are those of the merge.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.errors import CorruptDataError
from acid_core.fs import LocalFileIO
from acid_core.orc.reader import iter_delete_events, load_delete_events, scan
from acid_core.orc.schema import RowType
from acid_core.orc.writer import delete_events, insert_events, write_acid_dir
from acid_core.paths import DeleteDeltaDir, DeltaDir
from acid_core.writeids import ValidWriteIdList

ROW_TYPE = RowType.of([("a", "bigint")])


class CountingFileIO(LocalFileIO):
    """LocalFileIO that remembers every stream it opened, to count the ones open at a time."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[pa.NativeFile] = []

    def open_input(self, path):
        stream = super().open_input(path)
        self.opened.append(stream)
        return stream

    def open_now(self) -> int:
        return sum(not stream.closed for stream in self.opened)


def _delta(table_dir, write_id, rows, *, statement=0, bucket=0, start=0):
    values = pa.record_batch({"a": pa.array(range(start, start + rows), pa.int64())})
    events = insert_events(
        values, write_id=write_id, bucket_id=bucket, statement_id=statement, row_type=ROW_TYPE
    )
    write_acid_dir(
        LocalFileIO(), table_dir, DeltaDir(write_id, write_id, statement), {bucket: [events]}, ROW_TYPE
    )


def _read(io, table_dir, ordered):
    peak, rows = 0, []
    for batch in scan(io, table_dir, ValidWriteIdList(), with_row_id=True, ordered=ordered, batch_rows=7):
        peak = max(peak, io.open_now())
        rows.extend(batch.to_pylist())
    return peak, rows


def _key(row):
    return row["row__id"]["writeid"], row["row__id"]["bucketid"], row["row__id"]["rowid"]


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.integers(1, 30), min_size=2, max_size=6), deleted=st.sets(st.integers(0, 40)))
def test_scan_ordered_disjoint_deltas_opens_one_file_at_a_time(tmp_path_factory, sizes, deleted):
    table_dir = str(tmp_path_factory.mktemp("t"))
    for write_id, size in enumerate(sizes, start=1):
        _delta(table_dir, write_id, size)
    if deleted:
        keys = (
            pa.array([1] * len(deleted), pa.int64()),
            pa.array([1 << 29] * len(deleted), pa.int32()),
            pa.array(sorted(deleted), pa.int64()),
        )
        write_id = len(sizes) + 1
        removed = delete_events(keys, write_id=write_id, row_type=ROW_TYPE)
        write_acid_dir(
            LocalFileIO(), table_dir, DeleteDeltaDir(write_id, write_id, 0), {0: [removed]}, ROW_TYPE
        )
    io = CountingFileIO()
    peak, rows = _read(io, table_dir, ordered=True)
    assert peak <= 1
    assert [_key(r) for r in rows] == sorted(_key(r) for r in rows)
    expected = [(w, 1 << 29, i) for w, size in enumerate(sizes, start=1) for i in range(size)]
    assert [_key(r) for r in rows] == [k for k in expected if not (k[0] == 1 and k[2] in deleted)]
    assert io.open_now() == 0


def test_scan_ordered_statements_of_one_write_still_merge(tmp_path):
    table_dir = str(tmp_path)
    _delta(table_dir, 1, 20, statement=0)
    _delta(table_dir, 1, 20, statement=1, start=100)
    io = CountingFileIO()
    peak, rows = _read(io, table_dir, ordered=True)
    assert peak == 2  # the k-way merge: one open file per input
    assert [_key(r) for r in rows] == sorted(_key(r) for r in rows)
    assert len(rows) == 40


def test_scan_ordered_several_buckets_still_merge_into_row_id_order(tmp_path):
    table_dir = str(tmp_path)
    _delta(table_dir, 1, 10, bucket=0)
    _delta(table_dir, 2, 10, bucket=1)
    _delta(table_dir, 3, 10, bucket=0)
    _, rows = _read(CountingFileIO(), table_dir, ordered=True)
    assert [_key(r) for r in rows] == sorted(_key(r) for r in rows)
    assert [r["row__id"]["writeid"] for r in rows] == [1] * 10 + [2] * 10 + [3] * 10


def test_scan_ordered_file_by_file_still_refuses_row_ids_repeated_in_another_file(tmp_path):
    # Equal events inside one file collapse (Hive's OrcRawRecordMerger); the rows of write ID 1
    # (its last row) copied into a later delta are copied or corrupt files: refused, as the k-way
    # merge does.
    table_dir = str(tmp_path)
    values = pa.record_batch({"a": pa.array([1, 2], pa.int64())})
    events = insert_events(values, write_id=1, bucket_id=0, row_type=ROW_TYPE)
    write_acid_dir(LocalFileIO(), table_dir, DeltaDir(1, 1, 0), {0: [events]}, ROW_TYPE)
    write_acid_dir(LocalFileIO(), table_dir, DeltaDir(2, 2, 0), {0: [events.slice(1)]}, ROW_TYPE)
    with pytest.raises(CorruptDataError, match="is also in"):
        _read(CountingFileIO(), table_dir, ordered=True)


@settings(max_examples=25, deadline=None)
@given(
    files=st.lists(
        st.lists(st.tuples(st.integers(1, 4), st.integers(0, 2), st.integers(0, 30)), max_size=40),
        min_size=1,
        max_size=4,
    ),
    batch_rows=st.integers(1, 9),
)
def test_iter_delete_events_streams_the_sorted_delete_set(tmp_path_factory, files, batch_rows):
    """A k-way merge over overlapping delete deltas gives load_delete_events' sorted set, in small batches."""
    table_dir = str(tmp_path_factory.mktemp("d"))
    expected = []
    for index, keys in enumerate(files):
        write_id = 10 + index
        ordered = sorted(set(keys))
        expected.extend((o, (1 << 29) | s, r, write_id) for o, s, r in ordered)
        if not ordered:
            continue
        columns = (
            pa.array([k[0] for k in ordered], pa.int64()),
            pa.array([(1 << 29) | k[1] for k in ordered], pa.int32()),
            pa.array([k[2] for k in ordered], pa.int64()),
        )
        events = delete_events(columns, write_id=write_id, row_type=ROW_TYPE)
        write_acid_dir(
            LocalFileIO(), table_dir, DeleteDeltaDir(write_id, write_id, 0), {0: [events]}, ROW_TYPE
        )
    batches = list(iter_delete_events(LocalFileIO(), table_dir, ValidWriteIdList(), batch_rows=batch_rows))
    assert all(0 < b.num_rows <= batch_rows for b in batches)
    got = [tuple(row.values()) for b in batches for row in b.to_pylist()]
    assert got == sorted(expected)
    table = load_delete_events(LocalFileIO(), table_dir, ValidWriteIdList())
    assert [tuple(row.values()) for row in table.to_pylist()] == sorted(expected)


def _deleted_table(table_dir, rows, delete_every):
    """One insert delta of ``rows`` rows and one delete delta deleting every ``delete_every``-th row."""
    _delta(table_dir, 1, rows)
    doomed = list(range(0, rows, delete_every))
    keys = (
        pa.array([1] * len(doomed), pa.int64()),
        pa.array([1 << 29] * len(doomed), pa.int32()),
        pa.array(doomed, pa.int64()),
    )
    removed = delete_events(keys, write_id=2, row_type=ROW_TYPE)
    write_acid_dir(LocalFileIO(), table_dir, DeleteDeltaDir(2, 2, 0), {0: [removed]}, ROW_TYPE)
    return [i for i in range(rows) if i % delete_every]


def test_scan_above_the_in_memory_threshold_streams_deletes_in_bounded_windows(tmp_path, monkeypatch):
    """Hive's hive.transactional.events.mem: above it the sort-merge registry holds a window, never the set."""
    from acid_core.orc import deletes

    table_dir = str(tmp_path)
    expected = _deleted_table(table_dir, 40_000, 2)  # 20,000 delete events
    largest = {"window": 0, "registry": 0}
    window, registry_init = deletes._Stream.window, deletes.ColumnizedDeleteRegistry.__init__

    def recording_window(self, low, high):
        result = window(self, low, high)
        largest["window"] = max(largest["window"], self.buffer[0].size)
        return result

    def recording_init(self, chunks, capacity=None):
        registry_init(self, chunks, capacity)
        largest["registry"] = max(largest["registry"], len(self))

    monkeypatch.setattr(deletes._Stream, "window", recording_window)
    monkeypatch.setattr(deletes.ColumnizedDeleteRegistry, "__init__", recording_init)
    batch_rows = 1024
    for in_memory, streamed in ((20_000, False), (19_999, True), (1_000, True)):
        largest.update(window=0, registry=0)
        reader = scan(
            LocalFileIO(),
            table_dir,
            ValidWriteIdList(),
            delete_events_in_memory=in_memory,
            batch_rows=batch_rows,
        )
        assert reader.read_all().column("a").to_pylist() == expected
        if streamed:
            # One delete file: at most one decoded batch of it beyond the current row batch's key range.
            assert 0 < largest["window"] <= 2 * batch_rows
            assert largest["registry"] <= batch_rows
        else:
            assert largest["window"] == 0
            assert largest["registry"] == 20_000


def test_scan_stopped_early_stops_its_decoding_thread_and_closes_files(tmp_path):
    import threading

    table_dir = str(tmp_path)
    for write_id in (1, 2, 3):
        _delta(table_dir, write_id, 50, start=100 * write_id)
    io = CountingFileIO()
    reader = scan(io, table_dir, ValidWriteIdList(), batch_rows=4)
    first = reader.read_next_batch()
    assert first.column("a").to_pylist() == [100, 101, 102, 103]
    del reader  # an abandoned reader: its generator is closed, which joins the thread
    assert io.open_now() == 0
    assert not [t for t in threading.enumerate() if t.name == "acidflow-scan-decode"]
    limited = scan(io, table_dir, ValidWriteIdList(), batch_rows=4, limit=6).read_all()
    assert limited.column("a").to_pylist() == [100, 101, 102, 103, 104, 105]
    assert io.open_now() == 0
    assert not [t for t in threading.enumerate() if t.name == "acidflow-scan-decode"]


def _tail_constants(path):
    import pyarrow.orc as paorc

    from acid_core.orc.orc_tail import constant_integer_columns

    orc_file = paorc.ORCFile(str(path))
    return constant_integer_columns(orc_file.reader.serialized_file_tail(), int(orc_file.nrows))


def test_constant_integer_columns_reads_the_footer_statistics(tmp_path):
    table_dir = str(tmp_path)
    _delta(table_dir, 7, 5, statement=2, bucket=3)
    # Column IDs: 1 operation, 2 originalTransaction, 3 bucket, 4 rowId, 5 currentTransaction, 7 row.a.
    assert _tail_constants(tmp_path / "delta_0000007_0000007_0002/bucket_00003") == {
        1: 0,
        2: 7,
        3: (1 << 29) | (3 << 16) | 2,
        5: 7,
    }
    one_row = str(tmp_path / "one")
    _delta(one_row, 8, 1)
    assert _tail_constants(tmp_path / "one/delta_0000008_0000008_0000/bucket_00000")[4] == 0  # rowId too
    from acid_core.orc.orc_tail import constant_integer_columns

    assert constant_integer_columns(b"", 5) == {}
    assert constant_integer_columns(b"\xff\xff\xff", 5) == {}  # unparsable: decode everything
    assert constant_integer_columns(b"", 0) == {}


def test_scan_does_not_decode_key_columns_the_footer_says_are_constant(tmp_path, monkeypatch):
    from acid_core.orc import files

    table_dir = str(tmp_path / "deltas")
    _delta(table_dir, 1, 30)
    # A base with two write IDs: originalTransaction and currentTransaction vary, bucket does not.
    mixed = pa.Table.from_batches(
        [
            insert_events(
                pa.record_batch({"a": pa.array([1, 2], pa.int64())}),
                write_id=1,
                bucket_id=0,
                row_type=ROW_TYPE,
            ),
            insert_events(
                pa.record_batch({"a": pa.array([3], pa.int64())}), write_id=2, bucket_id=0, row_type=ROW_TYPE
            ),
        ]
    ).combine_chunks()
    from acid_core.paths import BaseDir

    base_dir = str(tmp_path / "with_base")
    write_acid_dir(LocalFileIO(), base_dir, BaseDir(2), {0: mixed.to_batches()}, ROW_TYPE)
    requested = []
    batches = files.OpenFile.batches

    def recording(self, columns, batch_rows):
        requested.append((self.data_file.path.rsplit("/", 2)[-2], tuple(columns)))
        return batches(self, columns, batch_rows)

    monkeypatch.setattr(files.OpenFile, "batches", recording)
    rows = scan(LocalFileIO(), table_dir, ValidWriteIdList(), with_row_id=True).read_all().to_pylist()
    assert requested == [("delta_0000001_0000001_0000", ("rowId", "row.a"))]
    assert [_key(r) for r in rows] == [(1, 1 << 29, i) for i in range(30)]
    requested.clear()
    rows = scan(LocalFileIO(), base_dir, ValidWriteIdList(), with_row_id=True).read_all().to_pylist()
    assert requested == [("base_0000002", ("originalTransaction", "rowId", "currentTransaction", "row.a"))]
    assert [(_key(r), r["a"]) for r in rows] == [
        ((1, 1 << 29, 0), 1),
        ((1, 1 << 29, 1), 2),
        ((2, 1 << 29, 0), 3),
    ]
