"""Manual compaction requests: Hive's ALTER TABLE ... COMPACT grammar and the DAG's form."""

from __future__ import annotations

import pytest
from acidflow_airflow.requests import CompactRequest, parse_compact_statement, request_from_params

from acid_core.errors import InvalidCompactStatementError


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("ALTER TABLE db.t COMPACT 'major'", CompactRequest("db.t", (), "major")),
        ('alter table t compact "MINOR";', CompactRequest("default.t", (), "minor")),
        (
            "ALTER TABLE sales.orders PARTITION (ds='2024-01-01') COMPACT 'major'",
            CompactRequest("sales.orders", (("ds", "2024-01-01"),), "major"),
        ),
        (
            "ALTER TABLE `db`.`t` PARTITION (Y=2024, m='01') COMPACT 'minor'",
            CompactRequest("db.t", (("y", "2024"), ("m", "01")), "minor"),
        ),
    ],
)
def test_parse_compact_statement(statement, expected):
    assert parse_compact_statement(statement) == expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        (
            "ALTER TABLE db.t COMPACT 'rebalance' ORDER BY b DESC CLUSTERED INTO 4 BUCKETS",
            CompactRequest("db.t", (), "rebalance", 4, "ORDER BY b DESC"),
        ),
        (
            "alter table t partition (ds='1') compact 'REBALANCE' clustered into 2 buckets;",
            CompactRequest("default.t", (("ds", "1"),), "rebalance", 2, None),
        ),
    ],
    ids=["order-then-buckets", "buckets-only"],
)
def test_parse_compact_statement_rebalance(statement, expected):
    assert parse_compact_statement(statement) == expected


def test_request_from_params_rebalance_form_fields():
    request = request_from_params({"table": "db.t", "type": "rebalance", "buckets": 3, "order_by": "b DESC"})
    assert request == CompactRequest("db.t", (), "rebalance", 3, "ORDER BY b DESC")
    assert request.to_dict() == {
        "table": "db.t",
        "partition": None,
        "compaction_type": "rebalance",
        "number_of_buckets": 3,
        "order_by": "ORDER BY b DESC",
    }


def test_partition_name_is_hive_style():
    request = parse_compact_statement("ALTER TABLE db.t PARTITION (y=2024, m='01') COMPACT 'minor'")
    assert request.partition == "y=2024/m=01"
    assert request.to_dict() == {"table": "db.t", "partition": "y=2024/m=01", "compaction_type": "minor"}


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("ALTER TABLE db.t COMPACT 'huge'", "compaction type 'huge' is not 'minor', 'major' or 'rebalance'"),
        (
            "ALTER TABLE db.t COMPACT 'major' CLUSTERED INTO 2 BUCKETS",
            "CLUSTERED INTO n BUCKETS and ORDER BY go only with COMPACT 'rebalance'",
        ),
        (
            "ALTER TABLE db.t COMPACT 'rebalance' CLUSTERED INTO 0 BUCKETS",
            "number of buckets '0' is not an integer from 1 to 4096",
        ),
        ("DROP TABLE db.t", "it is not an ALTER TABLE ... COMPACT statement"),
        ("ALTER TABLE db.t COMPAKT 'major'", "it is not an ALTER TABLE ... COMPACT statement"),
        ("ALTER TABLE db.t PARTITION (ds) COMPACT 'major'", "partition spec item 'ds' is not k='v'"),
        ("ALTER TABLE db.t PARTITION (a=1, a=2) COMPACT 'major'", "partition key repeated in 'a=1, a=2'"),
        ("", "it is not an ALTER TABLE ... COMPACT statement"),
    ],
)
def test_parse_compact_statement_invalid(statement, problem):
    with pytest.raises(InvalidCompactStatementError) as info:
        parse_compact_statement(statement)
    assert str(info.value) == (
        f"Invalid compaction request {statement!r}: {problem}; expected ALTER TABLE db.t "
        "[PARTITION (k='v')] COMPACT 'minor'|'major'|'rebalance' [CLUSTERED INTO n BUCKETS] [ORDER BY ..], "
        "or a known table with type minor, major or rebalance; nothing was queued"
    )


def test_request_from_params_fields_and_statement():
    assert request_from_params({"table": "db.t", "partition": "ds=1", "type": "minor"}) == CompactRequest(
        "db.t", (("ds", "1"),), "minor"
    )
    assert request_from_params({"statement": "ALTER TABLE db.t COMPACT 'major'", "table": ""}).table == "db.t"
    with pytest.raises(InvalidCompactStatementError, match="give either a statement or a table"):
        request_from_params({"statement": "ALTER TABLE db.t COMPACT 'major'", "table": "db.u"})
    with pytest.raises(InvalidCompactStatementError, match="no statement and no table"):
        request_from_params({"type": "major"})
    with pytest.raises(InvalidCompactStatementError, match="compaction type 'big'"):
        request_from_params({"table": "db.t", "type": "big"})
