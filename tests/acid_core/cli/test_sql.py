"""``acidflow sql`` (run in-process through ``acid_core.cli.main``, and once as ``python -m``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from acid_core.cli import main as acidflow
from acid_core.cli.app import build_parser

CREATE = (
    "CREATE TABLE employee (id int, name string, salary int) STORED AS ORC "
    "TBLPROPERTIES ('transactional' = 'true')"
)
INSERT = "INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000)"


def main(argv):
    return acidflow(["sql", *argv])


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.delenv("ACIDFLOW_LOCK_MANAGER", raising=False)
    monkeypatch.delenv("ACIDFLOW_ZOOKEEPER", raising=False)
    return str(tmp_path / "wh")


def test_formats_table_jsonl_csv(warehouse, capsys):
    assert main(["--warehouse", warehouse, CREATE, INSERT]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "OK: created acid table default.employee",
        "OK: 2 row(s) inserted into default.employee (txn 1)",
    ]
    query = "SELECT row__id, id, name, salary FROM employee ORDER BY id"
    assert main(["--warehouse", warehouse, "--format", "jsonl", query]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {
            "row__id": {"writeid": 1, "bucketid": 536870912, "rowid": 0},
            "id": 1,
            "name": "Jerry",
            "salary": 5000,
        },
        {
            "row__id": {"writeid": 1, "bucketid": 536870912, "rowid": 1},
            "id": 2,
            "name": "Tom",
            "salary": 8000,
        },
    ]
    assert (
        main(
            [
                "--warehouse",
                warehouse,
                "--format",
                "csv",
                "SELECT id, name, NULL AS x FROM employee ORDER BY id",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == "id,name,x\n1,Jerry,\n2,Tom,\n"
    assert main(["--warehouse", warehouse, query]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "row__id                                       id  name   salary",
        '{"writeid":1,"bucketid":536870912,"rowid":0}  1   Jerry  5000',
        '{"writeid":1,"bucketid":536870912,"rowid":1}  2   Tom    8000',
    ]


def test_file_and_environment(warehouse, tmp_path, monkeypatch, capsys):
    script = tmp_path / "script.sql"
    script.write_text(f"{CREATE};\n{INSERT};\nSELECT count(*) AS n FROM employee;\n")
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", warehouse)
    monkeypatch.setenv("ACIDFLOW_METASTORE", f"sqlite:///{tmp_path}/ms.sqlite")
    assert main(["-f", str(script), "--format", "jsonl"]) == 0
    assert capsys.readouterr().out == '{"n":2}\n'
    assert (tmp_path / "ms.sqlite").exists()


def test_errors_exit_1_with_one_line_and_no_row_change(warehouse, capsys):
    assert main(["--warehouse", warehouse, CREATE, INSERT]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "--warehouse",
                warehouse,
                "INSERT INTO employee VALUES (3, 'Kate', 6000)",
                "UPDATE employee SET salary = 'x'",
            ]
        )
        == 1
    )
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        "acidflow sql: error: Type mismatch for column 'salary' of 'default.employee': got a value of type "
        "string (string), expected int; hint: CAST(... AS int) converts explicitly"
    )
    assert (
        main(["--warehouse", warehouse, "--format", "csv", "SELECT id, salary FROM employee ORDER BY id"])
        == 0
    )
    assert capsys.readouterr().out == "id,salary\n1,5000\n2,8000\n3,6000\n"
    assert main(["--warehouse", warehouse, "SELECT * FROM missing"]) == 1
    assert capsys.readouterr().err.startswith("acidflow sql: error: No such table 'default.missing'")
    assert main(["--warehouse", warehouse]) == 2


def test_add_sql_parser_sets_the_handler():
    parser = build_parser(["sql"])
    args = parser.parse_args(["sql", "--format", "csv", "SHOW TABLES"])
    assert args.handler.__name__ == "run_sql"
    assert (args.format, args.statements) == ("csv", ["SHOW TABLES"])


def test_python_dash_m_runs_a_script(warehouse):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "acid_core.cli",
            "sql",
            "--warehouse",
            warehouse,
            "--format",
            "jsonl",
            CREATE,
            INSERT,
            "SELECT name FROM employee ORDER BY id",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"name":"Jerry"}\n{"name":"Tom"}\n'


# Each registered statement and how the help names it (written by hand, not read from the help).
HELP_NAMES = {
    "create_table": "CREATE TABLE",
    "drop_table": "DROP TABLE",
    "create_database": "CREATE/DROP DATABASE",
    "drop_database": "CREATE/DROP DATABASE",
    "show_databases": "SHOW DATABASES",
    "describe": "DESCRIBE",
    "show_tables": "SHOW TABLES",
    "show_partitions": "SHOW PARTITIONS",
    "show_transactions": "SHOW TRANSACTIONS",
    "abort_transactions": "ABORT TRANSACTIONS",
    "alter_table_partition": "ADD/DROP PARTITION",
    "alter_table_set_location": "SET LOCATION '..'",
    "alter_table_properties": "SET TBLPROPERTIES ('k'='v', ..) / UNSET TBLPROPERTIES [IF EXISTS] ('k', ..)",
    "select": "SELECT",
    "insert": "INSERT INTO",
    "update": "UPDATE",
    "delete": "DELETE",
    "merge": "MERGE",
    "show_locks": "SHOW LOCKS [t [PARTITION (k='v', ..)]] [EXTENDED]",
    "explain_locks": "EXPLAIN LOCKS <statement>",
    "alter_table_compact": "COMPACT 'minor'|'major'",
    "show_compactions": "SHOW COMPACTIONS",
    "abort_compactions": "ABORT COMPACTIONS",
}


def test_help_names_every_registered_statement(capsys):
    from acid_core.sql.registry import load_extensions, registered_statements

    load_extensions()
    registered = {s.name for s in registered_statements() if s.handler.__module__.startswith("acid_core.")}
    assert registered == set(HELP_NAMES)
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for phrase in HELP_NAMES.values():
        assert phrase in shown


THRESHOLD = "compactorthreshold.hive.compactor.delta.num.threshold"


def _properties(warehouse, table="default.employee"):
    from acid_core.writes.transaction import Warehouse

    with Warehouse.open(warehouse, heartbeat_seconds=None) as wh:
        return dict(wh.metastore.get_table(table).properties)


def _initiate(warehouse, capsys):
    capsys.readouterr()
    assert acidflow(["initiate", "--dry-run", "--json", "--warehouse", warehouse]) == 0
    [decision] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return decision["reason"], decision["compaction_type"]


def test_sql_alter_table_set_unset_tblproperties_steers_the_initiator(warehouse, capsys):
    """Issue 24: NO_AUTO_COMPACTION and compactorthreshold.* set by ALTER TABLE reach the initiator."""
    inserts = [f"INSERT INTO employee VALUES ({i}, 'n{i}', {i})" for i in range(3)]
    assert main(["--warehouse", warehouse, CREATE, *inserts]) == 0
    assert _initiate(warehouse, capsys) == ("below_thresholds", None)  # 3 deltas <= 10

    set_both = f"ALTER TABLE employee SET TBLPROPERTIES ('NO_AUTO_COMPACTION'='true', '{THRESHOLD}'='2')"
    assert main(["--warehouse", warehouse, set_both]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"OK: TBLPROPERTIES of default.employee: set no_auto_compaction='true', {THRESHOLD}='2'"
    ]
    assert _initiate(warehouse, capsys) == ("no_auto_compaction", None)

    assert (
        main(["--warehouse", warehouse, "ALTER TABLE employee UNSET TBLPROPERTIES ('no_auto_compaction')"])
        == 0
    )
    assert capsys.readouterr().err.splitlines() == [
        "OK: TBLPROPERTIES of default.employee: unset no_auto_compaction"
    ]
    assert _initiate(warehouse, capsys) == ("no_base_and_delta_num_over_threshold", "major")
    assert _properties(warehouse)[THRESHOLD] == "2"


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        (
            f"ALTER TABLE employee SET TBLPROPERTIES ('{THRESHOLD}'='-3')",
            f"Invalid compaction setting {THRESHOLD}='-3'; expected a non-negative integer; hint: fix or unset "
            "it with ALTER TABLE ... SET/UNSET TBLPROPERTIES",
        ),
        (
            "ALTER TABLE employee SET TBLPROPERTIES ('NO_AUTO_COMPACTION'='ture', 'comment'='x')",
            "Invalid table property no_auto_compaction='ture' for table default.employee; expected 'true' or "
            "'false'; hint: NO_AUTO_COMPACTION='true' stops automatic compaction of the table",
        ),
        (
            "ALTER TABLE employee SET TBLPROPERTIES ('transactional'='false')",
            "Invalid table property transactional='false' for table default.employee; expected 'true': "
            "TBLPROPERTIES with 'transactional'='true' cannot be unset; hint: a transactional table stays "
            "transactional (Hive's rule); copy the rows into a new table",
        ),
        (
            "ALTER TABLE employee UNSET TBLPROPERTIES ('transactional')",
            "Invalid table property transactional (unset) for table default.employee; expected 'true': "
            "TBLPROPERTIES with 'transactional'='true' cannot be unset; hint: a transactional table stays "
            "transactional (Hive's rule); copy the rows into a new table",
        ),
        (
            "ALTER TABLE employee UNSET TBLPROPERTIES ('comment')",
            "No table property 'comment' in table default.employee; expected one of ['transactional']; hint: "
            "ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS (..) ignores missing keys, as in Hive",
        ),
        (
            "ALTER TABLE employee SET TBLPROPERTIES IF EXISTS ('a'='b')",
            "Syntax error in \"ALTER TABLE employee SET TBLPROPERTIES IF EXISTS ('a'='b')\": IF EXISTS after SET "
            "TBLPROPERTIES (only UNSET takes it); expected a Hive SQL statement; hint: `acidflow sql --help` "
            "lists the supported statements",
        ),
        (
            "ALTER TABLE employee SET TBLPROPERTIES ('a')",
            "Syntax error in \"ALTER TABLE employee SET TBLPROPERTIES ('a')\": TBLPROPERTIES item 'a' is not "
            "one of 'key'='value' pairs; expected a Hive SQL statement; hint: `acidflow sql --help` lists the "
            "supported statements",
        ),
        (
            "ALTER TABLE nope SET TBLPROPERTIES ('a'='b')",
            None,
        ),
    ],
    ids=[
        "negative-threshold",
        "no-auto-compaction-typo",
        "transactional-false",
        "unset-transactional",
        "unset-missing-key",
        "set-if-exists",
        "key-without-value",
        "unknown-table",
    ],
)
def test_sql_alter_table_tblproperties_bad_input_refused_nothing_changed(
    warehouse, capsys, statement, message
):
    assert main(["--warehouse", warehouse, CREATE]) == 0
    before = _properties(warehouse)
    capsys.readouterr()

    assert main(["--warehouse", warehouse, statement]) == 1

    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("acidflow sql: error: ")
    if message is not None:
        assert lines[0] == f"acidflow sql: error: {message}"
    else:
        assert "nope" in lines[0]
    assert _properties(warehouse) == before


def test_sql_alter_table_set_transactional_converts_a_plain_table(warehouse, capsys):
    """Hive's conversion: a plain managed table becomes full ACID; its files are read as original
    files (synthetic row IDs: write ID 0, bucket 0, row number) and later writes are ACID events."""
    statements = [
        "CREATE TABLE p (id int, v string) STORED AS ORC",
        "INSERT INTO p VALUES (1, 'a'), (2, 'b')",
        "ALTER TABLE p SET TBLPROPERTIES ('transactional'='true')",
        "DELETE FROM p WHERE id = 2",
    ]
    assert main(["--warehouse", warehouse, *statements]) == 0
    assert (
        capsys.readouterr().err.splitlines()[2] == "OK: TBLPROPERTIES of default.p: set transactional='true'"
    )
    assert main(["--warehouse", warehouse, "--format", "jsonl", "SELECT row__id, id, v FROM p"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {"row__id": {"writeid": 0, "bucketid": 536870912, "rowid": 0}, "id": 1, "v": "a"}
    ]
