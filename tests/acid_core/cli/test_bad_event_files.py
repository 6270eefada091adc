"""Event files Hive never writes, through ``read``, ``sql SELECT`` and ``compact``: one rule for all three.

- two equal events (row ID and currentTransaction) in one file: returned once, the first (Hive's
  ``OrcRawRecordMerger`` collapses equal keys), and ``compact`` writes that one row;
- events out of row-ID order in one file: refused, naming the input file (not the compactor's
  staging output);
- a row column of another type than the table's: refused, naming the file, the column and both types.
"""

from __future__ import annotations

import json

import pytest

from acid_core.cli.app import main
from tests.acid_core.orc.acid_files import bucket_property, write_events

B0 = bucket_property(0)
D1 = "delta_0000001_0000001_0000/bucket_00000"
COMMANDS = {
    "read": lambda wh: ["read", f"{wh}/t"],
    "sql": lambda wh: ["sql", "--warehouse", wh, "SELECT * FROM t"],
    "compact": lambda wh: ["compact", "--warehouse", wh, "--table", "t", "--type", "major"],
}


@pytest.fixture
def warehouse(tmp_path, capsys):
    wh = str(tmp_path / "wh")
    create = "CREATE TABLE t (k bigint, v string) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
    inserts = ["INSERT INTO t VALUES (1, 'a')", "INSERT INTO t VALUES (9, 'z')"]
    assert main(["sql", "--warehouse", wh, create, *inserts]) == 0
    capsys.readouterr()
    return wh


def _events(wh: str, events, **options) -> str:
    path = f"{wh}/t/{D1}"
    write_events(path, events, **options)
    return path


@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_equal_events_in_one_delta_are_one_row_for_every_command(warehouse, capsys, command):
    _events(
        warehouse,
        [(0, 1, B0, 0, 1, (1, "a")), (0, 1, B0, 0, 1, (1, "copy")), (0, 1, B0, 1, 1, (2, "b"))],
    )
    assert main(COMMANDS[command](warehouse)) == 0
    out = capsys.readouterr().out
    if command == "compact":
        assert main(["read", f"{warehouse}/t"]) == 0
        out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip()]
    if command == "sql":
        assert [line.split() for line in lines] == [["k", "v"], ["1", "a"], ["2", "b"], ["9", "z"]]
    else:
        assert [json.loads(line) for line in lines] == [
            {"k": 1, "v": "a"},
            {"k": 2, "v": "b"},
            {"k": 9, "v": "z"},
        ]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_events_out_of_order_in_one_delta_are_refused_naming_the_input_file(warehouse, capsys, command):
    path = _events(
        warehouse, [(0, 1, B0, 0, 1, (1, "a")), (0, 1, B0, 2, 1, (3, "c")), (0, 1, B0, 1, 1, (2, "b"))]
    )
    assert main(COMMANDS[command](warehouse)) == 1
    err = capsys.readouterr().err
    assert (
        f"Corrupt ACID data at {path!r}: event 2 has row ID (writeid=1, bucketid=536870912, rowid=1) " in err
    )
    assert ".acidflow-staging-" not in err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_row_column_of_another_type_is_refused_naming_file_column_and_types(warehouse, capsys, command):
    path = _events(warehouse, [(0, 1, B0, 0, 1, ("a", "x"))], row_type="struct<k:string,v:string>")
    assert main(COMMANDS[command](warehouse)) == 1
    err = capsys.readouterr().err
    assert (
        f"Corrupt ACID data at {path!r}: row column 1 ('k') is string and does not convert to the table's "
        "column 'k' of type bigint (Failed to parse string: 'a' as a scalar of type int64)"
    ) in err
    assert "unexpected" not in err
