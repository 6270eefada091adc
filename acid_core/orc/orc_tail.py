"""The ORC file tail: add Hive's ACID user metadata (and varchar/char types) to a finished file.

``pyarrow.orc.ORCWriter`` cannot set ORC user metadata, so the event writer (``orc.writer``) holds
back the last bytes the ORC writer emits on ``close`` and passes them to :func:`finish_tail`, which
appends the ``UserMetadataItem`` fields to the Footer (a protobuf merge), rewrites varchar/char
types when the row type has them, checks the stripes' row counts against the ones observed while
writing, and rewrites the PostScript's ``footerLength``. Stripes, stripe statistics and offsets are
untouched. Pure bytes in, bytes out; see ``orc.writer``'s docstring for the whole picture.

:func:`constant_integer_columns` reads the other way: which integer columns of a file hold one
value in every row, from the Footer's column statistics (``pyarrow``'s serialized ``FileTail``),
so the reader can skip decoding them (the ACID key columns of an insert delta are constant);
:func:`column_value_counts` and :func:`footer_writer` read each column's value count and the writer
that wrote the file, for the shifted-struct check (``orc.nested_nulls``).
Errors: ``ValueError`` for a tail this code cannot parse (a bug, not bad input: the writer wraps it).
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Final

import pyarrow as pa

from acid_core.orc.schema import HiveType, RowType, event_orc_type, parse_hive_type

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "ORC_CPP_WRITER",
    "column_value_counts",
    "constant_integer_columns",
    "finish_tail",
    "footer_writer",
    "string_type_overrides",
]

# ORC protobuf field numbers (orc_proto.proto): PostScript.footerLength, PostScript.compression,
# Footer.metadata, UserMetadataItem.name/value.
_PS_FOOTER_LENGTH: Final = 1
_PS_COMPRESSION: Final = 2
_FOOTER_METADATA: Final = 5
_FOOTER_STRIPES: Final = 3
_FOOTER_TYPES: Final = 4
_STRIPE_NUMBER_OF_ROWS: Final = 5
_FOOTER_STATISTICS: Final = 7
_FOOTER_WRITER: Final = 9
_TAIL_FOOTER: Final = 2
_STATS_NUMBER_OF_VALUES: Final = 1
_STATS_INT: Final = 2
_STATS_HAS_NULL: Final = 10
_INT_MINIMUM: Final = 1
_INT_MAXIMUM: Final = 2
_TYPE_KIND: Final = 1
_TYPE_MAXIMUM_LENGTH: Final = 4
# CompressionKind and Type.Kind enum values.
_ORC_NONE: Final = 0
_ORC_ZLIB: Final = 1
_ORC_SNAPPY: Final = 2
_ORC_LZ4: Final = 4
_ORC_ZSTD: Final = 5
# Footer.writer (WriterImplementation): 0 Java's ORC (Hive, Spark; also when absent), 1 the C++ library
# (liborc: pyarrow, pyorc, acidflow), 2 Presto, 3 Go, 4 Trino, 5 cuDF.
ORC_CPP_WRITER: Final = 1
_ORC_VARCHAR: Final = 16
_ORC_CHAR: Final = 17


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        result |= (byte & 0x7F) << shift
        position += 1
        if not byte & 0x80:
            return result, position
        shift += 7


def _proto_fields(data: bytes) -> list[tuple[int, int, bytes]]:
    """Split a protobuf message into (field number, wire type, raw payload) without interpreting it."""
    fields: list[tuple[int, int, bytes]] = []
    position = 0
    while position < len(data):
        tag, position = _read_varint(data, position)
        field, wire = tag >> 3, tag & 7
        start = position
        if wire == 0:
            _, position = _read_varint(data, position)
        elif wire == 2:
            length, position = _read_varint(data, position)
            position += length
        elif wire == 5:
            position += 4
        elif wire == 1:
            position += 8
        else:
            raise ValueError(f"unsupported wire type {wire}")
        fields.append((field, wire, data[start:position]))
    if position != len(data):
        raise ValueError("truncated field")
    return fields


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def constant_integer_columns(file_tail: bytes, rows: int) -> dict[int, int]:
    """Column IDs whose statistics say every one of ``rows`` rows holds the same integer.

    Args:
        file_tail: an uncompressed, serialized ORC ``FileTail`` (postscript, footer).
        rows: the file's row count; a column counts only if it has this many non-null values.

    Returns:
        ``{column ID: value}`` (column 0 is the root struct, 1.. its fields in pre-order); empty
        when the file has no rows, no statistics, or a tail this code cannot parse.
    """
    if rows <= 0:
        return {}
    try:
        footers = [v for f, w, v in _proto_fields(file_tail) if f == _TAIL_FOOTER and w == 2]
        if not footers:
            return {}
        stats = [
            _without_length(v)
            for f, w, v in _proto_fields(_without_length(footers[0]))
            if f == _FOOTER_STATISTICS and w == 2
        ]
        constants: dict[int, int] = {}
        for column, column_stats in enumerate(stats):
            count, has_null, low, high = None, False, None, None
            for f, w, v in _proto_fields(column_stats):
                if f == _STATS_NUMBER_OF_VALUES and w == 0:
                    count = _read_varint(v, 0)[0]
                elif f == _STATS_HAS_NULL and w == 0:
                    has_null = bool(_read_varint(v, 0)[0])
                elif f == _STATS_INT and w == 2:
                    for g, x, u in _proto_fields(_without_length(v)):
                        if g == _INT_MINIMUM and x == 0:
                            low = _zigzag(_read_varint(u, 0)[0])
                        elif g == _INT_MAXIMUM and x == 0:
                            high = _zigzag(_read_varint(u, 0)[0])
            if count == rows and not has_null and low is not None and low == high:
                constants[column] = low
        return constants
    except ValueError:
        return {}


def footer_writer(file_tail: bytes) -> int:
    """The Footer's ``writer`` (``WriterImplementation``); 0 (Java's ORC) when the field is absent.

    Raises:
        ValueError: a tail this code cannot parse.
    """
    writers = [v for f, w, v in _footer_fields(file_tail) if f == _FOOTER_WRITER and w == 0]
    return _read_varint(writers[-1], 0)[0] if writers else 0


def _footer_fields(file_tail: bytes) -> list[tuple[int, int, bytes]]:
    """The Footer's fields, from a serialized ``FileTail``. Raises ``ValueError`` (no Footer)."""
    footers = [v for f, w, v in _proto_fields(file_tail) if f == _TAIL_FOOTER and w == 2]
    if not footers:
        raise ValueError("no Footer in the ORC file tail")
    return _proto_fields(_without_length(footers[0]))


