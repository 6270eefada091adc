"""``acidflow read``: output formats, row-ID order, projection, limit and errors.

The parser is built by ``acid_core.cli.app.build_parser`` exactly as ``acidflow`` builds it; errors are
checked as ``AcidError``s, and once through ``acid_core.cli.main`` (one line, exit code 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acid_core.cli.app import build_parser
from acid_core.errors import AcidError, NoSuchColumnError, NotAnAcidFileError
from tests.acid_core.orc.acid_files import bucket_property, deletes, inserts, write_events

HIVE_REAL = Path(__file__).resolve().parents[2] / "data" / "hive-real"
B0, B1 = bucket_property(0), bucket_property(1)


def _run(argv: list[str]) -> int:
    parser = build_parser(["read"])
    args = parser.parse_args(["read", *argv])
    return args.handler(args)


@pytest.fixture
def table(tmp_path):
    # Written bucket 1 first and write ID 2 before 1 on purpose: output order must not follow files.
    write_events(tmp_path / "delta_0000002_0000002_0000/bucket_00001", inserts(2, 1, [(21, "b1")]))
    write_events(tmp_path / "delta_0000002_0000002_0000/bucket_00000", inserts(2, 0, [(20, "b0")]))
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00001", inserts(1, 1, [(11, "x"), (12, "y")]))
    write_events(tmp_path / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(10, "z")]))
    write_events(tmp_path / "delete_delta_0000003_0000003_0000/bucket_00001", deletes(3, [(1, B1, 0)]))
    return tmp_path


def test_read_jsonl_row_id_first_in_row_id_order(table, capsys):
    assert _run([str(table), "--row-id"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [next(iter(row)) for row in rows] == ["row__id"] * 4
    assert rows == [
        {"row__id": {"writeid": 1, "bucketid": B0, "rowid": 0}, "k": 10, "v": "z"},
        {"row__id": {"writeid": 1, "bucketid": B1, "rowid": 1}, "k": 12, "v": "y"},
        {"row__id": {"writeid": 2, "bucketid": B0, "rowid": 0}, "k": 20, "v": "b0"},
        {"row__id": {"writeid": 2, "bucketid": B1, "rowid": 0}, "k": 21, "v": "b1"},
    ]


def test_read_snapshot_columns_and_limit(table, capsys):
    assert (
        _run([str(table), "--write-ids", "db.t:2:9223372036854775807::", "--columns", "v", "--limit", "2"])
        == 0
    )
    assert capsys.readouterr().out.splitlines() == ['{"v": "z"}', '{"v": "x"}']


def test_read_csv_flattens_row_id(table, capsys):
    assert _run([str(table), "--row-id", "--format", "csv", "--columns", "k", "--limit", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        '"row__id.writeid","row__id.bucketid","row__id.rowid","k"',
        f"1,{B0},0,10",
    ]


def test_read_table_format_names_columns(table, capsys):
    assert _run([str(table), "--format", "table", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "Rows of" in out
    assert "10" in out
    assert '"z"' in out


def test_read_hive_real_original_with_delete_prints_24_rows(capsys):
    assert _run([str(HIVE_REAL / "trino_original_file_with_delete_delta"), "--columns", "n_nationkey"]) == 0
    keys = [json.loads(line)["n_nationkey"] for line in capsys.readouterr().out.splitlines()]
    assert keys == list(range(24))


def test_read_plain_file_in_delta_raises_acid_error():
    with pytest.raises(NotAnAcidFileError, match=r"is not an ACID event file"):
        _run([str(HIVE_REAL / "trino_plain_file_in_delta")])


def test_read_unknown_column_raises_acid_error(table):
    with pytest.raises(NoSuchColumnError):
        _run([str(table), "--columns", "nope"])


def test_read_missing_directory_raises_acid_error(tmp_path):
    with pytest.raises(AcidError, match=r"does not exist"):
        _run([str(tmp_path / "missing")])


@pytest.mark.parametrize("limit", ["-1", "x"], ids=["negative", "not-a-number"])
def test_read_bad_limit_is_a_usage_error(limit, capsys):
    with pytest.raises(SystemExit) as raised:
        _run([".", "--limit", limit])
    assert raised.value.code == 2
    assert f"invalid limit {limit!r}" in capsys.readouterr().err


def test_read_through_acidflow_main_prints_one_line_and_exits_1(capsys):
    from acid_core.cli import app as cli

    assert cli.main(["read", str(HIVE_REAL / "trino_plain_file_in_delta")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("acidflow: error: File ")
    assert err.count("\n") == 1


def test_read_jsonl_values_of_every_kind(tmp_path, capsys):
    import datetime as dt
    import decimal

    row_type = "struct<d:decimal(10,2),dt:date,ts:timestamp,bin:binary,m:map<string,int>,l:array<int>>"
    row = (
        decimal.Decimal("1.50"),
        dt.date(2024, 1, 2),
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        b"\x00\x01",
        {"a": 1},
        [1, 2],
    )
    write_events(
        tmp_path / "delta_0000001_0000001_0000/bucket_00000", [(0, 1, B0, 0, 1, row)], row_type=row_type
    )
    assert _run([str(tmp_path)]) == 0
    # Decimals as strings (no precision lost), ISO dates and times, base64 binary, maps as pairs.
    assert capsys.readouterr().out == (
        '{"d": "1.50", "dt": "2024-01-02", "ts": "2024-01-02T03:04:05", "bin": "AAE=", "m": [["a", 1]], '
        '"l": [1, 2]}\n'
    )


def test_read_into_a_closed_pipe_exits_quietly():
    import subprocess
    import sys

    # 5,000 rows (~150 KB) do not fit a pipe buffer: the reader closes after one line, like `| head -1`.
    process = subprocess.Popen(
        [sys.executable, "-m", "acid_core.cli", "read", str(HIVE_REAL / "orc_acid5k")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert process.stdout is not None
    assert json.loads(process.stdout.readline()) == {"i": 276, "j": 605, "k": 48}
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (0, b"")
