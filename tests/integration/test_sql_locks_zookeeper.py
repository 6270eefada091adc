"""SHOW LOCKS / EXPLAIN LOCKS in ``acidflow sql`` with ``ACIDFLOW_LOCK_MANAGER=zookeeper`` (issue 5).

A real ZooKeeper server (``tests/fixtures/zookeeper.py``); the locks are held by other
``KazooLockManager`` instances (other ZooKeeper sessions) and listed by ``acidflow sql`` through its
own session. Every test runs under its own chroot, so locks of other tests never show up.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from kazoo.client import KazooClient

from acid_core.cli import main
from acid_core.locks import LockMode, LockRequest, parse_lock_object
from acid_core.locks.zookeeper import KazooLockManager

pytestmark = pytest.mark.integration("zookeeper")

TABLES = (
    "CREATE TABLE t1 (a int) PARTITIONED BY (p string) STORED AS ORC; "
    "CREATE TABLE t3 (a int) PARTITIONED BY (p string, q string) STORED AS ORC; "
    "CREATE TABLE acid1 (id int, v int) PARTITIONED BY (p string) STORED AS ORC "
    "TBLPROPERTIES ('transactional'='true')"
)


@pytest.fixture
def zookeeper_hosts(zookeeper_server, monkeypatch):
    chroot = f"/acidflow-sql-test-{uuid.uuid4().hex}"
    client = KazooClient(hosts=zookeeper_server.hosts)
    client.start(timeout=15)
    client.ensure_path(chroot)
    client.stop()
    client.close()
    hosts = f"{zookeeper_server.hosts}{chroot}"
    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.delenv("ACIDFLOW_WAREHOUSE", raising=False)
    monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "zookeeper")
    monkeypatch.setenv("ACIDFLOW_ZOOKEEPER", hosts)
    return hosts


def _sql(warehouse, statement, capsys):
    capsys.readouterr()
    code = main(["sql", "--warehouse", warehouse, "--format", "jsonl", statement])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [json.loads(line) for line in captured.out.splitlines()]


def test_show_locks_lists_locks_held_by_other_zookeeper_sessions(zookeeper_hosts, tmp_path, capsys):
    warehouse = str(tmp_path / "wh")
    assert main(["sql", "--warehouse", warehouse, TABLES]) == 0
    etl = KazooLockManager(zookeeper_hosts, host="etl-host")
    report = KazooLockManager(zookeeper_hosts, host="report-host")
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        etl.acquire(
            [LockRequest(parse_lock_object("default.t3/p=1/q=2"), LockMode.EXCLUSIVE)],
            holder="etl",
            txn_id=5,
            retries=0,
        )
        report.acquire(
            [LockRequest(parse_lock_object("default.t1"), LockMode.SHARED)], holder="report", retries=0
        )
        after = datetime.now(UTC)

        assert _sql(warehouse, "SHOW LOCKS", capsys) == [
            {"object": "default.t1", "mode": "S"},
            {"object": "default.t3", "mode": "S"},
            {"object": "default.t3/p=1", "mode": "S"},
            {"object": "default.t3/p=1/q=2", "mode": "X"},
        ]
        extended = _sql(warehouse, "SHOW LOCKS t3 PARTITION (p='1') EXTENDED", capsys)
        for row in extended:
            assert before <= datetime.fromisoformat(row.pop("acquired_at")) <= after
        assert extended == [
            {"object": "default.t3/p=1", "mode": "S", "holder": "etl", "host": "etl-host", "txn_id": 5},
            {"object": "default.t3/p=1/q=2", "mode": "X", "holder": "etl", "host": "etl-host", "txn_id": 5},
        ]
        assert [r["holder"] for r in _sql(warehouse, "SHOW LOCKS default.t1 EXTENDED", capsys)] == ["report"]

        # EXPLAIN LOCKS plans the X that etl's S on default.t3 would refuse, and takes nothing.
        assert _sql(warehouse, "EXPLAIN LOCKS DROP TABLE t3", capsys) == [
            {"object": "default.t3", "mode": "X"}
        ]
        # A real ACID write on another table takes and releases its S locks around etl's.
        assert _sql(warehouse, "INSERT INTO acid1 PARTITION (p='2') VALUES (1, 2)", capsys) == []
        assert len(_sql(warehouse, "SHOW LOCKS", capsys)) == 4

        # A session that ends frees its ephemeral lock nodes; SHOW LOCKS sees them go.
        etl.close()
        assert _sql(warehouse, "SHOW LOCKS", capsys) == [{"object": "default.t1", "mode": "S"}]
    finally:
        etl.close()
        report.close()
    assert _sql(warehouse, "SHOW LOCKS", capsys) == []