def column_value_counts(file_tail: bytes) -> list[tuple[int, bool]]:
    """(numberOfValues, hasNull) of each column ID, from the file's statistics.

    Args:
        file_tail: an uncompressed, serialized ORC ``FileTail`` (``ORCFile.reader.serialized_file_tail()``).

    Returns:
        One pair per column ID (0 is the root struct); empty when the Footer has no statistics.

    Raises:
        ValueError: a tail this code cannot parse.
    """
    counts: list[tuple[int, bool]] = []
    for f, w, v in _footer_fields(file_tail):
        if f != _FOOTER_STATISTICS or w != 2:
            continue
        values, has_null = 0, False
        for g, x, u in _proto_fields(_without_length(v)):
            if g == _STATS_NUMBER_OF_VALUES and x == 0:
                values = _read_varint(u, 0)[0]
            elif g == _STATS_HAS_NULL and x == 0:
                has_null = bool(_read_varint(u, 0)[0])
        counts.append((values, has_null))
    return counts


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _metadata_items(metadata: Mapping[str, bytes]) -> bytes:
    return b"".join(
        _length_delimited(_FOOTER_METADATA, _length_delimited(1, name.encode()) + _length_delimited(2, value))
        for name, value in metadata.items()
    )


def _compression_chunks(payload: bytes, compression_kind: int, block_size: int) -> bytes:
    """Encode ``payload`` as ORC compression chunks (3-byte header: length << 1 | isOriginal)."""
    if compression_kind == _ORC_NONE:
        return payload
    out = bytearray()
    for start in range(0, len(payload), block_size):
        block = payload[start : start + block_size]
        body, original = block, 1
        if compression_kind == _ORC_ZLIB:
            packer = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
            packed = packer.compress(block) + packer.flush()
            if len(packed) < len(block):
                body, original = packed, 0
        header = len(body) << 1 | original
        out += header.to_bytes(3, "little") + body
    return bytes(out)


def _decompress_chunk(body: bytes, compression_kind: int, block_size: int) -> bytes:
    """One compressed ORC chunk's content (at most ``block_size`` bytes)."""
    if compression_kind == _ORC_ZLIB:
        return zlib.decompress(body, -15)
    if compression_kind == _ORC_SNAPPY:  # raw snappy starts with the uncompressed length
        size, _ = _read_varint(body, 0)
        return bytes(pa.Codec("snappy").decompress(body, size, asbytes=True))
    if compression_kind == _ORC_ZSTD:
        return bytes(pa.Codec("zstd").decompress(body, _zstd_content_size(body), asbytes=True))
    if compression_kind == _ORC_LZ4:
        # Raw LZ4 blocks carry no length; decoding fails when the output is too small, so the
        # smallest size that decodes is the exact size.
        codec, low, high = pa.Codec("lz4_raw"), 1, block_size
        while low < high:
            middle = (low + high) // 2
            try:
                codec.decompress(body, middle)
            except (OSError, pa.ArrowException):
                low = middle + 1
            else:
                high = middle
        return bytes(codec.decompress(body, low, asbytes=True))
    raise ValueError(f"unsupported compression kind {compression_kind}")


def _zstd_content_size(frame: bytes) -> int:
    """Frame_Content_Size from a zstd frame header (RFC 8878, section 3.1.1.1)."""
    descriptor = frame[4]
    size_flag, single_segment, dictionary_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    position = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dictionary_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[size_flag]
    if width == 0:
        raise ValueError("zstd frame without a content size")
    size = int.from_bytes(frame[position : position + width], "little")
    return size + 256 if width == 2 else size


