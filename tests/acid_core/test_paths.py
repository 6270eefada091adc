"""Names of ACID directories and files, as Hive's AcidUtils parses and formats them."""

from __future__ import annotations

import pytest
from hypothesis import given

from acid_core.errors import InvalidPathError, InvalidWriteIdRangeError
from acid_core.paths import (
    BaseDir,
    BucketFile,
    DeleteDeltaDir,
    DeltaDir,
    OriginalFile,
    format_bucket_file,
    is_acid_dir_name,
    is_hidden_name,
    is_side_file_name,
    parse_acid_dir,
    parse_base_dir,
    parse_bucket_file,
    parse_delta_dir,
    parse_delta_key,
    parse_original_file,
    side_file_name,
    try_parse_acid_dir,
    try_parse_bucket_file,
    try_parse_original_file,
)
from acid_core.testing import strategies as acid_st

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

# --------------------------------------------------------------------------------------------
# Parsing: inputs next to the values Hive's ParsedBaseLight / ParsedDeltaLight produce.
# --------------------------------------------------------------------------------------------

PARSE_CASES = [
    # name, expected value
    ("base_0000005", BaseDir(5)),
    ("base_5", BaseDir(5)),  # TestAcidUtils.testBaseDeltas lists base_5, base_10, base_49 unpadded
    ("base_000123", BaseDir(123)),  # TestAcidUtils.testParsing: parseBase("base_000123") == 123, vis 0
    ("base_0000005_v0000123", BaseDir(5, 123)),
    ("base_5_v9", BaseDir(5, 9)),
    (f"base_{LONG_MIN}", BaseDir(LONG_MIN)),  # TestAcidUtils (Hive 2) testBestBase: non-acid conversion
    ("delta_0000001_0000010", DeltaDir(1, 10)),
    ("delta_1_10", DeltaDir(1, 10)),  # unpadded, Hive's Long.parseLong
    ("delta_000005_000006", DeltaDir(5, 6)),  # TestAcidUtils.testParsing
    ("delta_0000063_63", DeltaDir(63, 63)),  # TestAcidUtils.testOverlapingDelta: mixed padding
    ("delta_0000001_0000010_0000", DeltaDir(1, 10, 0)),
    ("delta_0060_60_7", DeltaDir(60, 60, 7)),  # TestAcidUtils.testOverlapingDelta2
    ("delta_0000001_0000010_v0000042", DeltaDir(1, 10, None, 42)),
    ("delta_0000001_0000010_0003_v0000042", DeltaDir(1, 10, 3, 42)),
    ("delete_delta_0000001_0000010", DeleteDeltaDir(1, 10)),
    ("delete_delta_000005_000006", DeleteDeltaDir(5, 6)),  # TestAcidUtils.testParsing
    ("delete_delta_0000001_0000010_0005", DeleteDeltaDir(1, 10, 5)),
    ("delete_delta_7_7_0_v123", DeleteDeltaDir(7, 7, 0, 123)),
    (f"delta_1_{LONG_MAX}", DeltaDir(1, LONG_MAX)),
    ("delta_1_1_2147483647", DeltaDir(1, 1, 2**31 - 1)),  # statement IDs are Java ints
]


