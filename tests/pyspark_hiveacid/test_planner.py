"""The JVM read path's planner: the JSON-lines protocol, plans equal to plan_scan, pruning and encoding.

Real embedded warehouse (SQLite metastore, ORC files written by the real write path). The protocol
runs through a real ``python -m pyspark_hiveacid.planner`` subprocess; pruning and value encoding
run in-process. No Spark session.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

from acid_core.fs import file_io_for
from acid_core.metastore import Column, TableDefinition
from acid_core.metastore.port import Table, TableType
from acid_core.orc.reader import plan_scan
from acid_core.writeids import parse_valid_write_id_list
from pyspark_hiveacid.planner import PlannerServer, filter_from_json, jvm_path, row_type_of, spark_value
from pyspark_hiveacid.source import _evaluate, _partition_values

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def wh(tmp_path):
    from acid_core.writes.transaction import Warehouse
    from tests.acid_core.compaction.histories import random_history

    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    random_history(warehouse, 5, partitioned=True, buckets=2, txns=8)
    yield warehouse
    warehouse.close()


def _options(wh: Any, table: str = "default.t", **extra: str) -> dict[str, str]:
    return {"path": table, "warehouse": wh.location, **extra}


def _expected_partitions(
    wh: Any, table_name: str, write_ids: str, txns: Any = None, keep: Any = lambda values: True
) -> list[Any]:
    """What the plan must list: plan_scan(...).for_bucket(b) of every written partition."""
    table = wh.metastore.get_table(table_name)
    locations = [(p.location, p.values) for p in wh.metastore.list_partitions(table_name)] or [
        (table.location, ())
    ]
    expected = []
    for location, values in locations:
        if not keep(values):
            continue
        file_io, path = file_io_for(location)
        if file_io.info(path) is None:
            continue
        plan = plan_scan(file_io, path, parse_valid_write_id_list(write_ids), txns)
        for bucket in plan.bucket_ids:
            part = plan.for_bucket(bucket)
            expected.append(
                (
                    location,
                    bucket,
                    [(f.path, f.kind.value, f.length) for f in part.data_files],
                    [(f.path, f.length) for f in part.delete_files],
                )
            )
    return expected


def _listed(partitions: list[dict[str, Any]]) -> list[Any]:
    return [
        (
            p["location"],
            p["bucket"],
            [(f["path"], f["kind"], f["length"]) for f in p["files"]],
            [(f["path"], f["length"]) for f in p["deletes"]],
        )
        for p in partitions
    ]


# -- the protocol, through a real subprocess --------------------------------------------------------


def _run_planner(requests: list[str]) -> tuple[int, list[str], str]:
    """Send raw lines to a planner process, close stdin; returns (exit code, response lines, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(
        [sys.executable, "-m", "pyspark_hiveacid.planner"],
        input="".join(line + "\n" for line in requests),
        capture_output=True,
        text=True,
        env=env,
        cwd=str(ROOT),
        timeout=120,
        check=False,
    )
    return completed.returncode, completed.stdout.splitlines(), completed.stderr


def test_planner_process_answers_schema_plan_renew_release_and_exits_0_at_eof(wh):
    options = _options(wh, lease_ttl="120")
    requests = [
        json.dumps({"id": 1, "op": "schema", "options": options}),
        json.dumps({"id": 2, "op": "plan", "options": options, "filters": []}),
        "this is not json",
        json.dumps({"id": 3, "op": "explode", "options": options}),
        json.dumps({"id": 4, "op": "schema", "options": _options(wh, "default.missing")}),
        json.dumps({"id": 5, "op": "renew", "options": options, "lease_id": 1, "ttl": 300.0}),
        json.dumps({"id": 6, "op": "release", "options": options, "lease_id": 1}),
        json.dumps({"id": 7, "op": "release", "options": options, "lease_id": 1}),
        json.dumps({"id": 8, "op": "renew", "options": options, "lease_id": 1}),
        json.dumps(
            {
                "id": 9,
                "op": "plan",
                "options": options,
                "filters": [{"op": "EqualTo", "column": "p", "value": "a"}],
            }
        ),
    ]
    code, lines, stderr = _run_planner(requests)
    assert code == 0, stderr
    assert len(lines) == len(requests)
    responses = [json.loads(line) for line in lines]
    assert [r["id"] for r in responses] == [1, 2, None, 3, 4, 5, 6, 7, 8, 9]

    schema, plan, not_json, unknown_op, missing, renew, release, again, late_renew, pruned = responses
    whole = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    assert schema == {
        "id": 1,
        "ok": True,
        "schema": whole,
        "table_schema": whole,
        "partition_columns": ["p"],
        "data_columns": ["id", "v"],
    }

    assert plan["ok"] is True
    assert plan["lease_id"] == 1
    assert plan["renew"] is True
    assert plan["lease_ttl"] == 120.0
    assert plan["row_type"] == "struct<id:int,v:string>"
    write_ids = plan["write_ids"]
    assert (
        write_ids == wh.metastore.get_valid_write_ids("default.t", wh.metastore.get_valid_txns()).to_string()
    )
    assert _listed(plan["partitions"]) == _expected_partitions(wh, "default.t", write_ids)
    assert {tuple(p["values"]) for p in plan["partitions"]} == {("a",), ("b",)}

    assert not_json["ok"] is False
    assert not_json["kind"] == "InvalidMetastoreRequestError"
    assert not_json["error"].startswith(
        "acidflow: error: Invalid hiveacid planner request line 'this is not json'"
    )
    assert unknown_op["ok"] is False
    assert unknown_op["kind"] == "InvalidMetastoreRequestError"
    assert "'explode'" in unknown_op["error"]
    assert missing["ok"] is False
    assert missing["kind"] == "NoSuchTableError"
    assert missing["error"].startswith("acidflow: error: ")
    assert all("\n" not in r.get("error", "") for r in responses)

    assert renew == {"id": 5, "ok": True}
    assert release == {"id": 6, "ok": True}
    assert again == {"id": 7, "ok": True}  # releasing twice is fine
    assert late_renew["ok"] is False
    assert late_renew["kind"] == "NoSuchLeaseError"

    assert pruned["ok"] is True
    assert isinstance(pruned["lease_id"], int)
    assert pruned["renew"] is True
    assert {tuple(p["values"]) for p in pruned["partitions"]} == {("a",)}
    assert _listed(pruned["partitions"]) == _expected_partitions(
        wh, "default.t", pruned["write_ids"], keep=lambda values: values == ("a",)
    )
    assert "Traceback" not in stderr


def test_planner_process_empty_input_exits_0_without_output():
    code, lines, _ = _run_planner([])
    assert (code, lines) == (0, [])


# -- snapshots: lease, user lease, explicit write IDs -----------------------------------------------


def test_plan_with_users_lease_does_not_renew_it(wh):
    lease = wh.metastore.take_lease("default.t", 60.0)
    server = PlannerServer()
    try:
        response = server.handle(
            {"id": 1, "op": "plan", "options": _options(wh, snapshot=str(lease.lease_id))}
        )
    finally:
        server.close()
    assert (response["lease_id"], response["renew"]) == (lease.lease_id, False)
    assert response["write_ids"] == lease.write_ids.to_string()
    assert _listed(response["partitions"]) == _expected_partitions(
        wh, "default.t", response["write_ids"], lease.txns
    )


def test_plan_with_explicit_write_ids_takes_no_lease(wh):
    write_ids = wh.metastore.get_valid_write_ids("default.t", wh.metastore.get_valid_txns()).to_string()
    server = PlannerServer()
    try:
        response = server.handle({"id": 1, "op": "plan", "options": _options(wh, snapshot=write_ids)})
    finally:
        server.close()
    assert (response["lease_id"], response["renew"]) == (None, False)
    assert wh.metastore.list_leases("default.t") == []
    assert _listed(response["partitions"]) == _expected_partitions(wh, "default.t", write_ids)


def test_schema_with_columns_option_keeps_the_whole_table_schema_beside_it(wh):
    """The JVM reader types partition values and maps row fields by the table's own columns, whatever
    option ``columns`` (or a user schema) narrows the DataFrame to."""
    server = PlannerServer()
    try:
        response = server.handle({"id": 1, "op": "schema", "options": _options(wh, columns="row__id,v")})
    finally:
        server.close()
    assert [f["name"] for f in response["schema"]["fields"]] == ["row__id", "v"]
    assert [f["name"] for f in response["table_schema"]["fields"]] == ["id", "v", "p"]
    assert (response["data_columns"], response["partition_columns"]) == (["id", "v"], ["p"])


def test_planner_reuses_one_metastore_per_warehouse(wh):
    server = PlannerServer()
    try:
        for request_id in range(3):
            server.handle({"id": request_id, "op": "schema", "options": _options(wh)})
        assert len(server._stores) == 1
    finally:
        server.close()
    assert server._stores == {}


def test_planner_error_response_is_one_line_with_kind(wh):
    server = PlannerServer()
    try:
        line = server.handle_line(
            json.dumps({"id": 3, "op": "plan", "options": {"path": "t", "pushdown": "maybe"}})
        )
        assert json.loads(line) == {
            "id": 3,
            "ok": False,
            "error": "acidflow: error: Invalid hiveacid option pushdown='maybe'; expected true or false; "
            "hint: see the README section 'Read Hive ACID tables from PySpark'",
            "kind": "InvalidDataSourceOptionError",
        }
        assert json.loads(server.handle_line("[1, 2]"))["id"] is None
        assert (
            json.loads(server.handle_line('{"id": true, "op": "schema"}'))["kind"]
            == "InvalidMetastoreRequestError"
        )
    finally:
        server.close()


# -- typed partitions: values, pruning, null partition ----------------------------------------------


@pytest.fixture
def typed(tmp_path):
    from acid_core.writes.transaction import Warehouse

    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    warehouse.metastore.create_table(
        TableDefinition(
            "default.typed",
            columns=(Column("id", "int"), Column("v", "string")),
            partition_keys=(
                Column("ds", "date"),
                Column("amount", "decimal(10,2)"),
                Column("region", "string"),
            ),
            properties={"transactional": "true"},
        )
    )
    with warehouse.transaction(heartbeat_seconds=None) as txn:
        txn.insert(
            "default.typed",
            pa.table(
                {
                    "id": pa.array([1, 2, 3], pa.int32()),
                    "v": ["x", "y", "z"],
                    "ds": [dt.date(2024, 1, 2), dt.date(1969, 12, 31), dt.date(2024, 1, 2)],
                    "amount": pa.array(
                        [decimal.Decimal("1.50"), decimal.Decimal("-2.00"), decimal.Decimal("1.50")],
                        pa.decimal128(10, 2),
                    ),
                    "region": ["eu", None, "us"],
                }
            ),
        )
        txn.commit()
    yield warehouse
    warehouse.close()


def _plan(wh: Any, table: str, filters: list[Any], **options: str) -> dict[str, Any]:
    server = PlannerServer()
    try:
        return server.handle(
            {"id": 1, "op": "plan", "options": _options(wh, table, **options), "filters": filters}
        )
    finally:
        server.close()


def test_plan_values_are_sparks_internal_form(typed):
    response = _plan(typed, "default.typed", [])
    assert sorted(p["values"] for p in response["partitions"]) == [
        [-1, "-2.00", None],  # 1969-12-31 is day -1; the default partition is null
        [19724, "1.50", "eu"],
        [19724, "1.50", "us"],
    ]
    assert _listed(response["partitions"]) == _expected_partitions(
        typed, "default.typed", response["write_ids"]
    )


@pytest.mark.parametrize(
    ("filters", "regions"),
    [
        ([{"op": "EqualTo", "column": "ds", "value": "2024-01-02"}], {"eu", "us"}),
        ([{"op": "LessThan", "column": "DS", "value": "2000-01-01"}], {None}),
        ([{"op": "GreaterThan", "column": "amount", "value": "0"}], {"eu", "us"}),
        ([{"op": "EqualTo", "column": "amount", "value": "-2"}], {None}),
        ([{"op": "IsNull", "column": "region"}], {None}),
        ([{"op": "IsNotNull", "column": "region"}], {"eu", "us"}),
        ([{"op": "Not", "child": {"op": "EqualTo", "column": "region", "value": "eu"}}], {"us"}),
        ([{"op": "In", "column": "region", "values": ["us", None]}], {"us"}),
        ([{"op": "EqualNullSafe", "column": "region", "value": None}], {None}),
        (
            [
                {"op": "EqualTo", "column": "region", "value": "eu"},
                {"op": "EqualTo", "column": "ds", "value": "2024-01-02"},
            ],
            {"eu"},
        ),
        ([{"op": "EqualTo", "column": "id", "value": 1}], {"eu", "us", None}),
        ([{"op": "StringStartsWith", "column": "region", "value": "e"}], {"eu", "us", None}),
        ([{"op": "EqualTo", "column": "ds", "value": "not a date"}], {"eu", "us", None}),
        ([{"op": "EqualTo", "column": "ds", "value": 7}], {"eu", "us", None}),
        ([{"op": "Not", "child": {"op": "EqualTo", "column": "v", "value": "x"}}], {"eu", "us", None}),
    ],
    ids=[
        "date-eq",
        "date-lt-upper-case-column",
        "decimal-gt",
        "decimal-eq-other-scale",
        "is-null",
        "is-not-null",
        "not-eq-drops-null",
        "in-with-null",
        "null-safe-null",
        "two-filters",
        "data-column-ignored",
        "unknown-op-ignored",
        "bad-date-ignored",
        "wrong-type-ignored",
        "not-of-data-column-ignored",
    ],
)
def test_plan_prunes_with_converted_filters_regardless_of_pushdown(typed, filters, regions):
    response = _plan(typed, "default.typed", filters, pushdown="false")
    assert {p["values"][2] for p in response["partitions"]} == regions


def test_plan_partitions_option_and_filters_both_prune(typed):
    response = _plan(
        typed,
        "default.typed",
        [{"op": "IsNotNull", "column": "region"}],
        partitions="ds=2024-01-02/amount=1.50/region=us;ds=1969-12-31",
    )
    assert [p["values"] for p in response["partitions"]] == [[19724, "1.50", "us"]]


def test_plan_skips_a_partition_registered_but_never_written(typed):
    typed.metastore.add_partition(
        "default.typed",
        {"ds": "2030-01-01", "amount": "0.00", "region": "xx"},
        os.path.join(typed.location, "typed", "never"),
    )
    response = _plan(typed, "default.typed", [])
    assert "xx" not in {p["values"][2] for p in response["partitions"]}
    assert len(response["partitions"]) == 3


# -- encoding and conversion, pure ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "hive_type", "expected"),
    [
        (None, "date", None),
        ("eu", "varchar(5)", "eu"),
        ("e", "char(1)", "e"),
        (7, "tinyint", 7),
        (2**40, "bigint", 2**40),
        (True, "boolean", True),
        (1.5, "double", 1.5),
        (dt.date(1970, 1, 2), "date", 1),
        (dt.date(1969, 12, 31), "date", -1),
        (dt.datetime(1970, 1, 1, 0, 0, 1, 5), "timestamp", 1_000_005),
        (decimal.Decimal("-2.50"), "decimal(5,2)", "-2.50"),
        (b"\x00\xff", "binary", "AP8="),
    ],
    ids=[
        "null",
        "varchar",
        "char",
        "tinyint",
        "bigint",
        "boolean",
        "double",
        "date",
        "date-before-epoch",
        "timestamp-naive-utc",
        "decimal-keeps-scale",
        "binary-base64",
    ],
)
def test_spark_value_encodes_internal_form(value, hive_type, expected):
    assert spark_value(value, hive_type) == expected


