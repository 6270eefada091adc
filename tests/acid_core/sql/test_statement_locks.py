"""Each statement takes exactly the locks EXPLAIN LOCKS prints, through the configured manager (issue 5).

Expected locks are the rows of issue 5's statement table (HIVE-1293) with the hierarchy rule,
written by hand; for ACID writes whose partitions are only known when they run, S on each
partition the test data makes them write (DbTxnManager: S on the table and the partitions an ACID
write touches). The hole they close: ALTER TABLE .. DROP PARTITION (S on the table, X on the
partition) used to be compatible with an ACID write into, or a read of, that partition.
Lock spaces: in-memory, the SQL lock manager on SQLite, and a real ZooKeeper.
"""

from __future__ import annotations

import os
import uuid

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


# -- every statement takes exactly the locks EXPLAIN LOCKS prints (one mapping) --------------------

TABLES = (
    "CREATE TABLE t1 (a int) PARTITIONED BY (p string) STORED AS ORC; "
    "CREATE TABLE t2 (a int) PARTITIONED BY (p string) STORED AS ORC; "
    "CREATE TABLE t3 (a int) PARTITIONED BY (p string, q string) STORED AS ORC; "
    "CREATE TABLE acid1 (id int, v int) PARTITIONED BY (p string) STORED AS ORC "
    "TBLPROPERTIES ('transactional'='true'); "
    "INSERT INTO t1 PARTITION (p='1') VALUES (1); "
    "INSERT INTO t2 PARTITION (p='2') VALUES (1); "
    "INSERT INTO t2 PARTITION (p='3') VALUES (5); "
    "INSERT INTO acid1 VALUES (1, 1, '1'), (2, 2, '2')"
)


class ObservedLockManager:
    """A real lock manager that runs ``on_acquire`` right after each grant, while the locks are held."""

    def __init__(self, manager):
        self.manager = manager
        self.on_acquire = None

    def acquire(self, requests, **kwargs):
        handle = self.manager.acquire(requests, **kwargs)
        if self.on_acquire is not None:
            self.on_acquire()
        return handle

    def release(self, handle):
        self.manager.release(handle)

    def show(self, prefix=None, *, extended=False):
        return self.manager.show(prefix, extended=extended)

    def close(self):
        self.manager.close()


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.backend("memory")),
        pytest.param("sqlite", marks=pytest.mark.backend("sqlite")),
        pytest.param("zookeeper", marks=pytest.mark.integration("zookeeper")),
    ]
)
def new_lock_manager(request, tmp_path):
    """Opens lock manager sessions on one lock space: in-memory, the SQL manager on SQLite, or a
    real ZooKeeper server (``tests/fixtures/zookeeper.py``) under a root of this test's own."""
    shared = InMemoryLockTable()
    managers = []
    root = f"/acidflow-test/{uuid.uuid4().hex}/locks"

    def make():
        if request.param == "memory":
            manager = InMemoryLockManager(shared)
        elif request.param == "zookeeper":
            from acid_core.locks.zookeeper import KazooLockManager

            server = request.getfixturevalue("zookeeper_server")
            manager = KazooLockManager(server.hosts, root=root, session_timeout=10)
        else:
            from acid_core.locks.sql import SqlLockManager

            manager = SqlLockManager(f"sqlite:///{tmp_path}/locks.sqlite", session_timeout=30)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        manager.close()


@pytest.fixture
def two_sessions(tmp_path, new_lock_manager):
    """A writer session whose lock manager is observed, and a DBA session; one metastore, one lock space."""
    root = str(tmp_path / "wh")
    metastore = InMemoryMetastore(warehouse=root)
    observed = ObservedLockManager(new_lock_manager())
    options = {"heartbeat_seconds": None, "lock_retries": 1, "lock_wait_seconds": 0.05}
    writer = SqlSession(Warehouse(root, metastore, observed, **options))
    dba = SqlSession(Warehouse(root, metastore, new_lock_manager(), **options))
    writer.execute(TABLES)
    yield writer, dba, observed
    metastore.close()


def _held(manager):
    # Distinct locks: a run-time partition lock repeats S on its table (a second grant of the
    # same transaction, compatible with its first).
    return sorted({f"{i.mode.letter} {i.object.to_name()}" for i in manager.show()})


def _explain(session, statement):
    (result,) = session.execute(f"EXPLAIN LOCKS {statement}")
    return [f"{row['mode']} {row['object']}" for row in result.rows.to_pylist()]


