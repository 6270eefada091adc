"""The event-file writer, checked by reading its files back with pyorc and pyarrow.orc.

Oracles: the key index is recomputed from the stripes as pyorc reads them (last row of each stripe);
stats are counted from the input; metadata formats and values are compared with the real Hive files
in tests/data/hive-real (acid5k.orc from apache/orc, Trino's delete deltas), never with this writer's
own output.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import os
import random
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as orc
import pyorc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.bucket_codec import encode_bucket_property
from acid_core.errors import (
    AcidError,
    InvalidBucketPropertyError,
    InvalidEventError,
    InvalidSchemaError,
    InvalidWriterOptionError,
    StorageError,
)
from acid_core.fs import LocalFileIO, PyArrowFileIO
from acid_core.orc import writer as writer_module
from acid_core.orc.schema import EVENT_COLUMN_NAMES, RowType, event_orc_type, event_schema
from acid_core.orc.writer import (
    ACID_VERSION,
    COMPRESSION_KINDS,
    DEFAULT_COMPRESSION,
    RowKey,
    delete_events,
    insert_events,
    sort_events,
    write_acid_dir,
    write_event_file,
)
from acid_core.paths import BaseDir, DeleteDeltaDir, DeltaDir

HIVE_REAL = Path(__file__).resolve().parents[2] / "data" / "hive-real"
ACID5K = HIVE_REAL / "orc_acid5k" / "delta_0000012_0000012_0000" / "bucket_00000"
TRINO_DELETES = HIVE_REAL / "trino_delete_deltas_only" / "delete_delta_0000007_0000007_0000" / "bucket_00000"
NATION_DELETE = (
    HIVE_REAL
    / "trino_original_file_with_delete_delta"
    / "delete_delta_10000001_10000001_0000"
    / "bucket_00000"
)
IMPALA_LOWER = HIVE_REAL / "impala_compacted_no_acid_version" / "base_0000001" / "bucket_00000"
ROW_TYPE = RowType.of([("id", "bigint"), ("name", "string")])
# pyorc's CompressionKind values are ORC's CompressionKind proto numbers.
ORC_COMPRESSION_KIND = {"none": 0, "zlib": 1, "snappy": 2, "lz4": 4, "zstd": 5}


class PyorcView:
    """Everything a test needs from a file, as pyorc (ORC C++, not our code) reads it."""

    def __init__(self, path: Path | str):
        with open(path, "rb") as f:
            reader = pyorc.Reader(f)
            self.type_string = str(reader.schema)
            self.compression = int(reader.compression)
            self.metadata = {key: bytes(value) for key, value in reader.user_metadata.items()}
            self.stripes = [list(reader.read_stripe(i)) for i in range(reader.num_of_stripes)]
            self.rows = [row for stripe in self.stripes for row in stripe]

    def key_index_from_stripes(self) -> str:
        return "".join(f"{stripe[-1][1]},{stripe[-1][2]},{stripe[-1][3]};" for stripe in self.stripes)


def _rows(count: int, seed: int = 0) -> pa.RecordBatch:
    rng = random.Random(seed)
    return pa.record_batch(
        {
            # Random values so that a small stripe size really produces several stripes.
            "id": pa.array([rng.getrandbits(62) for _ in range(count)], pa.int64()),
            "name": pa.array([f"{rng.random():.17f}" for _ in range(count)], pa.string()),
        }
    )


def _insert_stream(total: int, batch_rows: int, *, write_id: int = 5, bucket_id: int = 0):
    for start in range(0, total, batch_rows):
        rows = _rows(min(batch_rows, total - start), seed=start)
        yield insert_events(
            rows, write_id=write_id, bucket_id=bucket_id, first_row_id=start, row_type=ROW_TYPE
        )


def _listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


# --- insert_events / delete_events --------------------------------------------------------------------


def test_insert_events_numbers_rows_and_encodes_bucket_v1():
    events = insert_events(
        _rows(3), write_id=7, bucket_id=2, statement_id=1, first_row_id=10, row_type=ROW_TYPE
    )
    assert events.schema == event_schema(ROW_TYPE)
    # BucketCodec V1: (1 << 29) | (2 << 16) | 1, computed by hand.
    bucket = (1 << 29) | (2 << 16) | 1
    assert events.column("operation").to_pylist() == [0, 0, 0]
    assert events.column("originalTransaction").to_pylist() == [7, 7, 7]
    assert events.column("bucket").to_pylist() == [bucket] * 3
    assert events.column("rowId").to_pylist() == [10, 11, 12]
    assert events.column("currentTransaction").to_pylist() == [7, 7, 7]
    assert events.column("row").to_pylist() == _rows(3).to_pylist()


def test_insert_events_of_a_table_and_of_no_rows():
    table = pa.Table.from_batches([_rows(2, seed=1), _rows(1, seed=2)])
    events = insert_events(table, write_id=1, bucket_id=0)
    assert events.column("rowId").to_pylist() == [0, 1, 2]
    assert events.column("row").to_pylist() == table.to_pylist()
    assert insert_events(_rows(0), write_id=1, bucket_id=0).num_rows == 0


def test_insert_events_row_type_mismatch_raises():
    rows = pa.record_batch({"id": pa.array([1], pa.int32()), "name": pa.array(["a"])})
    with pytest.raises(
        InvalidSchemaError, match=r"does not match the table's row type struct<id:bigint,name:string>"
    ):
        insert_events(rows, write_id=1, bucket_id=0, row_type=ROW_TYPE)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"write_id": -1, "bucket_id": 0}, InvalidEventError, r"write ID -1 is not a valid ID"),
        (
            {"write_id": 2**63, "bucket_id": 0},
            InvalidEventError,
            r"write ID 9223372036854775808 is not a valid ID",
        ),
        ({"write_id": 1, "bucket_id": 0, "first_row_id": -5}, InvalidEventError, r"first row ID -5"),
        ({"write_id": 1, "bucket_id": 4096}, InvalidBucketPropertyError, r"bucket ID out of range"),
        ({"write_id": 1, "bucket_id": 0, "statement_id": 4096}, InvalidBucketPropertyError, r"statement ID"),
    ],
    ids=["negative-write-id", "write-id-overflow", "negative-row-id", "bucket-4096", "statement-4096"],
)
def test_insert_events_bad_ids_raise(kwargs, error, message):
    with pytest.raises(error, match=message):
        insert_events(_rows(1), **kwargs)


def test_delete_events_from_row_id_struct_and_from_arrays_are_equal():
    keys = ([1, 1, 3], [536870912, 536870912, 536936448], [0, 4, 2])
    from_arrays = delete_events(keys, write_id=9, row_type=ROW_TYPE)
    row_ids = pa.StructArray.from_arrays(
        [pa.array(keys[0], pa.int64()), pa.array(keys[1], pa.int32()), pa.array(keys[2], pa.int64())],
        names=["writeid", "bucketid", "rowid"],
    )
    assert delete_events(row_ids, write_id=9, row_type=ROW_TYPE).equals(from_arrays)
    assert from_arrays.schema == event_schema(ROW_TYPE)
    assert from_arrays.column("operation").to_pylist() == [2, 2, 2]
    assert from_arrays.column("currentTransaction").to_pylist() == [9, 9, 9]
    assert from_arrays.column("row").to_pylist() == [None, None, None]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (([1], [1]), r"2 row ID arrays"),
        (([1, 2], [1], [1]), r"row ID arrays of lengths \[2, 1, 1\]"),
        (([None], [1], [1]), r"a null row ID"),
        ((["x"], [1], [1]), r"row IDs that are not integers"),
    ],
    ids=["two-arrays", "lengths", "null", "strings"],
)
def test_delete_events_bad_keys_raise(keys, message):
    with pytest.raises(InvalidEventError, match=message):
        delete_events(keys, write_id=2, row_type=ROW_TYPE)


def test_sort_events_orders_by_the_row_key():
    events = delete_events(([3, 1, 1, 1], [5, 7, 5, 5], [0, 0, 9, 2]), write_id=4, row_type=ROW_TYPE)
    ordered = sort_events(events)
    keys = list(
        zip(*(ordered.column(c).to_pylist() for c in ("originalTransaction", "bucket", "rowId")), strict=True)
    )
    assert keys == [(1, 5, 2), (1, 5, 9), (1, 7, 0), (3, 5, 0)]


# --- files read back ------------------------------------------------------------------------------------


def test_default_compression_is_zlib_as_hive():
    assert DEFAULT_COMPRESSION == "zlib"
    assert set(COMPRESSION_KINDS) == {"none", "zlib", "snappy", "lz4", "zstd"}


@pytest.mark.parametrize("compression", ["none", "zlib", "snappy", "lz4", "zstd"])
def test_multi_stripe_file_reads_back_with_exact_metadata(tmp_path, compression):
    total = 60_000
    path = str(tmp_path / "bucket_00000")
    stats = write_event_file(
        LocalFileIO(),
        path,
        _insert_stream(total, 7_000),
        ROW_TYPE,
        compression=compression,
        stripe_size=64 * 1024,
    )
    view = PyorcView(path)
    assert len(view.stripes) >= 3, "the small stripe size must give a multi-stripe file"
    assert view.compression == ORC_COMPRESSION_KIND[compression]
    assert view.type_string == (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
        "row:struct<id:bigint,name:string>>"
    )
    assert view.metadata == {
        "hive.acid.key.index": view.key_index_from_stripes().encode(),
        "hive.acid.stats": f"{total},0,0".encode(),
        "hive.acid.version": b"2",
    }
    expected_rows = [
        (0, 5, 536870912, i, 5, tuple(row.values()))
        for i, row in enumerate(
            pa.Table.from_batches(list(_insert_stream(total, 7_000))).column("row").to_pylist()
        )
    ]
    assert view.rows == expected_rows
    # The returned stats describe the same file.
    assert stats.key_index == view.key_index_from_stripes()
    assert stats.acid_stats == f"{total},0,0"
    assert (stats.inserts, stats.updates, stats.deletes, stats.rows) == (total, 0, 0, total)
    assert len(stats.stripe_keys) == len(view.stripes)
    # pyarrow reads the same file, with the same schema the event schema promises.
    read = orc.ORCFile(path)
    assert read.compression == {"none": "UNCOMPRESSED"}.get(compression, compression.upper())
    assert read.nstripes == len(view.stripes)
    assert read.schema == event_schema(ROW_TYPE)
    assert read.read().num_rows == total


def test_stripe_keys_match_stripes_for_batches_not_aligned_to_chunks(tmp_path):
    # Batches of odd sizes: stripe ends fall inside input batches as well as on their ends.
    path = tmp_path / "bucket_00003"
    batches = []
    start = 0
    sizes = (1, 33_333, 2, 20_000, 17, 9_000)
    for size in sizes:
        batches.append(insert_events(_rows(size, seed=start), write_id=3, bucket_id=3, first_row_id=start))
        start += size
    stats = write_event_file(LocalFileIO(), str(path), batches, ROW_TYPE, stripe_size=32 * 1024)
    view = PyorcView(path)
    assert len(view.stripes) >= 3
    stripe_ends = set(itertools.accumulate(len(stripe) for stripe in view.stripes))
    assert stripe_ends - set(itertools.accumulate(sizes)), "some stripe must end inside an input batch"
    assert stats.key_index == view.key_index_from_stripes()
    assert view.metadata["hive.acid.key.index"] == view.key_index_from_stripes().encode()
    assert view.metadata["hive.acid.stats"] == f"{start},0,0".encode()


@settings(max_examples=15, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=0, max_size=6),
    stripe_kib=st.sampled_from([4, 16, 64, 1024]),
    compression=st.sampled_from(["none", "zlib", "snappy"]),
)
def test_key_index_is_the_last_key_of_each_stripe_property(tmp_path_factory, sizes, stripe_kib, compression):
    path = tmp_path_factory.mktemp("prop") / "bucket_00000"
    batches, start = [], 0
    for size in sizes:
        batches.append(insert_events(_rows(size, seed=start), write_id=2, bucket_id=0, first_row_id=start))
        start += size
    stats = write_event_file(
        LocalFileIO(), str(path), batches, ROW_TYPE, compression=compression, stripe_size=stripe_kib * 1024
    )
    view = PyorcView(path)
    assert view.metadata["hive.acid.key.index"] == view.key_index_from_stripes().encode()
    assert view.metadata["hive.acid.stats"] == f"{start},0,0".encode()
    assert stats.rows == len(view.rows) == start


def test_empty_stream_writes_an_empty_event_file(tmp_path):
    path = tmp_path / "bucket_00000"
    stats = write_event_file(LocalFileIO(), str(path), [], ROW_TYPE)
    view = PyorcView(path)
    assert view.rows == []
    assert view.metadata == {
        "hive.acid.key.index": b"",
        "hive.acid.stats": b"0,0,0",
        "hive.acid.version": b"2",
    }
    assert view.type_string == event_orc_type(ROW_TYPE)
    assert stats.stripe_keys == ()
    assert orc.ORCFile(str(path)).nrows == 0


def test_delete_events_file_reads_back_with_null_rows(tmp_path):
    path = tmp_path / "bucket_00000"
    events = sort_events(
        delete_events(
            ([4, 1, 1], [536870912, 536870912, 536870912], [7, 3, 0]), write_id=9, row_type=ROW_TYPE
        )
    )
    stats = write_event_file(LocalFileIO(), str(path), events.to_batches(), ROW_TYPE)
    view = PyorcView(path)
    assert view.rows == [
        (2, 1, 536870912, 0, 9, None),
        (2, 1, 536870912, 3, 9, None),
        (2, 4, 536870912, 7, 9, None),
    ]
    assert view.metadata["hive.acid.stats"] == b"0,0,3"
    assert view.metadata["hive.acid.key.index"] == b"4,536870912,7;"
    assert stats.acid_stats == "0,0,3"


def test_lower_case_event_columns_are_accepted_and_written_canonically(tmp_path):
    # Query-based compaction output (Impala's fixture) as input: names are normalized.
    table = orc.ORCFile(str(IMPALA_LOWER)).read()
    path = tmp_path / "bucket_00000"
    write_event_file(LocalFileIO(), str(path), table.to_batches(), RowType.of([("i", "int")]))
    view = PyorcView(path)
    assert view.type_string == event_orc_type(RowType.of([("i", "int")]))
    assert [row[5] for row in view.rows] == [(1,), (2,), (3,)]


# --- the same events as real Hive files give the same metadata ---------------------------------------


@pytest.mark.parametrize(
    ("path", "compression"),
    [(ACID5K, "snappy"), (TRINO_DELETES, "zlib"), (NATION_DELETE, "zlib")],
    ids=["acid5k-inserts", "trino-delete-delta", "trino-nation-delete"],
)
def test_rewriting_hive_files_reproduces_hives_metadata(tmp_path, path, compression):
    """Hive's files hold one stripe each: same events -> byte-identical user metadata and type string."""
    hive = PyorcView(path)
    assert len(hive.stripes) == 1
    table = orc.ORCFile(str(path)).read()
    row_type = RowType.from_orc(hive.type_string)
    ours = tmp_path / "bucket_00000"
    write_event_file(LocalFileIO(), str(ours), table.to_batches(), row_type, compression=compression)
    view = PyorcView(ours)
    assert view.metadata == hive.metadata
    assert view.type_string == hive.type_string
    assert view.rows == hive.rows
    assert view.compression == hive.compression