def _decompress_stream(data: bytes, compression_kind: int, block_size: int) -> bytes:
    if compression_kind == _ORC_NONE:
        return data
    out = bytearray()
    position = 0
    while position < len(data):
        header = int.from_bytes(data[position : position + 3], "little")
        length, original = header >> 1, header & 1
        body = data[position + 3 : position + 3 + length]
        out += body if original else _decompress_chunk(body, compression_kind, block_size)
        position += 3 + length
    return bytes(out)


def _stripe_row_count(payload: bytes) -> int:
    """``StripeInformation.numberOfRows`` of a length-delimited StripeInformation."""
    for field, wire, value in _proto_fields(_without_length(payload)):
        if field == _STRIPE_NUMBER_OF_ROWS and wire == 0:
            return _read_varint(value, 0)[0]
    return 0


def _without_length(payload: bytes) -> bytes:
    length, start = _read_varint(payload, 0)
    return payload[start : start + length]


def _retype_strings(footer: bytes, overrides: Mapping[int, tuple[int, int]]) -> bytes:
    """The Footer with ``Type.kind``/``maximumLength`` replaced for the given column IDs."""
    out = bytearray()
    column = 0
    for field, wire, payload in _proto_fields(footer):
        if field == _FOOTER_TYPES and wire == 2:
            if column in overrides:
                kind, maximum_length = overrides[column]
                kept = b"".join(
                    _varint(f << 3 | w) + p
                    for f, w, p in _proto_fields(_without_length(payload))
                    if f not in (_TYPE_KIND, _TYPE_MAXIMUM_LENGTH)
                )
                message = (
                    _varint(_TYPE_KIND << 3)
                    + _varint(kind)
                    + kept
                    + _varint(_TYPE_MAXIMUM_LENGTH << 3)
                    + _varint(maximum_length)
                )
                payload = _varint(len(message)) + message
            column += 1
        out += _varint(field << 3 | wire) + payload
    return bytes(out)


def string_type_overrides(row_type: RowType) -> dict[int, tuple[int, int]]:
    """ORC column ID (pre-order over the event type) -> (VARCHAR or CHAR kind, length)."""
    overrides: dict[int, tuple[int, int]] = {}
    next_id = 0

    def visit(hive_type: HiveType) -> None:
        nonlocal next_id
        if hive_type.name in ("varchar", "char"):
            kind = _ORC_VARCHAR if hive_type.name == "varchar" else _ORC_CHAR
            overrides[next_id] = (kind, hive_type.params[0])
        next_id += 1
        for child in hive_type.children:
            visit(child)

    visit(parse_hive_type(event_orc_type(row_type)))
    return overrides


def finish_tail(
    tail: bytes,
    metadata: Mapping[str, bytes],
    block_size: int,
    type_overrides: Mapping[int, tuple[int, int]],
    stripe_rows: Sequence[int],
) -> bytes:
    """Add user metadata (and varchar/char types) to the Footer at the end of ``tail``.

    ``tail`` holds at least the whole Footer and PostScript. Without type overrides the Footer
    stream is left as written and the metadata items are appended as one more chunk (a protobuf
    merge); with overrides the Footer is decoded, its types rewritten and re-encoded. Either way
    the Footer's stripes must have the row counts observed while writing (``stripe_rows``), which
    checks that the key index has one entry per stripe, each at the stripe's end.
    """
    postscript_length = tail[-1]
    postscript = tail[-1 - postscript_length : -1]
    fields = _proto_fields(postscript)
    values = {field: payload for field, wire, payload in fields if wire == 0}
    footer_length, _ = _read_varint(values[_PS_FOOTER_LENGTH], 0)
    compression_kind, _ = _read_varint(values.get(_PS_COMPRESSION, b"\x00"), 0)
    footer_end = len(tail) - 1 - postscript_length
    footer_start = footer_end - footer_length
    if footer_start < 0:
        raise ValueError("the footer is not in the held tail")
    plain = _decompress_stream(tail[footer_start:footer_end], compression_kind, block_size)
    written_rows = [
        _stripe_row_count(payload)
        for field, wire, payload in _proto_fields(plain)
        if field == _FOOTER_STRIPES
    ]
    if written_rows != list(stripe_rows):
        raise ValueError(f"stripes of {written_rows} rows, but {list(stripe_rows)} were observed")
    if type_overrides:
        plain = _retype_strings(plain, type_overrides) + _metadata_items(metadata)
        footer = _compression_chunks(plain, compression_kind, block_size)
    else:
        footer = tail[footer_start:footer_end] + _compression_chunks(
            _metadata_items(metadata), compression_kind, block_size
        )
    new_postscript = b"".join(
        _varint(field << 3 | wire) + (_varint(len(footer)) if field == _PS_FOOTER_LENGTH else payload)
        for field, wire, payload in fields
    )
    if len(new_postscript) > 255:
        raise ValueError("postscript longer than 255 bytes")
    return tail[:footer_start] + footer + new_postscript + bytes([len(new_postscript)])