def test_spark_value_timestamp_from_partition_path_is_micros():
    table = _table((Column("ts", "timestamp"),))
    typed = _partition_values(table, ("2024-01-02 03:04:05.123456789",))
    micros = spark_value(typed["ts"], "timestamp", "ts")
    expected = (dt.datetime(2024, 1, 2, 3, 4, 5, 123456) - dt.datetime(1970, 1, 1)) // dt.timedelta(
        microseconds=1
    )
    assert micros == expected  # nanoseconds truncated, as the reader's cast to Spark's timestamp does


def test_spark_value_unsupported_type_raises():
    from acid_core.errors import UnsupportedStatementError

    with pytest.raises(UnsupportedStatementError, match=r"plan partition column c of type array<int>"):
        spark_value([1], "array<int>", "c")


def test_row_type_quotes_unusual_names():
    table = _table(
        (), columns=(Column("id", "BIGINT"), Column("a b", "Decimal(5,2)"), Column("s", "varchar(3)"))
    )
    assert row_type_of(table) == "struct<id:bigint,`a b`:decimal(5,2),s:varchar(3)>"


def _table(partition_keys: tuple[Column, ...], columns: tuple[Column, ...] | None = None) -> Table:
    return Table(
        database="db",
        name="t",
        location="/wh/db.db/t",
        columns=columns or (Column("id", "int"),),
        partition_keys=partition_keys,
        bucket_columns=(),
        num_buckets=-1,
        properties={"transactional": "true"},
        table_type=TableType.ACID,
        external=False,
        owner=None,
        create_time=0.0,
    )