def test_hive_real_metadata_formats_are_what_the_writer_emits():
    # acid5k.orc (Hive, write id 12, 5000 inserts, bucket 0 statement 0): the formats we reproduce.
    assert PyorcView(ACID5K).metadata == {
        "hive.acid.key.index": b"12,536870912,4999;",
        "hive.acid.stats": b"5000,0,0",
        "hive.acid.version": str(ACID_VERSION).encode(),
    }
    assert RowKey(12, encode_bucket_property(0), 4999).to_index_entry() == "12,536870912,4999;"


# --- directories ------------------------------------------------------------------------------------------


def test_write_acid_dir_writes_version_file_and_one_file_per_bucket(tmp_path):
    stats = write_acid_dir(
        LocalFileIO(),
        str(tmp_path),
        DeltaDir(5, 5, 0),
        {1: _insert_stream(10, 4, bucket_id=1), 0: _insert_stream(3, 4, bucket_id=0)},
        ROW_TYPE,
    )
    directory = tmp_path / "delta_0000005_0000005_0000"
    assert _listing(tmp_path) == ["delta_0000005_0000005_0000"]
    assert _listing(directory) == ["_orc_acid_version", "bucket_00000", "bucket_00001"]
    assert (directory / "_orc_acid_version").read_bytes() == b"2"
    assert [s.path for s in stats] == [str(directory / "bucket_00000"), str(directory / "bucket_00001")]
    assert PyorcView(directory / "bucket_00001").metadata["hive.acid.key.index"] == b"5,536936448,9;"
    assert PyorcView(directory / "bucket_00000").compression == ORC_COMPRESSION_KIND["zlib"]


