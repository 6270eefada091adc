"""Stitching ORC files into one (``acid_core.orc.stitch``), checked against liborc and ORC Java.

What is stitched and what it is compared with::

    rows     = a random Arrow table (every ORC type pyarrow writes, nulls, whole parts all-null)
    parts    = [ORCWriter(rows[a:b]) for consecutive slices]   (liborc, the writer acidflow uses)
    stitched = stitch_files(parts)
    oracle   = ORCWriter(rows) with one stripe                 (liborc's own statistics of the rows)

- rows and stripes: pyarrow reads ``stitched`` as the whole table; stripe k is the parts' k-th
  stripe, read back equal and byte for byte at the offset the Footer gives;
- file statistics: the stitched Footer's ColumnStatistics equal the oracle's (double sums within
  rounding, as the additions are grouped differently; ``bytesOnDisk`` excluded), decoded by this
  file's own protobuf decoder (orc_proto.proto field numbers) and as pyorc (liborc) parses them;
- stripe statistics: the stitched Metadata holds the parts' stripe statistics, in order;
- ``merge_column_statistics``: hand-built ColumnStatistics with hand-computed merges (int sum
  overflow, empty parts, UTF-8 byte order, equal millis with other nanos, decimal scale, ...);
- incompatible inputs (schema, compression, block size, row index stride) and no input raise
  ``ValueError``;
- (integration "hive") ORC's Java reader (orc-core 2.3 from PySpark's jars, through the ``hive``
  fixture's JVM) reads the stitched file's rows as it reads the oracle's, and its statistics equal
  those of the oracle and Java's ``ColumnStatisticsImpl.merge`` of the parts' statistics.

Oracle caveats found while writing these tests (liborc 2.2.2 in pyarrow 26): liborc drops an
integer sum as soon as a running sum overflows, and a double column whose first value is NaN gets
min = max = NaN; both depend on how rows are grouped, so the random tables keep bigints small and
floats NaN-free, and dedicated tests cover overflow and NaN. liborc records a list's or map's
min/max/total children only for a written batch that has a null in that column (otherwise just the
count), so the random tables put a null in every batch of those columns. pyarrow's ORCWriter ignores
the offset of a sliced struct array with nulls, so every table here is built from Python lists.
"""

from __future__ import annotations

import decimal
import io
import itertools
import math
import random
import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import lz4.block  # type: ignore[import-untyped]
import pyarrow as pa
import pyarrow.orc as orc
import pyorc
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.orc.stitch import merge_column_statistics, stitch_files

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from tests.fixtures.hive import HiveOracle

Compression = Literal["UNCOMPRESSED", "ZLIB", "SNAPPY", "LZ4", "ZSTD"]

BLOCK_SIZE = 256 * 1024
ROW_INDEX_STRIDE = 10_000
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
NAN = float("nan")
INF = float("inf")


# --- a protobuf decoder of the ORC tail (orc_proto.proto), independent of the module ------------------


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _fields(message: bytes) -> list[tuple[int, int, Any]]:
    """(field, wire type, value): an int for varints, the payload bytes otherwise."""
    out: list[tuple[int, int, Any]] = []
    position = 0
    while position < len(message):
        tag, position = _varint(message, position)
        field, wire = tag >> 3, tag & 7
        value: Any
        if wire == 0:
            value, position = _varint(message, position)
        elif wire == 2:
            length, position = _varint(message, position)
            value, position = message[position : position + length], position + length
        elif wire == 1:
            value, position = message[position : position + 8], position + 8
        elif wire == 5:
            value, position = message[position : position + 4], position + 4
        else:
            raise AssertionError(f"wire type {wire} in {message!r}")
        out.append((field, wire, value))
    assert position == len(message), "truncated protobuf message"
    return out


def _unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _decompress(data: bytes, kind: int, block_size: int) -> bytes:
    """An ORC stream: 3-byte chunk headers (length << 1 | isOriginal), CompressionKind ``kind``."""
    if kind == 0:
        return data
    out = bytearray()
    position = 0
    while position < len(data):
        header = int.from_bytes(data[position : position + 3], "little")
        body = data[position + 3 : position + 3 + (header >> 1)]
        position += 3 + (header >> 1)
        if header & 1:
            out += body
        elif kind == 1:
            out += zlib.decompress(body, -15)
        elif kind == 2:
            out += pa.Codec("snappy").decompress(body, _varint(body, 0)[0], asbytes=True)
        elif kind == 4:
            out += lz4.block.decompress(body, uncompressed_size=block_size)
        elif kind == 5:
            out += zstandard.ZstdDecompressor().decompressobj().decompress(body)
        else:
            raise AssertionError(f"compression kind {kind}")
    return bytes(out)


# ColumnStatistics field -> (name, {sub-field: (name, encoding)}).
_TYPED_STATISTICS: dict[int, tuple[str, dict[int, tuple[str, str]]]] = {
    2: ("int", {1: ("minimum", "sint"), 2: ("maximum", "sint"), 3: ("sum", "sint")}),
    3: ("double", {1: ("minimum", "double"), 2: ("maximum", "double"), 3: ("sum", "double")}),
    4: (
        "string",
        {
            1: ("minimum", "bytes"),
            2: ("maximum", "bytes"),
            3: ("sum", "sint"),
            4: ("lowerBound", "bytes"),
            5: ("upperBound", "bytes"),
        },
    ),
    5: ("bucket", {1: ("count", "packed")}),
    6: ("decimal", {1: ("minimum", "decimal"), 2: ("maximum", "decimal"), 3: ("sum", "decimal")}),
    7: ("date", {1: ("minimum", "sint"), 2: ("maximum", "sint")}),
    8: ("binary", {1: ("sum", "sint")}),
    9: (
        "timestamp",
        {
            1: ("minimum", "sint"),
            2: ("maximum", "sint"),
            3: ("minimumUtc", "sint"),
            4: ("maximumUtc", "sint"),
            5: ("minimumNanos", "int"),
            6: ("maximumNanos", "int"),
        },
    ),
    12: (
        "collection",
        {1: ("minChildren", "uint"), 2: ("maxChildren", "uint"), 3: ("totalChildren", "uint")},
    ),
}


def _decode_value(encoding: str, value: Any) -> Any:
    if encoding == "sint":
        return _unzigzag(value)
    if encoding == "int":
        return _signed64(value)
    if encoding == "uint":
        return value
    if encoding == "double":
        return struct.unpack("<d", value)[0]
    if encoding == "bytes":
        return bytes(value)
    if encoding == "decimal":
        return decimal.Decimal(bytes(value).decode())  # compared by value: "3.50" == "3.5"
    raise AssertionError(encoding)


