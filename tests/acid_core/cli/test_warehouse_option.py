"""``--warehouse`` / ``ACIDFLOW_WAREHOUSE`` in every command: a URI is used as one, bad values refused.

Issue 22: ``ACIDFLOW_WAREHOUSE=s3://wh3/warehouse acidflow sql ...`` wrote a local ``./s3:``
directory with tables and metastore. Issue 24: ``bogus://x/y`` and an empty value did the same.
"""

from __future__ import annotations

import os

import pytest

from acid_core.cli import main as acidflow

CREATE = "CREATE TABLE e (id int, name string) STORED AS ORC TBLPROPERTIES ('transactional'='true')"


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    for name in ("ACIDFLOW_METASTORE", "ACIDFLOW_WAREHOUSE", "ACIDFLOW_LOCK_MANAGER", "ACIDFLOW_ZOOKEEPER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


_COMMANDS = {
    "sql": ["sql", CREATE],
    "sql-show": ["sql", "SHOW TABLES"],
    "initiate": ["initiate"],
    "clean": ["clean"],
    "compact": ["compact"],
    "lease-take": ["lease", "take", "default.e"],
    "lock-show": ["lock", "show"],
}


@pytest.mark.parametrize("command", list(_COMMANDS.values()), ids=list(_COMMANDS))
@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("bogus://x/y", "scheme 'bogus' is not supported"),
        ("", "it is empty (an unset variable?)"),
        ("s3:///warehouse", "it names no bucket"),
    ],
    ids=["unknown-scheme", "empty", "no-bucket"],
)
def test_warehouse_env_invalid_refused_in_one_line_nothing_created(
    cwd, monkeypatch, capsys, command, value, problem
):
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", value)
    assert acidflow(command) != 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert f"Invalid warehouse {value!r} ($ACIDFLOW_WAREHOUSE): {problem}" in lines[0]
    assert os.listdir(cwd) == []


@pytest.mark.parametrize("command", list(_COMMANDS.values()), ids=list(_COMMANDS))
def test_warehouse_option_empty_refused(cwd, capsys, command):
    assert acidflow([*command, "--warehouse", ""]) != 0
    assert "Invalid warehouse '' (--warehouse): it is empty" in capsys.readouterr().err
    assert os.listdir(cwd) == []


@pytest.mark.parametrize("command", list(_COMMANDS.values()), ids=list(_COMMANDS))
@pytest.mark.parametrize("how", ["env", "option"])
def test_s3_warehouse_without_metastore_refused_nothing_local(cwd, monkeypatch, capsys, command, how):
    if how == "env":
        monkeypatch.setenv("ACIDFLOW_WAREHOUSE", "s3://wh3/warehouse")
    else:
        command = [*command, "--warehouse", "s3://wh3/warehouse"]
    assert acidflow(command) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert (
        "No metastore for warehouse 's3://wh3/warehouse': the embedded SQLite metastore lives only in a "
        "local warehouse directory; expected --metastore / ACIDFLOW_METASTORE set for a warehouse on S3 or HDFS"
    ) in lines[0]
    assert os.listdir(cwd) == []  # no ./s3: directory, no metastore file


def test_unset_warehouse_is_the_local_default(cwd, capsys):
    assert acidflow(["sql", CREATE]) == 0
    assert os.path.isfile(cwd / "warehouse" / ".acidflow" / "metastore.sqlite")