def test_write_acid_dir_delete_delta_and_base(tmp_path):
    file_io = LocalFileIO()
    deletes = delete_events(([1, 1], [536870912, 536870912], [0, 5]), write_id=3, row_type=ROW_TYPE)
    write_acid_dir(file_io, str(tmp_path), DeleteDeltaDir(3, 3, 0), {0: [deletes]}, ROW_TYPE)
    write_acid_dir(file_io, str(tmp_path), BaseDir(7, 12), {0: _insert_stream(2, 2, write_id=7)}, ROW_TYPE)
    assert _listing(tmp_path) == ["base_0000007_v0000012", "delete_delta_0000003_0000003_0000"]
    assert (tmp_path / "base_0000007_v0000012" / "_orc_acid_version").read_bytes() == b"2"
    assert (
        PyorcView(tmp_path / "delete_delta_0000003_0000003_0000" / "bucket_00000").metadata["hive.acid.stats"]
        == b"0,0,2"
    )


def test_writes_go_through_the_file_io_port(tmp_path):
    # A pyarrow SubTreeFileSystem: paths are relative to its root, nothing local-path specific.
    file_io = PyArrowFileIO(pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()))
    write_acid_dir(file_io, "warehouse/t", DeltaDir(1, 1, 0), {0: _insert_stream(5, 5, write_id=1)}, ROW_TYPE)
    data = file_io.read_bytes("warehouse/t/delta_0000001_0000001_0000/bucket_00000")
    assert orc.ORCFile(pa.BufferReader(data)).read().num_rows == 5
    assert file_io.read_bytes("warehouse/t/delta_0000001_0000001_0000/_orc_acid_version") == b"2"


