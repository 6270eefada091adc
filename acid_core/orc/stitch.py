"""Stitch ORC files into one: their stripes byte for byte, in order, under one rebuilt tail.

The event writer (``orc.writer``) encodes a big file's rows as consecutive *parts*, each with its
own ``pyarrow.orc.ORCWriter`` on its own thread (the ORC C++ writer encodes on one core), and
stitches the parts::

    part 1: ORC | stripe 1 | stripe 2 | Metadata | Footer | PostScript | n
    part 2: ORC | stripe 3 |            Metadata | Footer | PostScript | n
    file:   ORC | stripe 1 | stripe 2 | stripe 3 | Metadata | Footer | PostScript | n

A stripe is self-contained (its streams, their compression chunks and row indexes are relative to
the stripe), so it moves unchanged; only the tail is rebuilt, as Java ORC's ``OrcFile.mergeFiles``
(``Writer.appendStripe``) rebuilds it:

- Metadata: every stripe's column statistics in order: the parts' Metadata messages concatenated
  (a repeated protobuf field: concatenation is the merge), compressed again.
- Footer: the stripes (``StripeInformation``) at their new offsets, the total row count, the file's
  column statistics merged from the parts' (:func:`merge_column_statistics`, the rules of ORC's
  ``ColumnStatisticsImpl.merge``), and every other field (types, row index stride, writer,
  calendar, software version) from the first part, which must match the others.
- PostScript: the first part's, with the new Footer and Metadata lengths.

Pure bytes in, bytes out. The writer streams the parts' stripes itself and only needs the tail:
:func:`read_layout` of each part, then :func:`stitch_tail`; :func:`stitch_files` does both for
whole files. Errors: ``ValueError`` for parts that differ in schema or options, an encrypted file,
or a tail this code cannot parse (the writer wraps it: a bug, not bad input).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation, localcontext
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from acid_core.orc.orc_tail import (
    _compression_chunks,
    _decompress_stream,
    _length_delimited,
    _proto_fields,
    _read_varint,
    _varint,
    _without_length,
    _zigzag,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "OrcLayout",
    "merge_column_statistics",
    "read_layout",
    "read_tail_layout",
    "stitch_files",
    "stitch_tail",
]

_MAGIC: Final = b"ORC"
# orc_proto.proto field numbers.
_PS_FOOTER_LENGTH: Final = 1
_PS_COMPRESSION: Final = 2
_PS_BLOCK_SIZE: Final = 3
_PS_METADATA_LENGTH: Final = 5
_PS_STRIPE_STATISTICS_LENGTH: Final = 7
_FOOTER_HEADER_LENGTH: Final = 1
_FOOTER_CONTENT_LENGTH: Final = 2
_FOOTER_STRIPES: Final = 3
_FOOTER_NUMBER_OF_ROWS: Final = 6
_FOOTER_STATISTICS: Final = 7
_FOOTER_ENCRYPTION: Final = 10
_STRIPE_OFFSET: Final = 1
_STRIPE_INDEX_LENGTH: Final = 2
_STRIPE_DATA_LENGTH: Final = 3
_STRIPE_FOOTER_LENGTH: Final = 4
_STRIPE_NUMBER_OF_ROWS: Final = 5
_DEFAULT_BLOCK_SIZE: Final = 256 * 1024
# ColumnStatistics fields.
_NUMBER_OF_VALUES: Final = 1
_INT: Final = 2
_DOUBLE: Final = 3
_STRING: Final = 4
_BUCKET: Final = 5
_DECIMAL: Final = 6
_DATE: Final = 7
_BINARY: Final = 8
_TIMESTAMP: Final = 9
_HAS_NULL: Final = 10
_BYTES_ON_DISK: Final = 11
_COLLECTION: Final = 12
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_DECIMAL_MAX_DIGITS: Final = 38  # ORC decimals are 128-bit: a sum beyond 38 digits is dropped


@dataclass(frozen=True)
class OrcLayout:
    """One finished ORC file's stripes and tail, decoded as far as stitching needs.

    ``content_end`` is where the stripes end (the file's bytes ``[3, content_end)`` are its
    stripes); ``stripes`` holds each ``StripeInformation`` as (offset, the message without its
    offset field); ``stripe_rows`` each stripe's row count.
    """

    content_end: int
    stripes: tuple[tuple[int, bytes], ...]
    stripe_rows: tuple[int, ...]
    rows: int
    metadata: bytes  # the Metadata message, uncompressed
    footer_rest: tuple[tuple[int, int, bytes], ...]  # Footer fields stitching does not rebuild
    statistics: tuple[bytes, ...]  # the file's ColumnStatistics messages
    postscript: tuple[tuple[int, int, bytes], ...]
    compression_kind: int
    block_size: int


def read_layout(data: bytes) -> OrcLayout:
    """Decode a complete ORC file's tail (Metadata, Footer, PostScript)."""
    if len(data) < 4 or data[:3] != _MAGIC:
        raise ValueError("not an ORC file: no 'ORC' header")
    return read_tail_layout(data, len(data))


