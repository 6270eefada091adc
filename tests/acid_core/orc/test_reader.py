"""Merge-on-read rules, one table-driven case each; files built by the private pyorc helper.

Expected rows follow Hive's rules as documented in acid_core/orc/reader.py (OrcRawRecordMerger,
VectorizedOrcAcidRowBatchReader), written out by hand per case.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from acid_core.errors import (
    CorruptDataError,
    InvalidPathError,
    InvalidScanFilterError,
    NoSuchColumnError,
    NotAnAcidFileError,
)
from acid_core.fs import LocalFileIO
from acid_core.orc.reader import scan, scan_table
from acid_core.writeids import ValidWriteIdList, parse_valid_write_id_list
from tests.acid_core.orc.acid_files import (
    bucket_property,
    deletes,
    inserts,
    write_events,
    write_plain,
)

ALL = ValidWriteIdList()
B0 = bucket_property(0)
B1 = bucket_property(1)


def _keys(table: pa.Table) -> list[int]:
    return sorted(table.column("k").to_pylist())


def _read(tmp_path, snapshot=ALL, **options) -> pa.Table:
    return scan_table(LocalFileIO(), str(tmp_path), snapshot, **options)


def test_scan_inserts_and_split_update_deletes(tmp_path):
    write_events(
        tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(1, "a"), (2, "b"), (3, "c")])
    )
    write_events(tmp_path / "delete_delta_0000002_0000002_0000/bucket_00000", deletes(2, [(1, B0, 1)]))
    assert _keys(_read(tmp_path)) == [1, 3]
    # Before write ID 2 the delete is not visible.
    assert _keys(_read(tmp_path, parse_valid_write_id_list("t:1:9223372036854775807::"))) == [1, 2, 3]


def test_scan_delete_of_aborted_write_id_is_ignored(tmp_path):
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(1, "a"), (2, "b")]))
    # A compacted delete delta spanning write IDs 2..3 where 2 aborted: its events are skipped.
    write_events(
        tmp_path / "delete_delta_0000002_0000003/bucket_00000",
        [(2, 1, B0, 0, 2, None), (2, 1, B0, 1, 3, None)],
    )
    snapshot = parse_valid_write_id_list("t:3:9223372036854775807::2")
    assert _keys(_read(tmp_path, snapshot)) == [1]


def test_scan_streaming_delta_with_open_and_aborted_write_ids(tmp_path):
    events = inserts(5, 0, [(50, "x")]) + inserts(6, 0, [(60, "y")]) + inserts(7, 0, [(70, "z")])
    write_events(tmp_path / "delta_0000005_0000007/bucket_00000", events)
    # 5 committed, 6 open, 7 aborted.
    snapshot = parse_valid_write_id_list("t:7:6:6:7")
    assert _keys(_read(tmp_path, snapshot)) == [50]
    assert _keys(_read(tmp_path)) == [50, 60, 70]


def test_scan_delete_applies_across_buckets_by_bucket_property(tmp_path):
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(1, "a")]))
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00001", inserts(1, 1, [(2, "b")]))
    write_events(tmp_path / "delete_delta_0000002_0000002_0000/bucket_00001", deletes(2, [(1, B1, 0)]))
    assert _keys(_read(tmp_path)) == [1]


def test_scan_multi_statement_keys_differ_by_statement_id(tmp_path):
    write_events(tmp_path / "delta_0000003_0000003_0000/bucket_00000", inserts(3, 0, [(1, "s0")]))
    write_events(
        tmp_path / "delta_0000003_0000003_0001/bucket_00000", inserts(3, 0, [(2, "s1")], statement_id=1)
    )
    write_events(
        tmp_path / "delete_delta_0000003_0000003_0002/bucket_00000",
        deletes(3, [(3, bucket_property(0, 1), 0)]),
    )
    assert _keys(_read(tmp_path)) == [1]


def test_scan_legacy_update_event_replaces_the_row(tmp_path):
    # Hive 2 without split-update: an update (operation 1) keeps the row ID, newer currentTransaction.
    write_events(tmp_path / "delta_0000001_0000001/bucket_00000", inserts(1, 0, [(1, "old"), (2, "keep")]))
    write_events(
        tmp_path / "delta_0000002_0000002/bucket_00000",
        [(1, 1, B0, 0, 2, (1, "new")), (2, 1, B0, 1, 2, None)],
    )
    table = _read(tmp_path)
    assert table.to_pylist() == [{"k": 1, "v": "new"}]
    before = _read(tmp_path, parse_valid_write_id_list("t:1:9223372036854775807::"))
    assert sorted(before.to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "v": "old"}, {"k": 2, "v": "keep"}]


def test_scan_legacy_update_in_file_without_stats(tmp_path):
    write_events(tmp_path / "delta_0000001_0000001/bucket_00000", inserts(1, 0, [(1, "old")]), stats=False)
    write_events(tmp_path / "delta_0000002_0000002/bucket_00000", [(1, 1, B0, 0, 2, (1, "new"))], stats=False)
    assert _read(tmp_path).column("v").to_pylist() == ["new"]


def test_scan_original_files_synthetic_row_ids_run_across_copies(tmp_path):
    write_plain(tmp_path / "000000_0", [(1, "a"), (2, "b")])
    write_plain(tmp_path / "000000_0_copy_1", [(3, "c")])
    write_plain(tmp_path / "000001_0", [(4, "d")])
    table = _read(tmp_path, with_row_id=True)
    got = sorted((r["k"], tuple(r["row__id"].values())) for r in table.to_pylist())
    assert got == [(1, (0, B0, 0)), (2, (0, B0, 1)), (3, (0, B0, 2)), (4, (0, B1, 0))]


def test_scan_delete_of_an_original_copy_row(tmp_path):
    write_plain(tmp_path / "000000_0", [(1, "a"), (2, "b")])
    write_plain(tmp_path / "000000_0_copy_1", [(3, "c")])
    write_events(tmp_path / "delete_delta_0000001_0000001_0000/bucket_00000", deletes(1, [(0, B0, 2)]))
    assert _keys(_read(tmp_path)) == [1, 2]


def test_scan_v0_bucket_values_match_v1_deletes(tmp_path):
    # A Hive 2 insert (bucket column = plain bucket number 0) deleted by a Hive 3 delete (V1 value).
    write_events(
        tmp_path / "delta_0000001_0000001_0000/bucket_00000",
        [(0, 1, 0, 0, 1, (1, "a")), (0, 1, 0, 1, 1, (2, "b"))],
    )
    write_events(tmp_path / "delete_delta_0000002_0000002_0000/bucket_00000", deletes(2, [(1, B0, 0)]))
    table = _read(tmp_path, with_row_id=True)
    assert table.to_pylist() == [{"row__id": {"writeid": 1, "bucketid": 0, "rowid": 1}, "k": 2, "v": "b"}]


def test_scan_base_and_deltas_above_it(tmp_path):
    base_events = inserts(1, 0, [(1, "a")]) + inserts(2, 0, [(2, "b")])
    write_events(tmp_path / "base_0000002/bucket_00000", base_events)
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(99, "obsolete")]))
    write_events(tmp_path / "delta_0000003_0000003_0000/bucket_00000", inserts(3, 0, [(3, "c")]))
    write_events(tmp_path / "delete_delta_0000004_0000004_0000/bucket_00000", deletes(4, [(2, B0, 0)]))
    assert _keys(_read(tmp_path)) == [1, 3]


def test_scan_lower_case_event_columns(tmp_path):
    write_events(tmp_path / "base_0000001/bucket_00000", inserts(1, 0, [(1, "a")]), lower_case=True)
    write_events(
        tmp_path / "delete_delta_0000002_0000002_0000/bucket_00000", deletes(2, [(1, B0, 0)]), lower_case=True
    )
    assert _read(tmp_path, parse_valid_write_id_list("t:1:9223372036854775807::")).num_rows == 1
    assert _read(tmp_path).num_rows == 0


def test_scan_projection_filter_limit_and_row_id(tmp_path):
    rows = [(i, f"v{i}") for i in range(10)]
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, rows))
    table = _read(tmp_path, columns=["V"], filter=pc.field("k") >= 5, with_row_id=True, limit=3)
    assert table.schema.names == ["row__id", "v"]
    assert table.to_pylist() == [
        {"row__id": {"writeid": 1, "bucketid": B0, "rowid": i}, "v": f"v{i}"} for i in (5, 6, 7)
    ]


def test_scan_unknown_column_raises(tmp_path):
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(1, "a")]))
    with pytest.raises(NoSuchColumnError, match=r"No such column 'x'; expected one of \['k', 'v'\]"):
        _read(tmp_path, columns=["x"])


def test_scan_plain_file_in_base_raises_before_any_batch(tmp_path):
    write_events(tmp_path / "delta_0000002_0000002_0000/bucket_00000", inserts(2, 0, [(1, "a")]))
    write_plain(tmp_path / "base_0000001/bucket_00000", [(1, "x")])
    with pytest.raises(NotAnAcidFileError, match=r"base_0000001/bucket_00000' is not an ACID event file"):
        scan(LocalFileIO(), str(tmp_path), ALL)


def test_scan_streaming_file_read_up_to_flush_length(tmp_path):
    first = write_events(tmp_path / "first", inserts(1, 0, [(1, "a")]))
    length = first.stat().st_size
    data = first.read_bytes() + b"\x00garbage written after the last flush"
    target = tmp_path / "table" / "delta_0000001_0000002" / "bucket_00000"
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    (target.parent / "bucket_00000_flush_length").write_bytes(struct.pack(">qq", 3, length))
    assert _read(tmp_path / "table").column("k").to_pylist() == [1]


def test_scan_positional_schema_evolution_col_names_and_added_column(tmp_path):
    write_events(
        tmp_path / "delta_0000001_0000001_0000/bucket_00000",
        inserts(1, 0, [(1,)]),
        row_type="struct<_col0:bigint>",
    )
    write_events(tmp_path / "delta_0000002_0000002_0000/bucket_00000", inserts(2, 0, [(2, "b")]))
    table = _read(tmp_path)
    assert sorted(table.to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "v": None}, {"k": 2, "v": "b"}]


@pytest.mark.parametrize("in_memory", [10_000_000, 0], ids=["columnized", "sort-merged"])
def test_scan_registries_agree_on_many_files_and_buckets(tmp_path, in_memory):
    expected = set()
    for write_id in range(1, 6):
        for bucket in range(3):
            rows = [(write_id * 1000 + bucket * 100 + i, "x") for i in range(50)]
            write_events(
                tmp_path / f"delta_{write_id:07d}_{write_id:07d}_0000/bucket_{bucket:05d}",
                inserts(write_id, bucket, rows),
                stripe_size=1024,
                batch_size=16,
            )
            expected.update(k for k, _ in rows)
    doomed = {(w, bucket_property(b), i) for w in range(1, 6) for b in range(3) for i in range(0, 50, 3)}
    for bucket in range(3):
        mine = {key for key in doomed if key[1] == bucket_property(bucket)}
        write_events(tmp_path / f"delete_delta_0000006_0000006_0000/bucket_{bucket:05d}", deletes(6, mine))
    expected -= {w * 1000 + (b - B0 >> 16) * 100 + i for w, b, i in doomed}
    table = _read(tmp_path, delete_events_in_memory=in_memory)
    assert sorted(table.column("k").to_pylist()) == sorted(expected)


def test_scan_ordered_returns_hive_row_id_order_across_files(tmp_path):
    write_plain(tmp_path / "000001_0", [(100, "o1")])
    for write_id in (1, 2):
        for bucket in (0, 1):
            rows = [(write_id * 10 + bucket * 5 + i, "x") for i in range(3)]
            write_events(
                tmp_path / f"delta_{write_id:07d}_{write_id:07d}_0000/bucket_{bucket:05d}",
                inserts(write_id, bucket, rows),
            )
    write_events(tmp_path / "delete_delta_0000003_0000003_0000/bucket_00001", deletes(3, [(1, B1, 1)]))
    table = _read(tmp_path, with_row_id=True, ordered=True)
    got = [tuple(r["row__id"].values()) for r in table.to_pylist()]
    expected = [(0, B1, 0)] + [
        (w, b, i) for w in (1, 2) for b in (B0, B1) for i in range(3) if (w, b, i) != (1, B1, 1)
    ]
    assert got == expected
    assert _read(tmp_path, ordered=True, limit=2).column("k").to_pylist() == [100, 10]


def test_scan_no_columns_still_counts_rows(tmp_path):
    write_events(
        tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(1, "a"), (2, "b"), (3, "c")])
    )
    write_events(tmp_path / "delete_delta_0000002_0000002_0000/bucket_00000", deletes(2, [(1, B0, 0)]))
    table = _read(tmp_path, columns=[])
    assert (table.num_rows, table.num_columns) == (2, 0)


def test_scan_filter_on_unknown_column_raises_before_reading(tmp_path):
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(1, "a")]))
    with pytest.raises(
        InvalidScanFilterError, match=r"No match for FieldRef.Name\(x\).*row columns \['k', 'v'\]"
    ):
        _read(tmp_path, filter=pc.field("x") > 1)


def test_scan_filter_on_column_outside_projection(tmp_path):
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(1, "a"), (2, "b")]))
    assert _read(tmp_path, columns=["v"], filter=pc.field("k") == 2).to_pylist() == [{"v": "b"}]


def test_scan_garbage_in_delta_is_not_an_acid_file(tmp_path):
    target = tmp_path / "delta_0000001_0000001_0000" / "bucket_00000"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not an orc file at all")
    with pytest.raises(
        NotAnAcidFileError, match=r"bucket_00000' is not an ACID event file: it is not ORC"
    ) as raised:
        _read(tmp_path)
    assert "\n" not in str(raised.value)


def test_scan_partitioned_table_root_is_rejected(tmp_path):
    write_events(tmp_path / "p=1" / "delta_0000001_0000001_0000" / "bucket_00000", inserts(1, 0, [(1, "a")]))
    with pytest.raises(InvalidPathError, match=r"'p=1/delta_0000001_0000001_0000/bucket_00000'.*partition"):
        _read(tmp_path)
    assert _read(tmp_path / "p=1").column("k").to_pylist() == [1]


# --- files Hive never writes: repeated events, events out of order, a row column of another type ---

REPEATED = [
    (0, 1, B0, 0, 1, (1, "a")),
    (0, 1, B0, 0, 1, (1, "copy")),
    (0, 1, B0, 1, 1, (2, "b")),
    (0, 1, B0, 1, 1, (2, "copy")),
    (0, 1, B0, 1, 1, (2, "copy again")),
    (0, 1, B0, 2, 1, (3, "c")),
]


@pytest.mark.parametrize("ordered", [False, True], ids=["unordered", "ordered"])
@pytest.mark.parametrize("batch_rows", [1, 2, 1024], ids=["rows-1", "rows-2", "rows-1024"])
def test_scan_equal_events_in_one_file_returns_the_first_once(tmp_path, ordered, batch_rows):
    """Hive's OrcRawRecordMerger returns one event per (row ID, currentTransaction): the first."""
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", REPEATED)
    table = _read(tmp_path, with_row_id=True, ordered=ordered, batch_rows=batch_rows)
    assert table.column("v").to_pylist() == ["a", "b", "c"]
    assert [r["rowid"] for r in table.column("row__id").to_pylist()] == [0, 1, 2]


