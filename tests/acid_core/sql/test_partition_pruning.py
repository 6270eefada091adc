"""SELECT / UPDATE / DELETE read only the partitions their WHERE pins, the ones they lock (issue 5).

The lock analysis (``k = literal`` conjuncts on a prefix of the partition keys, HIVE-1293's
``SELECT .. T1 partition P1``: S on T1, T1.P1) and the read restriction are one function
(``plan_read_partitions`` over ``_sources``). The hole this closes: a statement pinned to p=1
locks only p=1, so a concurrent ``ALTER TABLE .. DROP PARTITION (p='2')`` (S on the table, X on
p=2) is granted; the statement must then never open p=2's files. Here the DBA holds exactly the
DROP's locks and p=2's event file is unreadable (the drop is deleting it): the pinned statements
succeed and see exactly p=1's rows; an unpinned SELECT still reads every partition (and so fails).
Expected rows are the rows the test inserted.
"""

from __future__ import annotations

import glob
import os

import pytest

from acid_core.errors import InvalidPartitionError, NotAnAcidFileError
from acid_core.locks import InMemoryLockManager, InMemoryLockTable, LockMode, LockRequest, parse_lock_object
from acid_core.metastore import InMemoryMetastore
from acid_core.sql.engine import SqlSession, parse_statement
from acid_core.sql.lock_statements import plan_read_partitions
from acid_core.writes import Warehouse

TABLE = (
    "CREATE TABLE acid1 (id int, v int) PARTITIONED BY (p string) STORED AS ORC "
    "TBLPROPERTIES ('transactional'='true'); "
    "INSERT INTO acid1 VALUES (1, 10, '1'), (2, 20, '1'), (3, 30, '2'), (4, 40, '2')"
)


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
        sql = SqlSession(warehouse)
        sql.execute(TABLE)
        yield sql


@pytest.fixture
def p2_being_dropped(session, locks, tmp_path):
    """Another session holds DROP PARTITION (p='2')'s locks and p=2's files are unreadable."""
    dba = InMemoryLockManager(locks)
    handle = dba.acquire(
        [
            LockRequest(parse_lock_object("default.acid1"), LockMode.SHARED),
            LockRequest(parse_lock_object("default.acid1/p=2"), LockMode.EXCLUSIVE),
        ],
        holder="dba",
        retries=0,
    )
    files = glob.glob(str(tmp_path / "wh" / "acid1" / "p=2" / "delta_*" / "bucket_*"))
    assert files  # the insert wrote p=2
    for path in files:
        with open(path, "wb") as handle_file:
            handle_file.write(b"not an ORC file: being deleted")
    yield
    dba.release(handle)


def _rows(result, *columns):
    return sorted(zip(*(result.rows.column(c).to_pylist() for c in columns), strict=True))


def test_select_pinned_to_a_partition_reads_only_it_while_another_is_dropped(session, p2_being_dropped):
    (result,) = session.execute("SELECT id, v, p FROM acid1 WHERE p = '1'")
    assert _rows(result, "id", "v", "p") == [(1, 10, "1"), (2, 20, "1")]


def test_select_not_pinned_still_reads_every_partition(session, p2_being_dropped):
    # The unreadable p=2 proves the read opens it: an unpinned statement reads everything.
    with pytest.raises(NotAnAcidFileError, match=r"p=2/delta_0000001_0000001_0000/bucket_00000"):
        session.execute("SELECT id FROM acid1 WHERE v > 0")


def test_select_not_pinned_reads_every_partition(session):
    (result,) = session.execute("SELECT id, p FROM acid1 WHERE v > 10")
    assert _rows(result, "id", "p") == [(2, "1"), (3, "2"), (4, "2")]


