"""The locks a transaction takes as it writes partitions (``Transaction.lock_written_partitions``).

Expected lock sets follow issue 5's rules: an ACID write holds S on its table and S on each
partition it writes (Hive's DbTxnManager; the hierarchy adds S on every prefix); a non-ACID write's
X on the table or partition prefix already covers the partitions below it; locks are not
re-entrant, so asking again for a covered partition would conflict with the transaction itself.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from acid_core.errors import NoSuchPartitionError
from acid_core.locks import InMemoryLockManager, LockObject
from acid_core.locks.planner import StatementKind, StatementLocks
from acid_core.metastore import Column, InMemoryMetastore
from acid_core.writes import Warehouse
from tests.acid_core.writes.conftest import create

KEYS = (Column("ds", "string"), Column("hr", "int"))


@pytest.fixture
def locked_warehouse(tmp_path):
    root = str(tmp_path / "wh")
    # No retries: a transaction conflicting with its own locks fails at once.
    with Warehouse(
        root,
        InMemoryMetastore(warehouse=root),
        InMemoryLockManager(),
        heartbeat_seconds=None,
        lock_retries=0,
        lock_wait_seconds=0,
    ) as wh:
        yield wh


def _rows(ids, hours):
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "name": pa.array([f"n{i}" for i in ids], pa.string()),
            "salary": pa.array([100] * len(ids), pa.int32()),
            "hr": pa.array(hours, pa.int32()),
        }
    )


def _held(wh):
    return sorted({f"{i.mode.letter} {i.object.to_name()}" for i in wh.lock_manager.show()})


def test_acid_dynamic_insert_takes_s_on_each_partition_written(locked_warehouse):
    create(locked_warehouse, partition_keys=KEYS)
    seen = []
    with locked_warehouse.transaction() as txn:
        txn.lock(
            StatementLocks(
                StatementKind.INSERT,
                target=LockObject("default", "employee", (("ds", "d1"),)),
                is_acid=True,
                dynamic_partition=True,
            )
        )
        txn.insert("employee", _rows([1, 2, 3], [1, 2, None]), static_partition={"ds": "d1"})
        seen = _held(locked_warehouse)
    assert seen == [
        "S default.employee",
        "S default.employee/ds=d1",
        "S default.employee/ds=d1/hr=1",
        "S default.employee/ds=d1/hr=2",
        "S default.employee/ds=d1/hr=__HIVE_DEFAULT_PARTITION__",
    ]
    assert _held(locked_warehouse) == []


def test_plain_dynamic_insert_under_table_x_takes_nothing_more(locked_warehouse):
    create(locked_warehouse, partition_keys=KEYS, properties={})
    with locked_warehouse.transaction() as txn:
        txn.lock(
            StatementLocks(
                StatementKind.INSERT, target=LockObject("default", "employee"), dynamic_partition=True
            )
        )
        txn.insert("employee", _rows([1, 2], [1, 2]), static_partition={"ds": "d1"})
        assert _held(locked_warehouse) == ["X default.employee"]


def test_plain_insert_under_partition_prefix_x_takes_nothing_more(locked_warehouse):
    create(locked_warehouse, partition_keys=KEYS, properties={})
    with locked_warehouse.transaction() as txn:
        txn.lock(
            StatementLocks(
                StatementKind.INSERT,
                target=LockObject("default", "employee", (("ds", "d1"),)),
                dynamic_partition=True,
            )
        )
        txn.insert("employee", _rows([1], [5]), static_partition={"ds": "d1"})
        assert _held(locked_warehouse) == ["S default.employee", "X default.employee/ds=d1"]


def test_transaction_without_table_locks_takes_none(locked_warehouse):
    create(locked_warehouse, partition_keys=KEYS)
    with locked_warehouse.transaction() as txn:
        txn.insert("employee", _rows([1], [1]), static_partition={"ds": "d1"})
        assert _held(locked_warehouse) == []


def test_update_of_a_partition_dropped_before_it_was_locked_fails_and_does_not_recreate_it(
    locked_warehouse,
):
    create(locked_warehouse, partition_keys=KEYS)
    with locked_warehouse.transaction() as txn:
        txn.insert("employee", _rows([1], [1]), static_partition={"ds": "d1"})
    table_lock = StatementLocks(
        StatementKind.UPDATE, target=LockObject("default", "employee"), is_acid=True, dynamic_partition=True
    )
    txn = locked_warehouse.transaction().begin()
    txn.lock(table_lock)
    rows = txn.read("employee", with_row_id=True)
    # Another session drops the partition after the read, before the update locks it.
    locked_warehouse.metastore.drop_partition("employee", {"ds": "d1", "hr": "1"})
    changed = rows.set_column(3, "salary", pa.array([7], pa.int32()))
    with pytest.raises(
        NoSuchPartitionError, match=r"No such partition 'ds=d1/hr=1' in table 'default.employee'"
    ):
        txn.update("employee", changed)
    txn.abort()
    assert locked_warehouse.metastore.list_partitions("employee") == []
    assert _held(locked_warehouse) == []
