"""Hive's bucketing hash: which ``bucket_N`` a row of a ``CLUSTERED BY (..) INTO n BUCKETS`` table goes to. PURE.

::

    bucket = (hash & 0x7fffffff) % num_buckets             ObjectInspectorUtils.getBucketNumber
    hash   = fold(31 * h + field_hash(v) for v in row)     ObjectInspectorUtils.getBucketHashCode

    bucketing_version 2 (Hive 3+, the default of new tables):  field_hash = Murmur3.hash32 (seed
        104729) of the value's big-endian bytes (int 4, bigint 8, smallint 2, float/double their
        IEEE bits, date its epoch day as int) or of a string's UTF-8 bytes
        (``ObjectInspectorUtils.hashCodeMurmur``); tinyint and boolean hash to themselves.
    bucketing_version 1 (Hive 1/2 tables):  field_hash = the Writable's ``hashCode``: an int is
        itself, a bigint ``(int)(v ^ v >>> 32)``, a string 31 * h + signed UTF-8 byte from 0
        (varchar/char: their Text's ``hashCode``, from 1), a double ``Double.hashCode``, a boolean 1/0 (``ObjectInspectorUtils.hashCode``).

A null field hashes to 0 in both versions.

Invariants: ``0 <= bucket_number(..) < num_buckets``; results equal Hive's for the supported types
(int, bigint, smallint, tinyint, boolean, string, varchar, char, float, double, date).
Not here: reading rows (the executors pass Python values), the ``bucket`` column's encoding
(``bucket_codec``).
Errors: ``InvalidBucketingError`` for an unsupported type, version or bucket count.
"""

from __future__ import annotations

import datetime
import struct
from typing import TYPE_CHECKING, Final

from acid_core.errors import InvalidBucketingError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "BUCKETING_VERSION_KEY",
    "DEFAULT_BUCKETING_VERSION",
    "bucket_hash_code",
    "bucket_number",
    "bucketing_version_of",
    "murmur3_hash32",
]

BUCKETING_VERSION_KEY: Final = "bucketing_version"
"""The TBLPROPERTIES key Hive 3 stores the version in (``hive_metastoreConstants.TABLE_BUCKETING_VERSION``)."""
DEFAULT_BUCKETING_VERSION: Final = 2
_SEED: Final = 104729  # Murmur3.DEFAULT_SEED
_C1: Final = 0xCC9E2D51
_C2: Final = 0x1B873593
_MASK: Final = 0xFFFFFFFF
_EPOCH: Final = datetime.date(1970, 1, 1)
_INTEGER_TYPES: Final = frozenset({"tinyint", "smallint", "int", "bigint"})
_STRING_TYPES: Final = frozenset({"string", "varchar", "char"})


