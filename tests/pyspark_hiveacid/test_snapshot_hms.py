"""The Spark source's snapshots on a Hive Metastore: ``snapshot=latest`` takes an HMS lease.

The HMS side is recorded Hive 4 shapes and the side store a real SQLite ``SqlMetastore``, as in
``tests/acid_core/metastore/test_hive_leases.py``; the real 2.3 server path is the lease test of
``tests/integration/test_hive_metastore.py``.
"""

from __future__ import annotations

from acid_core.metastore.hive.metastore import HiveMetastore
from acid_core.writeids import ValidTxnList
from pyspark_hiveacid.snapshot import lease_snapshot, take_snapshot
from tests.acid_core.metastore.test_hive_leases import LEASE_TXN, _connection, side_store

__all__ = ["side_store"]  # the fixture, used by name


def test_take_snapshot_on_an_hms_is_a_lease_on_its_own_txn(side_store):
    store = HiveMetastore(_connection(), lease_store=side_store)

    snapshot = take_snapshot(store, "db.t", 600)

    assert snapshot.lease_id == LEASE_TXN
    assert snapshot.txns == ValidTxnList(LEASE_TXN, (5,), (9,), 5)
    assert lease_snapshot(store, "db.t", LEASE_TXN) == snapshot


def test_held_snapshot_heartbeats_while_held_and_releases_after(tmp_path):
    import threading

    from acid_core.metastore import Column, TableDefinition, open_metastore
    from pyspark_hiveacid.snapshot import held_snapshot

    warehouse = str(tmp_path / "wh")
    with open_metastore(None, warehouse) as store:
        store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))

    with held_snapshot("t", warehouse=warehouse, ttl_seconds=600) as snapshot:
        beats = [t.name for t in threading.enumerate() if t.name.startswith("lease-heartbeat-")]
        assert beats == [f"lease-heartbeat-{snapshot.lease_id}"]
        with open_metastore(None, warehouse) as store:
            assert [lease.lease_id for lease in store.list_leases("t")] == [snapshot.lease_id]

    assert not [t for t in threading.enumerate() if t.name.startswith("lease-heartbeat-")]
    with open_metastore(None, warehouse) as store:
        assert store.list_leases("t") == []
