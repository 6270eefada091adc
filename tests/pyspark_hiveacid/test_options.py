"""Options of the hiveacid data source: parsing, defaults and one-line errors (no Spark needed)."""

from __future__ import annotations

import os

import pytest

from acid_core.errors import InvalidDataSourceOptionError, InvalidWarehouseError
from acid_core.writeids import ValidTxnList, ValidWriteIdList
from pyspark_hiveacid.options import DEFAULT_LEASE_TTL_SECONDS, Engine, parse_source_options


def test_parse_options_defaults_from_environment():
    parsed = parse_source_options(
        {"path": "db.t"}, {"ACIDFLOW_WAREHOUSE": "/wh", "ACIDFLOW_METASTORE": "sqlite://"}
    )
    assert parsed.table == "db.t"
    assert parsed.warehouse == "/wh"
    assert parsed.metastore == "sqlite://"
    assert parsed.snapshot == "latest"
    assert parsed.lease_id is None
    assert parsed.lease_ttl == DEFAULT_LEASE_TTL_SECONDS
    assert parsed.columns is None
    assert parsed.partitions is None
    assert parsed.pushdown is False
    assert parsed.engine is Engine.AUTO


def test_parse_options_relative_warehouse_becomes_absolute():
    parsed = parse_source_options({"table": "t", "warehouse": "rel/wh"}, {})
    assert parsed.warehouse == os.path.abspath("rel/wh")


def test_parse_options_keys_are_case_insensitive_and_lease_id_parses():
    parsed = parse_source_options({"PATH": "db.t", "Snapshot": "12", "Lease_TTL": "60"}, {})
    assert parsed.lease_id == 12
    assert parsed.lease_ttl == 60.0


def test_parse_options_explicit_lists_parse():
    parsed = parse_source_options(
        {"path": "db.t", "snapshot": "db.t:7:9223372036854775807::3", "txns": "9:9223372036854775807::"}, {}
    )
    assert parsed.snapshot is None
    assert parsed.write_ids == ValidWriteIdList(7, aborted_ids=(3,), table_name="db.t")
    assert parsed.txns == ValidTxnList(9)


def test_parse_options_columns_partitions_and_pushdown_parse():
    parsed = parse_source_options(
        {"path": "t", "columns": "ROW__ID, id", "partitions": "p=a; p=b/q=1/", "pushdown": "TRUE"}, {}
    )
    assert parsed.columns == ("row__id", "id")
    assert parsed.partitions == ("p=a", "p=b/q=1")
    assert parsed.pushdown is True


@pytest.mark.parametrize(
    ("text", "engine"),
    [("auto", Engine.AUTO), ("JVM", Engine.JVM), (" python ", Engine.PYTHON)],
    ids=["auto", "jvm-upper-case", "python-spaces"],
)
def test_parse_options_engine_parses_case_insensitively(text, engine):
    assert parse_source_options({"path": "t", "Engine": text}, {}).engine is engine


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "Invalid hiveacid option table=''; expected a table name"),
        (
            {"path": "t", "snapshot": "yesterday"},
            "Invalid hiveacid option snapshot='yesterday'; expected 'latest'",
        ),
        ({"path": "t", "snapshot": "0"}, "Invalid hiveacid option snapshot='0'"),
        ({"path": "t", "snapshot": "db.t:x:y"}, "Invalid hiveacid option snapshot='db.t:x:y'"),
        ({"path": "t", "txns": "5:9::"}, "Invalid hiveacid option txns='5:9::'; expected txns only with"),
        (
            {"path": "t", "lease_ttl": "-1"},
            "Invalid hiveacid option lease_ttl='-1'; expected a positive number",
        ),
        ({"path": "t", "batch_rows": "many"}, "Invalid hiveacid option batch_rows='many'"),
        ({"path": "t", "columns": "a,,b"}, "Invalid hiveacid option columns='a,,b'"),
        ({"path": "t", "partitions": "a"}, "Invalid hiveacid option partitions='a'"),
        ({"path": "t", "pushdown": "yes"}, "Invalid hiveacid option pushdown='yes'; expected true or false"),
        (
            {"path": "t", "engine": "native"},
            "Invalid hiveacid option engine='native'; expected auto, jvm or python",
        ),
        ({"path": "t", "colums": "a"}, "Invalid hiveacid option colums='a'; expected one of"),
    ],
    ids=[
        "no-table",
        "bad-snapshot",
        "lease-zero",
        "bad-list",
        "txns-without-list",
        "negative-ttl",
        "bad-batch",
        "empty-column",
        "bad-partition",
        "bad-pushdown",
        "bad-engine",
        "typo",
    ],
)
def test_parse_options_bad_value_raises_naming_it(options, message):
    with pytest.raises(InvalidDataSourceOptionError) as error:
        parse_source_options(options, {})
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("s3://bucket/wh/", "s3://bucket/wh"),
        ("hdfs://nn:8020/wh", "hdfs://nn:8020/wh"),
        ("file:///wh", "/wh"),
    ],
    ids=["s3", "hdfs", "file"],
)
def test_parse_options_warehouse_uri_stays_a_uri(given, expected):
    """abspath made option('warehouse', 's3://b/wh') the local directory ./s3:/b/wh (issue 22)."""
    assert parse_source_options({"table": "t", "warehouse": given}, {}).warehouse == expected
    assert parse_source_options({"table": "t"}, {"ACIDFLOW_WAREHOUSE": given}).warehouse == expected


def test_parse_options_warehouse_unknown_scheme_raises():
    with pytest.raises(InvalidWarehouseError, match=r"^Invalid warehouse 'bogus://x/y' \(option warehouse\)"):
        parse_source_options({"table": "t", "warehouse": "bogus://x/y"}, {})