def test_scan_equal_row_ids_of_different_writes_in_one_file_are_both_kept(tmp_path):
    # A streaming delta holds write IDs 1 and 2; equal (writeid, bucket, rowid) needs equal
    # currentTransaction to be the same event: (1, B0, 0) written by write 2 is another event.
    events = [(0, 1, B0, 0, 1, (1, "a")), (0, 1, B0, 0, 2, (1, "b"))]
    write_events(tmp_path / "delta_0000001_0000002/bucket_00000", events)
    assert _read(tmp_path).column("v").to_pylist() == ["a", "b"]


@pytest.mark.parametrize("ordered", [False, True], ids=["unordered", "ordered"])
@pytest.mark.parametrize("batch_rows", [1, 1024], ids=["rows-1", "rows-1024"])
def test_scan_events_out_of_order_in_one_file_raise_naming_the_file(tmp_path, ordered, batch_rows):
    path = tmp_path / "delta_0000001_0000001_0000/bucket_00000"
    write_events(path, [(0, 1, B0, 0, 1, (1, "a")), (0, 1, B0, 2, 1, (3, "c")), (0, 1, B0, 1, 1, (2, "b"))])
    with pytest.raises(CorruptDataError) as caught:
        _read(tmp_path, ordered=ordered, batch_rows=batch_rows)
    assert str(caught.value) == (
        f"Corrupt ACID data at {str(path)!r}: event 2 has row ID (writeid=1, bucketid=536870912, rowid=1) "
        "after (writeid=1, bucketid=536870912, rowid=2); expected events in (writeid, bucketid, rowid) order "
        "in each file, as Hive writes them; the read stopped there and nothing was changed; hint: move the "
        "file or directory aside, or restore it from a backup"
    )


def test_scan_row_column_of_another_type_raises_naming_file_column_and_types(tmp_path):
    path = tmp_path / "delta_0000001_0000001_0000/bucket_00000"
    write_events(path, inserts(1, 0, [("a", "x")]), row_type="struct<k:string,v:string>")
    schema = pa.schema([("k", pa.int32()), ("v", pa.string())])
    with pytest.raises(CorruptDataError) as caught:
        _read(tmp_path, schema=schema)
    assert str(caught.value) == (
        f"Corrupt ACID data at {str(path)!r}: row column 1 ('k') is string and does not convert to the "
        "table's column 'k' of type int (Failed to parse string: 'a' as a scalar of type int32); expected a "
        "file written with the table's row type ('k' int); the read stopped there and nothing was changed; "
        "hint: move the file or directory aside, or restore it from a backup"
    )