# --- errors: clear, and never a half-written file under the final name ------------------------------------


@pytest.mark.parametrize("name", ["gzip", "lzo", "", "zlib "])
def test_bad_compression_raises_before_writing(tmp_path, name):
    with pytest.raises(InvalidWriterOptionError) as caught:
        write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), [], ROW_TYPE, compression=name)
    assert str(caught.value) == (
        f"Invalid ORC writer option compression={name!r}; expected one of none, zlib, snappy, lz4, zstd "
        "(case-insensitive)"
    )
    assert _listing(tmp_path) == []


def test_compression_names_are_case_insensitive(tmp_path):
    write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), [], ROW_TYPE, compression="SNAPPY")
    assert PyorcView(tmp_path / "bucket_00000").compression == ORC_COMPRESSION_KIND["snappy"]


@pytest.mark.parametrize("stripe_size", [0, 1023, -1, True])
def test_bad_stripe_size_raises(tmp_path, stripe_size):
    with pytest.raises(
        InvalidWriterOptionError, match=rf"stripe_size={stripe_size!r}; expected a size in bytes"
    ):
        write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), [], ROW_TYPE, stripe_size=stripe_size)


def _assert_nothing_visible(directory: Path) -> None:
    assert [
        name for name in _listing(directory) if name.startswith("bucket_") or ".acidflow-tmp-" in name
    ] == []