def test_update_pinned_to_a_partition_succeeds_while_another_is_dropped(session, locks, p2_being_dropped):
    (result,) = session.execute("UPDATE acid1 SET v = 11 WHERE p = '1' AND id = 1")
    assert "1 row(s) updated" in result.message
    rows = session.warehouse.read("acid1", partitions=[(("p", "1"),)])
    assert sorted(zip(rows.column("id").to_pylist(), rows.column("v").to_pylist(), strict=True)) == [
        (1, 11),
        (2, 20),
    ]


def test_delete_pinned_to_a_partition_succeeds_while_another_is_dropped(session, p2_being_dropped):
    (result,) = session.execute("DELETE FROM acid1 WHERE p = '1' AND id = 2")
    assert "1 row(s) deleted" in result.message
    (after,) = session.execute("SELECT id FROM acid1 WHERE p = '1'")
    assert after.rows.column("id").to_pylist() == [1]


def test_update_and_delete_not_pinned_read_every_partition(session):
    session.execute("UPDATE acid1 SET v = v + 1 WHERE id IN (1, 3)")
    session.execute("DELETE FROM acid1 WHERE id = 4")
    (result,) = session.execute("SELECT id, v, p FROM acid1")
    assert _rows(result, "id", "v", "p") == [(1, 11, "1"), (2, 20, "1"), (3, 31, "2")]


def test_warehouse_read_of_a_partition_prefix_returns_exactly_its_rows(session):
    rows = session.warehouse.read("acid1", partitions=[(("p", "2"),)])
    assert sorted(rows.column("id").to_pylist()) == [3, 4]
    with session.warehouse.transaction() as txn:
        both = txn.read("acid1", partitions=[(("p", "1"),), (("p", "2"),)])
        none = txn.read("acid1", partitions=[(("p", "9"),)])
    assert sorted(both.column("id").to_pylist()) == [1, 2, 3, 4]
    assert none.num_rows == 0


def test_warehouse_read_with_an_unknown_partition_key_raises(session):
    with pytest.raises(InvalidPartitionError, match=r"'q'.*leading prefix of the partition keys \['p'\]"):
        session.warehouse.read("acid1", partitions=[(("q", "1"),)])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT id FROM acid1 WHERE p = '1'", {"default.acid1": ((("p", "1"),),)}),
        ("SELECT id FROM acid1 WHERE p = '1' AND id = 2", {"default.acid1": ((("p", "1"),),)}),
        ("SELECT id FROM acid1 WHERE p = '1' OR p = '2'", {"default.acid1": None}),
        ("SELECT id FROM acid1", {"default.acid1": None}),
        (
            "SELECT a.id FROM acid1 a JOIN acid1 b ON a.id = b.id WHERE a.p = '1' AND b.p = '2'",
            {"default.acid1": ((("p", "1"),), (("p", "2"),))},
        ),
        (
            "SELECT a.id FROM acid1 a JOIN acid1 b ON a.id = b.id WHERE a.p = '1'",
            {"default.acid1": None},
        ),
        (
            "SELECT id FROM acid1 WHERE p = '1' AND id IN (SELECT id FROM acid1)",
            {"default.acid1": None},
        ),
    ],
)
def test_plan_read_partitions_reads_exactly_what_the_where_pins(session, query, expected):
    expression = parse_statement(query).statement.expression
    assert plan_read_partitions(expression, session.warehouse.metastore.get_table) == expected


def test_files_of_p1_are_the_only_ones_opened(session, p2_being_dropped, tmp_path):
    # The whole pinned cycle (read, update, delete, read) leaves p=2's garbage untouched.
    session.execute("UPDATE acid1 SET v = 12 WHERE p = '1' AND id = 1")
    session.execute("DELETE FROM acid1 WHERE p = '1' AND id = 2")
    (result,) = session.execute("SELECT id, v FROM acid1 WHERE p = '1'")
    assert _rows(result, "id", "v") == [(1, 12)]
    p2 = tmp_path / "wh" / "acid1" / "p=2"
    assert sorted(os.listdir(p2)) == ["delta_0000001_0000001_0000"]
