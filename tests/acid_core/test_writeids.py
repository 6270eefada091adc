"""Snapshots: ValidTxnList / ValidWriteIdList strings and validity, with Hive's own expected values.

Sources (apache/hive, storage-api/src): ValidReaderWriteIdList.java, ValidCompactorWriteIdList.java,
ValidReadTxnList.java and their tests TestValidReaderWriteIdList, TestValidCompactorWriteIdList,
TestValidReadTxnList; standalone-metastore TxnUtils.createValidCompactWriteIdList.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from acid_core.errors import InvalidWriteIdListError
from acid_core.testing import strategies as acid_st
from acid_core.testing.builders import make_write_id_list
from acid_core.writeids import (
    LONG_MAX,
    NewlyValidWriteIds,
    RangeResponse,
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
    newly_valid_write_ids,
    parse_valid_compactor_write_id_list,
    parse_valid_txn_list,
    parse_valid_write_id_list,
    to_compactor_write_id_list,
)

ALL, SOME, NONE = RangeResponse.ALL, RangeResponse.SOME, RangeResponse.NONE
MAX = str(LONG_MAX)  # Hive's "nothing open" min open ID: Long.MAX_VALUE
# Hive's tests use TableName.fromString("t1", "hive", "default"); the name is opaque to the format.
T1 = "default.t1"

# --------------------------------------------------------------------------------------------
# ValidReaderWriteIdList: TestValidReaderWriteIdList, case by case.
# --------------------------------------------------------------------------------------------


def test_write_id_list_no_exceptions():
    # TestValidReaderWriteIdList.noExceptions
    write_ids = ValidWriteIdList(1, table_name=T1)
    assert write_ids.to_string() == f"{T1}:1:{MAX}::"
    reread = parse_valid_write_id_list(write_ids.to_string())
    assert reread.is_write_id_valid(1)
    assert not reread.is_write_id_valid(2)


def test_write_id_list_exceptions():
    # TestValidReaderWriteIdList.exceptions: open 2 and 4, hwm 5 (Hive's test says min open 4, which
    # Hive's writers never produce and parsing refuses: the min open ID is the lowest open one, 2)
    write_ids = ValidWriteIdList(5, open_ids=(2, 4), min_open_id=2, table_name=T1)
    assert write_ids.to_string() == f"{T1}:5:2:2,4:"
    reread = parse_valid_write_id_list(write_ids.to_string())
    assert [reread.is_write_id_valid(i) for i in range(1, 7)] == [True, False, True, False, True, False]


def test_write_id_list_long_enough_to_compress():
    # TestValidReaderWriteIdList.longEnoughToCompress: 1000 open IDs 100..1099, hwm 2000 (min open
    # 100, the lowest open ID, where Hive's test says 900)
    write_ids = ValidWriteIdList(2000, open_ids=tuple(range(100, 1100)), min_open_id=100, table_name=T1)
    reread = parse_valid_write_id_list(write_ids.to_string())
    assert all(reread.is_write_id_valid(i) for i in range(100))
    assert not any(reread.is_write_id_valid(i) for i in range(100, 1100))
    assert all(reread.is_write_id_valid(i) for i in range(1100, 2001))
    assert not reread.is_write_id_valid(2001)
    assert reread == write_ids


def test_write_id_list_aborted():
    # TestValidReaderWriteIdList.testAbortedTxn: exceptions 2,4,6,8,10 with 2 and 8 aborted
    write_ids = ValidWriteIdList(11, open_ids=(4, 6, 10), aborted_ids=(2, 8), min_open_id=4, table_name=T1)
    assert write_ids.to_string() == f"{T1}:11:4:4,6,10:2,8"
    assert [write_ids.is_write_id_aborted(i) for i in (2, 4, 6, 8, 10)] == [True, False, False, True, False]
    assert parse_valid_write_id_list(write_ids.to_string()) == write_ids


# --------------------------------------------------------------------------------------------
# Parsing and formatting: ValidReaderWriteIdList.readFromString / writeToString.
# --------------------------------------------------------------------------------------------

PARSE_WRITE_ID_CASES = [
    # string, (table, hwm, min open, open, aborted), Hive's writeToString of the parsed value
    ("tbl:100:4:4", ("tbl", 100, 4, (4,), ()), "tbl:100:4:4:"),  # TestAcidUtils.deltasWithOpenTxnInRead
    (f"tbl:100:{MAX}:", ("tbl", 100, None, (), ()), f"tbl:100:{MAX}::"),  # TestAcidUtils.testOriginal
    (
        f"tbl:4:{MAX}",
        ("tbl", 4, None, (), ()),
        f"tbl:4:{MAX}::",
    ),  # TestAcidUtils.deltasWithOpenTxnsNotInCompact
    (f"{T1}:11:4:4,6,10:2,8", (T1, 11, 4, (4, 6, 10), (2, 8)), f"{T1}:11:4:4,6,10:2,8"),
    (f"db.t:10:{MAX}::3,6", ("db.t", 10, None, (), (3, 6)), f"db.t:10:{MAX}::3,6"),  # aborted only
    ("db.t:7:5:5:3", ("db.t", 7, 5, (5,), (3,)), "db.t:7:5:5:3"),
    ("db.t:7:5:7,5:6,3", ("db.t", 7, 5, (5, 7), (3, 6)), "db.t:7:5:5,7:3,6"),  # Hive sorts the IDs
    (f"null:5:{MAX}::", (None, 5, None, (), ()), f"null:5:{MAX}::"),  # writeToString of a null name
    (f"NULL:5:{MAX}::", (None, 5, None, (), ()), f"null:5:{MAX}::"),  # equalsIgnoreCase("null")
    ("", (None, LONG_MAX, None, (), ()), f"null:{MAX}:{MAX}::"),  # empty: everything committed
]


@pytest.mark.parametrize(
    ("text", "fields", "formatted"),
    PARSE_WRITE_ID_CASES,
    ids=[c[0] or "empty" for c in PARSE_WRITE_ID_CASES],
)
def test_parse_write_id_list_reads_hive_format(text, fields, formatted):
    parsed = parse_valid_write_id_list(text)
    table, hwm, min_open, open_ids, aborted_ids = fields
    assert parsed.table_name == table
    assert parsed.high_watermark == hwm
    assert parsed.min_open_id == min_open
    assert parsed.open_ids == open_ids
    assert parsed.aborted_ids == aborted_ids
    assert parsed.to_string() == formatted


WRITE_ID_FORMAT = "ValidWriteIdList (<db.table>:<hwm>:<minOpenWriteId>:<open,..>:<aborted,..>)"
TXN_FORMAT = "ValidTxnList (<hwm>:<minOpenTxn>:<open,..>:<aborted,..>)"

MALFORMED_WRITE_ID_CASES = [
    ("tbl", "needs a table name, a high watermark and a min open write ID"),
    ("tbl:5", "needs a table name, a high watermark and a min open write ID"),
    ("tbl:x:1::", "high watermark 'x' is not a number"),
    ("tbl:5:y::", "min open ID 'y' is not a number"),
    ("tbl:5:3:a:", "open ID 'a' is not a number"),
    ("tbl:5:3:3:b", "aborted ID 'b' is not a number"),
    ("tbl:5:3:3,,4:", "open ID '' is not a number"),
    ("tbl:5:3:3:3", "ID 3 is both open and aborted"),
    ("tbl:5:3:3:4:9", "has 5 ':'-separated fields after the name"),
    ("tbl:99999999999999999999:1::", "high watermark '99999999999999999999' does not fit a 64-bit long"),
]


@pytest.mark.parametrize(
    ("text", "problem"), MALFORMED_WRITE_ID_CASES, ids=[c[0] for c in MALFORMED_WRITE_ID_CASES]
)
def test_parse_write_id_list_malformed_raises_naming_it(text, problem):
    with pytest.raises(InvalidWriteIdListError) as info:
        parse_valid_write_id_list(text)
    assert str(info.value) == f"Invalid {WRITE_ID_FORMAT} {text!r}: {problem}"
    assert info.value.value == text
    assert isinstance(info.value, ValueError)


def test_is_valid_base_needs_every_id_below_min_open():
    # ValidReaderWriteIdList.isValidBase: writeId < minOpenWriteId && writeId <= highWatermark
    write_ids = parse_valid_write_id_list("tbl:10:5:5:")
    assert write_ids.is_valid_base(4)
    assert not write_ids.is_valid_base(5)
    assert not write_ids.is_valid_base(11)
    nothing_open = parse_valid_write_id_list(f"tbl:10:{MAX}::3")
    assert nothing_open.is_valid_base(10)  # an aborted ID below does not stop a compacted base
    assert not nothing_open.is_valid_base(11)


# --------------------------------------------------------------------------------------------
# Range queries: ValidReaderWriteIdList.isWriteIdRangeValid / isWriteIdRangeAborted.
# --------------------------------------------------------------------------------------------

READER = "tbl:10:5:5,7:3"  # hwm 10, open 5 and 7, aborted 3

RANGE_VALID_CASES = [
    # list, min, max, expected (counted by hand from the Java loop)
    (READER, 1, 2, ALL),  # exceptions[0] = 3 > 2
    (READER, 1, 4, SOME),  # 3 is aborted
    (READER, 3, 3, NONE),
    (READER, 5, 7, SOME),  # 6 is committed
    (READER, 6, 6, ALL),
    (READER, 11, 12, NONE),  # min above the high watermark
    (READER, 8, 12, SOME),  # 11, 12 above the watermark, 8..10 committed
    (READER, 10, 10, ALL),
    (f"tbl:10:{MAX}::", 1, 10, ALL),
    (f"tbl:10:{MAX}::", 9, 11, SOME),
    ("tbl:4:1:1,2,3,4:", 1, 4, NONE),
]


@pytest.mark.parametrize(
    ("text", "low", "high", "expected"),
    RANGE_VALID_CASES,
    ids=[f"{c[0]}[{c[1]}..{c[2]}]" for c in RANGE_VALID_CASES],
)
def test_write_id_range_valid(text, low, high, expected):
    assert parse_valid_write_id_list(text).is_write_id_range_valid(low, high) is expected


def test_write_id_range_valid_counts_exception_above_watermark_twice():
    # Hive's isWriteIdRangeValid counts max - hwm AND every exception in the range, so an exception
    # above the watermark is counted twice: 10 is committed, yet [10, 12] answers NONE.
    write_ids = ValidWriteIdList(10, open_ids=(12,), min_open_id=12)
    assert write_ids.is_write_id_range_valid(10, 12) is NONE
    assert write_ids.is_write_id_valid(10)


RANGE_ABORTED_CASES = [
    # TestValidCompactorWriteIdList.testAbortedRange: "t:11:4::5,6,7,8", whose min open ID 4 names no
    # open ID below the watermark (refused); nothing is open, so Long.MAX_VALUE
    (f"{T1}:11:{MAX}::5,6,7,8", 1, 3, NONE),
    (f"{T1}:11:{MAX}::5,6,7,8", 9, 10, NONE),
    (f"{T1}:11:{MAX}::5,6,7,8", 6, 7, ALL),
    (f"{T1}:11:{MAX}::5,6,7,8", 4, 6, SOME),
    (f"{T1}:11:{MAX}::5,6,7,8", 6, 13, SOME),
    (READER, 3, 3, ALL),
    (READER, 5, 5, NONE),  # open is not aborted
    (READER, 11, 11, NONE),  # above the watermark
]


@pytest.mark.parametrize(
    ("text", "low", "high", "expected"),
    RANGE_ABORTED_CASES,
    ids=[f"{c[0]}[{c[1]}..{c[2]}]" for c in RANGE_ABORTED_CASES],
)
def test_write_id_range_aborted(text, low, high, expected):
    assert parse_valid_write_id_list(text).is_write_id_range_aborted(low, high) is expected
    assert parse_valid_compactor_write_id_list(text).is_write_id_range_aborted(low, high) is expected


# --------------------------------------------------------------------------------------------
# ValidCompactorWriteIdList: TestValidCompactorWriteIdList, case by case.
# --------------------------------------------------------------------------------------------

COMPACTOR_RANGE_CASES = [
    # aborted IDs, hwm, min, max, expected
    ((3, 4), 2, 7, 9, NONE),  # minTxnHigh
    ((13, 14), 12, 7, 9, ALL),  # maxTxnLow
    ((), 5, 7, 9, NONE),  # minTxnHighNoExceptions
    ((), 15, 7, 9, ALL),  # maxTxnLowNoExceptions
    ((3, 6), 3, 7, 9, NONE),  # exceptionsAllBelow
    ((8,), 7, 7, 9, NONE),  # exceptionsInMidst
    ((8, 11, 17, 29), 15, 7, 9, ALL),  # exceptionsAbveHighWaterMark
    ((8, 11, 17, 29), 15, 12, 16, NONE),  # exceptionsAbveHighWaterMark
]


@pytest.mark.parametrize(
    ("aborted", "hwm", "low", "high", "expected"),
    COMPACTOR_RANGE_CASES,
    ids=[
        "minTxnHigh",
        "maxTxnLow",
        "minTxnHighNoExceptions",
        "maxTxnLowNoExceptions",
        "exceptionsAllBelow",
        "exceptionsInMidst",
        "exceptionsAbveHighWaterMark_7_9",
        "exceptionsAbveHighWaterMark_12_16",
    ],
)
def test_compactor_range_valid_is_all_or_none(aborted, hwm, low, high, expected):
    write_ids = ValidCompactorWriteIdList(hwm, aborted_ids=aborted, table_name=T1)
    assert write_ids.is_write_id_range_valid(low, high) is expected


def test_compactor_drops_exceptions_above_watermark():
    # TestValidCompactorWriteIdList.exceptionsAbveHighWaterMark: getInvalidWriteIds() == {8, 11}
    write_ids = ValidCompactorWriteIdList(15, aborted_ids=(8, 11, 17, 29), table_name=T1)
    assert write_ids.exceptions == (8, 11)
    assert write_ids.aborted_ids == (8, 11)


@pytest.mark.parametrize(
    ("write_ids", "text"),
    [
        # TestValidCompactorWriteIdList.writeToString
        (ValidCompactorWriteIdList(8, aborted_ids=(7, 9, 10, LONG_MAX), table_name=T1), f"{T1}:8:{MAX}::7"),
        (ValidCompactorWriteIdList(), f"null:{MAX}:{MAX}::"),
        (ValidCompactorWriteIdList(23, table_name=T1), f"{T1}:23:{MAX}::"),
    ],
    ids=["trimmed", "default", "no_exceptions"],
)
def test_compactor_to_string(write_ids, text):
    assert write_ids.to_string() == text


def test_compactor_read_from_string():
    # TestValidCompactorWriteIdList.readFromString
    write_ids = parse_valid_compactor_write_id_list(f"{T1}:37:{MAX}::7,9,10")
    assert write_ids.table_name == T1
    assert write_ids.high_watermark == 37
    assert write_ids.min_open_id is None
    assert write_ids.exceptions == (7, 9, 10)
    write_ids = parse_valid_compactor_write_id_list(f"{T1}:21:{MAX}:")
    assert write_ids.high_watermark == 21
    assert write_ids.min_open_id is None
    assert write_ids.exceptions == ()


def test_compactor_aborted_txn():
    # TestValidCompactorWriteIdList.testAbortedTxn ("t:5:4::1,2,3"), with the min open ID above the
    # watermark as createValidCompactWriteIdList writes it (hwm = minOpen - 1)
    write_ids = parse_valid_compactor_write_id_list(f"{T1}:5:6::1,2,3")
    assert write_ids.high_watermark == 5
    assert write_ids.min_open_id == 6
    assert write_ids.exceptions == (1, 2, 3)
    assert all(write_ids.is_write_id_aborted(i) for i in (1, 2, 3))
    assert not write_ids.is_write_id_aborted(4)


# --------------------------------------------------------------------------------------------
# to_compactor_write_id_list: TxnUtils.createValidCompactWriteIdList.
# --------------------------------------------------------------------------------------------

TO_COMPACTOR_CASES = [
    # reader list, compactor list as Hive writes it
    # Only aborted IDs below the lowest open ID stay; hwm = lowest open - 1; minOpen kept only
    # when exceptions remain (ValidReaderWriteIdList's constructor drops it otherwise).
    ("db.t:10:5:5,7:3,6,8", "db.t:4:5::3"),
    (f"db.t:10:{MAX}::3,6", f"db.t:10:{MAX}::3,6"),
    ("db.t:10:5:5:", f"db.t:4:{MAX}::"),
    ("db.t:10:5:5:6", f"db.t:4:{MAX}::"),
    (f"db.t:10:{MAX}::", f"db.t:10:{MAX}::"),
    ("db.t:10:1:1:", f"db.t:0:{MAX}::"),
    (f"null:7:{MAX}::2", f"null:7:{MAX}::2"),
]


@pytest.mark.parametrize(("reader", "compactor"), TO_COMPACTOR_CASES, ids=[c[0] for c in TO_COMPACTOR_CASES])
def test_to_compactor_write_id_list_as_txn_utils(reader, compactor):
    result = to_compactor_write_id_list(parse_valid_write_id_list(reader))
    assert isinstance(result, ValidCompactorWriteIdList)
    assert result.to_string() == compactor


def test_to_compactor_write_id_list_stops_at_lowest_open():
    compactor = to_compactor_write_id_list(parse_valid_write_id_list("db.t:10:5:5,7:3,6,8"))
    assert compactor.is_write_id_range_valid(1, 4) is ALL
    assert compactor.is_write_id_range_valid(1, 5) is NONE  # a delta straddling the open ID
    assert compactor.is_write_id_aborted(3)
    assert not compactor.is_write_id_aborted(6)  # above the compactor's watermark


# --------------------------------------------------------------------------------------------
# ValidReadTxnList: TestValidReadTxnList, case by case.
# --------------------------------------------------------------------------------------------


def test_txn_list_no_exceptions():
    # TestValidReadTxnList.noExceptions
    txns = ValidTxnList(1)
    assert txns.to_string() == f"1:{MAX}::"
    reread = parse_valid_txn_list(txns.to_string())
    assert reread.is_txn_valid(1)
    assert not reread.is_txn_valid(2)


def test_txn_list_exceptions():
    # TestValidReadTxnList.exceptions (min open 2, the lowest open ID, where Hive's test says 4)
    txns = ValidTxnList(5, open_ids=(2, 4), min_open_id=2)
    assert txns.to_string() == "5:2:2,4:"
    reread = parse_valid_txn_list(txns.to_string())
    assert [reread.is_txn_valid(i) for i in range(1, 7)] == [True, False, True, False, True, False]


def test_txn_list_aborted():
    # TestValidReadTxnList.testAbortedTxn
    txns = ValidTxnList(11, open_ids=(4, 6, 10), aborted_ids=(2, 8), min_open_id=4)
    assert txns.to_string() == "11:4:4,6,10:2,8"
    assert [txns.is_txn_aborted(i) for i in (2, 4, 6, 8, 10)] == [True, False, False, True, False]


def test_txn_list_long_enough_to_compress_writes_a_range():
    # TestValidReadTxnList.longEnoughToCompress (Hive 4): ValidReadTxnList.writeToString writes runs
    # of >= 5 consecutive IDs as "min-max" (writeTxnRange, MIN_RANGE_LENGTH = 5). Min open 100,
    # the lowest open ID, where Hive's test says 900.
    txns = ValidTxnList(2000, open_ids=tuple(range(100, 1100)), min_open_id=100)
    assert txns.to_string() == "2000:100:100-1099:"
    reread = parse_valid_txn_list("2000:100:100-1099:")
    assert all(reread.is_txn_valid(i) for i in range(100))
    assert not any(reread.is_txn_valid(i) for i in range(100, 1100))
    assert all(reread.is_txn_valid(i) for i in range(1100, 2001))
    assert not reread.is_txn_valid(2001)


def test_txn_list_aborted_range():
    # TestValidReadTxnList.testAbortedTxnRange (Hive 4): exceptions 2,4..10 with 2 and 9 aborted
    txns = ValidTxnList(11, open_ids=(4, 5, 6, 7, 8, 10), aborted_ids=(2, 9), min_open_id=4)
    assert txns.to_string() == "11:4:4-8,10:2,9"
    reread = parse_valid_txn_list("11:4:4-8,10:2,9")
    assert reread == txns
    assert [reread.is_txn_aborted(i) for i in (2, 4, 6, 9, 10)] == [True, False, False, True, False]


def test_txn_list_without_ranges_writes_every_id_as_hive_31_does():
    # Hive 3.1's ValidReadTxnList (storage-api 2.7) reads each ID with Long.parseLong and writes no
    # ranges; the HMS adapter sends this form (a "47-51" made Hive 3.1.3's get_valid_write_ids throw).
    txns = ValidTxnList(11, open_ids=(4, 5, 6, 7, 8, 10), aborted_ids=(2, 9), min_open_id=4)
    assert txns.to_string(ranges=False) == "11:4:4,5,6,7,8,10:2,9"
    assert parse_valid_txn_list(txns.to_string(ranges=False)) == txns
    assert txns.to_string() == "11:4:4-8,10:2,9"


PARSE_TXN_CASES = [
    # string, (hwm, min open, open, aborted)
    (f"100:{MAX}:", (100, None, (), ())),  # TestAcidUtils (Hive 2) testOriginal
    ("125:5:5", (125, 5, (5,), ())),  # TestAcidUtils (Hive 2) testBestBase
    (f"1000:{MAX}::", (1000, None, (), ())),  # ValidReadTxnList(new long[0], ..., 1000, MAX)
    ("55:50:50:", (55, 50, (50,), ())),  # TestAcidUtils.deltasWithOpenTxnInRead: txn 50 open, hwm 55
    ("55:56::3", (55, 56, (), (3,))),  # nothing open: a min open ID above the watermark is kept
]


@pytest.mark.parametrize(("text", "fields"), PARSE_TXN_CASES, ids=[c[0] for c in PARSE_TXN_CASES])
def test_parse_txn_list_reads_hive_format(text, fields):
    parsed = parse_valid_txn_list(text)
    assert (parsed.high_watermark, parsed.min_open_id, parsed.open_ids, parsed.aborted_ids) == fields


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("7", "needs at least a high watermark and a min open ID"),
        ("x:1::", "high watermark 'x' is not a number"),
        ("4-5:1::", "high watermark '4-5' is not a number"),  # ranges are for ID lists only
        ("7:5:q:", "open ID 'q' is not a number"),
        ("7:5:5:5", "ID 5 is both open and aborted"),
        ("7:5:5:3:1", "has 5 ':'-separated fields after the name"),
    ],
    ids=["one_field", "hwm", "hwm_range", "open", "both", "five_fields"],
)
def test_parse_txn_list_malformed_raises_naming_it(text, problem):
    with pytest.raises(InvalidWriteIdListError) as info:
        parse_valid_txn_list(text)
    assert str(info.value) == f"Invalid {TXN_FORMAT} {text!r}: {problem}"


def test_parse_txn_list_empty_means_all_committed():
    txns = parse_valid_txn_list("")
    assert txns == ValidTxnList()
    assert txns.is_txn_valid(LONG_MAX)
    assert txns.to_string() == f"{MAX}:{MAX}::"


@pytest.mark.parametrize(
    ("low", "high", "valid", "aborted"),
    [(1, 1, ALL, NONE), (2, 2, NONE, ALL), (1, 3, SOME, SOME), (4, 4, NONE, NONE), (12, 20, NONE, NONE)],
    ids=["committed", "aborted", "mixed", "open", "above_hwm"],
)
def test_txn_range_queries(low, high, valid, aborted):
    txns = parse_valid_txn_list("11:4:4,6,10:2,8")
    assert txns.is_txn_range_valid(low, high) is valid
    assert txns.is_txn_range_aborted(low, high) is aborted


# --------------------------------------------------------------------------------------------
# Properties.
# --------------------------------------------------------------------------------------------


def _hive_range_valid(write_ids: ValidWriteIdList, low: int, high: int) -> RangeResponse:
    """ValidReaderWriteIdList.isWriteIdRangeValid, transcribed as a plain loop (the model)."""
    exceptions = sorted(write_ids.open_ids + write_ids.aborted_ids)
    if low > write_ids.high_watermark:
        return NONE
    if exceptions and exceptions[0] > high:
        return ALL
    count = max(0, high - write_ids.high_watermark) + sum(1 for e in exceptions if low <= e <= high)
    if count == 0:
        return ALL
    return NONE if count == high - low + 1 else SOME


def _hive_range_aborted(write_ids: ValidWriteIdList, low: int, high: int) -> RangeResponse:
    """ValidReaderWriteIdList.isWriteIdRangeAborted as a plain loop."""
    if write_ids.high_watermark < low:
        return NONE
    count = sum(1 for a in write_ids.aborted_ids if low <= a <= high)
    if count == 0:
        return NONE
    return ALL if count == high - low + 1 else SOME


@given(acid_st.valid_write_id_lists())
def test_write_id_list_string_round_trip(write_ids):
    assert parse_valid_write_id_list(write_ids.to_string()) == write_ids


@given(acid_st.valid_txn_lists())
def test_txn_list_string_round_trip(txns):
    assert parse_valid_txn_list(txns.to_string()) == txns


@given(
    acid_st.valid_write_id_lists(),
    st.integers(min_value=0, max_value=70),
    st.integers(min_value=0, max_value=30),
)
def test_visibility_monotonic_in_high_watermark(write_ids, raise_by, write_id):
    raised = ValidWriteIdList(
        write_ids.high_watermark + raise_by,
        write_ids.open_ids,
        write_ids.aborted_ids,
        write_ids.min_open_id,
        write_ids.table_name,
    )
    assume(write_id not in write_ids.exceptions)
    if write_ids.is_write_id_valid(write_id):
        assert raised.is_write_id_valid(write_id)
    # ...and for ranges: what was fully visible stays fully visible.
    low = max(1, write_id - 3)
    if write_ids.is_write_id_range_valid(low, write_id) is ALL:
        assert raised.is_write_id_range_valid(low, write_id) is ALL


@given(acid_st.valid_write_id_lists())
def test_aborted_ids_never_visible(write_ids):
    for aborted in write_ids.aborted_ids:
        assert not write_ids.is_write_id_valid(aborted)
        assert write_ids.is_write_id_aborted(aborted)
        assert write_ids.is_write_id_range_valid(aborted, aborted) is NONE
        assert write_ids.is_write_id_range_aborted(aborted, aborted) is ALL
        compactor = to_compactor_write_id_list(write_ids)
        assert not compactor.is_write_id_valid(aborted)
    for opened in write_ids.open_ids:
        assert not write_ids.is_write_id_aborted(opened)


@given(
    acid_st.valid_write_id_lists(),
    st.integers(min_value=1, max_value=70),
    st.integers(min_value=0, max_value=10),
)
def test_range_queries_match_hive_loop(write_ids, low, width):
    high = low + width
    assert write_ids.is_write_id_range_valid(low, high) is _hive_range_valid(write_ids, low, high)
    assert write_ids.is_write_id_range_aborted(low, high) is _hive_range_aborted(write_ids, low, high)


@given(acid_st.valid_write_id_lists())
def test_compactor_list_keeps_only_resolved_ids(write_ids):
    compactor = to_compactor_write_id_list(write_ids)
    lowest_open = min(write_ids.open_ids, default=None)
    expected_hwm = write_ids.high_watermark if lowest_open is None else lowest_open - 1
    assert compactor.high_watermark == expected_hwm
    assert compactor.open_ids == ()
    assert compactor.aborted_ids == tuple(a for a in write_ids.aborted_ids if a <= expected_hwm)
    assert parse_valid_compactor_write_id_list(compactor.to_string()) == compactor


def test_make_write_id_list_builder_sets_min_open():
    assert make_write_id_list(7, open_ids=(6, 5), aborted_ids=(3,)).to_string() == "default.t:7:5:5,6:3"


# --------------------------------------------------------------------------------------------
# Strings Hive's readFromString accepts but would misread (issue 11 part 6): refused by name.
# --------------------------------------------------------------------------------------------

MISREAD_WRITE_ID_CASES = [
    ("tbl:-1:5::", "high watermark -1 is negative; expected a number >= 0"),
    ("tbl:5:0::", f"min open ID 0 is below 1; expected an ID >= 1, or {MAX} when nothing is open"),
    ("tbl:5:-3::", f"min open ID -3 is below 1; expected an ID >= 1, or {MAX} when nothing is open"),
    ("tbl:5:3:-3:", "open ID -3 is below 1; expected IDs >= 1"),
    ("tbl:5:3:3:0", "aborted ID 0 is below 1; expected IDs >= 1"),
    (
        f"tbl:5:{MAX}::7",
        "aborted ID 7 is above the high watermark 5; expected open and aborted IDs <= the high watermark",
    ),
    (
        "tbl:5:6:6:",
        "open ID 6 is above the high watermark 5; expected open and aborted IDs <= the high watermark",
    ),
    (
        f"tbl:0:{MAX}::1",
        "aborted ID 1 is above the high watermark 0; expected open and aborted IDs <= the high watermark",
    ),
    # issue 24: isValidBase trusts minOpen, so it must be the lowest open ID (Long.MAX_VALUE if none)
    (
        "db.t:5:1:3:",
        "min open ID 1 is not open (the lowest open ID is 3); expected the lowest open ID (3) as min open ID",
    ),
    (
        "db.t:9:5:3,5:",
        "min open ID 5 is above the lowest open ID 3; expected the lowest open ID (3) as min open ID",
    ),
    (
        f"db.t:9:{MAX}:3:",
        f"min open ID {MAX} is above the lowest open ID 3; expected the lowest open ID (3) as min open ID",
    ),
    (
        "db.t:5:1::2",
        f"min open ID 1 is not open (no open IDs) but is <= the high watermark 5; expected {MAX} when "
        "nothing is open",
    ),
]


@pytest.mark.parametrize(
    ("text", "problem"), MISREAD_WRITE_ID_CASES, ids=[c[0] for c in MISREAD_WRITE_ID_CASES]
)
def test_parse_write_id_list_misread_by_hive_raises_naming_it(text, problem):
    with pytest.raises(InvalidWriteIdListError) as info:
        parse_valid_write_id_list(text)
    assert str(info.value) == f"Invalid {WRITE_ID_FORMAT} {text!r}: {problem}"


def test_parse_compactor_write_id_list_aborted_above_watermark_raises():
    with pytest.raises(InvalidWriteIdListError, match=r"aborted ID 9 is above the high watermark 8"):
        parse_valid_compactor_write_id_list(f"{T1}:8:{MAX}::7,9")


MISREAD_TXN_CASES = [
    ("-7:5::", "high watermark -7 is negative; expected a number >= 0"),
    ("7:-5::", f"min open ID -5 is below 1; expected an ID >= 1, or {MAX} when nothing is open"),
    ("7:5:5:0", "aborted ID 0 is below 1; expected IDs >= 1"),
    (
        "7:5:5:8",
        "aborted ID 8 is above the high watermark 7; expected open and aborted IDs <= the high watermark",
    ),
    (
        "20:9:9-22:",
        "open ID 21 is above the high watermark 20; expected open and aborted IDs <= the high watermark",
    ),
    # Hive 4's reader merges the two lists assuming each is ascending: unsorted would be misread.
    ("11:4:6,4:", "open IDs are not strictly ascending (6 then 4)"),
    ("11:4:4:3,2", "aborted IDs are not strictly ascending (3 then 2)"),
    ("11:4:4,4:", "open IDs are not strictly ascending (4 then 4)"),
    ("20:1:1-5,3:", "open IDs are not strictly ascending (5 then 3)"),
    # issue 24: Hive's server takes minOpenTxn over every open txn, so no listed open txn is below it.
    # (TestAcidUtils' Hive 2.0 string "150:121:99:121" meant exceptions 99 and 121, not this.)
    (
        "150:121:99:121",
        "min open ID 121 is above the lowest open ID 99; expected the lowest open ID (99) as min open ID",
    ),
    (
        f"9:{MAX}:3:",
        f"min open ID {MAX} is above the lowest open ID 3; expected the lowest open ID (3) as min open ID",
    ),
    (
        "8:5:7:",
        "min open ID 5 is not open (the lowest open ID is 7); expected the lowest open ID (7) as min open ID",
    ),
    (
        "8:5::",
        f"min open ID 5 is not open (no open IDs) but is <= the high watermark 8; expected {MAX} when nothing is open",
    ),
]


@pytest.mark.parametrize(("text", "problem"), MISREAD_TXN_CASES, ids=[c[0] for c in MISREAD_TXN_CASES])
def test_parse_txn_list_misread_by_hive_raises_naming_it(text, problem):
    with pytest.raises(InvalidWriteIdListError) as info:
        parse_valid_txn_list(text)
    assert str(info.value) == f"Invalid {TXN_FORMAT} {text!r}: {problem}"


def test_parse_write_id_list_unsorted_is_sorted_as_hive_does():
    # ValidReaderWriteIdList.readFromString sorts the exceptions (Arrays.sort): not misread.
    assert parse_valid_write_id_list("db.t:9:5:7,5:6,3").open_ids == (5, 7)


# --------------------------------------------------------------------------------------------
# newly_valid_write_ids: what the initiator's skip asks a Hive Metastore's backend for.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("previous", "current", "expected"),
    [
        ("d.t:5:9223372036854775807::", "d.t:5:9223372036854775807::", NewlyValidWriteIds(5, 5)),
        ("d.t:5:9223372036854775807::", "d.t:8:9223372036854775807::", NewlyValidWriteIds(5, 8)),
        # 4 was open at the previous cycle and committed since: below the old watermark, still new
        ("d.t:5:4:4:", "d.t:5:9223372036854775807::", NewlyValidWriteIds(5, 5, (4,))),
        ("d.t:5:4:4:2", "d.t:7:9223372036854775807::2,4", NewlyValidWriteIds(5, 7)),
        # the compactor's lists: aborted IDs stay aborted
        ("d.t:3:9223372036854775807::2", "d.t:6:9223372036854775807::2,5", NewlyValidWriteIds(3, 6)),
        # out of order (a lower watermark, or a valid ID turned invalid): nothing to trust
        ("d.t:8:9223372036854775807::", "d.t:5:9223372036854775807::", None),
        ("d.t:8:9223372036854775807::", "d.t:8:9223372036854775807::3", None),
    ],
    ids=["unchanged", "new-ids", "open-then-committed", "open-then-aborted", "compactor", "lower", "revoked"],
)
def test_newly_valid_write_ids_cases(previous, current, expected):
    result = newly_valid_write_ids(parse_valid_write_id_list(previous), parse_valid_write_id_list(current))
    assert result == expected
    assert (result is not None and result.is_empty) == (previous == current)


_LATER = {"c": "c", "a": "a", "o": "coa"}  # committed and aborted are final


def _snapshot(states: list[str]) -> ValidWriteIdList:
    open_ids = tuple(i for i, s in enumerate(states, 1) if s == "o")
    return ValidWriteIdList(
        high_watermark=len(states),
        open_ids=open_ids,
        aborted_ids=tuple(i for i, s in enumerate(states, 1) if s == "a"),
        min_open_id=min(open_ids, default=None),
        table_name="d.t",
    )


@given(st.data())
def test_newly_valid_write_ids_are_exactly_the_ids_valid_now_and_not_before(data):
    """A model of one table's IDs (committed, aborted, open; allocated in order) at two cycles."""
    before = data.draw(st.lists(st.sampled_from("cao"), max_size=10))
    after = [data.draw(st.sampled_from(_LATER[s])) for s in before]
    after += data.draw(st.lists(st.sampled_from("cao"), max_size=5))  # allocated since
    previous, current = _snapshot(before), _snapshot(after)
    newly = newly_valid_write_ids(previous, current)
    assert newly is not None
    expected = {w for w in range(1, len(after) + 1) if current.is_write_id_valid(w)}
    expected -= {w for w in range(1, len(before) + 1) if previous.is_write_id_valid(w)}
    found = {w for w in range(newly.above + 1, newly.up_to + 1) if current.is_write_id_valid(w)}
    assert found | set(newly.also) == expected
    assert set(newly.also) <= set(previous.exceptions)