def decode_statistics(message: bytes) -> dict[str, Any]:
    """A ColumnStatistics message as a dict; absent fields stay absent (``hasNull`` absent is
    not ``False``: ORC Java reads a missing hasNull as true)."""
    out: dict[str, Any] = {}
    for field, wire, value in _fields(message):
        if field == 1:
            out["numberOfValues"] = value
        elif field == 10:
            out["hasNull"] = bool(value)
        elif field == 11:
            out["bytesOnDisk"] = value
        elif field in _TYPED_STATISTICS:
            name, layout = _TYPED_STATISTICS[field]
            typed = out.setdefault(name, {})  # a repeated sub-message merges, as protobuf does
            for sub_field, sub_wire, sub_value in _fields(value):
                sub_name, encoding = layout[sub_field]
                if encoding == "packed":
                    counts = typed.setdefault(sub_name, [])
                    if sub_wire == 2:
                        position = 0
                        while position < len(sub_value):
                            count, position = _varint(sub_value, position)
                            counts.append(count)
                    else:
                        counts.append(sub_value)
                else:
                    typed[sub_name] = _decode_value(encoding, sub_value)
        else:
            out[f"field {field} (wire {wire})"] = value
    return out


@dataclass(frozen=True)
class Stripe:
    """A Footer ``StripeInformation``."""

    offset: int
    index_length: int
    data_length: int
    footer_length: int
    rows: int

    @property
    def end(self) -> int:
        return self.offset + self.index_length + self.data_length + self.footer_length


@dataclass(frozen=True)
class Tail:
    """The decoded PostScript, Footer and Metadata of one ORC file."""

    postscript: dict[int, Any]
    footer: list[tuple[int, int, Any]]
    stripes: list[Stripe]
    rows: int
    types: list[bytes]
    raw_file_statistics: list[bytes]
    file_statistics: list[dict[str, Any]]
    stripe_statistics: list[list[dict[str, Any]]]

    def footer_field(self, field: int) -> list[Any]:
        return [value for number, _, value in self.footer if number == field]


def read_tail(data: bytes) -> Tail:
    postscript_length = data[-1]
    postscript = {field: value for field, _, value in _fields(data[-1 - postscript_length : -1])}
    kind, block_size = postscript.get(2, 0), postscript.get(3, BLOCK_SIZE)
    footer_end = len(data) - 1 - postscript_length
    footer_start = footer_end - postscript[1]
    metadata_start = footer_start - postscript.get(5, 0)
    footer = _fields(_decompress(data[footer_start:footer_end], kind, block_size))
    metadata = _fields(_decompress(data[metadata_start:footer_start], kind, block_size))
    stripes = []
    for field, _, value in footer:
        if field == 3:
            info = {number: v for number, _, v in _fields(value)}
            stripes.append(
                Stripe(info.get(1, 0), info.get(2, 0), info.get(3, 0), info.get(4, 0), info.get(5, 0))
            )
    return Tail(
        postscript=postscript,
        footer=footer,
        stripes=stripes,
        rows=next((value for field, _, value in footer if field == 6), 0),
        types=[value for field, _, value in footer if field == 4],
        raw_file_statistics=[value for field, _, value in footer if field == 7],
        file_statistics=[decode_statistics(value) for field, _, value in footer if field == 7],
        stripe_statistics=[
            [decode_statistics(column) for number, _, column in _fields(stripe) if number == 1]
            for field, _, stripe in metadata
            if field == 1
        ],
    )


def nan_safe(value: Any) -> Any:
    """``value`` with every float NaN replaced by the string "NaN", so that == compares it."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {key: nan_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [nan_safe(item) for item in value]
    return value


def _double_sums_close(actual: float | None, expected: float | None, count: int, scale: float) -> bool:
    if actual is None or expected is None:
        return actual is expected
    if not (math.isfinite(actual) and math.isfinite(expected)):
        return actual == expected or (math.isnan(actual) and math.isnan(expected))
    # Each of the ``count`` additions rounds by at most half an ulp of a partial sum.
    return math.isclose(actual, expected, rel_tol=1e-12, abs_tol=count * count * 2.0**-52 * scale)


def assert_same_statistics(actual: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]]) -> None:
    """Column by column; bytesOnDisk left out, double sums compared within rounding."""
    assert len(actual) == len(expected), "number of columns"
    for column, (got, want) in enumerate(zip(actual, expected, strict=True)):
        got = {key: dict(value) if isinstance(value, dict) else value for key, value in got.items()}
        want = {key: dict(value) if isinstance(value, dict) else value for key, value in want.items()}
        got.pop("bytesOnDisk", None)
        want.pop("bytesOnDisk", None)
        got_sum = got.get("double", {}).pop("sum", None)
        want_sum = want.get("double", {}).pop("sum", None)
        assert got == want, f"column {column}: stitched {got} != expected {want}"
        scale = (
            max([abs(want["double"].get(key, 0.0)) for key in ("minimum", "maximum")] + [1.0])
            if ("double" in want)
            else 1.0
        )
        assert _double_sums_close(got_sum, want_sum, want.get("numberOfValues", 0), scale), (
            f"column {column}: stitched double sum {got_sum!r} != expected {want_sum!r}"
        )


def _pyorc_statistics(data: bytes) -> list[dict[str, Any]]:
    reader = pyorc.Reader(io.BytesIO(data))
    return [reader[column].statistics for column in range(len(read_tail(data).types))]


def assert_same_pyorc_statistics(actual: bytes, expected: bytes) -> None:
    """The file statistics as liborc itself parses them (pyorc's ``Column.statistics``)."""
    for column, (got, want) in enumerate(
        zip(_pyorc_statistics(actual), _pyorc_statistics(expected), strict=True)
    ):
        if want["kind"] in (pyorc.TypeKind.FLOAT, pyorc.TypeKind.DOUBLE) and "sum" in want:
            got, want = dict(got), dict(want)
            got_sum, want_sum = got.pop("sum", None), want.pop("sum", None)
            scale = max(abs(want.get("minimum", 0.0)), abs(want.get("maximum", 0.0)), 1.0)
            assert _double_sums_close(got_sum, want_sum, want["number_of_values"], scale), column
        assert got == want, f"column {column}"


# --- writing parts with liborc (pyarrow.orc.ORCWriter) -------------------------------------------------


def orc_bytes(
    tables: Sequence[pa.Table],
    *,
    compression: Compression = "ZLIB",
    stripe_size: int = 64 * 1024 * 1024,
    block_size: int = BLOCK_SIZE,
    row_index_stride: int = ROW_INDEX_STRIDE,
) -> bytes:
    """One ORC file; each table is one ``write`` call (with a tiny stripe_size, one stripe each)."""
    sink = io.BytesIO()
    writer = orc.ORCWriter(
        sink,
        compression=compression,
        compression_block_size=block_size,
        row_index_stride=row_index_stride,
        file_version="0.12",
        stripe_size=stripe_size,
    )
    for table in tables:
        writer.write(table)
    writer.close()
    return sink.getvalue()


def stripe_bytes(data: bytes) -> list[bytes]:
    return [data[stripe.offset : stripe.end] for stripe in read_tail(data).stripes]


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    value: Callable[[random.Random], object]


_PIECES = ("", "a", "z", "Z", "é", "€", "\uffff", "\U0001d11e", "\x00", "ab")
# Shared milliseconds, so timestamps often tie on millis and differ in nanos (liborc truncates
# toward zero, so -1 ms .. 0 shares the millisecond 0 with 0 .. 1 ms).
_MILLIS = (-86_400_001, -1_001, -1, 0, 1, 999, 1_234_567_890_123)


def _int(bits: int) -> Callable[[random.Random], int]:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return lambda rng: rng.choice((low, high, 0, -1, rng.randint(low, high)))


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 3)))


