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