def test_unsorted_events_within_a_batch_raise_and_leave_no_file(tmp_path):
    events = delete_events(([1, 1, 1], [536870912] * 3, [0, 5, 4]), write_id=2, row_type=ROW_TYPE)
    path = tmp_path / "bucket_00000"
    with pytest.raises(InvalidEventError) as caught:
        write_event_file(LocalFileIO(), str(path), [events], ROW_TYPE)
    assert str(caught.value) == (
        f"Invalid ACID events for {str(path)!r}: key (1, 536870912, 4) follows key (1, 536870912, 5); "
        "expected events sorted by (originalTransaction, bucket, rowId); hint: sort_events() sorts a bounded set"
    )
    _assert_nothing_visible(tmp_path)


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (([1], [536870912], [2]), r"key \(1, 536870912, 2\) follows key \(1, 536870912, 3\)"),
        (([0], [536870912], [9]), r"key \(0, 536870912, 9\) follows key \(1, 536870912, 3\)"),
        (([1], [536870911], [9]), r"key \(1, 536870911, 9\) follows key \(1, 536870912, 3\)"),
    ],
    ids=["row-id", "original-transaction", "bucket"],
)
def test_unsorted_events_across_batches_raise(tmp_path, second, message):
    first = delete_events(([1, 1], [536870912] * 2, [0, 3]), write_id=2, row_type=ROW_TYPE)
    later = delete_events(second, write_id=2, row_type=ROW_TYPE)
    with pytest.raises(InvalidEventError, match=message):
        write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), [first, later], ROW_TYPE)
    _assert_nothing_visible(tmp_path)