def _float(rng: random.Random) -> float:
    return rng.choice((0.0, -0.0, 1.5, -INF, INF, rng.uniform(-1e6, 1e6), rng.uniform(-1e-3, 1e-3)))


def _double(rng: random.Random) -> float:
    return rng.choice((0.0, -0.0, 0.1, INF, rng.uniform(-1e15, 1e15), rng.uniform(-1.0, 1.0)))


def _timestamp(rng: random.Random) -> int:
    if rng.random() < 0.6:
        return rng.choice(_MILLIS) * 1_000_000 + rng.randint(-999_999, 999_999)
    return rng.randint(-(2**61), 2**61)  # 1897 .. 2043


def _decimal(digits: int, scale: int) -> Callable[[random.Random], decimal.Decimal]:
    return lambda rng: decimal.Decimal(rng.randint(-(10**digits) + 1, 10**digits - 1)).scaleb(-scale)


def _maybe(rng: random.Random, value: Callable[[random.Random], object]) -> object:
    return None if rng.random() < 0.15 else value(rng)


COLUMNS = (
    Column("tiny", pa.int8(), _int(8)),
    Column("small", pa.int16(), _int(16)),
    Column("int", pa.int32(), _int(32)),
    # bigint: |value| <= 2**53, so no running sum of a few hundred rows overflows (see docstring)
    Column("big", pa.int64(), lambda rng: rng.choice((0, 1, -(2**53), 2**53, rng.randint(-(2**53), 2**53)))),
    Column("real", pa.float32(), _float),
    Column("double", pa.float64(), _double),
    Column("text", pa.string(), _text),
    Column("blob", pa.binary(), lambda rng: rng.randbytes(rng.randint(0, 5))),
    Column("flag", pa.bool_(), lambda rng: rng.random() < 0.5),
    Column("day", pa.date32(), lambda rng: rng.choice((-1, 0, rng.randint(-50_000, 50_000)))),
    Column("moment", pa.timestamp("ns"), _timestamp),
    Column("instant", pa.timestamp("ns", tz="UTC"), _timestamp),
    Column("price", pa.decimal128(5, 2), _decimal(5, 2)),
    Column("amount", pa.decimal128(18, 6), _decimal(18, 6)),
    Column("huge", pa.decimal128(38, 10), _decimal(35, 10)),
    Column(
        "ints",
        pa.list_(pa.int32()),
        lambda rng: [_maybe(rng, _int(32)) for _ in range(rng.choice((0, 1, 3)))],
    ),
    Column(
        "tags",
        pa.map_(pa.string(), pa.int32()),
        lambda rng: [(_text(rng), _maybe(rng, _int(32))) for _ in range(rng.choice((0, 1, 2)))],
    ),
    Column(
        "pair",
        pa.struct([("a", pa.int64()), ("b", pa.string())]),
        lambda rng: {"a": _maybe(rng, lambda r: r.randint(-(2**40), 2**40)), "b": _maybe(rng, _text)},
    ),
)


COLLECTION_COLUMNS = ("ints", "tags")


@dataclass(frozen=True)
class Layout:
    """What hypothesis draws (small, so a falsifying example prints readably)."""

    seed: int
    bounds: tuple[int, ...]  # part k holds rows bounds[k]..bounds[k+1]
    null_rates: tuple[float, ...]  # per column
    null_parts: frozenset[tuple[int, int]]  # (column, part): all null in that part
    compression: Compression
    chunk_rows: int | None  # None: one write per part; else writes of this many rows, tiny stripes

    @property
    def rows(self) -> int:
        return self.bounds[-1]


def column_values(layout: Layout) -> dict[str, list[object]]:
    rng = random.Random(layout.seed)
    values: dict[str, list[object]] = {}
    for index, column in enumerate(COLUMNS):
        rate = layout.null_rates[index]
        values[column.name] = [None if rng.random() < rate else column.value(rng) for _ in range(layout.rows)]
    for index, part in layout.null_parts:
        start, stop = layout.bounds[part], layout.bounds[part + 1]
        values[COLUMNS[index].name][start:stop] = [None] * (stop - start)
    # liborc records list/map statistics (min/max/total children) only for a written batch with
    # a null, so every batch of every part (and so the oracle) gets one; see the module docstring.
    for start, stop in itertools.pairwise(layout.bounds):
        for row in range(start, stop, layout.chunk_rows or max(stop - start, 1)):
            for name in COLLECTION_COLUMNS:
                values[name][row] = None
    return values


def table_of(values: dict[str, list[object]], start: int, stop: int) -> pa.Table:
    """Rows start..stop built from Python lists (never an Arrow slice: see the module docstring)."""
    return pa.table(
        {column.name: pa.array(values[column.name][start:stop], column.type) for column in COLUMNS}
    )


def part_files(layout: Layout, values: dict[str, list[object]]) -> list[bytes]:
    parts = []
    for start, stop in itertools.pairwise(layout.bounds):
        step = layout.chunk_rows or max(stop - start, 1)
        chunks = [table_of(values, low, min(low + step, stop)) for low in range(start, stop, step)]
        parts.append(
            orc_bytes(
                chunks or [table_of(values, start, stop)],
                compression=layout.compression,
                stripe_size=1 if layout.chunk_rows else 64 * 1024 * 1024,
            )
        )
    return parts


def one_stripe_file(values: dict[str, list[object]], rows: int, compression: Compression) -> bytes:
    data = orc_bytes([table_of(values, 0, rows)], compression=compression, stripe_size=1 << 30)
    assert orc.ORCFile(io.BytesIO(data)).nstripes <= 1, "the oracle must have a single stripe"
    return data


