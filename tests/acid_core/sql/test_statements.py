"""SQL statements end to end through SqlSession (in-memory metastore, real files, DuckDB).

Expected rows are written out by hand from the statements' meaning (Hive semantics), never taken
from acidflow's output.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from acid_core.errors import (
    NoSuchColumnError,
    NoSuchTableError,
    SqlExecutionError,
    SqlSyntaxError,
    SqlTypeError,
    TableAlreadyExistsError,
    UnsupportedStatementError,
    ValueOutOfRangeError,
)
from acid_core.metastore import InMemoryMetastore
from acid_core.sql import registry
from acid_core.sql.engine import SqlSession, split_statements
from acid_core.sql.registry import StatementResult, register_statement
from acid_core.writes import Warehouse

ACID = "STORED AS ORC TBLPROPERTIES ('transactional'='true')"
EMPLOYEE = f"CREATE TABLE employee (id int, name string, salary int) {ACID}"


@pytest.fixture
def session(tmp_path):
    root = str(tmp_path / "wh")
    with Warehouse(root, InMemoryMetastore(warehouse=root), heartbeat_seconds=None) as wh:
        yield SqlSession(wh)


def rows(session, sql):
    (result,) = session.execute(sql)
    assert result.rows is not None
    return [tuple(r.values()) for r in result.rows.to_pylist()]


def seeded(session):
    session.execute(
        f"{EMPLOYEE}; INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000), (3, 'Kate', 6000)"
    )
    return session


def test_split_statements_respects_quotes_and_comments():
    assert split_statements("SELECT 'a;b'; -- c;d\nSHOW TABLES;;") == ["SELECT 'a;b'", "SHOW TABLES"]


def test_create_describe_show_and_drop(session):
    session.execute(
        "CREATE TABLE sales (id int, amount decimal(10,2), note varchar(5)) PARTITIONED BY (ds string) "
        f"CLUSTERED BY (id) INTO 4 BUCKETS {ACID}"
    )
    table = session.warehouse.metastore.get_table("sales")
    assert table.table_type.value == "acid"
    assert (table.num_buckets, table.bucket_columns, table.properties["bucketing_version"]) == (
        4,
        ("id",),
        "2",
    )
    assert os.path.isdir(table.location)
    assert rows(session, "DESCRIBE sales") == [
        ("id", "int", ""),
        ("amount", "decimal(10,2)", ""),
        ("note", "varchar(5)", ""),
        ("ds", "string", ""),
        ("", "", ""),
        ("# Partition Information", "", ""),
        ("# col_name", "data_type", "comment"),
        ("ds", "string", ""),
    ]
    session.execute(
        "CREATE TABLE mm (a int) STORED AS ORC TBLPROPERTIES ('transactional'='true', "
        "'transactional_properties'='insert_only'); CREATE TABLE plain (a int) STORED AS ORC"
    )
    assert rows(session, "SHOW TABLES") == [("mm",), ("plain",), ("sales",)]
    assert session.warehouse.metastore.get_table("mm").table_type.value == "insert_only"
    assert session.warehouse.metastore.get_table("plain").table_type.value == "plain"
    with pytest.raises(TableAlreadyExistsError):
        session.execute("CREATE TABLE plain (a int)")
    session.execute("CREATE TABLE IF NOT EXISTS plain (a int); DROP TABLE sales; DROP TABLE IF EXISTS nope")
    assert not os.path.exists(table.location)
    assert rows(session, "SHOW TABLES LIKE 'p*'") == [("plain",)]


def test_insert_values_select_and_row_id(session):
    seeded(session)
    assert rows(session, "SELECT row__id, id, name, salary FROM employee ORDER BY id") == [
        ({"writeid": 1, "bucketid": 536870912, "rowid": 0}, 1, "Jerry", 5000),
        ({"writeid": 1, "bucketid": 536870912, "rowid": 1}, 2, "Tom", 8000),
        ({"writeid": 1, "bucketid": 536870912, "rowid": 2}, 3, "Kate", 6000),
    ]
    assert rows(session, "SELECT row__id.rowid, name FROM employee WHERE salary > 5500 ORDER BY 1") == [
        (1, "Tom"),
        (2, "Kate"),
    ]
    # SELECT * does not show the virtual column, as in Hive.
    assert rows(session, "SELECT * FROM employee WHERE id = 1") == [(1, "Jerry", 5000)]
    session.execute(f"CREATE TABLE rich (id int, name string, salary int) {ACID}")
    session.execute(
        "INSERT INTO TABLE rich SELECT id, upper(name), salary * 2 FROM employee WHERE salary >= 6000"
    )
    session.execute("INSERT INTO rich (id, name) VALUES (9, 'Ann')")
    assert rows(session, "SELECT * FROM rich ORDER BY id") == [
        (2, "TOM", 16000),
        (3, "KATE", 12000),
        (9, "Ann", None),
    ]


def test_update_delete_and_merge(session):
    seeded(session)
    session.execute("UPDATE employee SET salary = salary + 1 WHERE name LIKE 'K%'")
    session.execute("DELETE FROM employee WHERE id = 1")
    assert rows(session, "SELECT id, salary FROM employee ORDER BY id") == [(2, 8000), (3, 6001)]
    session.execute(f"CREATE TABLE upd (id int, name string, salary int, gone boolean) {ACID}")
    session.execute("INSERT INTO upd VALUES (2, 'Tom', 1, false), (3, 'Kate', 2, true), (5, 'Eve', 3, false)")
    session.execute(
        "MERGE INTO employee AS t USING upd AS s ON t.id = s.id "
        "WHEN MATCHED AND s.gone THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET salary = s.salary "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.salary)"
    )
    assert rows(session, "SELECT id, name, salary FROM employee ORDER BY id") == [
        (2, "Tom", 1),
        (5, "Eve", 3),
    ]
    names = sorted(os.listdir(session.warehouse.metastore.get_table("employee").location))
    # MERGE (write ID 4): INSERT clause statement 0, then DELETE 1 and UPDATE 2 in text order.
    assert [n for n in names if "0000004" in n] == [
        "delete_delta_0000004_0000004_0001",
        "delete_delta_0000004_0000004_0002",
        "delta_0000004_0000004_0000",
        "delta_0000004_0000004_0002",
    ]


def test_partitions_static_dynamic_and_alter(session):
    session.execute(f"CREATE TABLE p (id int, v string) PARTITIONED BY (ds string, hr int) {ACID}")
    session.execute("INSERT INTO p PARTITION (ds='d1', hr=1) VALUES (1, 'a')")
    session.execute("INSERT INTO p PARTITION (ds='d1', hr) VALUES (2, 'b', 2), (3, 'c', 1)")
    session.execute("INSERT INTO p PARTITION (ds, hr) SELECT id + 10, v, 'd2', 5 FROM p WHERE id = 1")
    session.execute("ALTER TABLE p ADD PARTITION (ds='d3', hr=0) PARTITION (ds='d4', hr=0)")
    assert rows(session, "SHOW PARTITIONS p") == [
        ("ds=d1/hr=1",),
        ("ds=d1/hr=2",),
        ("ds=d2/hr=5",),
        ("ds=d3/hr=0",),
        ("ds=d4/hr=0",),
    ]
    assert rows(session, "SELECT id, v, ds, hr FROM p ORDER BY id") == [
        (1, "a", "d1", 1),
        (2, "b", "d1", 2),
        (3, "c", "d1", 1),
        (11, "a", "d2", 5),
    ]
    session.execute("UPDATE p SET v = 'z' WHERE hr = 1")
    session.execute(
        "ALTER TABLE p DROP PARTITION (ds='d2', hr=5); ALTER TABLE p DROP IF EXISTS PARTITION (ds='x', hr=1)"
    )
    assert rows(session, "SELECT id, v FROM p ORDER BY id") == [(1, "z"), (2, "b"), (3, "z")]
    with pytest.raises(UnsupportedStatementError, match=r"SET of partition column 'ds'"):
        session.execute("UPDATE p SET ds = 'x'")


@pytest.mark.parametrize(
    ("statement", "error", "message"),
    [
        ("SELEC 1", SqlSyntaxError, r"Syntax error in 'SELEC 1'"),
        ("SELECT * FROM nope", NoSuchTableError, r"No such table 'default.nope'"),
        ("SELECT bogus FROM employee", NoSuchColumnError, r"No such column 'bogus'"),
        ("UPDATE employee SET bogus = 1", NoSuchColumnError, r"No such column 'bogus'"),
        ("INSERT INTO employee (id, bogus) VALUES (1, 2)", NoSuchColumnError, r"No such column 'bogus'"),
        (
            "INSERT INTO employee VALUES ('x', 'y', 1)",
            SqlTypeError,
            r"column 'id' .* got a value of type string",
        ),
        (
            "INSERT INTO employee VALUES (4, 'y', 3000000000)",
            ValueOutOfRangeError,
            r"Value '3000000000' does not fit",
        ),
        ("INSERT INTO employee VALUES (4, 'y')", SqlExecutionError, r"gives 2 value\(s\) per row"),
        ("UPDATE employee SET salary = 'lots'", SqlTypeError, r"column 'salary'"),
        ("CREATE VIEW v AS SELECT 1", UnsupportedStatementError, r"does not run this kind of statement"),
    ],
    ids=[
        "syntax",
        "table",
        "column",
        "set-column",
        "insert-column",
        "type",
        "range",
        "arity",
        "set-type",
        "view",
    ],
)
def test_bad_statements_raise_and_change_no_visible_row(session, statement, error, message):
    seeded(session)
    before = rows(session, "SELECT id, name, salary FROM employee ORDER BY id")
    with pytest.raises(error, match=message):
        session.execute(statement)
    assert rows(session, "SELECT id, name, salary FROM employee ORDER BY id") == before


def test_values_that_do_not_fit_their_types(session):
    session.execute(f"CREATE TABLE t (a tinyint, b varchar(3), c decimal(4,2), d date) {ACID}")
    for values, column in (
        ("(300, 'ab', 1.5, '2024-01-01')", "a"),
        ("(1, 'abcd', 1.5, '2024-01-01')", "b"),
        ("(1, 'ab', 123.5, '2024-01-01')", "c"),
        ("(1, 'ab', 1.5, 'not a date')", "d"),
    ):
        with pytest.raises(ValueOutOfRangeError, match=rf"does not fit column '{column}'"):
            session.execute(f"INSERT INTO t VALUES {values}")
    session.execute("INSERT INTO t VALUES (1, 'ab', 1.5, '2024-01-01')")
    assert rows(session, "SELECT a, b, CAST(c AS VARCHAR), CAST(d AS VARCHAR) FROM t") == [
        (1, "ab", "1.50", "2024-01-01")
    ]
    # Every failed insert opened a transaction that is now aborted.
    states = rows(session, "SHOW TRANSACTIONS")
    assert [(txn, state) for txn, state, *_ in states] == [
        (1, "ABORTED"),
        (2, "ABORTED"),
        (3, "ABORTED"),
        (4, "ABORTED"),
    ]


def test_a_syntax_error_anywhere_runs_nothing_and_a_later_failure_keeps_earlier_statements(session):
    with pytest.raises(SqlSyntaxError):
        session.execute(f"{EMPLOYEE}; SELEC 1")
    assert rows(session, "SHOW TABLES") == []
    with pytest.raises(ValueOutOfRangeError):
        session.execute(
            f"{EMPLOYEE}; INSERT INTO employee VALUES (1, 'a', 1); INSERT INTO employee VALUES (2, 'b', 9999999999)"
        )
    assert rows(session, "SELECT id FROM employee") == [(1,)]


def test_update_on_a_plain_table_and_merge_cardinality_are_refused(session):
    seeded(session)
    session.execute("CREATE TABLE plain (id int) STORED AS ORC; INSERT INTO plain VALUES (1), (1)")
    with pytest.raises(UnsupportedStatementError, match=r"UPDATE on default.plain, a plain table"):
        session.execute("UPDATE plain SET id = 2")
    with pytest.raises(SqlExecutionError, match=r"matches more than one source row"):
        session.execute(
            "MERGE INTO employee t USING plain s ON t.id = s.id WHEN MATCHED THEN UPDATE SET salary = 0"
        )
    assert rows(session, "SELECT salary FROM employee WHERE id = 1") == [(5000,)]


def test_show_and_abort_transactions(session):
    seeded(session)
    txn = session.warehouse.metastore.open_txn(user="u", host="h")
    assert [(r[0], r[1], r[4], r[5]) for r in rows(session, "SHOW TRANSACTIONS")] == [(txn, "OPEN", "u", "h")]
    (result,) = session.execute(f"ABORT TRANSACTIONS {txn}")
    assert result.message == f"OK: aborted transaction(s) {txn}"
    assert rows(session, "SHOW TRANSACTIONS")[0][1] == "ABORTED"


def test_registry_dispatches_a_registered_pattern_statement(session, monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @register_statement("show_answer", pattern=r"SHOW\s+ANSWER\s+(?P<n>\d+)")
    def show_answer(context, statement):
        return StatementResult("show_answer", rows=pa.table({"n": [int(statement.match.group("n"))]}))

    assert rows(session, "show answer 42") == [(42,)]
    assert "show_answer" in [s.name for s in registry.registered_statements()]


def test_databases_and_qualified_tables(session):
    session.execute(
        f"CREATE DATABASE sales; CREATE TABLE sales.orders (id int) {ACID}; INSERT INTO sales.orders VALUES (1), (2)"
    )
    root = session.warehouse.location
    assert os.path.isdir(os.path.join(root, "sales.db", "orders", "delta_0000001_0000001_0000"))
    assert rows(session, "SHOW DATABASES") == [("default",), ("sales",)]
    assert rows(session, "SHOW TABLES IN sales") == [("orders",)]
    assert rows(session, "SELECT o.id FROM sales.orders o WHERE o.id > 1") == [(2,)]
    session.execute(
        "CREATE DATABASE IF NOT EXISTS sales; DROP DATABASE sales CASCADE; DROP DATABASE IF EXISTS nope"
    )
    assert rows(session, "SHOW DATABASES") == [("default",)]
    assert not os.path.exists(os.path.join(root, "sales.db"))


@pytest.mark.parametrize(
    ("clauses", "message"),
    [
        (
            "WHEN MATCHED THEN DELETE WHEN MATCHED THEN UPDATE SET salary = 1",
            r"the first has no AND <predicate>",
        ),
        (
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.salary) WHEN MATCHED THEN DELETE",
            r"INSERT clause last",
        ),
        ("WHEN MATCHED AND s.id > 1 THEN DELETE WHEN MATCHED THEN DELETE", r"2 WHEN clauses that DELETE"),
    ],
    ids=["no-predicate", "insert-not-last", "two-deletes"],
)
def test_merge_clauses_follow_hives_rules(session, clauses, message):
    seeded(session)
    with pytest.raises(UnsupportedStatementError, match=message):
        session.execute(f"MERGE INTO employee t USING employee s ON t.id = s.id {clauses}")
