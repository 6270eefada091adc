"""Partition pruning of the hiveacid reader: SQL three-valued logic over one partition's values.

Pure: pyspark's Filter values are built directly, no Spark session.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    In,
    IsNotNull,
    IsNull,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from acid_core.metastore.port import Column, Table, TableType
from pyspark_hiveacid.source import _evaluate, _filter_columns, _partition_values

TABLE = Table(
    database="db",
    name="t",
    location="/wh/db.db/t",
    columns=(Column("id", "int"),),
    partition_keys=(Column("ds", "date"), Column("hr", "int"), Column("region", "string")),
    bucket_columns=(),
    num_buckets=-1,
    properties={"transactional": "true"},
    table_type=TableType.ACID,
    external=False,
    owner=None,
    create_time=0.0,
)


def test_partition_values_typed_and_default_partition_is_null():
    values = _partition_values(TABLE, ("2024-01-02", "7", "__HIVE_DEFAULT_PARTITION__"))
    assert values == {"ds": dt.date(2024, 1, 2), "hr": 7, "region": None}


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        (EqualTo(("hr",), 7), True),
        (EqualTo(("hr",), 8), False),
        (GreaterThan(("ds",), dt.date(2024, 1, 1)), True),
        (LessThanOrEqual(("ds",), dt.date(2024, 1, 1)), False),
        (In(("hr",), (1, 7)), True),
        (In(("hr",), (1, None)), None),
        (EqualTo(("region",), "eu"), None),
        (Not(EqualTo(("region",), "eu")), None),
        (IsNull(("region",)), True),
        (IsNotNull(("region",)), False),
        (EqualNullSafe(("region",), None), True),
        (Not(EqualTo(("hr",), 8)), True),
    ],
    ids=[
        "eq",
        "eq-false",
        "gt-date",
        "le-date",
        "in",
        "in-with-null-unknown",
        "eq-null-unknown",
        "not-unknown",
        "is-null",
        "is-not-null",
        "null-safe",
        "not",
    ],
)
def test_evaluate_follows_sql_three_valued_logic(filter_, expected):
    values = _partition_values(TABLE, ("2024-01-02", "7", "__HIVE_DEFAULT_PARTITION__"))
    assert _evaluate(filter_, values) is expected


def test_filter_columns_only_simple_filters_are_evaluated():
    assert _filter_columns(Not(EqualTo(("Hr",), 1))) == {"hr"}
    assert _filter_columns(StringStartsWith(("region",), "e")) is None
    assert _filter_columns(EqualTo(("s", "f"), 1)) is None