@st.composite
def layouts(draw: st.DrawFn) -> Layout:
    rows = draw(st.integers(min_value=0, max_value=250))
    cuts = draw(st.lists(st.integers(min_value=0, max_value=rows), max_size=4))
    bounds = (0, *sorted(cuts), rows)
    part_count = len(bounds) - 1
    return Layout(
        seed=draw(st.integers(min_value=0, max_value=2**32 - 1)),
        bounds=bounds,
        null_rates=tuple(
            draw(st.lists(st.sampled_from((0.0, 0.2, 1.0)), min_size=len(COLUMNS), max_size=len(COLUMNS)))
        ),
        null_parts=draw(
            st.frozensets(
                st.tuples(
                    st.integers(min_value=0, max_value=len(COLUMNS) - 1),
                    st.integers(min_value=0, max_value=part_count - 1),
                ),
                max_size=4,
            )
        ),
        compression=draw(st.sampled_from(("ZLIB", "UNCOMPRESSED", "SNAPPY", "ZSTD"))),
        chunk_rows=draw(st.none() | st.integers(min_value=1, max_value=80)),
    )


_PROPERTY_SETTINGS = settings(max_examples=40, deadline=None)


# --- stitch_files: property tests against one liborc file --------------------------------------------


@_PROPERTY_SETTINGS
@given(layout=layouts())
def test_stitch_files_reads_back_as_the_whole_table_stripe_by_stripe(layout):
    values = column_values(layout)
    parts = part_files(layout, values)

    stitched = orc.ORCFile(io.BytesIO(stitch_files(parts)))

    readers = [orc.ORCFile(io.BytesIO(part)) for part in parts]
    part_stripes = [reader.read_stripe(k) for reader in readers for k in range(reader.nstripes)]
    assert stitched.nrows == layout.rows
    assert stitched.nstripes == len(part_stripes)
    assert stitched.read().equals(table_of(values, 0, layout.rows))
    for k, expected in enumerate(part_stripes):
        assert stitched.read_stripe(k).equals(expected), f"stripe {k}"
    first = readers[0]
    for attribute in (
        "compression",
        "compression_size",
        "file_version",
        "writer",
        "writer_version",
        "software_version",
        "row_index_stride",
    ):
        assert getattr(stitched, attribute) == getattr(first, attribute), attribute


@_PROPERTY_SETTINGS
@given(layout=layouts())
def test_stitch_files_file_statistics_equal_liborcs_over_all_rows(layout):
    values = column_values(layout)
    parts = part_files(layout, values)
    oracle = one_stripe_file(values, layout.rows, layout.compression)

    stitched = stitch_files(parts)

    tail, expected = read_tail(stitched), read_tail(oracle)
    assert tail.rows == layout.rows
    assert tail.types == expected.types
    assert tail.footer_field(8) == expected.footer_field(8)  # rowIndexStride
    assert_same_statistics(tail.file_statistics, expected.file_statistics)
    assert_same_pyorc_statistics(stitched, oracle)


@_PROPERTY_SETTINGS
@given(layout=layouts())
def test_stitch_files_keeps_the_parts_stripes_and_stripe_statistics(layout):
    values = column_values(layout)
    parts = part_files(layout, values)

    stitched = stitch_files(parts)

    tails = [read_tail(part) for part in parts]
    tail = read_tail(stitched)
    assert stitched[:3] == b"ORC"
    assert stripe_bytes(stitched) == [chunk for part in parts for chunk in stripe_bytes(part)]
    expected_stripes = [stripe for part in tails for stripe in part.stripes]
    assert [(s.index_length, s.data_length, s.footer_length, s.rows) for s in tail.stripes] == [
        (s.index_length, s.data_length, s.footer_length, s.rows) for s in expected_stripes
    ]
    assert all(stripe.end <= len(stitched) for stripe in tail.stripes)
    # Stripe statistics are copied, not recomputed: compared exactly.
    assert nan_safe(tail.stripe_statistics) == nan_safe(
        [stats for part in tails for stats in part.stripe_statistics]
    )
    reader = pyorc.Reader(io.BytesIO(stitched))
    part_readers = [pyorc.Reader(io.BytesIO(part)) for part in parts]
    expected_pyorc = [
        [part.read_stripe(k)[column].statistics for column in range(len(tail.types))]
        for part in part_readers
        for k in range(part.num_of_stripes)
    ]
    assert reader.num_of_stripes == len(expected_pyorc)
    for k, expected in enumerate(expected_pyorc):
        stripe = reader.read_stripe(k)
        actual = [stripe[column].statistics for column in range(len(tail.types))]
        assert nan_safe(actual) == nan_safe(expected), f"stripe {k}"


# --- stitch_files: deterministic cases -------------------------------------------------------------


def _random_rows(rows: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    return pa.table(
        {
            "id": pa.array([rng.getrandbits(40) for _ in range(rows)], pa.int64()),
            "name": pa.array([f"{rng.random():.17f}" for _ in range(rows)], pa.string()),
            "score": pa.array([rng.choice((None, rng.random())) for _ in range(rows)], pa.float64()),
        }
    )


@pytest.mark.parametrize("compression", ["ZLIB", "SNAPPY", "ZSTD", "LZ4", "UNCOMPRESSED"])
def test_stitch_files_of_multi_stripe_compressed_parts(compression):
    """64 KiB compression blocks and a tiny stripe size: each 2,000-row write becomes a stripe."""
    chunks = [_random_rows(2_000, seed) for seed in range(13)]
    groups = [chunks[0:5], chunks[5:6], chunks[6:13]]
    parts = [
        orc_bytes(group, compression=compression, stripe_size=1, block_size=64 * 1024) for group in groups
    ]
    whole = pa.concat_tables(chunks)
    oracle = orc_bytes([whole], compression=compression, stripe_size=1 << 30, block_size=64 * 1024)

    stitched = stitch_files(parts)

    stripe_counts = [orc.ORCFile(io.BytesIO(part)).nstripes for part in parts]
    assert stripe_counts[0] > 1
    assert stripe_counts[2] > 1
    reader = orc.ORCFile(io.BytesIO(stitched))
    assert reader.nstripes == sum(stripe_counts)
    assert reader.read().equals(whole)
    assert stripe_bytes(stitched) == [chunk for part in parts for chunk in stripe_bytes(part)]
    assert_same_statistics(read_tail(stitched).file_statistics, read_tail(oracle).file_statistics)
    assert_same_pyorc_statistics(stitched, oracle)


def test_stitch_files_skips_empty_parts():
    """A 0-row ORC file (no stripes, no Metadata) adds nothing but its zero counts."""
    ids: list[int | None] = [1, None, 3]
    names: list[str | None] = ["b", "", None]

    def table(rows: slice) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(ids[rows], pa.int64()),
                "name": pa.array(names[rows], pa.string()),
            }
        )

    empty = orc_bytes([table(slice(0, 0))])
    full = orc_bytes([table(slice(0, 3))])

    stitched = stitch_files([empty, full, empty])

    assert orc.ORCFile(io.BytesIO(stitched)).read().equals(table(slice(0, 3)))
    assert stripe_bytes(stitched) == stripe_bytes(full)
    assert_same_statistics(read_tail(stitched).file_statistics, read_tail(full).file_statistics)
    assert nan_safe(read_tail(stitched).stripe_statistics) == nan_safe(read_tail(full).stripe_statistics)


