"""A big event file encoded in parts on several threads (``write_event_file(encode_threads=...)``).

Read back with pyorc (the ORC C++ library, not our code): the events, the key index against the
stripes' real last keys, and the file's column statistics against the statistics ORC's own
writer computes for the same events in one file (``encode_threads=1``). The file's bytes must not
depend on the number of threads. Hive 2.3's readers reading a stitched file are in
``tests/integration/test_writer_vs_hive.py``.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pyorc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.errors import InvalidEventError, InvalidWriterOptionError
from acid_core.fs import LocalFileIO
from acid_core.orc.writer import insert_events, write_event_file
from tests.acid_core.orc.test_writer import ROW_TYPE, PyorcView, _rows

PART = 64 * 1024  # bytes of events per part: a few thousand rows


def _stream(sizes, *, write_id=7, bucket_id=0):
    start = 0
    for size in sizes:
        yield insert_events(
            _rows(size, seed=start),
            write_id=write_id,
            bucket_id=bucket_id,
            first_row_id=start,
            row_type=ROW_TYPE,
        )
        start += size


def _write(path, sizes, *, threads, part=PART, stripe_size=64 * 1024 * 1024, compression="zlib"):
    return write_event_file(
        LocalFileIO(),
        str(path),
        _stream(sizes),
        ROW_TYPE,
        compression=compression,
        stripe_size=stripe_size,
        encode_threads=threads,
        part_size=part,
        check_in_thread=True,
    )


def _file_statistics(path):
    """Each column's statistics as ORC C++ reads them from the file's footer."""
    with open(path, "rb") as f:
        reader = pyorc.Reader(f)
        return [reader[column].statistics for column in range(reader.schema.column_id + 9)]


def test_a_big_file_in_parts_reads_back_with_its_key_index_and_statistics(tmp_path):
    sizes = [4_000] * 10  # each batch over 64 KiB of events
    single = _write(tmp_path / "one" / "bucket_00000", sizes, threads=1)
    parted = _write(tmp_path / "two" / "bucket_00000", sizes, threads=2)
    one, two = PyorcView(tmp_path / "one" / "bucket_00000"), PyorcView(tmp_path / "two" / "bucket_00000")
    assert len(one.stripes) == 1, "one ORC writer, one 64 MiB stripe"
    assert len(two.stripes) >= 10, "parts end at batch ends: each batch is a part of its own"
    assert two.rows == one.rows
    assert two.metadata["hive.acid.key.index"] == two.key_index_from_stripes().encode()
    assert two.metadata["hive.acid.stats"] == b"40000,0,0"
    assert two.metadata["hive.acid.version"] == b"2"
    assert parted.key_index == two.key_index_from_stripes()
    assert (parted.rows, single.rows) == (40_000, 40_000)
    assert _file_statistics(tmp_path / "two" / "bucket_00000") == _file_statistics(
        tmp_path / "one" / "bucket_00000"
    )
    # pyarrow (the ORC C++ reader again, another binding) reads it whole and stripe by stripe.
    import pyarrow.orc as orc

    read = orc.ORCFile(str(tmp_path / "two" / "bucket_00000"))
    assert read.nstripes == len(two.stripes)
    assert sum(read.read_stripe(i).num_rows for i in range(read.nstripes)) == 40_000


def test_the_bytes_do_not_depend_on_the_number_of_threads(tmp_path):
    sizes = [1, 3_333, 2, 5_000, 17, 9_000, 4_000]  # parts end inside and at the ends of batches
    written = {}
    for threads in (2, 3, 5):
        path = tmp_path / str(threads) / "bucket_00000"
        _write(path, sizes, threads=threads)
        written[threads] = path.read_bytes()
    assert written[2] == written[3] == written[5]


def test_a_file_within_one_part_is_the_single_writers_file(tmp_path):
    sizes = [500, 700]  # well under 1 MiB of events
    _write(tmp_path / "one" / "bucket_00000", sizes, threads=1)
    _write(tmp_path / "four" / "bucket_00000", sizes, threads=4, part=1024 * 1024)
    assert (tmp_path / "four" / "bucket_00000").read_bytes() == (
        tmp_path / "one" / "bucket_00000"
    ).read_bytes()


@settings(max_examples=20, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3_000), min_size=0, max_size=8),
    part_kib=st.sampled_from([1, 16, 64, 256]),
    stripe_kib=st.sampled_from([4, 64, 1024]),
    threads=st.sampled_from([2, 3]),
    compression=st.sampled_from(["none", "zlib", "snappy", "zstd"]),
)
def test_parts_read_back_as_one_writers_file_property(
    tmp_path_factory, sizes, part_kib, stripe_kib, threads, compression
):
    root = tmp_path_factory.mktemp("parts")
    options = {"stripe_size": stripe_kib * 1024, "compression": compression}
    stats = _write(root / "p" / "bucket_00000", sizes, threads=threads, part=part_kib * 1024, **options)
    _write(root / "s" / "bucket_00000", sizes, threads=1, **options)
    parted, single = PyorcView(root / "p" / "bucket_00000"), PyorcView(root / "s" / "bucket_00000")
    assert parted.rows == single.rows
    assert len(parted.rows) == sum(sizes) == stats.rows
    assert parted.metadata["hive.acid.key.index"] == parted.key_index_from_stripes().encode()
    assert parted.metadata["hive.acid.stats"] == f"{sum(sizes)},0,0".encode()
    assert parted.compression == single.compression
    assert _file_statistics(root / "p" / "bucket_00000") == _file_statistics(root / "s" / "bucket_00000")


def test_a_bad_event_in_a_later_part_fails_and_leaves_no_file(tmp_path):
    def stream():
        yield from _stream([3_000] * 6)
        yield insert_events(_rows(10, seed=1), write_id=7, bucket_id=0, first_row_id=0, row_type=ROW_TYPE)

    path = tmp_path / "bucket_00000"
    with pytest.raises(InvalidEventError, match="follows key"):
        write_event_file(
            LocalFileIO(),
            str(path),
            stream(),
            ROW_TYPE,
            encode_threads=2,
            part_size=PART,
            check_in_thread=True,
        )
    assert list(tmp_path.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name.startswith("acidflow-encode")]


@pytest.mark.parametrize(
    ("option", "value"),
    [("encode_threads", 0), ("encode_threads", True), ("part_size", 100), ("part_size", "64m")],
)
def test_bad_part_options_raise_before_writing(tmp_path, option, value):
    path = tmp_path / "bucket_00000"
    with pytest.raises(InvalidWriterOptionError, match=option):
        write_event_file(LocalFileIO(), str(path), _stream([10]), ROW_TYPE, **{option: value})
    assert not path.exists()


def test_parts_of_an_empty_stream_write_an_empty_file(tmp_path):
    path = tmp_path / "bucket_00000"
    stats = write_event_file(
        LocalFileIO(),
        str(path),
        iter([pa.RecordBatch.from_pylist([], schema=next(_stream([1])).schema)]),
        ROW_TYPE,
        encode_threads=3,
        part_size=1024,
    )
    assert stats.rows == 0
    assert PyorcView(path).metadata["hive.acid.key.index"] == b""