def test_equal_consecutive_keys_are_allowed(tmp_path):
    # Legacy compacted deltas may hold several versions of one row id.
    events = delete_events(([1, 1], [536870912] * 2, [3, 3]), write_id=2, row_type=ROW_TYPE)
    stats = write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), [events], ROW_TYPE)
    assert stats.deletes == 2


def test_row_type_mismatch_raises_naming_both_types(tmp_path):
    other = RowType.of([("id", "int"), ("name", "string")])
    events = insert_events(
        _rows(1).cast(pa.schema([("id", pa.int64()), ("name", pa.string())])), write_id=1, bucket_id=0
    )
    with pytest.raises(InvalidSchemaError) as caught:
        write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), [events], other)
    assert str(caught.value) == (
        "Invalid schema 'struct<id: int64, name: string>': the batch's row column does not match the table's "
        "row type struct<id:int,name:string>; expected Arrow type struct<id: int32, name: string>"
    )
    _assert_nothing_visible(tmp_path)


def test_batch_without_event_columns_raises(tmp_path):
    with pytest.raises(InvalidSchemaError, match=r"an event batch without the ACID event columns"):
        write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), [_rows(2)], ROW_TYPE)
    _assert_nothing_visible(tmp_path)


def _events(operation, original, bucket, row_id, current, rows):
    return pa.RecordBatch.from_arrays(
        [
            pa.array(operation, pa.int32()),
            pa.array(original, pa.int64()),
            pa.array(bucket, pa.int32()),
            pa.array(row_id, pa.int64()),
            pa.array(current, pa.int64()),
            pa.array(rows, ROW_TYPE.to_arrow()),
        ],
        names=list(EVENT_COLUMN_NAMES),
    )


ROW = {"id": 1, "name": "a"}
BAD_EVENTS = [
    (
        _events([0], [None], [536870912], [0], [1], [ROW]),
        r"1 null value\(s\) in column 'originalTransaction'",
    ),
    (_events([3], [1], [536870912], [0], [1], [ROW]), r"operation 3 \(1 event\(s\)\)"),
    (_events([0], [1], [-1], [0], [1], [ROW]), r"bucket value -1; expected a BucketCodec V0 or V1 value"),
    (_events([0], [1], [2 << 29], [0], [1], [ROW]), r"bucket value 1073741824; expected a BucketCodec"),
    (
        _events([2], [1], [536870912], [0], [1], [ROW]),
        r"event 0 of a batch has operation 2 and a non-null row",
    ),
    (_events([0], [1], [536870912], [0], [1], [None]), r"event 0 of a batch has operation 0 and a null row"),
    (_events([0], [-2], [536870912], [0], [1], [ROW]), r"a negative originalTransaction -2"),
    (
        _events([0, 0, 0], [1, 1, 1], [536870912] * 3, [0, 1, 2], [1, 1, 1], [ROW, None, ROW]),
        r"event 1 of a batch has operation 0 and a null row",
    ),
    (
        _events([2, 2], [1, 1], [536870912] * 2, [0, 1], [1, 1], [None, ROW]),
        r"event 1 of a batch has operation 2 and a non-null row",
    ),
]


@pytest.mark.parametrize(
    ("events", "message"),
    BAD_EVENTS,
    ids=["null-key", "operation-3", "negative-bucket", "bucket-codec-v2", "delete-with-row", "insert-without-row",
         "negative-write-id", "inserts-one-without-row", "deletes-one-with-row"],
)  # fmt: skip
@pytest.mark.parametrize("check_in_thread", [False, True], ids=["inline", "check-in-thread"])
def test_bad_event_values_raise(tmp_path, events, message, check_in_thread):
    good = next(_insert_stream(100, 100, write_id=1))
    with pytest.raises(InvalidEventError, match=message):
        write_event_file(
            LocalFileIO(),
            str(tmp_path / "bucket_00000"),
            [good.slice(0, 0), events],
            ROW_TYPE,
            check_in_thread=check_in_thread,
        )
    _assert_nothing_visible(tmp_path)