def read_tail_layout(tail: bytes, file_length: int) -> OrcLayout:
    """Decode an ORC file's tail from its last bytes (``tail``: at least Metadata, Footer, PostScript)."""
    data, base = tail, file_length - len(tail)  # positions in ``data`` are ``base`` less than the file's
    if not data:
        raise ValueError("an empty ORC tail")
    postscript_length = data[-1]
    postscript_start = len(data) - 1 - postscript_length
    postscript = tuple(_proto_fields(data[postscript_start:-1]))
    values = {field: payload for field, wire, payload in postscript if wire == 0}
    if _PS_STRIPE_STATISTICS_LENGTH in values:
        raise ValueError("an ORC file with encrypted stripe statistics cannot be stitched")
    footer_length = _read_varint(values[_PS_FOOTER_LENGTH], 0)[0]
    metadata_length = _read_varint(values.get(_PS_METADATA_LENGTH, b"\x00"), 0)[0]
    compression_kind = _read_varint(values.get(_PS_COMPRESSION, b"\x00"), 0)[0]
    block_size = _read_varint(values.get(_PS_BLOCK_SIZE, _varint(_DEFAULT_BLOCK_SIZE)), 0)[0]
    footer_start = postscript_start - footer_length
    metadata_start = footer_start - metadata_length
    if metadata_start < 0 or base + metadata_start < len(_MAGIC):
        raise ValueError("the ORC tail's lengths run past the bytes given")
    footer = _decompress_stream(data[footer_start:postscript_start], compression_kind, block_size)
    metadata = _decompress_stream(data[metadata_start:footer_start], compression_kind, block_size)
    stripes: list[tuple[int, bytes]] = []
    stripe_rows: list[int] = []
    statistics: list[bytes] = []
    rest: list[tuple[int, int, bytes]] = []
    rows = 0
    content_end = len(_MAGIC)
    for field, wire, payload in _proto_fields(footer):
        if field == _FOOTER_STRIPES and wire == 2:
            offset, kept, stripe_length, count = _stripe_information(_without_length(payload))
            if offset != content_end:
                raise ValueError(f"a stripe at offset {offset}, expected {content_end}: not contiguous")
            content_end = offset + stripe_length
            stripes.append((offset, kept))
            stripe_rows.append(count)
        elif field == _FOOTER_STATISTICS and wire == 2:
            statistics.append(_without_length(payload))
        elif field == _FOOTER_NUMBER_OF_ROWS and wire == 0:
            rows = _read_varint(payload, 0)[0]
        elif field == _FOOTER_ENCRYPTION:
            raise ValueError("an encrypted ORC file cannot be stitched")
        elif field not in (_FOOTER_HEADER_LENGTH, _FOOTER_CONTENT_LENGTH):
            rest.append((field, wire, payload))
    if content_end > base + metadata_start:
        raise ValueError("the ORC stripes overlap the file's tail")
    if sum(stripe_rows) != rows:
        raise ValueError(f"stripes of {sum(stripe_rows)} rows in a file of {rows} rows")
    return OrcLayout(
        content_end,
        tuple(stripes),
        tuple(stripe_rows),
        rows,
        metadata,
        tuple(rest),
        tuple(statistics),
        postscript,
        compression_kind,
        block_size,
    )


