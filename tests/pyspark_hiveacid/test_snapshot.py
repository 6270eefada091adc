"""The snapshot of a read: taken as a lease on the driver, renewed by the tasks, refused without leases.

Real embedded metastore and files; the reader's ``partitions``/``read`` run in this process (what
Spark runs in its Python workers), so no Spark session is needed.
"""

from __future__ import annotations

import time

import pytest

from acid_core.errors import HiveMetastoreCapabilityError, InvalidDataSourceOptionError, NoSuchLeaseError
from pyspark_hiveacid.snapshot import take_snapshot


class _NoLeaseMetastore:
    """What a Hive Metastore without acidflow's lease store answers to ``take_lease``."""

    def take_lease(self, table, ttl_seconds, owner=None, now=None):
        raise HiveMetastoreCapabilityError(
            "thrift://hms:9083",
            "take a reader lease",
            "the Hive Metastore has no reader leases",
            "open a transaction",
        )


def test_take_snapshot_latest_without_leases_names_the_option():
    with pytest.raises(InvalidDataSourceOptionError) as raised:
        take_snapshot(_NoLeaseMetastore(), "db.t", 60.0)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        "Invalid hiveacid option snapshot='latest'; expected an explicit snapshot, because the metastore "
        "cannot hold one for the read (the Hive Metastore has no reader leases): option "
        "snapshot='<ValidWriteIdList>'"
    )
    assert isinstance(raised.value.__cause__, HiveMetastoreCapabilityError)


# -- the lease of a latest read: a TTL its tasks renew --------------------------------------------


@pytest.fixture
def wh(tmp_path):
    from acid_core.writes.transaction import Warehouse
    from tests.acid_core.compaction.histories import random_history

    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(warehouse, 4, partitioned=False, buckets=2, txns=6)
    warehouse.model = history.model
    yield warehouse
    warehouse.close()


def test_renew_lease_extends_a_live_lease(wh):
    store = wh.metastore
    lease = store.take_lease("default.t", 60.0, now=1_000.0)
    assert store.renew_lease(lease.lease_id, 60.0, now=1_050.0).expires == 1_110.0
    assert store.get_lease(lease.lease_id).expires == 1_110.0


def test_renew_lease_refuses_an_expired_or_released_lease(wh):
    store = wh.metastore
    expired = store.take_lease("default.t", 60.0, now=1_000.0)
    with pytest.raises(NoSuchLeaseError, match=rf"No such reader lease {expired.lease_id}"):
        store.renew_lease(expired.lease_id, 60.0, now=1_060.0)  # the cleaner may have used it up
    released = store.take_lease("default.t", 60.0)
    store.release_lease(released.lease_id)
    with pytest.raises(NoSuchLeaseError):
        store.renew_lease(released.lease_id, 60.0)


def _source(wh, **options):
    from pyspark_hiveacid.source import HiveAcidDataSource

    source = HiveAcidDataSource({"path": "default.t", "warehouse": wh.location, **options})
    reader = source.reader(source.schema())
    return reader, reader.partitions()


def test_read_tasks_renew_the_lease_their_read_took(wh):
    """The driver's planning takes the lease; each task pushes its expiry on before reading."""
    reader, partitions = _source(wh, lease_ttl="120")
    (lease,) = wh.metastore.list_leases("default.t")
    assert {p.lease_id for p in partitions} == {lease.lease_id}
    with wh.metastore._transaction("test") as s:  # expiring in 5 s, as if planned long ago
        from acid_core.metastore.sql.models import ReaderLease

        s.get(ReaderLease, lease.lease_id).expires = int((time.time() + 5) * 1000)
    rows = sum(batch.num_rows for p in partitions for batch in reader.read(p))
    assert rows == len(wh.model)
    assert wh.metastore.get_lease(lease.lease_id).expires >= time.time() + 100


def test_read_task_after_the_lease_ended_fails_instead_of_reading(wh):
    reader, partitions = _source(wh)
    (lease,) = wh.metastore.list_leases("default.t")
    wh.metastore.release_lease(lease.lease_id)
    with pytest.raises(NoSuchLeaseError, match=rf"No such reader lease {lease.lease_id}"):
        list(reader.read(partitions[0]))


def test_read_with_a_users_lease_leaves_its_expiry_alone(wh):
    lease = wh.metastore.take_lease("default.t", 60.0)
    reader, partitions = _source(wh, snapshot=str(lease.lease_id))
    assert {p.lease_id for p in partitions} == {None}
    assert sum(batch.num_rows for p in partitions for batch in reader.read(p)) == len(wh.model)
    assert wh.metastore.get_lease(lease.lease_id).expires == lease.expires
