"""Each statement takes the locks ``plan_statement_locks`` gives it, through the configured manager."""

from __future__ import annotations

import pytest

from acid_core.errors import LockRefusedError
from acid_core.locks import InMemoryLockManager, InMemoryLockTable, LockMode, LockRequest, parse_lock_object
from acid_core.locks.planner import StatementKind, StatementLocks
from acid_core.metastore import InMemoryMetastore
from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse

CREATE = "CREATE TABLE employee (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')"


@pytest.fixture
def locks():
    return InMemoryLockTable()


@pytest.fixture
def session(tmp_path, locks):
    root = str(tmp_path / "wh")
    warehouse = Warehouse(
        root,
        InMemoryMetastore(warehouse=root),
        InMemoryLockManager(locks),
        heartbeat_seconds=None,
        lock_retries=0,
        lock_wait_seconds=0,
    )
    with warehouse:
        yield SqlSession(warehouse)


def test_an_exclusive_holder_blocks_an_insert_which_then_changes_nothing(session, locks):
    session.execute(f"{CREATE}; INSERT INTO employee VALUES (1)")
    other = InMemoryLockManager(locks)
    handle = other.acquire(
        [LockRequest(parse_lock_object("default.employee"), LockMode.EXCLUSIVE)], holder="dba", retries=0
    )
    with pytest.raises(LockRefusedError, match=r"S default.employee"):
        session.execute("INSERT INTO employee VALUES (2)")
    other.release(handle)
    (result,) = session.execute("SELECT id FROM employee")
    assert result.rows.column("id").to_pylist() == [1]
    assert session.warehouse.metastore.get_txn(2).state.value == "aborted"
    assert session.warehouse.lock_manager.show() == []  # nothing left behind


def test_drop_table_waits_for_a_writer_holding_its_shared_lock(session):
    session.execute(CREATE)
    with session.warehouse.transaction() as txn:
        target = parse_lock_object("default.employee")
        txn.lock(StatementLocks(StatementKind.INSERT, target=target, is_acid=True))
        with pytest.raises(LockRefusedError, match=r"X default.employee"):
            session.execute("DROP TABLE employee")
        assert [str(i.object) for i in session.warehouse.lock_manager.show()] == ["default.employee"]
    session.execute("DROP TABLE employee")
    (result,) = session.execute("SHOW TABLES")
    assert result.rows.num_rows == 0