def test_check_in_thread_writes_the_same_bytes_and_stats(tmp_path):
    written = {}
    for check_in_thread in (False, True):
        path = tmp_path / f"{check_in_thread}" / "bucket_00001"
        path.parent.mkdir()
        stats = write_event_file(
            LocalFileIO(),
            str(path),
            _insert_stream(50_000, 7_000, bucket_id=1),
            ROW_TYPE,
            stripe_size=64 * 1024,
            bucket_id=1,
            check_in_thread=check_in_thread,
        )
        written[check_in_thread] = (path.read_bytes(), stats.inserts, stats.stripe_keys)
    assert written[True] == written[False]
    assert written[True][1] == 50_000
    assert len(written[True][2]) > 1  # several stripes: the stripe keys were observed per chunk


def test_deletes_in_a_delta_and_inserts_in_a_delete_delta_raise(tmp_path):
    deletes = delete_events(([1], [536870912], [0]), write_id=2, row_type=ROW_TYPE)
    with pytest.raises(
        InvalidEventError, match=r"operation 2 \(1 event\(s\)\); expected operations \[0, 1\]"
    ):
        write_acid_dir(LocalFileIO(), str(tmp_path), DeltaDir(2, 2, 0), {0: [deletes]}, ROW_TYPE)
    inserts = insert_events(_rows(1), write_id=2, bucket_id=0)
    with pytest.raises(InvalidEventError, match=r"operation 0 \(1 event\(s\)\); expected operations \[2\]"):
        write_acid_dir(LocalFileIO(), str(tmp_path), DeleteDeltaDir(2, 2, 0), {0: [inserts]}, ROW_TYPE)
    _assert_nothing_visible(tmp_path / "delta_0000002_0000002_0000")
    _assert_nothing_visible(tmp_path / "delete_delta_0000002_0000002_0000")


def test_events_of_another_bucket_raise(tmp_path):
    inserts = insert_events(_rows(2), write_id=2, bucket_id=1)
    with pytest.raises(InvalidEventError, match=r"bucket value 536936448 \(bucket ID 1\) in bucket_00000"):
        write_acid_dir(LocalFileIO(), str(tmp_path), DeltaDir(2, 2, 0), {0: [inserts]}, ROW_TYPE)


@pytest.mark.parametrize("check_in_thread", [False, True], ids=["inline", "check-in-thread"])
def test_a_failing_input_stream_leaves_no_file(tmp_path, check_in_thread):
    def stream():
        yield from _insert_stream(40_000, 10_000)
        raise RuntimeError("upstream failed")

    with pytest.raises(RuntimeError, match="upstream failed"):
        write_event_file(
            LocalFileIO(),
            str(tmp_path / "bucket_00000"),
            stream(),
            ROW_TYPE,
            stripe_size=64 * 1024,
            check_in_thread=check_in_thread,
        )
    assert _listing(tmp_path) == []
    assert not [t for t in threading.enumerate() if t.name == "acidflow-check"]


def test_existing_file_is_never_overwritten(tmp_path):
    path = tmp_path / "bucket_00000"
    path.write_bytes(b"precious")
    with pytest.raises(StorageError) as caught:
        write_event_file(LocalFileIO(), str(path), _insert_stream(2, 2), ROW_TYPE)
    assert str(caught.value) == (
        f"Cannot write event file {str(path)!r}: it already exists; expected a new file name"
    )
    assert path.read_bytes() == b"precious"
    assert _listing(tmp_path) == ["bucket_00000"]


# --- every Hive type, varchar/char included -----------------------------------------------------------

ALL_TYPES = RowType.of(
    [
        ("ti", "tinyint"),
        ("si", "smallint"),
        ("i", "int"),
        ("bi", "bigint"),
        ("bo", "boolean"),
        ("f", "float"),
        ("d", "double"),
        ("s", "string"),
        ("vc", "varchar(10)"),
        ("c", "char(3)"),
        ("dec", "decimal(10,2)"),
        ("dt", "date"),
        ("ts", "timestamp"),
        ("bin", "binary"),
        ("arr", "array<varchar(4)>"),
        ("m", "map<string,bigint>"),
        ("st", "struct<x:char(2),y:string>"),
    ]
)
ALL_TYPES_ROW = {
    "ti": -3,
    "si": 300,
    "i": 70000,
    "bi": 2**40,
    "bo": True,
    "f": 1.5,
    "d": 2.25,
    "s": "string",
    "vc": "varchar",
    "c": "ab",
    "dec": decimal.Decimal("12345678.91"),
    "dt": datetime.date(2020, 1, 2),
    "ts": datetime.datetime(2020, 1, 2, 3, 4, 5, 123456),
    "bin": b"\x00\x01",
    "arr": ["ab", "cd"],
    "m": [("k", 5)],
    "st": {"x": "q", "y": "y"},
}


