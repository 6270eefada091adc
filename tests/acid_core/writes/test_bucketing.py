"""Hive's bucketing hash: Murmur3 against published vectors and Hive's own classes, bucket numbers."""

from __future__ import annotations

import datetime
import random
import struct

import pytest

from acid_core.errors import InvalidBucketingError
from acid_core.writes.bucketing import (
    bucket_hash_code,
    bucket_number,
    bucketing_version_of,
    murmur3_hash32,
)


def _signed(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


# MurmurHash3_x86_32 reference vectors (SMHasher / Wikipedia), ASCII only: no sign-extension case.
@pytest.mark.parametrize(
    ("data", "seed", "expected"),
    [
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"", 0xFFFFFFFF, 0x81F16F39),
        (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
        (b"aaaa", 0x9747B28C, 0x5A97808A),
        (b"aaa", 0x9747B28C, 0x283E0130),
        (b"aa", 0x9747B28C, 0x5D211726),
        (b"a", 0x9747B28C, 0x7FA09EA6),
        (b"Hello, world!", 0x9747B28C, 0x24884CBA),
        (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
    ],
    ids=["empty-0", "empty-1", "empty-ff", "zeros", "aaaa", "aaa", "aa", "a", "hello", "fox"],
)
def test_murmur3_hash32_matches_reference_vectors(data, seed, expected):
    assert murmur3_hash32(data, seed) == _signed(expected)


@pytest.mark.parametrize(
    ("hash_code", "buckets", "expected"),
    [(0, 4, 0), (5, 4, 1), (-1, 4, 3), (-7, 4, 1), (2**31 - 1, 7, (2**31 - 1) % 7), (-(2**31), 3, 0)],
)
def test_bucket_number_masks_the_sign_bit_then_takes_the_modulus(hash_code, buckets, expected):
    assert bucket_number(hash_code, buckets) == expected


def test_legacy_hash_of_ints_and_strings_is_java_hash_code():
    # Hive 1/2 ObjectInspectorUtils.hashCode: an int is itself; a string is 31*r + signed byte from 0.
    assert bucket_hash_code([7], ["int"], version=1) == 7
    assert bucket_hash_code([-3], ["int"], version=1) == -3
    expected = 0
    for byte in b"ab":
        expected = 31 * expected + byte
    assert bucket_hash_code(["ab"], ["string"], version=1) == expected
    # Two columns fold as 31 * h + field.
    assert bucket_hash_code([7, 2], ["int", "int"], version=1) == 31 * 7 + 2


def test_murmur_hash_of_an_int_is_murmur3_of_its_big_endian_bytes():
    # ObjectInspectorUtils.hashCodeMurmur: ByteBuffer.putInt (big-endian), Murmur3.hash32(arr, 4).
    assert bucket_hash_code([1], ["int"]) == murmur3_hash32(struct.pack(">i", 1))
    assert bucket_hash_code([1], ["bigint"]) == murmur3_hash32(struct.pack(">q", 1))
    assert bucket_hash_code(["Tom"], ["string"]) == murmur3_hash32(b"Tom")
    assert bucket_hash_code([None], ["int"]) == 0
    assert bucket_hash_code([datetime.date(1970, 1, 2)], ["date"]) == murmur3_hash32(struct.pack(">i", 1))


@pytest.mark.parametrize(
    ("properties", "expected"),
    [({}, 2), ({"bucketing_version": "1"}, 1), ({"BUCKETING_VERSION": "2"}, 2)],
)
def test_bucketing_version_of_defaults_to_2(properties, expected):
    assert bucketing_version_of(properties) == expected


def test_bad_version_type_and_bucket_count_raise():
    with pytest.raises(InvalidBucketingError, match=r"Invalid bucketing '3': an unknown bucketing_version"):
        bucketing_version_of({"bucketing_version": "3"})
    with pytest.raises(InvalidBucketingError, match=r"array<int>"):
        bucket_hash_code([[1]], ["array<int>"])
    with pytest.raises(InvalidBucketingError, match=r"not positive"):
        bucket_number(1, 0)


@pytest.mark.integration("hive")
@pytest.mark.slow
def test_murmur3_equals_hives_murmur3_class_including_high_tail_bytes(hive):
    """Hive's own org.apache.hive.common.util.Murmur3 (hive-storage-api) on random bytes."""
    murmur = hive.jvm.org.apache.hive.common.util.Murmur3
    rng = random.Random(7)
    for length in range(40):
        data = bytes(rng.randrange(256) for _ in range(length))
        assert murmur3_hash32(data) == murmur.hash32(bytearray(data), length), data.hex()


@pytest.mark.integration("hive")
@pytest.mark.slow
def test_legacy_bucket_numbers_equal_hive_2_object_inspector_utils(hive):
    """Hive 2.3's ObjectInspectorUtils.getBucketNumber (bucketing_version 1) on int/bigint/string rows."""
    jvm = hive.jvm
    factory = jvm.org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory
    inspectors = {
        "int": factory.javaIntObjectInspector,
        "bigint": factory.javaLongObjectInspector,
        "string": factory.javaStringObjectInspector,
    }
    utils = jvm.org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorUtils
    rng = random.Random(11)
    for _ in range(60):
        types = rng.sample(["int", "bigint", "string"], k=rng.randint(1, 3))
        values: list[object] = []
        for kind in types:
            if kind == "string":
                values.append("".join(rng.choice("abcxyzé€") for _ in range(rng.randint(0, 6))))
            elif kind == "int":
                values.append(rng.randint(-(2**31), 2**31 - 1))
            else:
                values.append(rng.randint(-(2**63), 2**63 - 1))
        objects = hive.gateway.new_array(jvm.java.lang.Object, len(values))
        ois = hive.gateway.new_array(
            jvm.org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector, len(values)
        )
        for i, (kind, value) in enumerate(zip(types, values, strict=True)):
            objects[i] = (
                jvm.java.lang.Long.valueOf(str(value))
                if kind == "bigint"
                else (jvm.java.lang.Integer.valueOf(str(value)) if kind == "int" else value)
            )
            ois[i] = inspectors[kind]
        buckets = rng.choice([2, 3, 4, 7, 32])
        expected = utils.getBucketNumber(objects, ois, buckets)
        assert bucket_number(bucket_hash_code(values, types, version=1), buckets) == expected, (values, types)
