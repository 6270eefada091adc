"""``acidflow check``: files written with pyarrow's nested-struct loss are named, correct ones are not.

Damaged files are made the way acidflow wrote them before the fix: pyarrow's bare ``ORCWriter`` on
structs that hold nulls below the top level. Correct files: the same values through acidflow's
writer (the fix), and the real Hive, Trino and Impala files of ``tests/data/hive-real`` (delete
deltas among them: a null ``row`` struct in every event).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from acid_core.cli import main
from acid_core.fs import LocalFileIO
from acid_core.orc.schema import RowType
from acid_core.orc.writer import insert_events, write_event_file

HIVE_REAL = Path(__file__).resolve().parents[2] / "data" / "hive-real"
ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.int32())])
ROW_TYPE = RowType.of(
    [
        ("id", "bigint"),
        ("addr", "struct<city:string,zip:int>"),
        ("tags", "array<struct<city:string,zip:int>>"),
    ]
)


def _rows(count: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(count), pa.int64()),
            "addr": pa.array(
                [None if i % 3 == 0 else {"city": f"c{i}", "zip": i} for i in range(count)], ADDRESS
            ),
            "tags": pa.array(
                [None if i % 4 == 0 else [None, {"city": "t", "zip": i}] for i in range(count)],
                pa.list_(ADDRESS),
            ),
        }
    )


def _bare(path: Path, table: pa.Table) -> Path:
    """A file as pyarrow's own writer writes it (acidflow before the fix)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    orc.write_table(table, str(path))
    return path


def _events(count: int) -> pa.RecordBatch:
    return insert_events(_rows(count), write_id=5, bucket_id=0, row_type=ROW_TYPE)


def test_a_damaged_base_is_named_and_a_correct_delta_is_not(tmp_path, capsys):
    table = tmp_path / "t"
    damaged = _bare(table / "base_0000005" / "bucket_00000", pa.Table.from_batches([_events(40)]))
    (table / "delta_0000006_0000006_0000").mkdir(parents=True)
    write_event_file(
        LocalFileIO(), str(table / "delta_0000006_0000006_0000" / "bucket_00000"), [_events(40)], ROW_TYPE
    )
    (table / "base_0000005" / "_orc_acid_version").write_text("2")
    assert main(["check", str(table)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"damaged {damaged}: row.addr.city, row.addr.zip, row.tags.element.city, row.tags.element.zip",
        "checked 2 ORC file(s) under 1 path: 1 damaged",
    ]


def test_json_names_each_damaged_file_then_the_summary(tmp_path, capsys):
    first = _bare(
        tmp_path / "a" / "000000_0", _rows(10).select(["addr"]).cast(pa.schema([("addr", ADDRESS)]))
    )
    nested = pa.table(
        {"s": pa.StructArray.from_arrays([_rows(10).column("addr").combine_chunks()], names=["addr"])}
    )
    second = _bare(tmp_path / "b" / "000000_0", nested)
    (tmp_path / "b" / "README").write_text("not orc")
    assert main(["check", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        {"path": str(second), "columns": ["s.addr.city", "s.addr.zip"]},
        {"checked": 2, "damaged": 1, "not_orc": [str(tmp_path / "b" / "README")]},
    ]
    assert first.exists()  # a top-level struct is written right: not named


def test_real_hive_trino_and_impala_files_are_not_damaged(tmp_path, capsys):
    copy = tmp_path / "hive-real"
    shutil.copytree(HIVE_REAL, copy)
    assert main(["check", str(copy), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["damaged"] == 0
    assert summary["checked"] >= 10
    assert summary["not_orc"] == [str(copy / "README.md")]


def test_side_files_and_hidden_directories_are_skipped(tmp_path, capsys):
    _bare(tmp_path / "t" / ".hive-staging_1" / "bucket_00000", pa.Table.from_batches([_events(12)]))
    _bare(tmp_path / "t" / "_tmp" / "bucket_00000", pa.Table.from_batches([_events(12)]))
    (tmp_path / "t" / "_orc_acid_version").write_text("2")
    assert main(["check", str(tmp_path / "t")]) == 0
    assert capsys.readouterr().out == "checked 0 ORC file(s) under 1 path: 0 damaged\n"


def test_a_file_path_is_checked_and_nothing_changes(tmp_path, capsys):
    damaged = _bare(tmp_path / "bucket_00000", pa.Table.from_batches([_events(30)]))
    before = damaged.read_bytes()
    assert main(["check", str(damaged)]) == 1
    assert capsys.readouterr().out.startswith(f"damaged {damaged}: row.addr.city")
    assert damaged.read_bytes() == before


@pytest.mark.parametrize("path", ["missing", "missing/deeper"])
def test_a_missing_path_is_one_line(tmp_path, capsys, path):
    assert main(["check", str(tmp_path / path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"acidflow: error: Cannot check '{tmp_path / path}': nothing is there; expected a file or a directory\n"
    )


def test_without_a_path_every_table_of_the_metastore_is_checked(tmp_path, capsys):
    from acid_core.metastore import Column, TableDefinition
    from acid_core.writes.transaction import Warehouse

    warehouse_dir = tmp_path / "wh"
    warehouse = Warehouse.open(str(warehouse_dir), heartbeat_seconds=None)
    try:
        for name in ("default.good", "default.old", "default.empty"):
            warehouse.metastore.create_table(
                TableDefinition(
                    name,
                    columns=tuple(Column(n, t) for n, t in ROW_TYPE.columns),
                    properties={"transactional": "true"},
                )
            )
        for name in ("default.good", "default.old"):
            with warehouse.transaction(heartbeat_seconds=None) as txn:
                txn.insert(name, _rows(20))
        old = warehouse.metastore.get_table("default.old").location
    finally:
        warehouse.close()
    # default.old's base as acidflow wrote it before the fix.
    damaged = _bare(Path(old) / "base_0000009" / "bucket_00000", pa.Table.from_batches([_events(20)]))
    assert main(["check", "--warehouse", str(warehouse_dir), "--json"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[:-1] == [
        {
            "path": str(damaged),
            "columns": ["row.addr.city", "row.addr.zip", "row.tags.element.city", "row.tags.element.zip"],
        }
    ]
    assert lines[-1]["damaged"] == 1
    assert lines[-1]["checked"] == 3  # good's delta, old's delta and old's base; empty has no files


@pytest.mark.parametrize(
    "store",
    [
        pytest.param("s3_env", marks=pytest.mark.integration("s3"), id="s3"),
        pytest.param("hdfs_env", marks=pytest.mark.integration("hdfs"), id="hdfs"),
    ],
)
def test_a_damaged_file_on_s3_or_hdfs_is_named(store, request, tmp_path, capsys):
    from acid_core.fs import file_io_for

    local = _bare(tmp_path / "bucket_00000", pa.Table.from_batches([_events(30)]))
    table = f"{request.getfixturevalue(store).warehouse}/t"
    file_io, root = file_io_for(table)
    with file_io.open_output(file_io.join(root, "base_0000005", "bucket_00000")) as out:
        out.write(local.read_bytes())
    with file_io.open_output(file_io.join(root, "base_0000005", "_orc_acid_version")) as out:
        out.write(b"2")
    assert main(["check", table, "--json"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line.get("columns") for line in lines[:-1]] == [
        ["row.addr.city", "row.addr.zip", "row.tags.element.city", "row.tags.element.zip"]
    ]
    assert lines[-1] == {"checked": 1, "damaged": 1, "not_orc": []}