# (id, statement, the design's locks as EXPLAIN LOCKS prints them, S taken at run time on the
# partitions the statement writes: the test data decides which). The design rows are those of
# test_lock_statements.DESIGN_ROWS that acidflow executes (it does not run ALTER TABLE RENAME /
# ADD COLUMNS / SET SERDE / TOUCH / CONCATENATE; COMPACT's locks are the compaction worker's).
RUN_ROWS = [
    ("select-t1-p1", "SELECT a FROM t1 WHERE p = '1'", ["S default.t1", "S default.t1/p=1"], []),
    (
        "insert-t2-p2-select-t1-p1",
        "INSERT INTO TABLE t2 PARTITION (p='2') SELECT a FROM t1 WHERE p = '1'",
        ["S default.t1", "S default.t1/p=1", "S default.t2", "X default.t2/p=2"],
        [],
    ),
    (
        "insert-t2-pq-select-t1-p1",
        "INSERT INTO TABLE t3 PARTITION (p='1', q='2') SELECT a FROM t1 WHERE t1.p = '1'",
        ["S default.t1", "S default.t1/p=1", "S default.t3", "S default.t3/p=1", "X default.t3/p=1/q=2"],
        [],
    ),
    ("alter-add-partition", "ALTER TABLE t1 ADD PARTITION (p='9')", ["S default.t1", "X default.t1/p=9"], []),
    (
        "alter-drop-partition",
        "ALTER TABLE t1 DROP PARTITION (p='1')",
        ["S default.t1", "X default.t1/p=1"],
        [],
    ),
    (
        "alter-add-partition-keys-out-of-order",
        "ALTER TABLE t3 ADD PARTITION (q='2', p='1')",
        ["S default.t3", "S default.t3/p=1", "X default.t3/p=1/q=2"],
        [],
    ),
    ("drop-table", "DROP TABLE t1", ["X default.t1"], []),
    # non-ACID dynamic partitions: X on the table or the known prefix covers every partition written
    (
        "dynamic-all-keys",
        "INSERT INTO TABLE t2 PARTITION (p) SELECT a, p FROM t1",
        ["S default.t1", "X default.t2"],
        [],
    ),
    (
        "dynamic-known-prefix",
        "INSERT INTO TABLE t3 PARTITION (p='1', q) SELECT a, p FROM t1",
        ["S default.t1", "S default.t3", "X default.t3/p=1"],
        [],
    ),
    # ACID writes: S on the table and on each partition written (known up front, or at run time)
    (
        "acid-insert-partition",
        "INSERT INTO acid1 PARTITION (p='1') VALUES (1, 2)",
        ["S default.acid1", "S default.acid1/p=1"],
        [],
    ),
    (
        "acid-insert-dynamic",
        "INSERT INTO acid1 VALUES (1, 2, '1')",
        ["S default.acid1"],
        ["S default.acid1/p=1"],
    ),
    (
        "acid-update-partition",
        "UPDATE acid1 SET v = 3 WHERE p = '1' AND id = 1",
        ["S default.acid1", "S default.acid1/p=1"],
        [],
    ),
    ("acid-delete", "DELETE FROM acid1 WHERE id = 1", ["S default.acid1"], ["S default.acid1/p=1"]),
    (
        "acid-merge",
        # t2 holds a=1 (matches acid1 id 1 in p=1: updated) and a=5 in p=3 (inserted into acid1 p=3)
        "MERGE INTO acid1 AS t USING t2 AS s ON t.id = s.a WHEN MATCHED THEN UPDATE SET v = s.a "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.a, 0, s.p)",
        ["S default.acid1", "S default.t2"],
        ["S default.acid1/p=1", "S default.acid1/p=3"],
    ),
    ("create-table", "CREATE TABLE t4 (a int) STORED AS ORC", [], []),
    ("show-tables", "SHOW TABLES", [], []),
]


@pytest.mark.parametrize(
    ("statement", "expected", "at_run_time"), [r[1:] for r in RUN_ROWS], ids=[r[0] for r in RUN_ROWS]
)
def test_statement_holds_exactly_the_locks_explain_locks_prints(
    two_sessions, statement, expected, at_run_time
):
    writer, _, observed = two_sessions
    assert _explain(writer, statement) == expected
    snapshots = []
    observed.on_acquire = lambda: snapshots.append(_held(observed))
    writer.execute(statement)
    observed.on_acquire = None
    if not expected:
        assert snapshots == []  # nothing acquired at all
    else:
        # The first grant is the statement's lock set: exactly EXPLAIN LOCKS' rows.
        assert snapshots[0] == sorted(expected)
        # Partitions written that the first set does not cover are added, in S, before writing.
        assert snapshots[-1] == sorted(expected + at_run_time)
    assert _held(observed) == []  # all released when the statement ends