@pytest.mark.parametrize("count", [1, 2])
def test_stitch_files_of_empty_parts_is_an_empty_file(count):
    empty = orc_bytes(
        [pa.table({"id": pa.array([], pa.int64()), "tags": pa.array([], pa.list_(pa.string()))})]
    )

    stitched = stitch_files([empty] * count)

    reader = orc.ORCFile(io.BytesIO(stitched))
    assert reader.nrows == 0
    assert reader.nstripes == 0
    assert reader.schema == orc.ORCFile(io.BytesIO(empty)).schema
    assert_same_statistics(read_tail(stitched).file_statistics, read_tail(empty).file_statistics)


@pytest.mark.parametrize(
    ("parts", "expected_sum"),
    [
        # Each part's sum fits a long, the total does not: ORC drops the sum.
        pytest.param([[2**62, 2**62 - 1], [1]], None, id="total-overflows"),
        pytest.param([[INT64_MIN], [-1]], None, id="total-underflows"),
        # A part whose own running sum overflowed has no sum; the file then has none either.
        pytest.param([[1], [INT64_MAX, 1]], None, id="part-without-sum"),
        pytest.param([[INT64_MAX], [INT64_MIN]], -1, id="extremes-cancel"),
        pytest.param([[INT64_MAX - 1], [1]], INT64_MAX, id="total-at-the-limit"),
    ],
)
def test_stitch_files_bigint_sum_overflow(parts, expected_sum):
    files = [orc_bytes([pa.table({"n": pa.array(part, pa.int64())})]) for part in parts]
    every = [value for part in parts for value in part]
    oracle = orc_bytes([pa.table({"n": pa.array(every, pa.int64())})])

    stitched = read_tail(stitch_files(files)).file_statistics[1]

    expected = {"minimum": min(every), "maximum": max(every)}
    if expected_sum is not None:
        expected["sum"] = expected_sum
    assert stitched == {"numberOfValues": len(every), "hasNull": False, "int": expected}
    # liborc agrees when it writes the same rows as one file (its running sum overflows too).
    assert read_tail(oracle).file_statistics[1] == stitched


@pytest.mark.parametrize(
    ("parts", "expected_min", "expected_max"),
    [
        # NaN inside a part: liborc's comparisons skip it; the sum is NaN.
        pytest.param([[1.0, NAN, 0.5], [2.0]], 0.5, 2.0, id="nan-in-the-middle"),
        # NaN first in the file: liborc's min = max = NaN, and no later stripe replaces them.
        pytest.param([[NAN, 1.0], [0.5]], NAN, NAN, id="nan-first"),
        pytest.param([[NAN], [NAN]], NAN, NAN, id="all-nan"),
    ],
)
def test_stitch_files_double_statistics_with_nan(parts, expected_min, expected_max):
    files = [orc_bytes([pa.table({"x": pa.array(part, pa.float64())})]) for part in parts]
    every = [value for part in parts for value in part]
    oracle = read_tail(orc_bytes([pa.table({"x": pa.array(every, pa.float64())})])).file_statistics[1]

    stitched = read_tail(stitch_files(files)).file_statistics[1]

    def same(a: float, b: float) -> bool:
        return a == b or (math.isnan(a) and math.isnan(b))

    assert stitched["numberOfValues"] == len(every)
    assert stitched["hasNull"] is False
    assert math.isnan(stitched["double"]["sum"])
    assert same(stitched["double"]["minimum"], expected_min), stitched
    assert same(stitched["double"]["maximum"], expected_max), stitched
    # The hand-computed expectation is what liborc writes for the same rows as one file.
    assert same(oracle["double"]["minimum"], expected_min)
    assert same(oracle["double"]["maximum"], expected_max)


# --- stitch_files: errors ----------------------------------------------------------------------------


def _ids(
    compression: Compression = "ZLIB", block_size: int = BLOCK_SIZE, row_index_stride: int = ROW_INDEX_STRIDE
) -> bytes:
    return orc_bytes(
        [pa.table({"id": pa.array([1, 2], pa.int64())})],
        compression=compression,
        block_size=block_size,
        row_index_stride=row_index_stride,
    )


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(lambda: orc_bytes([pa.table({"id": pa.array(["1"], pa.string())})]), id="other-type"),
        pytest.param(lambda: orc_bytes([pa.table({"key": pa.array([1], pa.int64())})]), id="other-name"),
        pytest.param(
            lambda: orc_bytes([pa.table({"id": pa.array([1], pa.int64()), "x": pa.array([1], pa.int64())})]),
            id="extra-column",
        ),
        pytest.param(lambda: orc_bytes([pa.table({"id": pa.array([1], pa.int32())})]), id="int-not-bigint"),
        pytest.param(lambda: _ids(compression="SNAPPY"), id="other-compression"),
        pytest.param(lambda: _ids(compression="UNCOMPRESSED"), id="UNCOMPRESSED"),
        pytest.param(lambda: _ids(block_size=64 * 1024), id="other-block-size"),
        pytest.param(lambda: _ids(row_index_stride=1_000), id="other-row-index-stride"),
    ],
)
def test_stitch_files_incompatible_parts_raise(other):
    with pytest.raises(ValueError):  # noqa: PT011 - the brief fixes the type, not the message
        stitch_files([_ids(), other()])


def test_stitch_files_without_files_raises():
    with pytest.raises(ValueError):  # noqa: PT011
        stitch_files([])


# --- merge_column_statistics: hand-built messages -----------------------------------------------------


def _enc_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        bits, value = value & 0x7F, value >> 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _uint_field(field: int, value: int) -> bytes:
    return _enc_varint(field << 3) + _enc_varint(value)


def _sint_field(field: int, value: int) -> bytes:
    return _uint_field(field, (value << 1) ^ (value >> 63))


def _int32_field(field: int, value: int) -> bytes:
    return _uint_field(field, value & (2**64 - 1))


def _double_field(field: int, value: float) -> bytes:
    return _enc_varint(field << 3 | 1) + struct.pack("<d", value)


def _bytes_field(field: int, payload: bytes) -> bytes:
    return _enc_varint(field << 3 | 2) + _enc_varint(len(payload)) + payload


def stats(
    count: int, *, has_null: bool = False, bytes_on_disk: int | None = None, typed: bytes = b""
) -> bytes:
    """A ColumnStatistics message: numberOfValues, hasNull, optional bytesOnDisk, typed statistics."""
    message = _uint_field(1, count) + _uint_field(10, int(has_null)) + typed
    if bytes_on_disk is not None:
        message += _uint_field(11, bytes_on_disk)
    return message


def int_stats(minimum: int | None = None, maximum: int | None = None, total: int | None = None) -> bytes:
    body = b"".join(
        _sint_field(field, value)
        for field, value in ((1, minimum), (2, maximum), (3, total))
        if value is not None
    )
    return _bytes_field(2, body)


