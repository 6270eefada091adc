"""Hive's BucketCodec: the bit layout of the ``bucket`` column of ACID events.

V1 (Hive 3+, what acidflow writes), as a 32-bit int::

    bit  31 30 29 | 28 | 27 ........ 16 | 15 .. 12 | 11 ........ 0
         version=1 |  0 |  bucket id    | reserved | statement id
                          (12 bits)                  (12 bits)

    encode(bucket=0, statement=0) = 1 << 29 = 536870912
    encode(bucket=2, statement=0) = 536870912 | 2 << 16 = 537001984

V0 (Hive 2.x) stores the plain bucket number and no statement ID; the top three bits are 0.

Invariants: ``decode(encode_property(b, s)) == (b, s)`` for 0 <= b, s <= 4095; the version of a value is
``(value >>> 29) & 7``, and only 0 and 1 exist (Hive's ``determineVersioningScheme``).
Not here: reading the column (see ``orc``).
Errors: ``InvalidBucketPropertyError`` for an unknown version or an out-of-range bucket/statement.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from acid_core.errors import InvalidBucketPropertyError

__all__ = [
    "MAX_BUCKET_ID",
    "MAX_STATEMENT_ID",
    "BucketCodec",
    "BucketProperty",
    "decode_bucket_property",
    "encode_bucket_property",
]

MAX_BUCKET_ID = 4095
MAX_STATEMENT_ID = 4095
_VERSION_SHIFT = 29
_BUCKET_SHIFT = 16
_BUCKET_MASK = 0x0FFF_0000
_STATEMENT_MASK = 0x0000_0FFF
_UINT32 = 0xFFFF_FFFF


class BucketCodec(StrEnum):
    """The two versions of the ``bucket`` column encoding."""

    V0 = "v0"
    V1 = "v1"

    @property
    def version(self) -> int:
        """The number stored in the top three bits."""
        return 0 if self is BucketCodec.V0 else 1

    @classmethod
    def determine(cls, value: int) -> BucketCodec:
        """Which codec wrote ``value`` (Hive's ``BucketCodec.determineVersioningScheme``).

        Args:
            value: the ``bucket`` column value, signed or unsigned 32-bit.

        Raises:
            InvalidBucketPropertyError: the top three bits are neither 0 nor 1.
        """
        version = ((value & _UINT32) >> _VERSION_SHIFT) & 0x7
        if version == 0:
            return cls.V0
        if version == 1:
            return cls.V1
        raise InvalidBucketPropertyError(
            value, f"unrecognized bucket codec version {version}; expected 0 (Hive 2) or 1 (Hive 3+)"
        )

    def encode_property(self, bucket_id: int, statement_id: int = 0) -> int:
        """Encode a bucket and statement ID as this codec does.

        Args:
            bucket_id: 0..4095.
            statement_id: 0..4095; a negative ID (no statement) encodes as 0, as in Hive. V0 drops it.

        Raises:
            InvalidBucketPropertyError: an ID is out of range.
        """
        if self is BucketCodec.V0:
            if bucket_id < 0:
                raise InvalidBucketPropertyError(bucket_id, "bucket ID must be >= 0")
            return bucket_id
        if statement_id < -1:
            # AcidOutputFormat.Options.statementId accepts -1 ("no statement") and up, nothing lower.
            raise InvalidBucketPropertyError(
                statement_id, f"statement ID out of range; expected -1 (none) or 0..{MAX_STATEMENT_ID}"
            )
        statement_id = max(0, statement_id)
        if not 0 <= bucket_id <= MAX_BUCKET_ID:
            raise InvalidBucketPropertyError(
                bucket_id, f"bucket ID out of range; expected 0..{MAX_BUCKET_ID}"
            )
        if statement_id > MAX_STATEMENT_ID:
            raise InvalidBucketPropertyError(
                statement_id, f"statement ID out of range; expected 0..{MAX_STATEMENT_ID}"
            )
        return (1 << _VERSION_SHIFT) | (bucket_id << _BUCKET_SHIFT) | statement_id

    def decode_bucket_id(self, value: int) -> int:
        """The bucket (writer) ID stored in ``value``."""
        if self is BucketCodec.V0:
            return value
        return ((value & _UINT32) & _BUCKET_MASK) >> _BUCKET_SHIFT

    def decode_statement_id(self, value: int) -> int:
        """The statement ID stored in ``value`` (always 0 for V0)."""
        if self is BucketCodec.V0:
            return 0
        return (value & _UINT32) & _STATEMENT_MASK


@dataclass(frozen=True, slots=True)
class BucketProperty:
    """A decoded ``bucket`` column value."""

    codec: BucketCodec
    bucket_id: int
    statement_id: int


def decode_bucket_property(value: int) -> BucketProperty:
    """Decode any ``bucket`` column value, detecting its codec.

    >>> decode_bucket_property(537001984)
    BucketProperty(codec=<BucketCodec.V1: 'v1'>, bucket_id=2, statement_id=0)
    """
    codec = BucketCodec.determine(value)
    return BucketProperty(codec, codec.decode_bucket_id(value), codec.decode_statement_id(value))


def encode_bucket_property(bucket_id: int, statement_id: int = 0) -> int:
    """Encode with V1, the codec acidflow writes.

    >>> encode_bucket_property(0)
    536870912
    """
    return BucketCodec.V1.encode_property(bucket_id, statement_id)