_KEYS = (
    Column("ds", "date"),
    Column("hr", "int"),
    Column("amount", "decimal(6,2)"),
    Column("region", "string"),
)
_FAMILIES = {"ds": "date", "hr": "integer", "amount": "decimal", "region": "string"}
_VALUES = {
    "ds": st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 1, 1)),
    "hr": st.integers(-5, 30),
    "amount": st.decimals(min_value=-100, max_value=100, places=2, allow_nan=False, allow_infinity=False),
    "region": st.sampled_from(["eu", "us", "ap"]),
}


def _json_value(value: object) -> object:
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _leaf(column: str) -> st.SearchStrategy[Any]:
    values = st.one_of(st.none(), _VALUES[column])
    comparisons = [EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual]
    return st.one_of(
        st.builds(lambda cls, v: cls((column,), v), st.sampled_from(comparisons), values),
        st.builds(lambda vs: In((column,), tuple(vs)), st.lists(values, min_size=1, max_size=3)),
        st.sampled_from([IsNull((column,)), IsNotNull((column,))]),
    )


_FILTERS = st.recursive(
    st.sampled_from(list(_FAMILIES)).flatmap(_leaf), lambda child: child.map(Not), max_leaves=3
)


def _to_json(f: Any) -> dict[str, Any]:
    if isinstance(f, Not):
        return {"op": "Not", "child": _to_json(f.child)}
    op = type(f).__name__
    if isinstance(f, (IsNull, IsNotNull)):
        return {"op": op, "column": f.attribute[0]}
    if isinstance(f, In):
        return {"op": op, "column": f.attribute[0], "values": [_json_value(v) for v in f.value]}
    return {"op": op, "column": f.attribute[0], "value": _json_value(f.value)}