def double_stats(
    minimum: float | None = None, maximum: float | None = None, total: float | None = None
) -> bytes:
    body = b"".join(
        _double_field(field, value)
        for field, value in ((1, minimum), (2, maximum), (3, total))
        if value is not None
    )
    return _bytes_field(3, body)


def string_stats(minimum: str | None = None, maximum: str | None = None, total: int | None = None) -> bytes:
    body = b""
    if minimum is not None:
        body += _bytes_field(1, minimum.encode())
    if maximum is not None:
        body += _bytes_field(2, maximum.encode())
    if total is not None:
        body += _sint_field(3, total)
    return _bytes_field(4, body)


def bucket_stats(true_count: int) -> bytes:
    return _bytes_field(5, _bytes_field(1, _enc_varint(true_count)))


def decimal_stats(minimum: str | None = None, maximum: str | None = None, total: str | None = None) -> bytes:
    body = b"".join(
        _bytes_field(field, value.encode())
        for field, value in ((1, minimum), (2, maximum), (3, total))
        if value is not None
    )
    return _bytes_field(6, body)


def date_stats(minimum: int, maximum: int) -> bytes:
    return _bytes_field(7, _sint_field(1, minimum) + _sint_field(2, maximum))


def binary_stats(total: int) -> bytes:
    return _bytes_field(8, _sint_field(1, total))


def timestamp_stats(minimum: tuple[int, int], maximum: tuple[int, int]) -> bytes:
    """(UTC millis, nanos within the millisecond); nanos are stored + 1, as liborc and ORC Java do."""
    return _bytes_field(
        9,
        _sint_field(3, minimum[0])
        + _sint_field(4, maximum[0])
        + _int32_field(5, minimum[1] + 1)
        + _int32_field(6, maximum[1] + 1),
    )


def collection_stats(minimum: int | None, maximum: int | None, total: int) -> bytes:
    body = b"".join(
        _uint_field(field, value) for field, value in ((1, minimum), (2, maximum)) if value is not None
    )
    return _bytes_field(12, body + _uint_field(3, total))


MERGE_CASES = {
    "int": (
        stats(2, typed=int_stats(-5, 7, 2)),
        stats(3, has_null=True, typed=int_stats(-1, 10, 12)),
        stats(5, has_null=True, typed=int_stats(-5, 10, 14)),
    ),
    "int-sum-overflow-drops-sum": (
        stats(1, typed=int_stats(INT64_MAX, INT64_MAX, INT64_MAX)),
        stats(1, typed=int_stats(1, 1, 1)),
        stats(2, typed=int_stats(1, INT64_MAX)),
    ),
    "int-sum-underflow-drops-sum": (
        stats(1, typed=int_stats(INT64_MIN, INT64_MIN, INT64_MIN)),
        stats(1, typed=int_stats(-1, -1, -1)),
        stats(2, typed=int_stats(INT64_MIN, -1)),
    ),
    "int-sum-at-the-limit-kept": (
        stats(1, typed=int_stats(INT64_MAX - 1, INT64_MAX - 1, INT64_MAX - 1)),
        stats(1, typed=int_stats(1, 1, 1)),
        stats(2, typed=int_stats(1, INT64_MAX - 1, INT64_MAX)),
    ),
    "int-part-without-sum-drops-sum": (
        stats(2, typed=int_stats(1, INT64_MAX)),
        stats(1, typed=int_stats(0, 0, 0)),
        stats(3, typed=int_stats(0, INT64_MAX)),
    ),
    "int-empty-part-first": (
        stats(0, has_null=True, typed=int_stats(total=0)),
        stats(2, typed=int_stats(3, 4, 7)),
        stats(2, has_null=True, typed=int_stats(3, 4, 7)),
    ),
    "int-empty-part-last": (
        stats(2, typed=int_stats(-3, 4, 1)),
        stats(0, has_null=True, typed=int_stats(total=0)),
        stats(2, has_null=True, typed=int_stats(-3, 4, 1)),
    ),
    "double": (
        stats(2, typed=double_stats(-1.5, 2.5, 1.0)),
        stats(2, typed=double_stats(0.25, 3.0, 3.25)),
        stats(4, typed=double_stats(-1.5, 3.0, 4.25)),
    ),
    "double-empty-part-first": (
        stats(0, has_null=True, typed=double_stats(total=0.0)),
        stats(1, typed=double_stats(5.0, 5.0, 5.0)),
        stats(1, has_null=True, typed=double_stats(5.0, 5.0, 5.0)),
    ),
    "double-negative-zero-and-infinity": (
        stats(2, typed=double_stats(-INF, 0.0, -INF)),
        stats(1, typed=double_stats(-0.0, INF, INF)),
        stats(3, typed=double_stats(-INF, INF, NAN)),
    ),
    "string-utf8-byte-order": (
        stats(1, typed=string_stats("z", "z", 1)),
        stats(1, typed=string_stats("é", "é", 2)),
        stats(2, typed=string_stats("z", "é", 3)),
    ),
    "string-supplementary-above-bmp": (
        # U+FFFF is EF BF BF; U+1D11E is F0 9D 84 9E: greater in UTF-8, smaller in UTF-16.
        stats(1, typed=string_stats("\U0001d11e", "\U0001d11e", 4)),
        stats(1, typed=string_stats("\uffff", "\uffff", 3)),
        stats(2, typed=string_stats("\uffff", "\U0001d11e", 7)),
    ),
    "string-empty-string-is-a-minimum": (
        stats(1, typed=string_stats("", "", 0)),
        stats(1, typed=string_stats("a", "b", 2)),
        stats(2, typed=string_stats("", "b", 2)),
    ),
    "string-empty-part-first": (
        stats(0, has_null=True, typed=string_stats(total=0)),
        stats(2, typed=string_stats("", "b", 1)),
        stats(2, has_null=True, typed=string_stats("", "b", 1)),
    ),
    "boolean-true-counts": (
        stats(4, typed=bucket_stats(2)),
        stats(5, has_null=True, typed=bucket_stats(3)),
        stats(9, has_null=True, typed=bucket_stats(5)),
    ),
    "decimal-sum-keeps-the-scale": (
        stats(1, typed=decimal_stats("1.50", "1.50", "1.50")),
        stats(1, typed=decimal_stats("2.25", "2.25", "2.25")),
        stats(2, typed=decimal_stats("1.5", "2.25", "3.75")),
    ),
    "decimal-compared-by-value-not-text": (
        # As text "-1.5" < "-10" and "9.5" > "10".
        stats(2, typed=decimal_stats("-1.5", "9.5", "8")),
        stats(2, typed=decimal_stats("-10", "10", "0")),
        stats(4, typed=decimal_stats("-10", "10", "8")),
    ),
    "decimal-sum-beyond-28-digits-exact": (
        # Python's default decimal context keeps 28 digits; ORC decimals have up to 38.
        stats(
            1,
            typed=decimal_stats(
                "12345678901234567890123456.789",
                "12345678901234567890123456.789",
                "12345678901234567890123456.789",
            ),
        ),
        stats(1, typed=decimal_stats("1", "1", "1")),
        stats(
            2, typed=decimal_stats("1", "12345678901234567890123456.789", "12345678901234567890123457.789")
        ),
    ),
    "decimal-sum-overflow-drops-sum": (
        # 39 digits do not fit a decimal(38): ORC Java's HiveDecimalWritable.mutateAdd unsets the sum.
        stats(1, typed=decimal_stats("9" * 38, "9" * 38, "9" * 38)),
        stats(1, typed=decimal_stats("1", "1", "1")),
        stats(2, typed=decimal_stats("1", "9" * 38)),
    ),
    "decimal-part-without-sum-drops-sum": (
        stats(1, typed=decimal_stats("1", "1")),
        stats(1, typed=decimal_stats("2", "2", "2")),
        stats(2, typed=decimal_stats("1", "2")),
    ),
    "decimal-empty-part-first": (
        stats(0, has_null=True, typed=decimal_stats(total="0")),
        stats(1, typed=decimal_stats("-0.001", "-0.001", "-0.001")),
        stats(1, has_null=True, typed=decimal_stats("-0.001", "-0.001", "-0.001")),
    ),
    "date": (
        stats(2, typed=date_stats(-3653, 18294)),
        stats(2, typed=date_stats(0, 20000)),
        stats(4, typed=date_stats(-3653, 20000)),
    ),
    "timestamp-equal-millis-other-nanos": (
        stats(1, typed=timestamp_stats((1000, 500), (5000, 0))),
        stats(1, typed=timestamp_stats((1000, 100), (5000, 300_000))),
        stats(2, typed=timestamp_stats((1000, 100), (5000, 300_000))),
    ),
    "timestamp-millis-before-nanos": (
        stats(1, typed=timestamp_stats((-2, 999_999), (7, 999_999))),
        stats(1, typed=timestamp_stats((-1, 0), (8, 0))),
        stats(2, typed=timestamp_stats((-2, 999_999), (8, 0))),
    ),
    "timestamp-negative-nanos": (
        # liborc truncates toward zero: -1000 ns is (0 ms, -1000 ns), before (0 ms, 0 ns).
        stats(1, typed=timestamp_stats((0, 0), (0, 0))),
        stats(1, typed=timestamp_stats((0, -1000), (0, -1000))),
        stats(2, typed=timestamp_stats((0, -1000), (0, 0))),
    ),
    "timestamp-empty-part-first": (
        stats(0, has_null=True, typed=_bytes_field(9, b"")),
        stats(1, typed=timestamp_stats((1000, 5), (1000, 5))),
        stats(1, has_null=True, typed=timestamp_stats((1000, 5), (1000, 5))),
    ),
    "binary": (
        stats(2, typed=binary_stats(3)),
        stats(1, has_null=True, typed=binary_stats(4)),
        stats(3, has_null=True, typed=binary_stats(7)),
    ),
    "collection": (
        stats(2, typed=collection_stats(0, 3, 5)),
        stats(3, typed=collection_stats(1, 7, 9)),
        stats(5, typed=collection_stats(0, 7, 14)),
    ),
    "collection-empty-part-first": (
        stats(0, has_null=True, typed=collection_stats(None, None, 0)),
        stats(2, typed=collection_stats(2, 2, 4)),
        stats(2, has_null=True, typed=collection_stats(2, 2, 4)),
    ),
    "struct-counts-and-nulls": (
        stats(2),
        stats(0, has_null=True),
        stats(2, has_null=True),
    ),
    "bytes-on-disk-summed": (
        stats(2, bytes_on_disk=10, typed=int_stats(1, 2, 3)),
        stats(1, bytes_on_disk=5, typed=int_stats(4, 4, 4)),
        stats(3, bytes_on_disk=15, typed=int_stats(1, 4, 7)),
    ),
}


