"""``acidflow lock acquire|show`` and the manager switch (ACIDFLOW_LOCK_MANAGER, ACIDFLOW_ZOOKEEPER)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from acid_core.cli.app import build_parser
from acid_core.cli.lock import run_lock
from acid_core.errors import (
    InvalidLockConfigError,
    InvalidLockRequestError,
    LockRefusedError,
    NoSuchTxnError,
    TxnNotOpenError,
)
from acid_core.locks import NoLockManager, open_lock_manager
from acid_core.metastore.factory import open_metastore

REPO = Path(__file__).resolve().parents[3]


def _parse(argv):
    parser = build_parser(["lock"])
    return parser.parse_args(argv)


def test_open_lock_manager_none_switches_locking_off():
    assert isinstance(open_lock_manager({"ACIDFLOW_LOCK_MANAGER": "none"}), NoLockManager)
    assert isinstance(open_lock_manager({"ACIDFLOW_LOCK_MANAGER": " NONE "}), NoLockManager)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"ACIDFLOW_LOCK_MANAGER": "redis"},
            "Invalid lock configuration ACIDFLOW_LOCK_MANAGER='redis'; expected zookeeper, sql or none",
        ),
        (
            {"ACIDFLOW_LOCK_MANAGER": "zookeeper"},
            "Invalid lock configuration ACIDFLOW_ZOOKEEPER=''; expected host:port[,host:port...]; "
            "hint: set it when ACIDFLOW_LOCK_MANAGER=zookeeper",
        ),
        (
            {"ACIDFLOW_ZOOKEEPER": "localhost"},
            "Invalid lock configuration ACIDFLOW_ZOOKEEPER='localhost'; expected host:port[,host:port...][/chroot]",
        ),
        (
            {"ACIDFLOW_ZOOKEEPER": "a:1,b:x"},
            "Invalid lock configuration ACIDFLOW_ZOOKEEPER='a:1,b:x'; expected host:port[,host:port...][/chroot]",
        ),
        (
            {"ACIDFLOW_ZOOKEEPER": "localhost:99999999"},
            "Invalid lock configuration ACIDFLOW_ZOOKEEPER='localhost:99999999'; expected "
            "host:port[,host:port...][/chroot] with each port from 1 to 65535; hint: port 99999999 of "
            "'localhost:99999999' is out of range",
        ),
        (
            {"ACIDFLOW_ZOOKEEPER": "a:2181,b:0/acidflow"},
            "Invalid lock configuration ACIDFLOW_ZOOKEEPER='a:2181,b:0/acidflow'; expected "
            "host:port[,host:port...][/chroot] with each port from 1 to 65535; hint: port 0 of 'b:0' is out "
            "of range",
        ),
    ],
    ids=["unknown-manager", "zookeeper-without-address", "no-port", "bad-port", "port-too-big", "port-zero"],
)
def test_open_lock_manager_bad_config_raises(environ, message):
    with pytest.raises(InvalidLockConfigError) as info:
        open_lock_manager(environ)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_parse_mode_rejects_unknown_mode(capsys):
    with pytest.raises(SystemExit):
        _parse(["lock", "acquire", "db.t", "--mode", "W"])
    assert "invalid parse_lock_mode value: 'W'" in capsys.readouterr().err


def test_acquire_bad_object_raises_before_connecting(monkeypatch):
    monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "none")
    with pytest.raises(InvalidLockRequestError, match=r"does not start with db\.table"):
        run_lock(_parse(["lock", "acquire", "t", "--mode", "X"]))


def test_acquire_with_locking_off_prints_hierarchy(monkeypatch, capsys):
    monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "none")
    assert run_lock(_parse(["lock", "acquire", "db.t/p=1/q=2", "--mode", "X", "--format", "jsonl"])) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        {"object": "db.t", "mode": "S"},
        {"object": "db.t/p=1", "mode": "S"},
        {"object": "db.t/p=1/q=2", "mode": "X"},
        {"released": 3},
    ]


def test_open_lock_manager_sql_defaults_to_the_warehouse_sqlite_file(tmp_path):
    from acid_core.locks.sql import SqlLockManager

    manager = open_lock_manager({"ACIDFLOW_WAREHOUSE": str(tmp_path / "wh")})
    try:
        assert isinstance(manager, SqlLockManager)
        assert (tmp_path / "wh" / ".acidflow" / "metastore.sqlite").is_file()
    finally:
        manager.close()


def test_open_lock_manager_explicit_metastore_url_wins_over_the_environment(tmp_path):
    from acid_core.locks.sql import SqlLockManager

    environ = {"ACIDFLOW_LOCK_MANAGER": "sql", "ACIDFLOW_METASTORE": "postgresql://nobody@127.0.0.1:1/none"}
    manager = open_lock_manager(environ, metastore_url=f"sqlite:///{tmp_path}/explicit.sqlite")
    try:
        assert isinstance(manager, SqlLockManager)
        assert (tmp_path / "explicit.sqlite").is_file()
    finally:
        manager.close()


@pytest.fixture(
    params=[
        pytest.param("zookeeper", marks=pytest.mark.integration("zookeeper")),
        pytest.param("sql", marks=pytest.mark.backend("sqlite")),
    ]
)
def lock_env(request, monkeypatch, tmp_path):
    """The environment that selects a real lock manager, for in-process and subprocess runs.

    ``ACIDFLOW_METASTORE`` is the metastore of ``--txn-id``'s transaction (and the sql manager's locks).
    """
    monkeypatch.setenv("ACIDFLOW_METASTORE", f"sqlite:///{tmp_path}/metastore.sqlite")
    if request.param == "sql":
        monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "sql")
        return request.param
    server = request.getfixturevalue("zookeeper_server")
    chroot = f"/acidflow-cli-test-{uuid.uuid4().hex}"
    client = KazooClient(hosts=server.hosts)
    client.start(timeout=15)
    client.ensure_path(chroot)
    client.stop()
    client.close()
    monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "zookeeper")
    monkeypatch.setenv("ACIDFLOW_ZOOKEEPER", f"{server.hosts}{chroot}")
    return request.param


def test_cli_acquire_hold_show_and_refusal(lock_env, capsys, tmp_path):
    with open_metastore(os.environ["ACIDFLOW_METASTORE"], str(tmp_path / "wh")) as metastore:
        txn_id = metastore.open_txn()
    driver = (
        "import argparse, sys\n"
        "from acid_core.cli.app import build_parser\n"
        "from acid_core.cli.lock import run_lock\n"
        "p = build_parser(['lock'])\n"
        "sys.exit(run_lock(p.parse_args(sys.argv[1:])))\n"
    )
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            driver,
            "lock",
            "acquire",
            "db.t/p=1",
            "--mode",
            "X",
            "--hold",
            "4",
            "--holder",
            "cli-holder",
            "--txn-id",
            str(txn_id),
            "--retries",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    try:
        first = [holder.stdout.readline().decode().strip() for _ in range(2)]
        assert first == ["acquired S db.t", "acquired X db.t/p=1"], holder.stderr.read().decode()[-2000:]
        assert run_lock(_parse(["lock", "show", "--extended", "--format", "jsonl"])) == 0
        shown = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(s["object"], s["mode"], s["holder"], s["txn_id"]) for s in shown] == [
            ("db.t", "S", "cli-holder", txn_id),
            ("db.t/p=1", "X", "cli-holder", txn_id),
        ]
        assert all(s["host"] and s["acquired_at"] for s in shown)
        assert run_lock(_parse(["lock", "show", "db.t/p=1"])) == 0
        assert capsys.readouterr().out == "X db.t/p=1\n"
        with pytest.raises(LockRefusedError, match="by 'cli-holder'"):
            run_lock(_parse(["lock", "acquire", "db.t", "--mode", "X", "--retries", "1", "--wait", "0.1"]))
        out, err = holder.communicate(timeout=30)
        assert holder.returncode == 0, err.decode()[-2000:]
        assert out.decode() == "released 2 lock(s)\n"
    finally:
        holder.kill()
        holder.wait(10)
        holder.stdout.close()
        holder.stderr.close()
    assert run_lock(_parse(["lock", "show"])) == 0
    assert capsys.readouterr().out == "no locks held\n"


@pytest.fixture(
    params=[
        pytest.param("sqlite", marks=pytest.mark.backend("sqlite")),
        pytest.param(
            "postgres", marks=[pytest.mark.backend("postgres"), pytest.mark.integration("postgres")]
        ),
        pytest.param(
            "hive", marks=[pytest.mark.integration("hive"), pytest.mark.slow, pytest.mark.timeout(600)]
        ),
    ]
)
def txn_metastore(request, monkeypatch, tmp_path):
    """Every metastore the lock path takes ``--txn-id`` transactions from: (URL, warehouse)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/metastore.sqlite"
    elif request.param == "postgres":
        url = request.getfixturevalue("postgres_schema_url")
    else:
        url = request.getfixturevalue("hive_metastore_server").uri
    warehouse = str(tmp_path / "wh")
    monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "sql")
    monkeypatch.setenv("ACIDFLOW_METASTORE", url)
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", warehouse)
    return url, warehouse