def _stripe_information(message: bytes) -> tuple[int, bytes, int, int]:
    """(offset, the message without it, the stripe's length in bytes, its rows)."""
    offset = length = rows = 0
    kept = bytearray()
    for field, wire, payload in _proto_fields(message):
        if field == _STRIPE_OFFSET and wire == 0:
            offset = _read_varint(payload, 0)[0]
            continue
        if wire == 0 and field in (_STRIPE_INDEX_LENGTH, _STRIPE_DATA_LENGTH, _STRIPE_FOOTER_LENGTH):
            length += _read_varint(payload, 0)[0]
        elif field == _STRIPE_NUMBER_OF_ROWS and wire == 0:
            rows = _read_varint(payload, 0)[0]
        elif field > _STRIPE_NUMBER_OF_ROWS:
            raise ValueError("an encrypted ORC stripe cannot be stitched")
        kept += _varint(field << 3 | wire) + payload
    return offset, bytes(kept), length, rows


def stitch_tail(parts: Sequence[OrcLayout]) -> bytes:
    """The tail (Metadata, Footer, PostScript, its length byte) of ``ORC`` + the parts' stripes in order."""
    if not parts:
        raise ValueError("no ORC file to stitch")
    first = parts[0]
    for part in parts[1:]:
        if part.footer_rest != first.footer_rest:
            raise ValueError("ORC files with different schemas or writers cannot be stitched")
        if _without_lengths(part.postscript) != _without_lengths(first.postscript):
            raise ValueError("ORC files with different compression or versions cannot be stitched")
        if len(part.statistics) != len(first.statistics):
            raise ValueError("ORC files with different column counts cannot be stitched")
    stripes = bytearray()
    position = len(_MAGIC)
    for part in parts:
        for offset, kept in part.stripes:
            message = _varint(_STRIPE_OFFSET << 3) + _varint(position + offset - len(_MAGIC)) + kept
            stripes += _length_delimited(_FOOTER_STRIPES, message)
        position += part.content_end - len(_MAGIC)
    statistics = [
        merge_column_statistics(*column) for column in zip(*(part.statistics for part in parts), strict=True)
    ]
    rest = [(_varint(field << 3 | wire) + payload, field) for field, wire, payload in first.footer_rest]
    footer = (
        _varint(_FOOTER_HEADER_LENGTH << 3)
        + _varint(len(_MAGIC))
        + _varint(_FOOTER_CONTENT_LENGTH << 3)
        + _varint(position)
        + bytes(stripes)
        + b"".join(raw for raw, field in rest if field < _FOOTER_NUMBER_OF_ROWS)
        + _varint(_FOOTER_NUMBER_OF_ROWS << 3)
        + _varint(sum(part.rows for part in parts))
        + b"".join(_length_delimited(_FOOTER_STATISTICS, message) for message in statistics)
        + b"".join(raw for raw, field in rest if field > _FOOTER_NUMBER_OF_ROWS)
    )
    kind, block_size = first.compression_kind, first.block_size
    metadata = _compression_chunks(b"".join(part.metadata for part in parts), kind, block_size)
    footer_bytes = _compression_chunks(footer, kind, block_size)
    postscript = b"".join(
        _varint(field << 3 | wire)
        + (
            _varint(len(footer_bytes))
            if field == _PS_FOOTER_LENGTH
            else _varint(len(metadata))
            if field == _PS_METADATA_LENGTH
            else payload
        )
        for field, wire, payload in first.postscript
    )
    if len(postscript) > 255:
        raise ValueError("postscript longer than 255 bytes")
    return metadata + footer_bytes + postscript + bytes([len(postscript)])


def _without_lengths(postscript: Sequence[tuple[int, int, bytes]]) -> list[tuple[int, int, bytes]]:
    return [field for field in postscript if field[0] not in (_PS_FOOTER_LENGTH, _PS_METADATA_LENGTH)]


def stitch_files(files: Sequence[bytes]) -> bytes:
    """One ORC file holding the files' stripes, in order (see the module's docstring)."""
    layouts = [read_layout(data) for data in files]
    tail = stitch_tail(layouts)
    return (
        _MAGIC
        + b"".join(
            data[len(_MAGIC) : layout.content_end] for data, layout in zip(files, layouts, strict=True)
        )
        + tail
    )


# --- column statistics ------------------------------------------------------------------------------

