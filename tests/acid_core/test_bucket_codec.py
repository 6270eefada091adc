"""BucketCodec: the bit layout of the ``bucket`` column, with Hive's own expected values.

Sources: ql/src/java/org/apache/hadoop/hive/ql/io/BucketCodec.java and
ql/src/test/org/apache/hadoop/hive/ql/io/TestBucketCodec.java (apache/hive).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_core.bucket_codec import (
    MAX_BUCKET_ID,
    MAX_STATEMENT_ID,
    BucketCodec,
    BucketProperty,
    decode_bucket_property,
    encode_bucket_property,
)
from acid_core.errors import InvalidBucketPropertyError

ENCODE_CASES = [
    # bucket, statement, encoded V1 value (bits: 001 0 bbbbbbbbbbbb 0000 ssssssssssss)
    (0, 0, 536870912),  # 1 << 29
    (1, 0, 536936448),  # 1 << 29 | 1 << 16
    (2, 0, 537001984),  # 1 << 29 | 2 << 16
    (7, 16, 537329680),  # TestBucketCodec.testGetBucketCodecVersion1
    (0, 1, 536870913),
    (4095, 0, 536870912 | 4095 << 16),  # MAX_BUCKET_ID
    (0, 4095, 536870912 | 4095),  # MAX_STATEMENT_ID
    (4095, 4095, 805244927),  # every field full: 0x2FFF0FFF
]


@pytest.mark.parametrize(
    ("bucket_id", "statement_id", "encoded"), ENCODE_CASES, ids=[f"b{c[0]}_s{c[1]}" for c in ENCODE_CASES]
)
def test_encode_v1_gives_hive_bits(bucket_id, statement_id, encoded):
    assert encode_bucket_property(bucket_id, statement_id) == encoded
    assert BucketCodec.V1.encode_property(bucket_id, statement_id) == encoded
    assert decode_bucket_property(encoded) == BucketProperty(BucketCodec.V1, bucket_id, statement_id)


def test_encode_v1_statement_minus_one_encodes_as_zero():
    # TestBucketCodec.testGetBucketCodecVersion1: "Statement ID of -1 is acceptable and has the same
    # affect as a value of 0"
    assert BucketCodec.V1.encode_property(7, -1) == BucketCodec.V1.encode_property(7, 0) == 537329664


def test_decode_v1_fields_from_hex():
    # TestBucketCodec.testGetBucketCodecVersion1: decodeWriterId(0x0ABC0000) == 2748,
    # decodeStatementId(0x00000ABC) == 2748
    assert BucketCodec.V1.decode_bucket_id(0x0ABC0000) == 2748
    assert BucketCodec.V1.decode_statement_id(0x00000ABC) == 2748


def test_v0_is_the_plain_bucket_number():
    # TestBucketCodec.testGetBucketCodecVersion0: decodeWriterId(7) == 7; decodeStatementId is
    # always 0 (100 and -10 alike); encode returns the bucket ID.
    codec = BucketCodec.V0
    assert codec.version == 0
    assert codec.decode_bucket_id(7) == 7
    assert codec.decode_statement_id(100) == 0
    assert codec.decode_statement_id(-10) == 0
    assert codec.encode_property(7) == 7
    assert BucketCodec.V1.version == 1


@pytest.mark.parametrize(
    ("value", "codec"),
    [
        (0, BucketCodec.V0),
        (7, BucketCodec.V0),
        ((1 << 29) - 1, BucketCodec.V0),  # a Hive 2 bucket number fits below bit 29
        (536870912, BucketCodec.V1),
        (537001984, BucketCodec.V1),
        (0x3FFFFFFF, BucketCodec.V1),
    ],
    ids=["zero", "seven", "v0_max", "v1_bucket0", "v1_bucket2", "v1_max"],
)
def test_determine_reads_top_three_bits(value, codec):
    # BucketCodec.determineVersion: (TOP3BITS_MASK & bucket) >>> 29
    assert BucketCodec.determine(value) is codec


@pytest.mark.parametrize(
    ("value", "version"),
    [
        (2 << 29, 2),
        (3 << 29, 3),
        (-(2**31), 4),  # 4 << 29 as a signed Java int: TestBucketCodec.testGetBucketCodecInvalidVersion
        (-1, 7),  # all bits set
        (0xFFFFFFFF, 7),  # the same value read unsigned
    ],
    ids=["v2", "v3", "v4_signed", "minus_one", "unsigned_all_ones"],
)
def test_determine_unknown_version_raises(value, version):
    with pytest.raises(InvalidBucketPropertyError) as info:
        BucketCodec.determine(value)
    assert str(info.value) == (
        f"Invalid bucket property {value!r}: unrecognized bucket codec version {version}; "
        "expected 0 (Hive 2) or 1 (Hive 3+)"
    )
    with pytest.raises(InvalidBucketPropertyError):
        decode_bucket_property(value)


@pytest.mark.parametrize(
    ("bucket_id", "statement_id", "message"),
    [
        # TestBucketCodec.testGetBucketCodecVersion1EncodeNegativeBucketId
        (-1, 16, "Invalid bucket property -1: bucket ID out of range; expected 0..4095"),
        # TestBucketCodec.testGetBucketCodecVersion1EncodeMaxBucketId
        (MAX_BUCKET_ID + 1, 16, "Invalid bucket property 4096: bucket ID out of range; expected 0..4095"),
        # TestBucketCodec.testGetBucketCodecVersion1EncodeMaxStatementId
        (
            7,
            MAX_STATEMENT_ID + 1,
            "Invalid bucket property 4096: statement ID out of range; expected 0..4095",
        ),
    ],
    ids=["negative_bucket", "bucket_4096", "statement_4096"],
)
def test_encode_v1_out_of_range_raises(bucket_id, statement_id, message):
    with pytest.raises(InvalidBucketPropertyError) as info:
        BucketCodec.V1.encode_property(bucket_id, statement_id)
    assert str(info.value) == message


def test_encode_v1_statement_below_minus_one_raises():
    # TestBucketCodec.testGetBucketCodecVersion1EncodeNegativeStatementId expects an
    # IllegalArgumentException for statementId(-2): only -1 ("no statement") maps to 0
    # (AcidOutputFormat.Options.statementId rejects id < -1).
    with pytest.raises(InvalidBucketPropertyError, match=r"statement ID"):
        BucketCodec.V1.encode_property(7, -2)


def test_encode_v0_negative_bucket_raises():
    with pytest.raises(
        InvalidBucketPropertyError, match=r"^Invalid bucket property -1: bucket ID must be >= 0$"
    ):
        BucketCodec.V0.encode_property(-1)


def test_decode_accepts_signed_and_unsigned_forms():
    # ORC stores the column as a signed int; a V1 value never has bit 31 set, so both agree.
    assert decode_bucket_property(537001984) == BucketProperty(BucketCodec.V1, 2, 0)
    assert decode_bucket_property(7) == BucketProperty(BucketCodec.V0, 7, 0)


@given(
    st.integers(min_value=0, max_value=MAX_BUCKET_ID),
    st.integers(min_value=0, max_value=MAX_STATEMENT_ID),
)
def test_v1_round_trip(bucket_id, statement_id):
    encoded = encode_bucket_property(bucket_id, statement_id)
    # An independent model of the layout: version in bits 29-31, bucket in 16-27, statement in 0-11.
    assert encoded == (1 << 29) + bucket_id * 65536 + statement_id
    assert decode_bucket_property(encoded) == BucketProperty(BucketCodec.V1, bucket_id, statement_id)
    assert 0 < encoded < 2**31  # always a positive Java int


@given(st.integers(min_value=0, max_value=(1 << 29) - 1))
def test_v0_values_decode_as_themselves(value):
    assert decode_bucket_property(value) == BucketProperty(BucketCodec.V0, value, 0)
