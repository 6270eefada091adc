"""Streaming ingest (Hive Streaming V2): one delta_x_y per batch, several currentTransaction values."""

from __future__ import annotations

import os
import struct

import pyarrow as pa
import pyorc
import pytest

from acid_core.errors import UnsupportedStatementError
from acid_core.metastore import Column
from acid_core.writes.streaming import StreamingConnection
from tests.acid_core.writes.conftest import create

V1 = 1 << 29


def _rows(ids):
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "name": pa.array([f"n{i}" for i in ids]),
            "salary": pa.array(list(ids), pa.int32()),
        }
    )


def test_a_batch_writes_one_delta_with_every_transaction_and_a_side_file_while_open(warehouse):
    table = create(warehouse)
    delta = f"{table.location}/delta_0000001_0000003"
    with StreamingConnection(warehouse, "employee", txns_per_batch=3) as connection:
        connection.begin_transaction()
        connection.write(_rows([1, 2]))
        connection.commit_transaction()
        assert sorted(os.listdir(delta)) == ["_orc_acid_version", "bucket_00000", "bucket_00000_flush_length"]
        with open(f"{delta}/bucket_00000_flush_length", "rb") as handle:
            (length,) = struct.unpack(">q", handle.read())
        assert length == os.path.getsize(f"{delta}/bucket_00000")
        connection.begin_transaction()
        connection.write(_rows([3]))
        connection.abort_transaction()
        connection.begin_transaction()
        connection.write(_rows([4]))
        connection.write(_rows([5]))
        # Not committed yet: readers see only the first transaction's rows.
        assert sorted(warehouse.read("employee")["id"].to_pylist()) == [1, 2]
        connection.commit_transaction()
    assert os.listdir(table.location) == ["delta_0000001_0000003"]
    assert sorted(os.listdir(delta)) == ["_orc_acid_version", "bucket_00000"]
    with open(f"{delta}/bucket_00000", "rb") as handle:
        events = list(pyorc.Reader(handle))
    # rowId restarts per write ID (OrcRecordUpdater); the aborted transaction's event stays, unread.
    assert [e[:5] for e in events] == [
        (0, 1, V1, 0, 1),
        (0, 1, V1, 1, 1),
        (0, 2, V1, 0, 2),
        (0, 3, V1, 0, 3),
        (0, 3, V1, 1, 3),
    ]
    assert sorted(warehouse.read("employee")["id"].to_pylist()) == [1, 2, 4, 5]


def test_close_aborts_unused_transactions_and_a_second_batch_gets_its_own_delta(warehouse):
    table = create(warehouse)
    with StreamingConnection(warehouse, "employee", txns_per_batch=2) as connection:
        for ids in ([1], [2], [3]):
            connection.begin_transaction()
            connection.write(_rows(ids))
            connection.commit_transaction()
    assert sorted(os.listdir(table.location)) == ["delta_0000001_0000002", "delta_0000003_0000004"]
    assert warehouse.metastore.get_txn(4).state.value == "aborted"
    assert sorted(warehouse.read("employee")["id"].to_pylist()) == [1, 2, 3]


def test_streaming_needs_a_static_partition_for_partitioned_tables(warehouse):
    create(warehouse, partition_keys=(Column("ds", "string"),))
    with pytest.raises(UnsupportedStatementError, match=r"a value for each partition key \['ds'\]"):
        StreamingConnection(warehouse, "employee")
    with StreamingConnection(warehouse, "employee", static_partition={"ds": "d1"}) as connection:
        connection.begin_transaction()
        connection.write(_rows([7]))
        connection.commit_transaction()
    assert warehouse.read("employee").to_pylist() == [{"id": 7, "name": "n7", "salary": 7, "ds": "d1"}]