def test_acquire_unknown_txn_raises_and_locks_nothing(txn_metastore, capsys):
    """Hive's lock() raises NoSuchTxnException (TxnHandler.ensureValidTxn); it used to succeed."""
    with pytest.raises(NoSuchTxnError) as caught:
        run_lock(_parse(["lock", "acquire", "default.t", "--mode", "S", "--txn-id", "424242"]))
    assert str(caught.value) == (
        "No such transaction 424242; expected an ID returned by open_txn; hint: SHOW TRANSACTIONS lists the open ones"
    )
    assert capsys.readouterr().out == ""
    assert run_lock(_parse(["lock", "show"])) == 0
    assert capsys.readouterr().out == "no locks held\n"


@pytest.mark.parametrize("end", ["abort", "commit"])
def test_acquire_closed_txn_raises_naming_its_state(txn_metastore, capsys, end):
    url, warehouse = txn_metastore
    with open_metastore(url, warehouse) as metastore:
        txn_id = metastore.open_txn()
        (metastore.abort_txn if end == "abort" else metastore.commit_txn)(txn_id)
    state = "aborted" if end == "abort" else "committed"
    with pytest.raises(
        TxnNotOpenError, match=rf"^Cannot lock objects for transaction {txn_id}: it is {state}; "
    ):
        run_lock(_parse(["lock", "acquire", "default.t", "--mode", "X", "--txn-id", str(txn_id)]))
    assert capsys.readouterr().out == ""
    assert run_lock(_parse(["lock", "show"])) == 0
    assert capsys.readouterr().out == "no locks held\n"