@pytest.mark.parametrize(("first", "second", "expected"), list(MERGE_CASES.values()), ids=list(MERGE_CASES))
def test_merge_column_statistics(first, second, expected):
    merged = decode_statistics(merge_column_statistics(first, second))

    want = decode_statistics(expected)
    merged_sum = merged.get("double", {}).pop("sum", None)
    want_sum = want.get("double", {}).pop("sum", None)
    assert merged == want
    assert _double_sums_close(merged_sum, want_sum, 1, 1.0), (merged_sum, want_sum)


def test_merge_column_statistics_of_liborc_parts_equals_liborcs_file_statistics():
    """Two liborc files' statistics merged equal liborc's statistics of both files' rows."""
    types = {"n": pa.int32(), "s": pa.string(), "t": pa.timestamp("ns")}
    first: dict[str, list[object]] = {
        "n": [3, None, -7],
        "s": ["é", "z", None],
        "t": [1_000_000_500, None, -1_000],
    }
    second: dict[str, list[object]] = {"n": [12, 0], "s": ["", "\U0001d11e"], "t": [1_000_000_100, 0]}

    def file_statistics(rows: dict[str, list[object]]) -> list[bytes]:
        data = orc_bytes([pa.table({name: pa.array(rows[name], types[name]) for name in types})])
        return read_tail(data).raw_file_statistics

    both = {name: first[name] + second[name] for name in types}
    for column, (a, b, expected) in enumerate(
        zip(file_statistics(first), file_statistics(second), file_statistics(both), strict=True)
    ):
        assert decode_statistics(merge_column_statistics(a, b)) == decode_statistics(expected), column


# --- ORC Java reads the stitched file --------------------------------------------------------------------


def _java_values(rows: int, seed: int) -> dict[str, tuple[pa.DataType, list[object]]]:
    """Values Java and Python agree on exactly: floats are multiples of 1/4 (exact sums in any
    grouping), timestamps after 1970 (Java's TimestampColumnVector prints liborc's pre-1970
    values as "<invalid>")."""
    rng = random.Random(seed)

    def column(value: Callable[[], object]) -> list[object]:
        return [None if rng.random() < 0.2 else value() for _ in range(rows)]

    return {
        "tiny": (pa.int8(), column(lambda: rng.randint(-128, 127))),
        "small": (pa.int16(), column(lambda: rng.randint(-(2**15), 2**15 - 1))),
        "int": (pa.int32(), column(lambda: rng.randint(-(2**31), 2**31 - 1))),
        "big": (pa.int64(), column(lambda: rng.randint(-(2**50), 2**50))),
        "real": (pa.float32(), column(lambda: rng.randint(-4000, 4000) / 4)),
        "double": (pa.float64(), column(lambda: rng.randint(-(10**9), 10**9) / 4)),
        "text": (pa.string(), column(lambda: _text(rng))),
        "blob": (pa.binary(), column(lambda: rng.randbytes(rng.randint(0, 4)))),
        "flag": (pa.bool_(), column(lambda: rng.random() < 0.5)),
        "day": (pa.date32(), column(lambda: rng.randint(-20_000, 20_000))),
        "moment": (pa.timestamp("ns"), column(lambda: rng.randint(0, 2**60))),
        "price": (pa.decimal128(9, 3), column(lambda: _decimal(7, 3)(rng))),
        "huge": (pa.decimal128(30, 5), column(lambda: _decimal(24, 5)(rng))),
        "ints": (
            pa.list_(pa.int32()),
            column(lambda: [rng.choice((None, rng.randint(-9, 9))) for _ in range(rng.randint(0, 3))]),
        ),
        "tags": (
            pa.map_(pa.string(), pa.int32()),
            column(lambda: [(_text(rng), rng.randint(0, 9)) for _ in range(rng.randint(0, 2))]),
        ),
        "pair": (
            pa.struct([("a", pa.int64()), ("b", pa.string())]),
            column(lambda: {"a": rng.choice((None, rng.randint(-5, 5))), "b": _text(rng)}),
        ),
    }