@pytest.mark.parametrize(("name", "expected"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_acid_dir_valid_name_gives_value(name, expected):
    parsed = parse_acid_dir(name)
    assert parsed == expected
    assert type(parsed) is type(expected)
    assert try_parse_acid_dir(name) == expected


@pytest.mark.parametrize(
    ("name", "is_delete"),
    [("delta_1_2", False), ("delete_delta_1_2", True), ("delete_delta_1_2_3_v4", True)],
    ids=["delta", "delete_delta", "delete_delta_stmt_v"],
)
def test_delta_is_delete_matches_prefix(name, is_delete):
    # TestAcidUtils.testDeleteEventDeltaDirPathFilter: only delete_delta_ names are delete events
    assert parse_delta_dir(name).is_delete is is_delete


# --------------------------------------------------------------------------------------------
# Formatting: Hive's AcidUtils.createFilename / deltaSubdir / deleteDeltaSubdir / baseDir.
# --------------------------------------------------------------------------------------------

FORMAT_CASES = [
    # value, Hive's name
    (BaseDir(200), "base_0000200"),  # TestAcidUtils.testCreateFilename
    (DeltaDir(100, 200, 0), "delta_0000100_0000200_0000"),  # testCreateFilename
    (DeleteDeltaDir(100, 200, 0), "delete_delta_0000100_0000200_0000"),  # testCreateFilename
    (DeltaDir(100, 200), "delta_0000100_0000200"),  # testCreateFilename, statementId(-1)
    (DeleteDeltaDir(100, 200), "delete_delta_0000100_0000200"),  # testCreateFilename, statementId(-1)
    (DeltaDir(100, 200, 7), "delta_0000100_0000200_0007"),  # testCreateFilename
    (DeleteDeltaDir(100, 200, 7), "delete_delta_0000100_0000200_0007"),  # testCreateFilename
    (BaseDir(1234567890), "base_1234567890"),  # testCreateFilenameLargeIds: wider than 7 digits
    (DeltaDir(1234567880, 1234567890, 0), "delta_1234567880_1234567890_0000"),  # LargeIds
    (DeleteDeltaDir(1, 10), "delete_delta_0000001_0000010"),  # testDeleteDeltaSubdirPathGeneration
    (DeleteDeltaDir(1, 10, 5), "delete_delta_0000001_0000010_0005"),  # testDeleteDeltaSubdirPathGeneration
    (BaseDir(5, 123), "base_0000005_v0000123"),  # AcidUtils.addVisibilitySuffix: _v%07d
    (DeltaDir(1, 1, 0, 17), "delta_0000001_0000001_0000_v0000017"),
    (BaseDir(5, 0), "base_0000005"),  # visibility 0: no suffix
    (BucketFile(23), "bucket_00023"),  # testCreateFilename
    (BucketFile(23, 1), "bucket_00023_1"),  # AcidUtils.createBucketFile(subdir, bucket, attemptId)
    (OriginalFile(1), "000001_0"),  # testCreateFilename, old style
    (OriginalFile(123), "000123_0"),  # testCreateFilename, old style
    (OriginalFile(123456789), "123456789_0"),  # testCreateFilenameLargeIds, old style
    (OriginalFile(0, 0, 1), "000000_0_copy_1"),  # Utilities.COPY_KEYWORD
]


@pytest.mark.parametrize(("value", "name"), FORMAT_CASES, ids=[c[1] for c in FORMAT_CASES])
def test_to_name_formats_as_hive(value, name):
    assert value.to_name() == name


def test_format_bucket_file_matches_bucket_file_to_name():
    assert format_bucket_file(23) == "bucket_00023"
    assert format_bucket_file(23, 4) == "bucket_00023_4"


# --------------------------------------------------------------------------------------------
# Bucket files, side files, originals, hidden names.
# --------------------------------------------------------------------------------------------

BUCKET_CASES = [
    ("bucket_00000", BucketFile(0)),
    ("bucket_00023", BucketFile(23)),
    ("bucket_123", BucketFile(123)),  # TestAcidUtils.testParsing: base_567/bucket_123 -> bucket 123
    ("bucket_0", BucketFile(0)),  # TestAcidUtils listings use bucket_0
    ("bucket_00001_7", BucketFile(1, 7)),
]


@pytest.mark.parametrize(("name", "expected"), BUCKET_CASES, ids=[c[0] for c in BUCKET_CASES])
def test_parse_bucket_file_valid_name_gives_value(name, expected):
    assert parse_bucket_file(name) == expected
    assert try_parse_bucket_file(name) == expected


@pytest.mark.parametrize(
    "name",
    ["bucket_00000_flush_length", "bucket_", "bucket_x", "bucket-0000-0000", "000000_0", "bucket_1_2_3"],
    ids=["side_file", "empty", "letters", "dashes", "original", "three_numbers"],
)
def test_parse_bucket_file_not_a_bucket_raises(name):
    with pytest.raises(InvalidPathError) as info:
        parse_bucket_file(name)
    assert str(info.value) == (
        f"Invalid ACID name {name!r}: not a bucket file name; expected bucket_<bucketId>[_<attemptId>]"
    )
    assert try_parse_bucket_file(name) is None


def test_side_file_name_appends_flush_length():
    # AcidUtils.DELTA_SIDE_FILE_SUFFIX = "_flush_length", OrcAcidUtils.getSideFile
    assert side_file_name("bucket_00000") == "bucket_00000_flush_length"
    assert is_side_file_name("bucket_00000_flush_length")
    assert not is_side_file_name("bucket_00000")
    assert not is_side_file_name("000000_0")


ORIGINAL_CASES = [
    ("000000_0", OriginalFile(0, 0)),
    ("000001_1", OriginalFile(1, 1)),
    ("000000_0_copy_1", OriginalFile(0, 0, 1)),  # TestAcidUtils.testOriginal: Utilities.COPY_KEYWORD
    ("000000_0_copy_2", OriginalFile(0, 0, 2)),
    ("000123_0", OriginalFile(123, 0)),  # TestAcidUtils.testParsing: bucket 123
    ("123456789_0", OriginalFile(123456789, 0, None, 9)),
]


@pytest.mark.parametrize(("name", "expected"), ORIGINAL_CASES, ids=[c[0] for c in ORIGINAL_CASES])
def test_parse_original_file_gives_bucket(name, expected):
    parsed = parse_original_file(name)
    assert parsed == expected
    assert parsed.to_name() == name


@pytest.mark.parametrize("name", ["random", "000000", "000000_0_copy_", "_done", "000000_x"])
def test_parse_original_file_other_names_raise(name):
    with pytest.raises(
        InvalidPathError, match=r"not an original file name; expected <bucket>_<n>\[_copy_<n>\]"
    ):
        parse_original_file(name)
    assert try_parse_original_file(name) is None


@pytest.mark.parametrize(
    ("name", "hidden"),
    [
        ("_orc_acid_version", True),
        ("_metadata_acid", True),
        ("_done", True),  # TestAcidUtils.testOriginal: _done is skipped
        (".hive-staging_hive_2024", True),
        ("_tmp_space.db", True),
        ("base_5", False),
        ("000000_0", False),
        ("random", False),
    ],
    ids=lambda value: str(value),
)
def test_is_hidden_name_follows_hidden_files_filter(name, hidden):
    # AcidUtils.hiddenFileFilter: names starting with "_" or "." are skipped
    assert is_hidden_name(name) is hidden


@pytest.mark.parametrize(
    ("name", "is_acid"),
    [
        ("base_5", True),
        ("delta_1_1", True),
        ("delete_delta_1_1", True),
        ("base_garbage", True),  # looks like ACID: parsing it must raise, not skip
        ("basement", False),
        ("deltas", False),
        ("subdir", False),
        ("000000_0", False),
    ],
    ids=lambda value: str(value),
)
def test_is_acid_dir_name_checks_prefix(name, is_acid):
    assert is_acid_dir_name(name) is is_acid


# --------------------------------------------------------------------------------------------
# Errors: the whole message for the user-facing cases.
# --------------------------------------------------------------------------------------------


def test_parse_delta_min_above_max_raises():
    with pytest.raises(InvalidWriteIdRangeError) as info:
        parse_delta_dir("delta_7_3")
    assert str(info.value) == (
        "Invalid ACID name 'delta_7_3': min write ID 7 > max write ID 3; "
        "expected delta_<min>_<max>[_<stmt>] with min <= max"
    )
    assert (info.value.min_write_id, info.value.max_write_id, info.value.name) == (7, 3, "delta_7_3")
    assert isinstance(info.value, ValueError)


def test_parse_delete_delta_min_above_max_raises():
    with pytest.raises(InvalidWriteIdRangeError, match=r"min write ID 5 > max write ID 3"):
        parse_acid_dir("delete_delta_5_3_0")


DELTA_EXPECTED = "delta_<min>_<max>[_<stmt>][_v<visibilityTxnId>]"
BASE_EXPECTED = "base_<writeId>[_v<visibilityTxnId>]"

MALFORMED_CASES = [
    # name, the problem part of the message, the expected part
    ("delta_1", "1 numbers after the prefix", DELTA_EXPECTED),
    ("delta_1_2_3_4", "4 numbers after the prefix", DELTA_EXPECTED),
    ("delta_a_2", "min write ID 'a' is not a number", DELTA_EXPECTED),
    ("delta_1_b", "max write ID 'b' is not a number", DELTA_EXPECTED),
    ("delta_1_2_x", "statement ID 'x' is not a number", DELTA_EXPECTED),
    ("delta_", "1 numbers after the prefix", DELTA_EXPECTED),
    ("delta__1", "min write ID '' is not a number", DELTA_EXPECTED),
    ("delta_1_2_v", "visibility transaction ID '' is not a number", DELTA_EXPECTED),
    ("delta_1_2_3_v4x", "visibility transaction ID '4x' is not a number", DELTA_EXPECTED),
    # acid_core.paths accepts ASCII digits only (documented there); Java's Long.parseLong would take
    # this fullwidth digit, but Hive never writes one.
    ("delta_\uff11_2", "min write ID '\uff11' is not a number", DELTA_EXPECTED),
    (
        "delta_99999999999999999999_1",
        "min write ID '99999999999999999999' does not fit a 64-bit long",
        DELTA_EXPECTED,
    ),
    ("delta_1_1_99999999999", "statement ID '99999999999' does not fit a 32-bit int", DELTA_EXPECTED),
    ("delta_1_1_2147483648", "statement ID '2147483648' does not fit a 32-bit int", DELTA_EXPECTED),
    (
        "delete_delta_1_x",
        "max write ID 'x' is not a number",
        "delete_delta_<min>_<max>[_<stmt>][_v<visibilityTxnId>]",
    ),
    ("base_x", "write ID 'x' is not a number", BASE_EXPECTED),
    ("base_", "write ID '' is not a number", BASE_EXPECTED),
    ("base_5_v", "visibility transaction ID '' is not a number", BASE_EXPECTED),
    ("base_5_vx", "visibility transaction ID 'x' is not a number", BASE_EXPECTED),
    ("base_9223372036854775808", "write ID '9223372036854775808' does not fit a 64-bit long", BASE_EXPECTED),
    ("base_5_extra", "write ID '5_extra' is not a number", BASE_EXPECTED),
]


@pytest.mark.parametrize(
    ("name", "problem", "expected"), MALFORMED_CASES, ids=[c[0] for c in MALFORMED_CASES]
)
def test_parse_acid_dir_malformed_name_raises_naming_it(name, problem, expected):
    with pytest.raises(InvalidPathError) as info:
        parse_acid_dir(name)
    assert str(info.value) == f"Invalid ACID name {name!r}: {problem}; expected {expected}"
    assert info.value.name == name
    assert try_parse_acid_dir(name) is None


@pytest.mark.parametrize(
    ("parse", "name", "message"),
    [
        (
            parse_base_dir,
            "delta_1_1",
            "Invalid ACID name 'delta_1_1': does not start with 'base_'; "
            "expected base_<writeId>[_v<visibilityTxnId>]",
        ),
        (
            parse_delta_dir,
            "base_1",
            "Invalid ACID name 'base_1': does not start with 'delta_' or 'delete_delta_'; "
            "expected delta_<min>_<max>[_<stmt>]",
        ),
    ],
    ids=["base_parser_given_delta", "delta_parser_given_base"],
)
def test_parse_wrong_prefix_raises(parse, name, message):
    with pytest.raises(InvalidPathError) as info:
        parse(name)
    assert str(info.value) == message


# --------------------------------------------------------------------------------------------
# parse_delta_key: the fast path agrees with parse_delta_dir.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("delta_1_10", (1, 10, -1, 0, False)),  # -1: Hive's "no statement ID"
        ("delete_delta_0000005_0000007_0002", (5, 7, 2, 0, True)),
        ("delta_5_5_0_v17", (5, 5, 0, 17, False)),
        (f"delta_1_{LONG_MAX}", (1, LONG_MAX, -1, 0, False)),  # 19 digits: the slow path
    ],
    ids=["unpadded", "delete_stmt", "visibility", "long_max"],
)
def test_parse_delta_key_gives_tuple(name, key):
    assert parse_delta_key(name) == key


