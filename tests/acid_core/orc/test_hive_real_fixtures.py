"""Real Hive files (tests/data/hive-real) read exactly as the source repositories' tests assert.

Expected values come from tests/data/hive-real/README.md (the assertions of the Trino, ORC and
Impala tests that ship these files), never from this reader's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acid_core.errors import NotAnAcidFileError
from acid_core.fs import LocalFileIO
from acid_core.orc.reader import load_delete_events, scan_table
from acid_core.writeids import ValidWriteIdList, parse_valid_write_id_list

HIVE_REAL = Path(__file__).resolve().parents[2] / "data" / "hive-real"
ALL_COMMITTED = ValidWriteIdList()

TPCH_NATIONS = [
    "ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY", "INDIA",
    "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA", "MOROCCO", "MOZAMBIQUE", "PERU", "CHINA",
    "ROMANIA", "SAUDI ARABIA", "VIETNAM", "RUSSIA", "UNITED KINGDOM", "UNITED STATES",
]  # fmt: skip


def _table(name: str) -> str:
    return str(HIVE_REAL / name)


def test_original_file_with_delete_delta_hides_key_24():
    table = scan_table(LocalFileIO(), _table("trino_original_file_with_delete_delta"), ALL_COMMITTED)
    assert table.num_rows == 24
    assert table.column("n_nationkey").to_pylist() == list(range(24))
    assert table.column("n_name").to_pylist() == TPCH_NATIONS[:24]
    assert "UNITED STATES" not in table.column("n_name").to_pylist()


def test_original_file_synthetic_row_ids_are_write_id_0_bucket_0_position():
    table = scan_table(
        LocalFileIO(), _table("trino_original_file_with_delete_delta"), ALL_COMMITTED, with_row_id=True
    )
    row_ids = table.column("row__id").to_pylist()
    # BucketCodec.V1.encode(bucket 0) = 1 << 29, the value the delete event carries.
    assert row_ids == [{"writeid": 0, "bucketid": 536870912, "rowid": i} for i in range(24)]


def test_original_file_delete_delta_not_yet_committed_keeps_25_rows():
    # Delete delta 10000001 above the high watermark: the delete is not visible.
    snapshot = parse_valid_write_id_list("default.nation:10000000:9223372036854775807::")
    table = scan_table(LocalFileIO(), _table("trino_original_file_with_delete_delta"), snapshot)
    assert table.num_rows == 25
    assert table.column("n_name").to_pylist()[24] == "UNITED STATES"


def test_delete_deltas_only_table_has_no_rows_and_the_asserted_delete_set():
    file_io = LocalFileIO()
    assert scan_table(file_io, _table("trino_delete_deltas_only"), ALL_COMMITTED).num_rows == 0
    deletes = load_delete_events(file_io, _table("trino_delete_deltas_only"), ALL_COMMITTED)
    assert deletes.to_pylist() == [
        {"originalTransaction": 2, "bucket": 536870912, "rowId": 0, "currentTransaction": 4},
        {"originalTransaction": 6, "bucket": 536870912, "rowId": 0, "currentTransaction": 7},
    ]


def test_delete_deltas_only_no_statement_directory_alone_yields_one_delete(tmp_path):
    source = HIVE_REAL / "trino_delete_deltas_only" / "delete_delta_0000004_0000004" / "bucket_00000"
    target = tmp_path / "delete_delta_0000004_0000004"
    target.mkdir()
    (target / "bucket_00000").write_bytes(source.read_bytes())
    deletes = load_delete_events(LocalFileIO(), str(tmp_path), ALL_COMMITTED)
    assert [(d["originalTransaction"], d["bucket"], d["rowId"]) for d in deletes.to_pylist()] == [
        (2, 536870912, 0)
    ]


def test_delete_deltas_only_snapshot_below_7_sees_only_the_first_delete():
    snapshot = parse_valid_write_id_list("default.t:6:9223372036854775807::")
    deletes = load_delete_events(LocalFileIO(), _table("trino_delete_deltas_only"), snapshot)
    assert [(d["originalTransaction"], d["rowId"]) for d in deletes.to_pylist()] == [(2, 0)]


def test_acid_file_bucket2_reads_one_row_a_10():
    table = scan_table(LocalFileIO(), _table("trino_acid_file_bucket2"), ALL_COMMITTED, with_row_id=True)
    assert table.to_pylist() == [{"row__id": {"writeid": 1, "bucketid": 537001984, "rowid": 0}, "a": 10}]


def test_plain_file_as_original_reads_four_rows():
    table = scan_table(LocalFileIO(), _table("trino_plain_file_as_original"), ALL_COMMITTED)
    assert table.column("id").to_pylist() == [0, 1, 3, 4]


def test_plain_file_in_delta_is_rejected_naming_the_file():
    path = HIVE_REAL / "trino_plain_file_in_delta" / "delta_0000001_0000001_0000" / "bucket_00000"
    with pytest.raises(NotAnAcidFileError) as raised:
        scan_table(LocalFileIO(), _table("trino_plain_file_in_delta"), ALL_COMMITTED)
    assert str(raised.value) == (
        f"File {str(path)!r} is not an ACID event file: its columns are ['id', 'data', 'comment']; "
        "expected struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
        "currentTransaction:bigint,row:struct<...>>; hint: a plain (non-ACID) ORC file inside a base "
        "or delta directory is not read; move it to the table directory (an original file) or load "
        "it through an INSERT"
    )


def test_minor_compacted_delta_reads_two_rows():
    table = scan_table(LocalFileIO(), _table("trino_minor_compacted"), ALL_COMMITTED)
    assert table.column("a").to_pylist() == [1, 2]


def test_minor_compacted_delta_skips_events_of_an_aborted_write_id():
    # delta_1_2 spans write IDs 1 and 2; with 2 aborted only the event of write ID 1 is seen.
    snapshot = parse_valid_write_id_list("default.t:2:9223372036854775807::2")
    table = scan_table(LocalFileIO(), _table("trino_minor_compacted"), snapshot)
    assert table.column("a").to_pylist() == [1]


def test_orc_acid5k_reads_5000_non_negative_rows():
    table = scan_table(LocalFileIO(), _table("orc_acid5k"), ALL_COMMITTED)
    assert table.num_rows == 5000
    assert table.column_names == ["i", "j", "k"]
    for name in ("i", "j", "k"):
        assert min(table.column(name).to_pylist()) >= 0


def test_orc_acid5k_invisible_below_its_write_id():
    snapshot = parse_valid_write_id_list("default.t:11:9223372036854775807::")
    assert scan_table(LocalFileIO(), _table("orc_acid5k"), snapshot).num_rows == 0


def test_impala_lower_case_event_columns_count_3():
    table = scan_table(LocalFileIO(), _table("impala_compacted_no_acid_version"), ALL_COMMITTED)
    assert table.column("i").to_pylist() == [1, 2, 3]