@given(
    filter_=_FILTERS,
    row=st.fixed_dictionaries({k: st.one_of(st.none(), s) for k, s in _VALUES.items()}),
)
def test_filters_through_json_prune_like_the_originals(filter_, row):
    """A filter sent as JSON and rebuilt evaluates exactly as the Filter Spark pushed."""
    text = tuple("__HIVE_DEFAULT_PARTITION__" if row[k.name] is None else str(row[k.name]) for k in _KEYS)
    typed = _partition_values(_table(_KEYS), text)
    rebuilt = filter_from_json(json.loads(json.dumps(_to_json(filter_))), _FAMILIES)
    assert rebuilt is not None
    assert _evaluate(rebuilt, typed) is _evaluate(filter_, typed)


def test_plan_lists_what_the_python_reader_plans(typed):
    """Both read paths plan through source.load_read_plan: the same buckets and files."""
    from pyspark_hiveacid.source import HiveAcidDataSource

    write_ids = typed.metastore.get_valid_write_ids("default.typed", typed.metastore.get_valid_txns())
    options = _options(typed, "default.typed", snapshot=write_ids.to_string())
    source = HiveAcidDataSource(options)
    python: list[Any] = source.reader(source.schema()).partitions()
    response = _plan(typed, "default.typed", [], snapshot=write_ids.to_string())
    assert _listed(response["partitions"]) == [
        (
            p.location,
            p.bucket_id,
            [(f.path, f.kind.value, f.length) for f in p.plan.data_files],
            [(f.path, f.length) for f in p.plan.delete_files],
        )
        for p in python
    ]


