"""SELECT runs in a read-only transaction (issue 4; Hive's DbTxnManager opens ``TxnType.READ_ONLY``
for a query): open from its locks to its last row, listed by SHOW TRANSACTIONS meanwhile, counted
by the lowest-open-transaction rule the cleaner waits on, committed at the end, and never an
exception in anyone's snapshot (it writes nothing). The embedded SQLite metastore; the hook runs
inside the SELECT right after its locks are granted.
"""

from __future__ import annotations

import pytest

from acid_core.errors import NoSuchColumnError, UnsupportedStatementError
from acid_core.locks import InMemoryLockManager, InMemoryLockTable
from acid_core.metastore import TxnState, TxnType
from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse

SETUP = (
    "CREATE TABLE employee (id int, name string) STORED AS ORC TBLPROPERTIES ('transactional'='true'); "
    "INSERT INTO employee VALUES (1, 'Jerry'), (2, 'Tom')"
)


class HookedLockManager(InMemoryLockManager):
    """The in-memory lock manager, running ``on_acquire`` right after each grant (locks held)."""

    on_acquire = None

    def acquire(self, requests, **kwargs):
        handle = super().acquire(requests, **kwargs)
        if self.on_acquire is not None:
            self.on_acquire()
        return handle


@pytest.fixture
def sessions(tmp_path):
    """A querying session (hooked lock manager) and an operator's session, one SQLite metastore."""
    root = str(tmp_path / "wh")
    table = InMemoryLockTable()
    hooked = HookedLockManager(table)
    options = {"heartbeat_seconds": None, "lock_retries": 0, "lock_wait_seconds": 0}
    with (
        Warehouse.open(root, lock_manager=hooked, **options) as query_wh,
        Warehouse.open(root, lock_manager=InMemoryLockManager(table), **options) as operator_wh,
    ):
        query, operator = SqlSession(query_wh), SqlSession(operator_wh)
        query.execute(SETUP)
        yield query, operator, hooked


def test_select_is_listed_by_show_transactions_while_it_runs_then_committed(sessions):
    query, operator, hooked = sessions
    seen = []

    def during_select():
        (shown,) = operator.execute("SHOW TRANSACTIONS")
        seen.append(
            {
                "listed": list(
                    zip(
                        shown.rows.column("txnid").to_pylist(),
                        shown.rows.column("state").to_pylist(),
                        strict=True,
                    )
                ),
                "min_open": operator.warehouse.metastore.min_open_txn_id(),
                "snapshot": operator.warehouse.metastore.get_valid_txns(),
            }
        )

    hooked.on_acquire = during_select
    (result,) = query.execute("SELECT id, name FROM employee")
    hooked.on_acquire = None

    # Two earlier transactions (CREATE opens none; the INSERT is txn 1), so the SELECT is txn 2.
    assert len(seen) == 1
    assert seen[0]["listed"] == [(2, "OPEN")]
    assert seen[0]["min_open"] == 2  # the cleaner's rule: nothing compacted after txn 2 started is cleaned
    assert seen[0]["snapshot"].exceptions == ()  # a read-only txn is nobody's open exception
    info = operator.warehouse.metastore.get_txn(2)
    assert (info.txn_type, info.state) == (TxnType.READ_ONLY, TxnState.COMMITTED)
    (after,) = operator.execute("SHOW TRANSACTIONS")
    assert after.rows.num_rows == 0
    assert sorted(
        zip(result.rows.column("id").to_pylist(), result.rows.column("name").to_pylist(), strict=True)
    ) == [
        (1, "Jerry"),
        (2, "Tom"),
    ]


def test_select_does_not_see_a_write_committed_while_it_runs(sessions):
    # Its snapshot is taken when its transaction opens; an insert committed meanwhile is invisible.
    query, operator, hooked = sessions
    hooked.on_acquire = lambda: operator.execute("INSERT INTO employee VALUES (3, 'Kate')")
    (result,) = query.execute("SELECT id FROM employee")
    hooked.on_acquire = None
    assert sorted(result.rows.column("id").to_pylist()) == [1, 2]
    (later,) = query.execute("SELECT id FROM employee")
    assert sorted(later.rows.column("id").to_pylist()) == [1, 2, 3]


def test_failing_select_aborts_its_read_only_transaction(sessions):
    query, operator, _ = sessions
    with pytest.raises(NoSuchColumnError):
        query.execute("SELECT salary FROM employee")
    info = operator.warehouse.metastore.get_txn(2)
    assert (info.txn_type, info.state) == (TxnType.READ_ONLY, TxnState.ABORTED)
    assert operator.warehouse.metastore.min_open_txn_id() == 3  # nothing left open


def test_write_in_a_read_only_transaction_is_refused(sessions):
    query, _, _ = sessions
    rows = query.warehouse.read("employee", with_row_id=True)
    with query.warehouse.transaction(read_only=True) as txn:
        for write in (
            lambda: txn.insert("employee", rows.select(["id", "name"])),
            lambda: txn.delete("employee", rows),
            lambda: txn.update("employee", rows),
        ):
            with pytest.raises(UnsupportedStatementError, match=r"a write in read-only transaction 2"):
                write()
    assert sorted(query.warehouse.read("employee").column("id").to_pylist()) == [1, 2]