def _signed(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def _rotl(value: int, bits: int) -> int:
    value &= _MASK
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def _mix(k: int, h: int) -> int:
    k = (k * _C1) & _MASK
    k = _rotl(k, 15)
    k = (k * _C2) & _MASK
    h ^= k
    return (_rotl(h, 13) * 5 + 0xE6546B64) & _MASK


def murmur3_hash32(data: bytes, seed: int = _SEED) -> int:
    """Hive's ``Murmur3.hash32(byte[], length, seed)``, as a signed 32-bit int.

    The tail bytes are sign-extended as Java's ``data[i] << 16`` does (Hive's exact behaviour).

    >>> murmur3_hash32(b"")
    -965378730
    """
    h = seed & _MASK
    blocks = len(data) >> 2
    for i in range(blocks):
        (k,) = struct.unpack_from("<I", data, i * 4)
        h = _mix(k, h)
    tail = data[blocks * 4 :]
    if tail:
        k1 = 0
        signed = [b - 256 if b > 127 else b for b in tail]
        if len(tail) == 3:
            k1 ^= signed[2] << 16
        if len(tail) >= 2:
            k1 ^= signed[1] << 8
        k1 ^= signed[0]
        k1 &= _MASK
        k1 = (k1 * _C1) & _MASK
        k1 = _rotl(k1, 15)
        k1 = (k1 * _C2) & _MASK
        h ^= k1
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return _signed(h)


def _base_type(hive_type: str) -> str:
    return hive_type.strip().lower().split("(", 1)[0].strip()


def _java_string_bytes(value: object, hive_type: str) -> bytes:
    text = str(value)
    if _base_type(hive_type) == "char":
        text = text.rstrip(" ")  # HiveCharWritable.getStrippedValue
    return text.encode("utf-8")


def _murmur_field(value: object, hive_type: str) -> int:
    base = _base_type(hive_type)
    if base == "boolean":
        return 1 if value else 0
    if base == "tinyint":
        return _signed(int(value))  # type: ignore[call-overload]
    if base == "smallint":
        return murmur3_hash32(struct.pack(">h", int(value)))  # type: ignore[call-overload]
    if base == "int":
        return murmur3_hash32(struct.pack(">i", int(value)))  # type: ignore[call-overload]
    if base == "bigint":
        return murmur3_hash32(struct.pack(">q", int(value)))  # type: ignore[call-overload]
    if base == "float":
        return murmur3_hash32(struct.pack(">f", float(value)))  # type: ignore[arg-type]
    if base == "double":
        return murmur3_hash32(struct.pack(">d", float(value)))  # type: ignore[arg-type]
    if base in _STRING_TYPES:
        return murmur3_hash32(_java_string_bytes(value, hive_type))
    if base == "date" and isinstance(value, datetime.date):
        return murmur3_hash32(struct.pack(">i", (value - _EPOCH).days))
    raise InvalidBucketingError(
        hive_type, "a column type the bucketing hash does not support here", _SUPPORTED
    )


def _legacy_field(value: object, hive_type: str) -> int:
    base = _base_type(hive_type)
    if base == "boolean":
        return 1 if value else 0
    if base in _INTEGER_TYPES - {"bigint"}:
        return _signed(int(value))  # type: ignore[call-overload]
    if base == "bigint":
        number = int(value) & 0xFFFFFFFFFFFFFFFF  # type: ignore[call-overload]
        return _signed(number ^ (number >> 32))
    if base == "double":
        (bits,) = struct.unpack(">Q", struct.pack(">d", float(value)))  # type: ignore[arg-type]
        return _signed(bits ^ (bits >> 32))
    if base == "float":
        (bits,) = struct.unpack(">I", struct.pack(">f", float(value)))  # type: ignore[arg-type]
        return _signed(bits)
    if base in _STRING_TYPES:
        # STRING: 31 * r + signed byte from 0 over the UTF-8 bytes; CHAR/VARCHAR: the writable's
        # Text.hashCode (WritableComparator.hashBytes), the same loop from 1.
        h = 0 if base == "string" else 1
        for byte in _java_string_bytes(value, hive_type):
            h = (31 * h + (byte - 256 if byte > 127 else byte)) & _MASK
        return _signed(h)
    if base == "date" and isinstance(value, datetime.date):
        return _signed((value - _EPOCH).days)  # DateWritable.hashCode: the epoch day
    raise InvalidBucketingError(
        hive_type, "a column type the bucketing hash does not support here", _SUPPORTED
    )


_SUPPORTED: Final = "int, bigint, smallint, tinyint, boolean, string, varchar, char, float, double or date"


def bucket_hash_code(values: Sequence[object], hive_types: Sequence[str], version: int = 2) -> int:
    """Hive's ``getBucketHashCode`` of one row's bucketing columns (signed 32-bit).

    Args:
        values: the row's values of the ``CLUSTERED BY`` columns, in that order (None for null).
        hive_types: their Hive types.
        version: the table's ``bucketing_version`` (2: Murmur3, 1: legacy ``hashCode``).

    Raises:
        InvalidBucketingError: an unsupported type or version.

    >>> bucket_hash_code([1], ["int"], version=1)
    1
    """
    if version not in (1, 2):
        raise InvalidBucketingError(str(version), "an unknown bucketing_version", "1 or 2")
    field_hash = _murmur_field if version == 2 else _legacy_field
    h = 0
    for value, hive_type in zip(values, hive_types, strict=True):
        part = 0 if value is None else field_hash(value, hive_type)
        h = (31 * h + part) & _MASK
    return _signed(h)


def bucket_number(hash_code: int, num_buckets: int) -> int:
    """``(hash_code & Integer.MAX_VALUE) % num_buckets`` (``ObjectInspectorUtils.getBucketNumber``).

    >>> bucket_number(-7, 4)
    1
    """
    if num_buckets <= 0:
        raise InvalidBucketingError(str(num_buckets), "a bucket count that is not positive", "n > 0")
    return (hash_code & 0x7FFFFFFF) % num_buckets


def bucketing_version_of(properties: dict[str, str] | None) -> int:
    """The table's bucketing version from TBLPROPERTIES (default 2, as Hive 3+ creates tables).

    Raises:
        InvalidBucketingError: a value other than 1 or 2.
    """
    text = {k.lower(): v for k, v in (properties or {}).items()}.get(BUCKETING_VERSION_KEY, "2").strip()
    if text not in ("1", "2"):
        raise InvalidBucketingError(text, f"an unknown {BUCKETING_VERSION_KEY}", "'1' or '2'")
    return int(text)