_Fields = dict[int, list[tuple[int, bytes]]]  # a message's fields: number -> [(wire type, payload)]
_Sub = tuple[_Fields, int]  # a part's statistics of one type, and the part's value count
_N = TypeVar("_N", int, float, Decimal)


def _fields(message: bytes) -> _Fields:
    out: _Fields = {}
    for field, wire, payload in _proto_fields(message):
        out.setdefault(field, []).append((wire, payload))
    return out


def _uint(fields: _Fields, field: int) -> int | None:
    values = fields.get(field)
    return _read_varint(values[-1][1], 0)[0] if values else None


def _sint(fields: _Fields, field: int) -> int | None:
    value = _uint(fields, field)
    return None if value is None else _zigzag(value)


def _int32(fields: _Fields, field: int) -> int | None:
    value = _uint(fields, field)
    if value is None:
        return None
    value &= 0xFFFFFFFF  # a negative int32 is sign-extended to 10 bytes
    return value - (1 << 32) if value >= 1 << 31 else value


def _double(fields: _Fields, field: int) -> float | None:
    values = fields.get(field)
    if not values:
        return None
    wire, payload = values[-1]
    if wire != 1:
        raise ValueError("a double statistic of another wire type")
    return float(struct.unpack("<d", payload)[0])


def _bytes(fields: _Fields, field: int) -> bytes | None:
    values = fields.get(field)
    return _without_length(values[-1][1]) if values else None