@pytest.mark.parametrize("compression", ["none", "zlib", "snappy", "lz4", "zstd"])
def test_every_hive_type_gets_its_orc_type_and_reads_back(tmp_path, compression):
    rows = pa.RecordBatch.from_struct_array(pa.array([ALL_TYPES_ROW] * 3, type=ALL_TYPES.to_arrow()))
    path = tmp_path / "bucket_00000"
    write_event_file(
        LocalFileIO(),
        str(path),
        [insert_events(rows, write_id=1, bucket_id=0, row_type=ALL_TYPES)],
        ALL_TYPES,
        compression=compression,
    )
    view = PyorcView(path)
    # The exact type string Hive would write for this table (varchar/char keep their lengths).
    assert view.type_string == (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
        "row:struct<ti:tinyint,si:smallint,i:int,bi:bigint,bo:boolean,f:float,d:double,s:string,"
        "vc:varchar(10),c:char(3),dec:decimal(10,2),dt:date,ts:timestamp,bin:binary,arr:array<varchar(4)>,"
        "m:map<string,bigint>,st:struct<x:char(2),y:string>>>"
    )
    assert view.compression == ORC_COMPRESSION_KIND[compression]
    assert view.metadata["hive.acid.stats"] == b"3,0,0"
    assert view.metadata["hive.acid.key.index"] == b"1,536870912,2;"
    assert len(view.rows) == 3
    assert all(event[5] == view.rows[0][5] for event in view.rows)
    row = view.rows[0][5]
    expected = dict(ALL_TYPES_ROW, c="ab ")  # char(3) is padded with spaces, as ORC's CHAR writer does
    assert row[:12] == tuple(expected[name] for name in ALL_TYPES.names[:12])
    assert row[12].replace(tzinfo=None) == ALL_TYPES_ROW["ts"]
    assert row[13:] == (b"\x00\x01", ["ab", "cd"], {"k": 5}, ("q", "y"))
    assert orc.ORCFile(str(path)).read().column("row").to_pylist()[0]["c"] == "ab "


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("vc", "elevenchars", r"a value of 11 characters in varchar\(10\) column 'vc'"),
        ("c", "four", r"a value of 4 characters in char\(3\) column 'c'"),
    ],
    ids=["varchar", "char"],
)
def test_too_long_varchar_or_char_raises(tmp_path, column, value, message):
    rows = pa.RecordBatch.from_struct_array(
        pa.array([dict(ALL_TYPES_ROW, **{column: value})], type=ALL_TYPES.to_arrow())
    )
    with pytest.raises(InvalidEventError, match=message):
        write_event_file(
            LocalFileIO(),
            str(tmp_path / "bucket_00000"),
            [insert_events(rows, write_id=1, bucket_id=0)],
            ALL_TYPES,
        )
    _assert_nothing_visible(tmp_path)


def test_char_columns_of_delete_events_stay_null(tmp_path):
    deletes = delete_events(([1, 1], [536870912] * 2, [0, 1]), write_id=2, row_type=ALL_TYPES)
    write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), [deletes], ALL_TYPES)
    assert [event[5] for event in PyorcView(tmp_path / "bucket_00000").rows] == [None, None]


# --- only the tail is held back in memory ---------------------------------------------------------------


def test_last_stripe_is_streamed_and_only_the_tail_is_held(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "_TAIL_HOLD_BYTES", 64 * 1024)
    path = tmp_path / "bucket_00000"
    # One big stripe, written entirely during close: far more than 64 KiB passes through.
    write_event_file(LocalFileIO(), str(path), _insert_stream(50_000, 10_000), ROW_TYPE)
    assert path.stat().st_size > 10 * 64 * 1024
    view = PyorcView(path)
    assert view.metadata["hive.acid.stats"] == b"50000,0,0"
    assert view.metadata["hive.acid.key.index"] == view.key_index_from_stripes().encode()


def test_a_tail_larger_than_the_hold_raises_and_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "_TAIL_HOLD_BYTES", 16)
    with pytest.raises(AcidError, match=r"unexpected ORC tail \(the footer is not in the held tail\)"):
        write_event_file(LocalFileIO(), str(tmp_path / "bucket_00000"), _insert_stream(10, 10), ROW_TYPE)
    assert _listing(tmp_path) == []