HOLE_CASES = [
    ("acid-insert-static", "INSERT INTO acid1 PARTITION (p='1') VALUES (7, 7)", 7),
    ("acid-insert-dynamic", "INSERT INTO acid1 VALUES (7, 7, '1')", 7),
    ("acid-update-pinned", "UPDATE acid1 SET v = 7 WHERE p = '1' AND id = 1", 7),
    ("acid-update-unpinned", "UPDATE acid1 SET v = 7 WHERE id = 1", 7),
    ("acid-delete-unpinned", "DELETE FROM acid1 WHERE id = 1", None),
    (
        "acid-merge",
        "MERGE INTO acid1 AS t USING (SELECT 1 AS a) AS s ON t.id = s.a WHEN MATCHED THEN UPDATE SET v = 7",
        7,
    ),
]


@pytest.mark.parametrize(
    ("statement", "v_after"), [c[1:] for c in HOLE_CASES], ids=[c[0] for c in HOLE_CASES]
)
def test_drop_partition_is_refused_while_a_write_into_it_holds_its_locks(two_sessions, statement, v_after):
    """ALTER TABLE .. DROP PARTITION (S on the table, X on the partition) conflicts with the S the
    ACID write holds on that partition, taken up front or, when the partition is only known once
    the rows are computed, before the write's files; so the DBA is refused after its retry and the
    write lands in a partition that still exists."""
    writer, dba, observed = two_sessions
    attempts = []

    def drop_while_held():
        if "S default.acid1/p=1" in _held(observed) and not attempts:
            with pytest.raises(LockRefusedError, match=r"X default\.acid1/p=1") as refused:
                dba.execute("ALTER TABLE acid1 DROP PARTITION (p='1')")
            attempts.append(refused.value)
            listed.append(sorted(os.listdir(partition_dir)))

    partition_dir = os.path.join(writer.warehouse.location, "acid1", "p=1")
    listed = []
    observed.on_acquire = drop_while_held
    writer.execute(statement)
    observed.on_acquire = None
    assert len(attempts) == 1
    # The partition was locked before the write's files: they appeared after the refusal.
    assert len(os.listdir(partition_dir)) > len(listed[0])
    assert attempts[0].attempts == 2  # the first try and its one retry
    (result,) = writer.execute("SELECT id, v FROM acid1 WHERE p = '1' ORDER BY id")
    expected = [] if v_after is None else [{"id": 1 if "UPDATE" in statement else 7, "v": v_after}]
    if "INSERT" in statement:
        expected = [{"id": 1, "v": 1}, {"id": 7, "v": 7}]
    assert result.rows.to_pylist() == expected
    # Once the writer is done, the DROP goes through.
    dba.execute("ALTER TABLE acid1 DROP PARTITION (p='1')")
    (result,) = dba.execute("SHOW PARTITIONS acid1")
    assert result.rows.column("partition").to_pylist() == ["p=2"]


def test_select_of_a_partition_holds_off_its_drop(two_sessions):
    writer, dba, observed = two_sessions
    refused = []

    def drop_while_held():
        try:
            dba.execute("ALTER TABLE acid1 DROP PARTITION (p='1')")
        except LockRefusedError as e:
            refused.append(e)

    observed.on_acquire = drop_while_held
    (result,) = writer.execute("SELECT id FROM acid1 WHERE p = '1'")
    observed.on_acquire = None
    assert result.rows.column("id").to_pylist() == [1]
    assert len(refused) == 1


def test_add_and_drop_partition_spec_out_of_key_order_name_the_same_partition(two_sessions, tmp_path):
    writer, _, _ = two_sessions
    writer.execute("ALTER TABLE t3 ADD PARTITION (q='2', p='1')")
    (result,) = writer.execute("SHOW PARTITIONS t3")
    assert result.rows.column("partition").to_pylist() == ["p=1/q=2"]
    directory = tmp_path / "wh" / "t3" / "p=1" / "q=2"
    assert directory.is_dir()
    writer.execute("ALTER TABLE t3 DROP PARTITION (q='2', p='1')")
    (result,) = writer.execute("SHOW PARTITIONS t3")
    assert result.rows.num_rows == 0
    assert not directory.exists()