def _java_table(values: dict[str, tuple[pa.DataType, list[object]]], start: int, stop: int) -> pa.Table:
    return pa.table({name: pa.array(column[start:stop], kind) for name, (kind, column) in values.items()})


def _java_reader(hive: HiveOracle, path: Path) -> Any:
    jvm = hive.jvm
    options = jvm.org.apache.orc.OrcFile.readerOptions(jvm.org.apache.hadoop.conf.Configuration())
    return jvm.org.apache.orc.OrcFile.createReader(jvm.org.apache.hadoop.fs.Path(str(path)), options)


def _java_rows(reader: Any) -> tuple[int, str]:
    """The rows ORC Java reads, and their text as VectorizedRowBatch.toString prints it (without
    each batch's header line: batches end at stripe ends, so their number depends on the file)."""
    from py4j.java_gateway import get_field

    rows = reader.rows()
    batch = reader.getSchema().createRowBatch()
    count, texts = 0, []
    try:
        while rows.nextBatch(batch):
            count += get_field(batch, "size")
            texts.append(str(batch.toString()).partition("\n")[2].removesuffix("\n"))
    finally:
        rows.close()
    return count, "\n".join(texts)


def _java_strings(statistics: Any) -> list[str]:
    return [str(column.toString()) for column in statistics]


@pytest.mark.integration("hive")
@pytest.mark.slow
@pytest.mark.parametrize(
    ("compression", "chunk_rows"),
    [
        pytest.param("ZLIB", None, id="zlib"),
        pytest.param("UNCOMPRESSED", 300, id="uncompressed-multi-stripe"),
    ],
)
def test_java_orc_reader_reads_the_stitched_file(hive, tmp_path, compression, chunk_rows):
    """ORC Java (orc-core 2.3, PySpark's jars) on the stitched file: the rows it reads from the
    one-stripe oracle, the oracle's file statistics, which are also Java's own
    ``ColumnStatisticsImpl.merge`` of the parts' statistics, and the parts' stripe statistics."""
    rows = 2_600
    values = _java_values(rows, seed=20_260_501)
    bounds = (0, 700, 700, 1_500, rows)  # the second part is empty
    values["double"][1][700:1_500] = [None] * 800  # all null in the third part
    values["text"][1][1_500:rows] = [None] * (rows - 1_500)  # all null in the fourth part
    paths = []
    for index, (start, stop) in enumerate(itertools.pairwise(bounds)):
        step = chunk_rows or max(stop - start, 1)
        chunks = [_java_table(values, low, min(low + step, stop)) for low in range(start, stop, step)]
        path = tmp_path / f"part-{index}.orc"
        path.write_bytes(
            orc_bytes(
                chunks or [_java_table(values, start, stop)],
                compression=compression,
                stripe_size=1 if chunk_rows else 64 * 1024 * 1024,
            )
        )
        paths.append(path)
    oracle_path = tmp_path / "oracle.orc"
    oracle_path.write_bytes(
        orc_bytes([_java_table(values, 0, rows)], compression=compression, stripe_size=1 << 30)
    )
    stitched_path = tmp_path / "stitched.orc"

    stitched_path.write_bytes(stitch_files([path.read_bytes() for path in paths]))

    stitched, oracle = _java_reader(hive, stitched_path), _java_reader(hive, oracle_path)
    parts = [_java_reader(hive, path) for path in paths]
    assert stitched.getNumberOfRows() == rows
    assert len(stitched.getStripes()) == sum(len(part.getStripes()) for part in parts)
    count, text = _java_rows(stitched)
    assert count == rows
    assert "<invalid>" not in text
    assert text == _java_rows(oracle)[1]
    statistics = _java_strings(stitched.getStatistics())
    assert statistics == _java_strings(oracle.getStatistics())
    schema = stitched.getSchema()
    merged = []
    for column in range(len(statistics)):
        total = hive.jvm.org.apache.orc.impl.ColumnStatisticsImpl.create(schema.findSubtype(column))
        for part in parts:
            total.merge(part.getStatistics()[column])
        merged.append(str(total.toString()))
    assert statistics == merged
    assert [_java_strings(stripe.getColumnStatistics()) for stripe in stitched.getStripeStatistics()] == [
        _java_strings(stripe.getColumnStatistics()) for part in parts for stripe in part.getStripeStatistics()
    ]


@pytest.mark.integration("hive")
@pytest.mark.slow
@pytest.mark.parametrize(
    "parts",
    [
        pytest.param([[1.0, NAN, 0.5], [2.0]], id="nan-in-the-middle"),
        pytest.param([[NAN, 1.0], [0.5]], id="nan-first"),
        pytest.param([[0.5], [NAN, 1.0]], id="nan-first-in-a-later-part"),
        pytest.param([[NAN], [NAN]], id="all-nan"),
    ],
)
def test_java_merge_of_nan_double_statistics_equals_the_stitched_statistics(hive, tmp_path, parts):
    """ORC Java's own DoubleStatisticsImpl.merge of the parts' statistics, as the oracle of the
    merge rule for NaN (liborc writes min = max = NaN for a part whose first value is NaN)."""
    paths = []
    for index, part in enumerate(parts):
        path = tmp_path / f"part-{index}.orc"
        path.write_bytes(orc_bytes([pa.table({"x": pa.array(part, pa.float64())})]))
        paths.append(path)
    stitched_path = tmp_path / "stitched.orc"

    stitched_path.write_bytes(stitch_files([path.read_bytes() for path in paths]))

    readers = [_java_reader(hive, path) for path in paths]
    merged = hive.jvm.org.apache.orc.impl.ColumnStatisticsImpl.create(readers[0].getSchema().findSubtype(1))
    for reader in readers:
        merged.merge(reader.getStatistics()[1])
    assert _java_strings(_java_reader(hive, stitched_path).getStatistics())[1] == str(merged.toString())