def _enc_uint(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _enc_sint(field: int, value: int) -> bytes:
    return _enc_uint(field, (value << 1) ^ (value >> 63))


def _enc_int32(field: int, value: int) -> bytes:
    return _enc_uint(field, value & 0xFFFFFFFFFFFFFFFF)


def _enc_double(field: int, value: float) -> bytes:
    return _varint(field << 3 | 1) + struct.pack("<d", value)


def _enc_bytes(field: int, value: bytes) -> bytes:
    return _length_delimited(field, value)


def _sub(fields: _Fields, field: int) -> _Fields | None:
    values = fields.get(field)
    if not values:
        return None
    merged: _Fields = {}
    for _, payload in values:  # a repeated embedded message merges
        for key, items in _fields(_without_length(payload)).items():
            merged.setdefault(key, []).extend(items)
    return merged


def _pick(values: Sequence[tuple[Any, bytes]], smallest: bool) -> bytes | None:
    """The encoded field of the least (or greatest) key; ties keep the first."""
    best: tuple[Any, bytes] | None = None
    for key, encoded in values:
        if best is None or (key < best[0] if smallest else key > best[0]):
            best = (key, encoded)
    return None if best is None else best[1]


def _merge_int(subs: list[_Sub]) -> bytes:
    out = b""
    minimum = [(v, _enc_sint(1, v)) for s, _ in subs if (v := _sint(s, 1)) is not None]
    maximum = [(v, _enc_sint(2, v)) for s, _ in subs if (v := _sint(s, 2)) is not None]
    out += (_pick(minimum, True) or b"") + (_pick(maximum, False) or b"")
    total = _sum_of(subs, lambda s: _sint(s, 3), 0)
    if total is not None and _INT64_MIN <= total <= _INT64_MAX:
        out += _enc_sint(3, total)
    return out


def _merge_double(subs: list[_Sub]) -> bytes:
    out = b""
    # NaN compares false either way: a NaN extreme stays once taken and is never taken over a
    # number, as in ORC's DoubleStatisticsImpl.merge (the first part with values sets both).
    minimum = [(v, _enc_double(1, v)) for s, _ in subs if (v := _double(s, 1)) is not None]
    maximum = [(v, _enc_double(2, v)) for s, _ in subs if (v := _double(s, 2)) is not None]
    out += (_pick(minimum, True) or b"") + (_pick(maximum, False) or b"")
    total = _sum_of(subs, lambda s: _double(s, 3), 0.0)
    if total is not None:
        out += _enc_double(3, total)
    return out


def _merge_string(subs: list[_Sub]) -> bytes:
    # (value, exact?) per part for each end; a truncated end (lowerBound/upperBound) loses to an
    # exact one only when strictly beyond it, as ORC's StringStatisticsImpl.merge keeps bounds.
    lows = []
    highs = []
    for s, _ in subs:
        low, lower = _bytes(s, 1), _bytes(s, 4)
        high, upper = _bytes(s, 2), _bytes(s, 5)
        if low is not None:
            lows.append((low, _enc_bytes(1, low)))
        elif lower is not None:
            lows.append((lower, _enc_bytes(4, lower)))
        if high is not None:
            highs.append((high, _enc_bytes(2, high)))
        elif upper is not None:
            highs.append((upper, _enc_bytes(5, upper)))
    out = (_pick(lows, True) or b"") + (_pick(highs, False) or b"")  # bytes compare unsigned
    total = _sum_of(subs, lambda s: _sint(s, 3), 0)
    if total is not None and _INT64_MIN <= total <= _INT64_MAX:
        out += _enc_sint(3, total)
    return out


def _merge_bucket(subs: list[_Sub]) -> bytes:
    counts: list[int] = []
    for s, _ in subs:
        part: list[int] = []
        for wire, payload in s.get(1, []):
            if wire == 2:  # packed, as ORC writes it
                body, position = _without_length(payload), 0
                while position < len(body):
                    value, position = _read_varint(body, position)
                    part.append(value)
            else:
                part.append(_read_varint(payload, 0)[0])
        width = max(len(counts), len(part))
        counts = [
            (counts[i] if i < len(counts) else 0) + (part[i] if i < len(part) else 0) for i in range(width)
        ]
    return _enc_bytes(1, b"".join(_varint(value) for value in counts)) if counts else b""


def _decimal(value: bytes | None) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(value.decode())
    except (InvalidOperation, UnicodeDecodeError) as error:
        raise ValueError(f"a decimal statistic {value!r} that is not a number") from error


def _merge_decimal(subs: list[_Sub]) -> bytes:
    minimum = [
        (d, _enc_bytes(1, raw))
        for s, _ in subs
        if (raw := _bytes(s, 1)) is not None and (d := _decimal(raw)) is not None
    ]
    maximum = [
        (d, _enc_bytes(2, raw))
        for s, _ in subs
        if (raw := _bytes(s, 2)) is not None and (d := _decimal(raw)) is not None
    ]
    out = (_pick(minimum, True) or b"") + (_pick(maximum, False) or b"")
    with localcontext() as exact:  # ORC's decimals have up to 38 digits, Python's context 28
        exact.prec = 2 * _DECIMAL_MAX_DIGITS
        total = _sum_of(subs, lambda s: _decimal(_bytes(s, 3)), Decimal(0))
    if total is not None and len(total.as_tuple().digits) <= _DECIMAL_MAX_DIGITS:
        out += _enc_bytes(3, format(total, "f").encode())
    return out


def _merge_date(subs: list[_Sub]) -> bytes:
    minimum = [(v, _enc_sint(1, v)) for s, _ in subs if (v := _sint(s, 1)) is not None]
    maximum = [(v, _enc_sint(2, v)) for s, _ in subs if (v := _sint(s, 2)) is not None]
    return (_pick(minimum, True) or b"") + (_pick(maximum, False) or b"")


def _timestamp_end(fields: _Fields, local_field: int) -> tuple[tuple[int, int], bytes] | None:
    """One end of a part's timestamp range: its (UTC millis, nanos + 1) key and encoded fields.

    ``local_field`` is 1 (minimum) or 2 (maximum); the UTC value is 2 fields on, the nanos 4.
    """
    local, utc, nanos = (
        _sint(fields, local_field),
        _sint(fields, local_field + 2),
        _int32(fields, local_field + 4),
    )
    if local is None and utc is None:
        return None
    key = (utc if utc is not None else cast("int", local), nanos or 0)
    encoded = (
        (b"" if local is None else _enc_sint(local_field, local))
        + (b"" if utc is None else _enc_sint(local_field + 2, utc))
        + (b"" if nanos is None else _enc_int32(local_field + 4, nanos))
    )
    return key, encoded


def _merge_timestamp(subs: list[_Sub]) -> bytes:
    lows = [end for s, _ in subs if (end := _timestamp_end(s, 1)) is not None]
    highs = [end for s, _ in subs if (end := _timestamp_end(s, 2)) is not None]
    low, high = _pick(lows, True) or b"", _pick(highs, False) or b""
    # Field order 1, 2, 3, 4, 5, 6 as ORC writes it: split the picked groups back into fields.
    by_field = {field: raw for part in (low, high) for field, raw in _raw_fields(part)}
    return b"".join(by_field[field] for field in sorted(by_field))


def _raw_fields(message: bytes) -> list[tuple[int, bytes]]:
    return [(field, _varint(field << 3 | wire) + payload) for field, wire, payload in _proto_fields(message)]


def _merge_binary(subs: list[_Sub]) -> bytes:
    total = _sum_of(subs, lambda s: _sint(s, 1), 0)
    return b"" if total is None or not _INT64_MIN <= total <= _INT64_MAX else _enc_sint(1, total)


def _merge_collection(subs: list[_Sub]) -> bytes:
    minimum = [(v, _enc_uint(1, v)) for s, _ in subs if (v := _uint(s, 1)) is not None]
    maximum = [(v, _enc_uint(2, v)) for s, _ in subs if (v := _uint(s, 2)) is not None]
    out = (_pick(minimum, True) or b"") + (_pick(maximum, False) or b"")
    total = _sum_of(subs, lambda s: _uint(s, 3), 0)
    return out + (b"" if total is None else _enc_uint(3, total))


def _sum_of(subs: list[_Sub], read: Callable[[_Fields], _N | None], zero: _N) -> _N | None:
    """The parts' sum, or None when a part with values has none (ORC drops an unknown sum)."""
    total = zero
    for fields, count in subs:
        value = read(fields)
        if value is None:
            if count:
                return None
            continue
        total = total + value
    return total


_MERGES: Final[dict[int, Callable[[list[_Sub]], bytes]]] = {
    _INT: _merge_int,
    _DOUBLE: _merge_double,
    _STRING: _merge_string,
    _BUCKET: _merge_bucket,
    _DECIMAL: _merge_decimal,
    _DATE: _merge_date,
    _BINARY: _merge_binary,
    _TIMESTAMP: _merge_timestamp,
    _COLLECTION: _merge_collection,
}


def merge_column_statistics(*messages: bytes) -> bytes:
    """Merge serialized ``ColumnStatistics`` of one column, as ORC's ``ColumnStatisticsImpl.merge``.

    Counts and byte sizes add, ``hasNull`` ors, minima and maxima take the extreme (strings in
    unsigned byte order, timestamps by UTC millis then nanos), sums add and are dropped when a part
    with values has none or an integer sum leaves int64 (a decimal sum, 38 digits).
    """
    if not messages:
        raise ValueError("no column statistics to merge")
    parts = [_fields(message) for message in messages]
    known = {_NUMBER_OF_VALUES, _HAS_NULL, _BYTES_ON_DISK, *_MERGES}
    for fields in parts:
        unknown = set(fields) - known
        if unknown:
            raise ValueError(f"column statistics with unknown fields {sorted(unknown)}")
    kinds = {field for fields in parts for field in fields if field in _MERGES}
    if len(kinds) > 1:
        raise ValueError(f"column statistics of different types {sorted(kinds)}")
    counts = [_uint(fields, _NUMBER_OF_VALUES) for fields in parts]
    out: dict[int, bytes] = {}
    if any(count is not None for count in counts):
        out[_NUMBER_OF_VALUES] = _enc_uint(_NUMBER_OF_VALUES, sum(count or 0 for count in counts))
    for kind in kinds:
        subs = [
            (sub, count or 0)
            for fields, count in zip(parts, counts, strict=True)
            if (sub := _sub(fields, kind)) is not None
        ]
        out[kind] = _enc_bytes(kind, _MERGES[kind](subs))
    has_null = [_uint(fields, _HAS_NULL) for fields in parts]
    if any(value is not None for value in has_null):
        out[_HAS_NULL] = _enc_uint(_HAS_NULL, int(any(has_null)))
    on_disk = [_uint(fields, _BYTES_ON_DISK) for fields in parts]
    if all(value is not None for value in on_disk):
        out[_BYTES_ON_DISK] = _enc_uint(_BYTES_ON_DISK, sum(value or 0 for value in on_disk))
    return b"".join(out[field] for field in sorted(out))