@pytest.mark.parametrize(
    ("location", "path", "expected"),
    [
        ("/wh/t", "/wh/t/delta_0000001_0000001/bucket_00000", "/wh/t/delta_0000001_0000001/bucket_00000"),
        ("file:///wh/t", "/wh/t/base_0000001/bucket_00000", "/wh/t/base_0000001/bucket_00000"),
        (
            "s3://b/wh/t/p=1",
            "b/wh/t/p=1/base_0000001/bucket_00000",
            "s3a://b/wh/t/p=1/base_0000001/bucket_00000",
        ),
        ("s3a://b/wh/t", "b/wh/t/base_0000001/bucket_00000", "s3a://b/wh/t/base_0000001/bucket_00000"),
        ("S3N://b/wh/t", "b/wh/t/base_0000001/bucket_00000", "s3a://b/wh/t/base_0000001/bucket_00000"),
        ("gs://b/wh/t", "b/wh/t/base_0000001/bucket_00000", "gs://b/wh/t/base_0000001/bucket_00000"),
        (
            "hdfs://nn:8020/wh/t",
            "/wh/t/base_0000001/bucket_00000",
            "hdfs://nn:8020/wh/t/base_0000001/bucket_00000",
        ),
    ],
    ids=["local", "file", "s3", "s3a", "s3n", "gs", "hdfs"],
)
def test_jvm_path_gives_the_jvm_a_uri_of_the_tables_store(location, path, expected):
    assert jvm_path(location, path) == expected


def test_s3a_settings_from_the_aws_variables():
    from pyspark_hiveacid.session import s3a_settings

    assert s3a_settings({}) == {}
    assert s3a_settings({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-1"}) == {
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
    }
    assert s3a_settings({"AWS_ENDPOINT_URL_S3": "https://s3.local", "AWS_ENDPOINT_URL": "http://other"}) == {
        "spark.hadoop.fs.s3a.endpoint": "https://s3.local",
        "spark.hadoop.fs.s3a.path.style.access": "true",
    }