@pytest.mark.parametrize(
    "name",
    ["delta_7_3", "delta_1", "delta_x_1", "delta_99999999999999999999_1", "delta_1_1_99999999999"],
)
def test_parse_delta_key_raises_like_parse_delta_dir(name):
    with pytest.raises(InvalidPathError) as slow:
        parse_delta_dir(name)
    with pytest.raises(InvalidPathError) as fast:
        parse_delta_key(name)
    assert str(fast.value) == str(slow.value)
    assert type(fast.value) is type(slow.value)


# --------------------------------------------------------------------------------------------
# Properties: parse(format(x)) == x for every name type.
# --------------------------------------------------------------------------------------------


@given(acid_st.base_dirs())
def test_base_dir_round_trip(base):
    assert parse_base_dir(base.to_name()) == base


@given(acid_st.delta_dirs())
def test_delta_dir_round_trip(delta):
    name = delta.to_name()
    parsed = parse_delta_dir(name)
    assert parsed == delta
    assert type(parsed) is type(delta)
    statement = -1 if delta.statement_id is None else delta.statement_id
    assert parse_delta_key(name) == (
        delta.min_write_id,
        delta.max_write_id,
        statement,
        delta.visibility_txn_id,
        delta.is_delete,
    )


@given(acid_st.bucket_files())
def test_bucket_file_round_trip(bucket):
    assert parse_bucket_file(bucket.to_name()) == bucket


@given(acid_st.original_files())
def test_original_file_round_trip(original):
    assert parse_original_file(original.to_name()) == original


@given(acid_st.acid_dir_names())
def test_acid_dir_name_round_trip_is_identity_on_names(name):
    assert parse_acid_dir(name).to_name() == name
    assert is_acid_dir_name(name)
    assert not is_hidden_name(name)
