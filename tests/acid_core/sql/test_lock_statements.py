"""SHOW LOCKS and EXPLAIN LOCKS in ``acidflow sql`` (issue 5, item 7).

The expected locks of EXPLAIN LOCKS are the rows of the issue's statement table (HIVE-1293's
locking design), completed by the issue's hierarchy rule (item 2: locking a partition in any mode
also locks every parent in S). The tables:

    t1     plain, PARTITIONED BY (p)           the design's T1 (read, altered, dropped)
    t2     plain, PARTITIONED BY (p)           the design's T2 (INSERT .. partition P2)
    t3     plain, PARTITIONED BY (p, q)        the design's T2 with a two-level partition P.Q
    acid1  full ACID, PARTITIONED BY (p)       transactional writes (DbTxnManager: S, MVCC)
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from acid_core.cli import main
from acid_core.locks import (
    InMemoryLockManager,
    InMemoryLockTable,
    LockMode,
    LockObject,
    LockRequest,
    parse_lock_object,
)
from acid_core.locks.planner import StatementKind, StatementLocks
from acid_core.metastore import InMemoryMetastore, default_metastore_url
from acid_core.sql.engine import SqlSession
from acid_core.sql.lock_statements import plan_explain_locks
from acid_core.writes import Warehouse

TABLES = (
    "CREATE TABLE t1 (a int) PARTITIONED BY (p string) STORED AS ORC; "
    "CREATE TABLE t2 (a int) PARTITIONED BY (p string) STORED AS ORC; "
    "CREATE TABLE t3 (a int) PARTITIONED BY (p string, q string) STORED AS ORC; "
    "CREATE TABLE acid1 (id int, v int) PARTITIONED BY (p string) STORED AS ORC "
    "TBLPROPERTIES ('transactional'='true')"
)
LOCK_ENV = ("ACIDFLOW_LOCK_MANAGER", "ACIDFLOW_ZOOKEEPER", "ACIDFLOW_METASTORE", "ACIDFLOW_WAREHOUSE")


@pytest.fixture(autouse=True)
def _no_lock_env(monkeypatch):
    for name in LOCK_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def tables_warehouse(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("locks") / "wh")
    with pytest.MonkeyPatch.context() as patch:
        for name in LOCK_ENV:
            patch.delenv(name, raising=False)
        assert main(["sql", "--warehouse", root, TABLES]) == 0
    return root


def _explain(warehouse, statement, capsys, output_format="jsonl"):
    capsys.readouterr()
    code = main(["sql", "--warehouse", warehouse, "--format", output_format, f"EXPLAIN LOCKS {statement}"])
    return code, capsys.readouterr()


# -- EXPLAIN LOCKS: every row of the table ---------------------------------------------

DESIGN_ROWS = [
    # SELECT .. T1 partition P1: S on T1, T1.P1
    ("select-t1-p1", "SELECT a FROM t1 WHERE p = '1'", ["S default.t1", "S default.t1/p=1"]),
    # INSERT INTO T2 partition P2 SELECT .. T1 partition P1: S on T2, T1, T1.P1 and X on T2.P2
    (
        "insert-t2-p2-select-t1-p1",
        "INSERT INTO TABLE t2 PARTITION (p='2') SELECT a FROM t1 WHERE p = '1'",
        ["S default.t1", "S default.t1/p=1", "S default.t2", "X default.t2/p=2"],
    ),
    # INSERT INTO T2 partition P.Q SELECT .. T1 partition P1: S on T2, T2.P, T1, T1.P1 and X on T2.P.Q
    (
        "insert-t2-pq-select-t1-p1",
        "INSERT INTO TABLE t3 PARTITION (p='1', q='2') SELECT a FROM t1 WHERE t1.p = '1'",
        ["S default.t1", "S default.t1/p=1", "S default.t3", "S default.t3/p=1", "X default.t3/p=1/q=2"],
    ),
    # ALTER TABLE T1 RENAME / ADD COLUMNS / REPLACE COLUMNS / CHANGE COLUMN / CONCATENATE: X on T1
    ("alter-rename", "ALTER TABLE t1 RENAME TO t9", ["X default.t1"]),
    ("alter-add-columns", "ALTER TABLE t1 ADD COLUMNS (b string)", ["X default.t1"]),
    ("alter-replace-columns", "ALTER TABLE t1 REPLACE COLUMNS (a bigint)", ["X default.t1"]),
    ("alter-change-column", "ALTER TABLE t1 CHANGE COLUMN a b int", ["X default.t1"]),
    ("alter-concatenate", "ALTER TABLE t1 CONCATENATE", ["X default.t1"]),
    # ALTER TABLE T1 ADD / DROP / TOUCH PARTITION P1: S on T1, X on T1.P1
    ("alter-add-partition", "ALTER TABLE t1 ADD PARTITION (p='1')", ["S default.t1", "X default.t1/p=1"]),
    ("alter-drop-partition", "ALTER TABLE t1 DROP PARTITION (p='1')", ["S default.t1", "X default.t1/p=1"]),
    ("alter-touch-partition", "ALTER TABLE t1 TOUCH PARTITION (p='1')", ["S default.t1", "X default.t1/p=1"]),
    # ALTER TABLE T1 SET SERDEPROPERTIES / SET SERDE / SET FILEFORMAT: S on T1
    ("alter-set-serdeproperties", "ALTER TABLE t1 SET SERDEPROPERTIES ('field.delim'=',')", ["S default.t1"]),
    (
        "alter-set-serde",
        "ALTER TABLE t1 SET SERDE 'org.apache.hadoop.hive.ql.io.orc.OrcSerde'",
        ["S default.t1"],
    ),
    ("alter-set-fileformat", "ALTER TABLE t1 SET FILEFORMAT ORC", ["S default.t1"]),
    # ALTER TABLE T1 SET TBLPROPERTIES: X on T1
    ("alter-set-tblproperties", "ALTER TABLE t1 SET TBLPROPERTIES ('comment'='x')", ["X default.t1"]),
    # ALTER TABLE T1 PARTITION P1 CONCATENATE: X on T1.P1 (and S on its parent T1, item 2)
    (
        "alter-partition-concatenate",
        "ALTER TABLE t1 PARTITION (p='1') CONCATENATE",
        ["S default.t1", "X default.t1/p=1"],
    ),
    # DROP TABLE T1: X on T1
    ("drop-table", "DROP TABLE t1", ["X default.t1"]),
    # dynamic-partition writes: X on the table, or on the known prefix
    (
        "dynamic-all-keys",
        "INSERT INTO TABLE t2 PARTITION (p) SELECT a, p FROM t1",
        ["S default.t1", "X default.t2"],
    ),
    (
        "dynamic-known-prefix",
        "INSERT INTO TABLE t3 PARTITION (p='1', q) SELECT a, p FROM t1",
        ["S default.t1", "S default.t3", "X default.t3/p=1"],
    ),
    # transactional INSERT / UPDATE / DELETE / MERGE on ACID tables: S on the table and its partitions
    (
        "acid-insert-partition",
        "INSERT INTO acid1 PARTITION (p='1') VALUES (1, 2)",
        ["S default.acid1", "S default.acid1/p=1"],
    ),
    ("acid-insert-dynamic", "INSERT INTO acid1 VALUES (1, 2, '1')", ["S default.acid1"]),
    (
        "acid-update-partition",
        "UPDATE acid1 SET v = 3 WHERE p = '1' AND id = 1",
        ["S default.acid1", "S default.acid1/p=1"],
    ),
    ("acid-delete", "DELETE FROM acid1 WHERE id = 1", ["S default.acid1"]),
    (
        "acid-merge",
        "MERGE INTO acid1 AS t USING t2 AS s ON t.id = s.a WHEN MATCHED THEN UPDATE SET v = s.a "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.a, 0, s.p)",
        ["S default.acid1", "S default.t2"],
    ),
    # a compaction worker holds a maintenance lock (two compactions of a partition never overlap)
    (
        "compact-partition",
        "ALTER TABLE acid1 PARTITION (p='1') COMPACT 'major'",
        ["S default.acid1", "S default.acid1/p=1", "X default.acid1/p=1#maintenance"],
    ),
    # statements outside the table: no locks
    ("create-table", "CREATE TABLE t4 (a int) STORED AS ORC", []),
    ("show-tables", "SHOW TABLES", []),
]


@pytest.mark.parametrize(
    ("statement", "expected"), [r[1:] for r in DESIGN_ROWS], ids=[r[0] for r in DESIGN_ROWS]
)
def test_explain_locks_design_row_prints_the_design_locks(tables_warehouse, capsys, statement, expected):
    code, captured = _explain(tables_warehouse, statement, capsys)
    assert code == 0, captured.err
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert all(set(line) == {"object", "mode"} for line in lines)
    assert [f"{line['mode']} {line['object']}" for line in lines] == expected
    assert captured.err.startswith("OK: ")
    assert "nothing ran and nothing was locked" in captured.err


def test_explain_locks_table_format_lists_object_and_mode(tables_warehouse, capsys):
    code, captured = _explain(
        tables_warehouse, "ALTER TABLE t3 ADD PARTITION (p='1', q='2')", capsys, "table"
    )
    assert code == 0
    assert captured.out.splitlines() == [
        "object              mode",
        "default.t3          S",
        "default.t3/p=1      S",
        "default.t3/p=1/q=2  X",
    ]
    assert captured.err == (
        "OK: ALTER TABLE t3 ADD PARTITION (p='1', q='2') would take 3 lock(s); "
        "nothing ran and nothing was locked\n"
    )


@pytest.mark.parametrize(
    ("statement", "says_run_time"),
    [
        ("INSERT INTO acid1 VALUES (1, 2, '1')", True),
        ("DELETE FROM acid1 WHERE id = 1", True),
        ("UPDATE acid1 SET v = 3 WHERE p = '1'", False),  # the partition is known up front
        ("INSERT INTO TABLE t2 PARTITION (p) SELECT a, p FROM t1", False),  # X on t2 covers them
    ],
    ids=["acid-dynamic-insert", "acid-unpinned-delete", "acid-pinned-update", "plain-dynamic-insert"],
)
def test_explain_locks_says_when_partitions_written_are_locked_at_run_time(
    tables_warehouse, capsys, statement, says_run_time
):
    code, captured = _explain(tables_warehouse, statement, capsys)
    assert code == 0
    assert ("then S on each partition it writes (known when it runs)" in captured.err) is says_run_time


def test_explain_locks_runs_nothing_and_opens_no_transaction(tmp_path, capsys):
    warehouse = str(tmp_path / "wh")
    assert main(["sql", "--warehouse", warehouse, TABLES]) == 0
    for statement in (
        "INSERT INTO acid1 PARTITION (p='1') VALUES (1, 2)",
        "DROP TABLE t1",
        "ALTER TABLE t1 ADD PARTITION (p='9')",
    ):
        code, _ = _explain(warehouse, statement, capsys)
        assert code == 0
    capsys.readouterr()
    assert (
        main(["sql", "--warehouse", warehouse, "--format", "jsonl", "SHOW TABLES", "SHOW PARTITIONS t1"]) == 0
    )
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {"tab_name": name} for name in ("acid1", "t1", "t2", "t3")
    ]
    # The first real write gets transaction 1: EXPLAIN LOCKS opened none.
    assert main(["sql", "--warehouse", warehouse, "INSERT INTO acid1 PARTITION (p='1') VALUES (1, 2)"]) == 0
    assert "(txn 1)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("SELECT a FROM", "Syntax error in 'SELECT a FROM'"),
        ("SELECT a FROM nosuch", "No such table 'default.nosuch'"),
        ("UPDATE t1 SET a = 1", "UPDATE on a table that is not transactional"),
        (
            "ALTER TABLE t1 ADD PARTITION (zz='1')",
            "Invalid partition 'zz=1' of table 'default.t1': expected keys of ['p']",
        ),
        ("ALTER TABLE t3 ADD PARTITION (p='1')", "expected a value for each partition key ['p', 'q']"),
        ("ALTER TABLE t1 ENABLE NO_DROP", "EXPLAIN LOCKS does not know ALTER TABLE .. ENABLE"),
        ("ALTER TABLE acid1 COMPACT 'major'", "expected PARTITION (p=...) for a partitioned table"),
        ("SHOW TABLES; SHOW DATABASES", None),  # split by the script splitter: runs as two statements
    ],
    ids=[
        "syntax",
        "unknown-table",
        "update-non-acid",
        "unknown-key",
        "partial-add",
        "unknown-alter",
        "compact-without-partition",
        "script",
    ],
)
def test_explain_locks_bad_statement_exits_1_with_one_line(tables_warehouse, capsys, statement, message):
    code, captured = _explain(tables_warehouse, statement, capsys)
    if message is None:
        # "EXPLAIN LOCKS SHOW TABLES" then "SHOW DATABASES": ';' ends the EXPLAIN, as in Hive's CLI.
        assert code == 0
        assert json.loads(captured.out.splitlines()[-1]) == {"database_name": "default"}
        return
    assert code == 1
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("acidflow sql: error: ")
    assert message in line


# -- the pure mapping ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def metastore(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("pure") / "wh")
    warehouse = Warehouse(root, InMemoryMetastore(warehouse=root), heartbeat_seconds=None)
    with warehouse:
        SqlSession(warehouse).execute(TABLES)
        yield warehouse.metastore


T1, T2, T3 = (LockObject("default", name) for name in ("t1", "t2", "t3"))
ACID1 = LockObject("default", "acid1")


def _at(obj, *partition):
    return LockObject(obj.db, obj.table, tuple(partition))


PURE_CASES = [
    (
        "insert-known-prefix-is-dynamic",
        "INSERT INTO TABLE t3 PARTITION (p='1', q) SELECT a, p FROM t1",
        (
            StatementLocks(
                StatementKind.INSERT, _at(T3, ("p", "1")), (T1,), is_acid=False, dynamic_partition=True
            ),
        ),
    ),
    (
        "insert-spec-in-any-order-is-in-key-order",
        "INSERT INTO TABLE t3 PARTITION (q='2', p='1') VALUES (1)",
        (StatementLocks(StatementKind.INSERT, _at(T3, ("p", "1"), ("q", "2"))),),
    ),
    (
        "insert-overwrite-acid",
        "INSERT OVERWRITE TABLE acid1 PARTITION (p='1') VALUES (1, 2)",
        (StatementLocks(StatementKind.INSERT_OVERWRITE, _at(ACID1, ("p", "1")), is_acid=True),),
    ),
    (
        "update-subquery-source-pinned",
        "UPDATE acid1 SET v = 1 WHERE p = '1' AND id IN (SELECT a FROM t2 WHERE p = '3')",
        (StatementLocks(StatementKind.UPDATE, _at(ACID1, ("p", "1")), (_at(T2, ("p", "3")),), is_acid=True),),
    ),
    (
        "delete-without-partition-predicate-is-dynamic",
        "DELETE FROM acid1 WHERE v > 3",
        (StatementLocks(StatementKind.DELETE, ACID1, is_acid=True, dynamic_partition=True),),
    ),
    (
        "join-unqualified-key-is-ambiguous",
        "SELECT * FROM t1 JOIN t2 ON t1.a = t2.a WHERE t1.p = '1' AND p = '2'",
        (StatementLocks(StatementKind.SELECT, sources=(_at(T1, ("p", "1")), T2)),),
    ),
    (
        "alias-qualified-key",
        "SELECT x.a FROM t1 AS x WHERE x.p = 7",
        (StatementLocks(StatementKind.SELECT, sources=(_at(T1, ("p", "7")),)),),
    ),
    (
        "second-key-only-is-not-a-prefix",
        "SELECT a FROM t3 WHERE q = '2'",
        (StatementLocks(StatementKind.SELECT, sources=(T3,)),),
    ),
    (
        "two-level-pinned",
        "SELECT a FROM t3 WHERE q = '2' AND (p = '1')",
        (StatementLocks(StatementKind.SELECT, sources=(_at(T3, ("p", "1"), ("q", "2")),)),),
    ),
    (
        "or-pins-nothing",
        "SELECT a FROM t1 WHERE p = '1' OR p = '2'",
        (StatementLocks(StatementKind.SELECT, sources=(T1,)),),
    ),
    (
        "cte-name-is-not-a-table",
        "WITH c AS (SELECT a FROM t1) SELECT a FROM c",
        (StatementLocks(StatementKind.SELECT, sources=(T1,)),),
    ),
    ("select-without-tables", "SELECT 1", ()),
    ("drop-if-exists-missing", "DROP TABLE IF EXISTS nosuch", ()),
    (
        "drop-partial-partition-spec",
        "ALTER TABLE t3 DROP IF EXISTS PARTITION (p='1')",
        (StatementLocks(StatementKind.ALTER_TABLE_DROP_PARTITION, _at(T3, ("p", "1"))),),
    ),
    (
        "add-two-partitions",
        "ALTER TABLE acid1 ADD IF NOT EXISTS PARTITION (p='a;b') PARTITION (p=NULL)",
        (
            StatementLocks(StatementKind.ALTER_TABLE_ADD_PARTITION, _at(ACID1, ("p", "a;b")), is_acid=True),
            StatementLocks(
                StatementKind.ALTER_TABLE_ADD_PARTITION,
                _at(ACID1, ("p", "__HIVE_DEFAULT_PARTITION__")),
                is_acid=True,
            ),
        ),
    ),
    (
        "db-qualified-backquoted",
        "ALTER TABLE `default`.`t1` SET TBLPROPERTIES ('a'='b')",
        (StatementLocks(StatementKind.ALTER_TABLE_SET_TBLPROPERTIES, T1),),
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in PURE_CASES], ids=[c[0] for c in PURE_CASES])
def test_plan_explain_locks_maps_statement(metastore, text, expected):
    assert plan_explain_locks(text, metastore.get_table) == expected


# -- SHOW LOCKS ---------------------------------------------------------------------------------


@pytest.fixture
def memory_locks():
    return InMemoryLockTable()


@pytest.fixture
def memory_session(tmp_path, memory_locks):
    root = str(tmp_path / "wh")
    warehouse = Warehouse(
        root, InMemoryMetastore(warehouse=root), InMemoryLockManager(memory_locks), heartbeat_seconds=None
    )
    with warehouse:
        session = SqlSession(warehouse)
        session.execute(TABLES)
        yield session


def _rows(session, text):
    (result,) = session.execute(text)
    return result.rows.to_pylist()


def test_show_locks_lists_another_sessions_locks_in_memory(memory_session, memory_locks):
    other = InMemoryLockManager(memory_locks, host="etl-host")
    before = datetime.now(UTC)
    writer = other.acquire(
        [LockRequest(parse_lock_object("default.t3/p=1/q=2"), LockMode.EXCLUSIVE)],
        holder="etl",
        txn_id=42,
        retries=0,
    )
    reader = other.acquire([LockRequest(T1, LockMode.SHARED)], holder="report", retries=0)
    after = datetime.now(UTC)

    assert _rows(memory_session, "SHOW LOCKS") == [
        {"object": "default.t1", "mode": "S"},
        {"object": "default.t3", "mode": "S"},
        {"object": "default.t3/p=1", "mode": "S"},
        {"object": "default.t3/p=1/q=2", "mode": "X"},
    ]
    assert _rows(memory_session, "SHOW LOCKS t3 PARTITION (p='1')") == [
        {"object": "default.t3/p=1", "mode": "S"},
        {"object": "default.t3/p=1/q=2", "mode": "X"},
    ]
    assert _rows(memory_session, "show locks DEFAULT.T3 partition (p='1', q='2')") == [
        {"object": "default.t3/p=1/q=2", "mode": "X"},
    ]
    assert _rows(memory_session, "SHOW LOCKS t2") == []
    extended = _rows(memory_session, "SHOW LOCKS t1 EXTENDED") + _rows(
        memory_session, "SHOW LOCKS t3 PARTITION (p='1', q='2') EXTENDED"
    )
    for row in extended:
        assert before <= datetime.fromisoformat(row.pop("acquired_at")) <= after
    assert extended == [
        {"object": "default.t1", "mode": "S", "holder": "report", "host": "etl-host", "txn_id": None},
        {"object": "default.t3/p=1/q=2", "mode": "X", "holder": "etl", "host": "etl-host", "txn_id": 42},
    ]
    assert len(_rows(memory_session, "SHOW LOCKS EXTENDED")) == 4
    other.release(writer)
    other.release(reader)
    assert _rows(memory_session, "SHOW LOCKS") == []


def test_explain_locks_takes_no_lock_while_another_session_holds_x(memory_session, memory_locks):
    other = InMemoryLockManager(memory_locks)
    handle = other.acquire([LockRequest(T1, LockMode.EXCLUSIVE)], holder="dba", retries=0)
    # DROP TABLE t1 would need X on default.t1, which "dba" holds; EXPLAIN only plans it.
    assert _rows(memory_session, "EXPLAIN LOCKS DROP TABLE t1") == [{"object": "default.t1", "mode": "X"}]
    assert _rows(memory_session, "SHOW LOCKS EXTENDED")[0]["holder"] == "dba"
    assert len(_rows(memory_session, "SHOW LOCKS")) == 1
    other.release(handle)


def test_show_locks_cli_sql_manager_on_sqlite(tmp_path, monkeypatch, capsys):
    from acid_core.locks.sql import SqlLockManager

    warehouse = str(tmp_path / "wh")
    monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "sql")
    # The sql lock manager keeps its locks in the warehouse's metastore database.
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", warehouse)
    assert main(["sql", TABLES]) == 0
    holder = SqlLockManager(default_metastore_url(warehouse), host="holder-host")
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        handle = holder.acquire(
            [LockRequest(parse_lock_object("default.acid1/p=1"), LockMode.EXCLUSIVE)],
            holder="etl",
            txn_id=7,
            retries=0,
        )
        after = datetime.now(UTC)
        capsys.readouterr()
        assert main(["sql", "--format", "jsonl", "SHOW LOCKS acid1 EXTENDED"]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        for line in lines:
            assert before <= datetime.fromisoformat(line.pop("acquired_at")) <= after
        assert lines == [
            {"object": "default.acid1", "mode": "S", "holder": "etl", "host": "holder-host", "txn_id": 7},
            {"object": "default.acid1/p=1", "mode": "X", "holder": "etl", "host": "holder-host", "txn_id": 7},
        ]
        assert main(["sql", "SHOW LOCKS"]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "object             mode",
            "default.acid1      S",
            "default.acid1/p=1  X",
        ]
        assert (
            main(["sql", "--format", "jsonl", "EXPLAIN LOCKS ALTER TABLE acid1 DROP PARTITION (p='1')"]) == 0
        )
        assert capsys.readouterr().out.splitlines() == [
            '{"object":"default.acid1","mode":"S"}',
            '{"object":"default.acid1/p=1","mode":"X"}',
        ]
        holder.release(handle)
        assert main(["sql", "--format", "jsonl", "SHOW LOCKS"]) == 0
        assert capsys.readouterr().out == ""
    finally:
        holder.close()


def test_show_locks_with_locking_off_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "none")
    assert main(["sql", "--warehouse", str(tmp_path / "wh"), "SHOW LOCKS"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "object  mode\n"
    assert captured.err == (
        "OK: locking is off (no lock manager configured), so no locks are held; "
        "hint: set ACIDFLOW_LOCK_MANAGER=sql or zookeeper\n"
    )


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("SHOW LOCKS nosuch", "No such table 'default.nosuch'"),
        ("SHOW LOCKS other.t1 EXTENDED", "other.t1"),
        ("SHOW LOCKS t3 PARTITION (q='2')", "expected a leading prefix of the partition keys ['p', 'q']"),
        ("SHOW LOCKS t1 PARTITION (p)", "partition key 'p' without '=value'"),
    ],
    ids=["unknown-table", "unknown-database", "not-a-prefix", "no-value"],
)
def test_show_locks_bad_target_exits_1_with_one_line(tables_warehouse, capsys, statement, message):
    capsys.readouterr()
    assert main(["sql", "--warehouse", tables_warehouse, statement]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("acidflow sql: error: ")
    assert message in line
