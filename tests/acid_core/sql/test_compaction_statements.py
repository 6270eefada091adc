"""ALTER TABLE .. COMPACT, SHOW COMPACTIONS, ABORT COMPACTIONS through the SQL engine (acidflow sql)."""

from __future__ import annotations

import pytest

from acid_core.errors import InvalidPartitionError, NoSuchPartitionError
from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse

SETUP = """
CREATE TABLE emp (id INT, name STRING) PARTITIONED BY (dept STRING)
  STORED AS ORC TBLPROPERTIES ('transactional'='true');
INSERT INTO emp PARTITION (dept='a') VALUES (1, 'x'), (2, 'y');
INSERT INTO emp PARTITION (dept='a') VALUES (3, 'z');
DELETE FROM emp WHERE id = 2;
INSERT INTO emp PARTITION (dept='b') VALUES (4, 'w');
"""


@pytest.fixture
def session(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    sql = SqlSession(warehouse)
    sql.execute(SETUP)
    yield sql
    warehouse.close()


def select_all(session):
    (result,) = session.execute("SELECT id, name, dept FROM emp")
    return sorted(tuple(r.values()) for r in result.rows.to_pylist())


def test_alter_table_compact_queues_and_show_compactions_lists(session):
    (result,) = session.execute("ALTER TABLE emp PARTITION (dept='a') COMPACT 'major'")
    assert result.message == "Compaction enqueued with id 1 (major, default.emp partition dept=a)"
    (shown,) = session.execute("SHOW COMPACTIONS")
    rows = shown.rows.to_pylist()
    assert [
        (r["compactionid"], r["dbname"], r["tabname"], r["partname"], r["type"], r["state"]) for r in rows
    ] == [(1, "default", "emp", "dept=a", "MAJOR", "initiated")]
    assert rows[0]["initiatorid"] == "manual"


def test_alter_table_compact_and_wait_runs_it(session):
    before = select_all(session)
    (result,) = session.execute(
        "ALTER TABLE emp PARTITION (dept='a') COMPACT 'minor' AND WAIT "
        "WITH OVERWRITE TBLPROPERTIES ('acidflow.compactor.hive31-names'='true')"
    )
    assert result.message == "Compaction 1 (minor, default.emp partition dept=a): ready for cleaning"
    assert select_all(session) == before
    info = session.warehouse.metastore.get_compaction(1)
    assert dict(info.properties) == {"acidflow.compactor.hive31-names": "true"}
    (result,) = session.execute("ALTER TABLE emp PARTITION (dept='a') COMPACT 'major' AND WAIT")
    assert result.message == "Compaction 2 (major, default.emp partition dept=a): ready for cleaning"
    assert select_all(session) == before


def test_show_compactions_filters_by_table_partition_type_and_state(session):
    session.execute("ALTER TABLE emp PARTITION (dept='a') COMPACT 'major' AND WAIT")
    session.execute("ALTER TABLE emp PARTITION (dept='b') COMPACT 'minor'")

    def ids(text):
        (shown,) = session.execute(text)
        return shown.rows.column("compactionid").to_pylist()

    assert ids("SHOW COMPACTIONS emp") == [1, 2]
    assert ids("SHOW COMPACTIONS default.emp PARTITION (dept='b')") == [2]
    assert ids("SHOW COMPACTIONS TYPE 'major'") == [1]
    assert ids("SHOW COMPACTIONS emp STATE 'ready for cleaning'") == [1]
    assert ids("SHOW COMPACTIONS STATE 'initiated'") == [2]
    assert ids("SHOW COMPACTIONS TYPE 'minor' STATE 'failed'") == []


def test_abort_compactions_reports_each_id(session):
    session.execute("ALTER TABLE emp PARTITION (dept='a') COMPACT 'major' AND WAIT")
    session.execute("ALTER TABLE emp PARTITION (dept='b') COMPACT 'major'")
    (result,) = session.execute("ABORT COMPACTIONS 2 1 99")
    rows = result.rows.to_pylist()
    assert [(r["compactionid"], r["status"]) for r in rows] == [(2, "Success"), (1, "Error"), (99, "Error")]
    assert "ready_for_cleaning" in rows[1]["message"]
    (shown,) = session.execute("SHOW COMPACTIONS STATE 'aborted'")
    assert shown.rows.column("compactionid").to_pylist() == [2]


def test_alter_table_compact_partitioned_table_needs_partition(session):
    with pytest.raises(InvalidPartitionError, match=r"Invalid partition None of table 'default.emp'"):
        session.execute("ALTER TABLE emp COMPACT 'major'")
    with pytest.raises(InvalidPartitionError, match=r"a value for each partition key \['dept'\]"):
        session.execute("ALTER TABLE emp PARTITION (region='x') COMPACT 'major'")


def test_alter_table_compact_missing_partition_refused_nothing_queued(session):
    # Hive's AlterTableCompactOperation: a spec naming no partition is INVALID_PARTITION_SPEC.
    with pytest.raises(NoSuchPartitionError, match=r"No such partition 'dept=zz' in table 'default\.emp'"):
        session.execute("ALTER TABLE emp PARTITION (dept='zz') COMPACT 'major' AND WAIT")
    (shown,) = session.execute("SHOW COMPACTIONS")
    assert shown.rows.num_rows == 0


def test_alter_table_compact_and_wait_holds_the_maintenance_lock(tmp_path):
    from acid_core.locks import InMemoryLockManager, LockMode, LockRequest, parse_lock_object

    locks = InMemoryLockManager()
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None, lock_manager=locks)
    try:
        sql = SqlSession(warehouse)
        sql.execute(SETUP)
        other = locks.session()
        held = other.acquire(
            [LockRequest(parse_lock_object("default.emp/dept=a#maintenance"), LockMode.EXCLUSIVE)],
            holder="another worker",
            retries=0,
        )
        (result,) = sql.execute("ALTER TABLE emp PARTITION (dept='a') COMPACT 'major' AND WAIT")
        assert result.message.startswith("Compaction 1 (major, default.emp partition dept=a): refused: ")
        assert "held in exclusive mode by 'another worker'" in result.message
        other.release(held)
    finally:
        warehouse.close()
