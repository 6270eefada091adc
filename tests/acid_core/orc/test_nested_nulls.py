"""pyarrow's ORC writer and null structs: the loss, and acidflow's writers not losing anything.

pyarrow 26's ORC writer writes a struct below the top level (every user column of an event file is
inside ``row``) that has null values with non-null children, and any sliced struct with nulls, so
that ORC readers read other values than were written (``acid_core.orc.nested_nulls``). The first
test shows the loss with the bare writer (if it ever passes the other way, pyarrow fixed it and the
workaround can go). The others write through acidflow and read back with the ORC C++ library
(pyarrow, pyorc) and with Java's ORC reader (Spark's ``spark.read.orc``); the expected values are
the Python values the test built, never acidflow's reader.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.orc as orc
import pyorc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.fs import LocalFileIO
from acid_core.orc.nested_nulls import shifted_struct_columns, with_struct_nulls_in_children
from acid_core.orc.schema import RowType
from acid_core.orc.writer import delete_events, insert_events, write_event_file

ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.int32())])
ROW_TYPE = RowType.of(
    [
        ("id", "bigint"),
        ("addr", "struct<city:string,zip:int>"),
        ("deep", "struct<inner:struct<x:int>,y:int>"),
        ("tags", "array<struct<city:string,zip:int>>"),
        ("props", "map<string,struct<city:string,zip:int>>"),
    ]
)


def _round_trip(table: pa.Table) -> list[dict]:
    out = io.BytesIO()
    writer = orc.ORCWriter(out)
    writer.write(table)
    writer.close()
    return orc.ORCFile(io.BytesIO(out.getvalue())).read().to_pylist()


def _addresses(count: int) -> pa.Array:
    return pa.array([None if i % 3 == 0 else {"city": f"c{i}", "zip": i} for i in range(count)], ADDRESS)


def test_pyarrows_writer_loses_nested_and_sliced_struct_values():
    addresses = _addresses(12)
    nested = pa.table({"row": pa.StructArray.from_arrays([addresses], names=["addr"])})
    assert _round_trip(nested)[1] == {"row": {"addr": {"city": "", "zip": 0}}}  # written: c1, 1
    sliced = pa.table({"addr": addresses}).slice(1, 3)
    assert _round_trip(sliced) != sliced.to_pylist()
    # The same batches through the workaround come back as written.
    for table in (nested, sliced):
        fixed = pa.Table.from_batches([with_struct_nulls_in_children(b) for b in table.to_batches()])
        assert _round_trip(fixed) == table.to_pylist()


def test_batches_without_a_null_struct_are_left_as_they_are():
    batch = pa.record_batch({"id": pa.array([1, 2]), "row": pa.array([{"a": 1}, {"a": 2}])})
    assert with_struct_nulls_in_children(batch) is batch


_ADDRESSES = st.one_of(st.none(), st.builds(lambda z: {"city": f"c{z}", "zip": z}, st.integers(0, 99)))
_ROW = st.fixed_dictionaries(
    {
        "addr": _ADDRESSES,
        "deep": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {
                    "inner": st.one_of(st.none(), st.fixed_dictionaries({"x": st.integers(0, 9)})),
                    "y": st.integers(0, 9),
                }
            ),
        ),
        "tags": st.one_of(st.none(), st.lists(_ADDRESSES, max_size=3)),
        "props": st.one_of(
            st.none(),
            st.lists(
                st.tuples(st.sampled_from(["k", "j"]), _ADDRESSES), max_size=2, unique_by=lambda kv: kv[0]
            ),
        ),
    }
)


def _numbered(rows: list[dict]) -> list[dict]:
    return [{"id": i, **row} for i, row in enumerate(rows)]


def _row_table(rows: list[dict]) -> pa.Table:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("addr", ADDRESS),
            ("deep", pa.struct([("inner", pa.struct([("x", pa.int32())])), ("y", pa.int32())])),
            ("tags", pa.list_(ADDRESS)),
            ("props", pa.map_(pa.string(), ADDRESS)),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _read_rows(path) -> list[tuple]:
    with open(path, "rb") as f:
        return [event["row"] for event in pyorc.Reader(f, struct_repr=pyorc.StructRepr.DICT)]


def _as_pyorc(row: dict) -> dict:
    """A row as pyorc returns it: maps as dicts."""
    return {**row, "props": None if row["props"] is None else dict(row["props"])}


@settings(max_examples=40, deadline=None)
@given(drawn=st.lists(_ROW, min_size=1, max_size=60), cut=st.integers(0, 59), batch_rows=st.integers(1, 25))
def test_event_files_keep_every_nested_value_property(tmp_path_factory, drawn, cut, batch_rows):
    rows = _numbered(drawn)
    cut = min(cut, len(rows) - 1)
    table = _row_table(rows).slice(cut)  # a slice, as the merge hands the writer
    events = insert_events(table, write_id=3, bucket_id=0, row_type=ROW_TYPE)
    batches = [events.slice(i, batch_rows) for i in range(0, events.num_rows, batch_rows)]
    path = tmp_path_factory.mktemp("nested") / "bucket_00000"
    write_event_file(LocalFileIO(), str(path), batches, ROW_TYPE)
    assert _read_rows(path) == [_as_pyorc(row) for row in rows[cut:]]
    # and the check that stops compactions (acidflow check, refuse_shifted_inputs) passes it
    with open(path, "rb") as f:
        assert shifted_struct_columns(f) == []


@settings(max_examples=40, deadline=None)
@given(drawn=st.lists(_ROW, min_size=1, max_size=60))
def test_the_check_names_every_file_the_bare_writer_shifted_property(tmp_path_factory, drawn):
    """pyarrow's own writer on the same events: whenever a reader reads other values than were
    written, the check names a shifted column (a file it passes reads back as written). Not the
    converse: a file whose null structs all come after its last non-null child value reads right
    although its children hold extra values; the check names it too (compactions refuse it)."""
    rows = _numbered(drawn)
    events = insert_events(_row_table(rows), write_id=3, bucket_id=0, row_type=ROW_TYPE)
    path = tmp_path_factory.mktemp("bare") / "bucket_00000"
    orc.write_table(pa.Table.from_batches([events]), str(path))
    with open(path, "rb") as f:
        named = shifted_struct_columns(f)
    if _read_rows(path) != [_as_pyorc(row) for row in rows]:
        assert named


def _patterned_rows(count: int) -> list[dict]:
    """Nulls at every level, each at its own period, so that values of neighbours differ."""
    return [
        {
            "id": i,
            "addr": None if i % 3 == 0 else {"city": f"c{i}", "zip": i},
            "deep": None if i % 5 == 0 else {"inner": None if i % 2 else {"x": i % 7}, "y": i % 11},
            "tags": None if i % 4 == 0 else [None, {"city": "t", "zip": i % 13}],
            "props": None if i % 6 == 0 else [("k", None if i % 2 else {"city": "p", "zip": i % 17})],
        }
        for i in range(count)
    ]


def test_a_big_event_file_in_chunks_keeps_nested_values(tmp_path):
    # 40,000 rows in one batch: the writer feeds the ORC writer 16K-row slices of it.
    rows = _patterned_rows(40_000)
    events = insert_events(_row_table(rows), write_id=3, bucket_id=0, row_type=ROW_TYPE)
    path = tmp_path / "bucket_00000"
    write_event_file(LocalFileIO(), str(path), [events], ROW_TYPE)
    assert _read_rows(path) == [_as_pyorc(row) for row in rows]


def test_a_delete_delta_of_a_table_with_nested_structs_reads_back(tmp_path):
    path = tmp_path / "bucket_00000"
    keys = ([3] * 20_000, [536870912] * 20_000, list(range(20_000)))
    write_event_file(LocalFileIO(), str(path), [delete_events(keys, write_id=4, row_type=ROW_TYPE)], ROW_TYPE)
    with open(path, "rb") as f:
        events = list(pyorc.Reader(f))
    assert [event[:5] for event in events[:2]] == [(2, 3, 536870912, 0, 4), (2, 3, 536870912, 1, 4)]
    assert len(events) == 20_000
    assert all(event[5] is None for event in events)


@pytest.mark.integration("spark")
def test_javas_orc_reader_reads_the_nested_values_acidflow_wrote(spark, tmp_path):
    rows = _patterned_rows(30_000)
    events = insert_events(_row_table(rows), write_id=3, bucket_id=0, row_type=ROW_TYPE)
    path = tmp_path / "bucket_00000"
    write_event_file(LocalFileIO(), str(path), [events.slice(5)], ROW_TYPE)
    # Every column (orc-core fails on pruned reads of the ACID schema), in file order.
    read = [r.asDict(recursive=True)["row"] for r in spark.read.orc(str(path)).collect()]
    assert read == [_as_pyorc(row) for row in rows[5:]]


@pytest.mark.parametrize(
    "properties", [{}, {"transactional": "true", "transactional_properties": "insert_only"}]
)
def test_plain_and_insert_only_tables_keep_nested_values(tmp_path, properties):
    from acid_core.metastore import Column, TableDefinition
    from acid_core.writes.transaction import Warehouse

    rows = [
        {
            "id": i,
            "addr": None if i % 3 == 0 else {"city": f"c{i}", "zip": i},
            "deep": None,
            "tags": None,
            "props": None,
        }
        for i in range(50)
    ]
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    try:
        warehouse.metastore.create_table(
            TableDefinition(
                "default.p",
                columns=(Column("id", "bigint"), Column("addr", "struct<city:string,zip:int>")),
                properties=properties,
            )
        )
        with warehouse.transaction(heartbeat_seconds=None) as txn:
            txn.insert("default.p", _row_table(rows).select(["id", "addr"]).slice(7))
        location = warehouse.metastore.get_table("default.p").location
    finally:
        warehouse.close()
    [path] = [p for p in (tmp_path / "wh").rglob("*") if p.is_file() and p.name.startswith("000000_0")]
    assert str(path).startswith(location)
    with open(path, "rb") as f:
        read = list(pyorc.Reader(f, struct_repr=pyorc.StructRepr.DICT))
    assert read == [{"id": row["id"], "addr": row["addr"]} for row in rows[7:]]


def test_a_major_compaction_of_a_table_with_nested_nulls_keeps_every_value(tmp_path):
    """Inserts, a delete, a major compaction: the new base, read with pyarrow, holds exactly the
    surviving rows as they were inserted (the merge slices its batches before writing)."""
    from acid_core.compaction.worker import run_worker
    from acid_core.metastore import Column, CompactionType, TableDefinition
    from acid_core.orc.schema import ROW_ID_COLUMN
    from acid_core.writes.transaction import Warehouse

    rows = _patterned_rows(30_000)
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    try:
        warehouse.metastore.create_table(
            TableDefinition(
                "default.n",
                columns=tuple(Column(name, text) for name, text in ROW_TYPE.columns),
                properties={"transactional": "true"},
            )
        )
        for start in range(0, 30_000, 10_000):
            with warehouse.transaction(heartbeat_seconds=None) as txn:
                txn.insert("default.n", _row_table(rows[start : start + 10_000]))
        live = warehouse.read("default.n", with_row_id=True)
        doomed = [i for i in range(30_000) if i % 7 == 0]
        with warehouse.transaction(heartbeat_seconds=None) as txn:
            txn.delete("default.n", live.take(pa.array(doomed)).select([ROW_ID_COLUMN]))
        warehouse.metastore.enqueue_compaction("default.n", None, CompactionType.MAJOR)
        [outcome] = run_worker(warehouse.metastore)
        assert outcome.status == "compacted"
        location = warehouse.metastore.get_table("default.n").location
    finally:
        warehouse.close()
    [base] = [p for p in (tmp_path / "wh").rglob("bucket_00000") if p.parent.name.startswith("base_")]
    assert str(base).startswith(location)
    assert _read_rows(base) == [_as_pyorc(row) for row in rows if row["id"] % 7]


def test_a_shifted_map_of_structs_is_named(tmp_path):
    """Found by the property above: ORC numbers a map's key and value as its children, where Arrow
    has one entries struct; the struct column IDs were one off after a map, and a file whose only
    shifted values were a map's was passed."""
    rows = _numbered(
        [
            {
                "addr": {"city": "c0", "zip": 0},
                "deep": {"inner": {"x": 0}, "y": 0},
                "tags": None,
                "props": [("k", None), ("j", {"city": "c0", "zip": 0})],
            }
        ]
    )
    events = insert_events(_row_table(rows), write_id=3, bucket_id=0, row_type=ROW_TYPE)
    path = tmp_path / "bucket_00000"
    orc.write_table(pa.Table.from_batches([events]), str(path))
    assert _read_rows(path)[0]["props"]["j"] == {"city": "", "zip": 0}  # read shifted
    with open(path, "rb") as f:
        assert shifted_struct_columns(f) == ["row.props.value.city", "row.props.value.zip"]
