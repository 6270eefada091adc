"""Transactions and writers: Hive's layout for insert/update/delete, partitions, buckets, aborts, conflicts.

Expected layouts and events come from Hive's split-update design (AcidUtils.deltaSubdir,
OrcRecordUpdater: rowId from 0 per bucket and statement, bucket = BucketCodec V1 of bucket and
statement) and are read back with pyorc, independently of acidflow's reader.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyorc
import pytest

from acid_core.errors import CommitConflictError, TxnNotOpenError, UnsupportedStatementError
from acid_core.metastore import Column
from acid_core.writes import Transaction
from acid_core.writes.bucketing import bucket_hash_code, bucket_number
from tests.acid_core.writes.conftest import create

V1 = 1 << 29


def _rows(ids, names=None, salaries=None):
    names = names or [f"n{i}" for i in ids]
    salaries = salaries or [i * 100 for i in ids]
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "name": pa.array(names, pa.string()),
            "salary": pa.array(salaries, pa.int32()),
        }
    )


def _events(path):
    with open(path, "rb") as handle:
        return list(pyorc.Reader(handle))


def _tree(root):
    found = []
    for directory, _, files in os.walk(root):
        found.extend(os.path.relpath(os.path.join(directory, f), root) for f in files)
    return sorted(found)


def _visible(wh, table="employee"):
    return sorted((r["id"], r["name"], r["salary"]) for r in wh.read(table).to_pylist())


def test_insert_writes_delta_with_row_ids_from_zero(warehouse):
    table = create(warehouse)
    with warehouse.transaction() as txn:
        assert txn.insert("employee", _rows([1, 2, 3])) == 3
    assert _tree(table.location) == [
        "delta_0000001_0000001_0000/_orc_acid_version",
        "delta_0000001_0000001_0000/bucket_00000",
    ]
    with open(os.path.join(table.location, "delta_0000001_0000001_0000/_orc_acid_version")) as handle:
        assert handle.read() == "2"
    assert _events(os.path.join(table.location, "delta_0000001_0000001_0000/bucket_00000")) == [
        (0, 1, V1, 0, 1, (1, "n1", 100)),
        (0, 1, V1, 1, 1, (2, "n2", 200)),
        (0, 1, V1, 2, 1, (3, "n3", 300)),
    ]


def test_update_is_a_delete_event_plus_an_insert_under_one_write_id(warehouse):
    table = create(warehouse)
    with warehouse.transaction() as txn:
        txn.insert("employee", _rows([1, 2, 3]))
    with warehouse.transaction() as txn:
        current = txn.read("employee", with_row_id=True)
        tom = current.filter(pc.equal(current["id"], 2))
        tom = tom.set_column(3, "salary", pa.array([7000], pa.int32()))
        assert txn.update("employee", tom) == 1
    base = table.location
    assert _events(f"{base}/delete_delta_0000002_0000002_0000/bucket_00000") == [(2, 1, V1, 1, 2, None)]
    assert _events(f"{base}/delta_0000002_0000002_0000/bucket_00000") == [(0, 2, V1, 0, 2, (2, "n2", 7000))]
    assert _visible(warehouse) == [(1, "n1", 100), (2, "n2", 7000), (3, "n3", 300)]


def test_multi_statement_transaction_numbers_statements_and_sees_its_own_writes(warehouse):
    table = create(warehouse)
    with warehouse.transaction() as txn:
        txn.insert("employee", _rows([1]))
        txn.insert("employee", _rows([2]))
        seen = txn.read("employee", with_row_id=True)
        assert sorted(seen["id"].to_pylist()) == [1, 2]
        one = seen.filter(pc.equal(seen["id"], 1)).select(["row__id"])
        txn.delete("employee", one)
    names = sorted(os.listdir(table.location))
    assert names == [
        "delete_delta_0000001_0000001_0002",
        "delta_0000001_0000001_0000",
        "delta_0000001_0000001_0001",
    ]
    # Statement 1's row carries statement 1 in its bucket property (BucketCodec V1).
    assert _events(f"{table.location}/delta_0000001_0000001_0001/bucket_00000") == [
        (0, 1, V1 | 1, 0, 1, (2, "n2", 200))
    ]
    assert _visible(warehouse) == [(2, "n2", 200)]


def test_error_inside_the_block_aborts_and_nothing_is_visible(warehouse):
    table = create(warehouse)

    def fail_midway():
        with warehouse.transaction() as txn:
            txn.insert("employee", _rows([1, 2]))
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_midway()
    assert os.listdir(table.location) == ["delta_0000001_0000001_0000"]  # left behind, aborted
    assert _visible(warehouse) == []
    snapshot = warehouse.metastore.get_valid_write_ids("employee", warehouse.metastore.get_valid_txns())
    assert snapshot.is_write_id_aborted(1)
    # A later writer gets the next write ID; the aborted one stays invisible.
    with warehouse.transaction() as txn:
        txn.insert("employee", _rows([3]))
    assert _visible(warehouse) == [(3, "n3", 300)]


def test_concurrent_updates_first_committer_wins(warehouse):
    create(warehouse)
    with warehouse.transaction() as txn:
        txn.insert("employee", _rows([1]))
    first, second = Transaction(warehouse).begin(), Transaction(warehouse).begin()
    for txn, salary in ((first, 1), (second, 2)):
        rows = txn.read("employee", with_row_id=True).set_column(3, "salary", pa.array([salary], pa.int32()))
        txn.update("employee", rows)
    first.commit()
    with pytest.raises(CommitConflictError, match=r"Transaction 3 was aborted: .*first committer wins"):
        second.commit()
    assert warehouse.metastore.get_txn(3).state.value == "aborted"
    assert _visible(warehouse) == [(1, "n1", 1)]


def test_static_and_dynamic_partitions_register_and_write_k_v_directories(warehouse):
    table = create(warehouse, partition_keys=(Column("ds", "string"), Column("hr", "int")))
    rows = _rows([1, 2, 3]).append_column("hr", pa.array([1, 2, 1], pa.int32()))
    with warehouse.transaction() as txn:
        txn.insert("employee", rows, static_partition={"ds": "2024-01-01"})
    assert [p.name for p in warehouse.metastore.list_partitions("employee")] == [
        "ds=2024-01-01/hr=1",
        "ds=2024-01-01/hr=2",
    ]
    assert _tree(table.location) == [
        "ds=2024-01-01/hr=1/delta_0000001_0000001_0000/_orc_acid_version",
        "ds=2024-01-01/hr=1/delta_0000001_0000001_0000/bucket_00000",
        "ds=2024-01-01/hr=2/delta_0000001_0000001_0000/_orc_acid_version",
        "ds=2024-01-01/hr=2/delta_0000001_0000001_0000/bucket_00000",
    ]
    # Row IDs restart at 0 in each partition's file.
    assert [
        e[3] for e in _events(f"{table.location}/ds=2024-01-01/hr=1/delta_0000001_0000001_0000/bucket_00000")
    ] == [0, 1]
    read = warehouse.read("employee")
    assert sorted(
        zip(read["id"].to_pylist(), read["ds"].to_pylist(), read["hr"].to_pylist(), strict=True)
    ) == [
        (1, "2024-01-01", 1),
        (2, "2024-01-01", 2),
        (3, "2024-01-01", 1),
    ]


def test_bucketed_table_puts_rows_in_hives_bucket(warehouse):
    table = create(warehouse, bucket_columns=("id",), num_buckets=4)
    ids = list(range(20))
    with warehouse.transaction() as txn:
        txn.insert("employee", _rows(ids))
    delta = f"{table.location}/delta_0000001_0000001_0000"
    placed = {}
    for name in sorted(os.listdir(delta)):
        if name.startswith("bucket_"):
            bucket = int(name.split("_")[1])
            events = _events(f"{delta}/{name}")
            assert [e[3] for e in events] == list(range(len(events)))  # row IDs from 0 per bucket
            assert {e[2] for e in events} == {V1 | (bucket << 16)}
            placed.update({e[5][0]: bucket for e in events})
    assert placed == {i: bucket_number(bucket_hash_code([i], ["int"], 2), 4) for i in ids}
    assert len(set(placed.values())) > 1


def test_insert_only_and_plain_tables_write_plain_orc_files(warehouse):
    mm = create(
        warehouse, "mm", properties={"transactional": "true", "transactional_properties": "insert_only"}
    )
    plain = create(warehouse, "plain", properties={})
    for _ in range(2):
        with warehouse.transaction() as txn:
            txn.insert("mm", _rows([1]))
            txn.insert("plain", _rows([2]))
    assert _tree(mm.location) == [
        "delta_0000001_0000001_0000/000000_0",
        "delta_0000002_0000002_0000/000000_0",
    ]
    assert _tree(plain.location) == ["000000_0", "000000_0_copy_1"]
    with open(f"{plain.location}/000000_0", "rb") as handle:
        assert list(pyorc.Reader(handle)) == [(2, "n2", 200)]
    assert _visible(warehouse, "mm") == [(1, "n1", 100)] * 2
    assert _visible(warehouse, "plain") == [(2, "n2", 200)] * 2
    with (
        pytest.raises(UnsupportedStatementError, match=r"the table is insert-only, not full ACID"),
        warehouse.transaction() as txn,
    ):
        txn.delete("mm", pa.table({"row__id": pa.nulls(0, pa.struct([("writeid", pa.int64())]))}))


def test_commit_after_the_reaper_aborted_the_transaction_fails(warehouse):
    create(warehouse)
    txn = Transaction(warehouse).begin()
    txn.insert("employee", _rows([1]))
    assert warehouse.metastore.abort_timed_out_txns(1, now=10**10) == [txn.txn_id]
    with pytest.raises(TxnNotOpenError):
        txn.commit()
    assert _visible(warehouse) == []


def test_heartbeat_thread_keeps_the_transaction_alive(tmp_path):
    import time

    from acid_core.writes import Warehouse

    root = str(tmp_path / "hb")
    with Warehouse.open(root, heartbeat_seconds=0.05) as wh:
        create(wh)
        txn = wh.transaction().begin()
        started = wh.metastore.get_txn(txn.txn_id).last_heartbeat
        deadline = time.monotonic() + 10
        while wh.metastore.get_txn(txn.txn_id).last_heartbeat == started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert wh.metastore.get_txn(txn.txn_id).last_heartbeat > started
        txn.commit()
        assert wh.metastore.get_txn(txn.txn_id).state.value == "committed"
