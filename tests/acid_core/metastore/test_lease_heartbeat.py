"""``LeaseHeartbeat``: a held lease is renewed from a thread on its own store, until the block ends.

Real SQLite stores in ``tmp_path``; the thread's renewals are observed through ``on_renew`` and an
Event (waited for with a generous timeout, never timed).
"""

from __future__ import annotations

import threading

from acid_core.errors import NoSuchLeaseError
from acid_core.metastore import Column, TableDefinition, open_metastore
from acid_core.metastore.lease_heartbeat import LeaseHeartbeat


def _warehouse(tmp_path):
    warehouse = str(tmp_path / "wh")
    with open_metastore(None, warehouse) as store:
        store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))
        lease = store.take_lease("t", 60)
    return warehouse, lease


def test_lease_heartbeat_renews_until_the_block_ends(tmp_path):
    warehouse, lease = _warehouse(tmp_path)
    renewed_twice = threading.Event()

    def on_renew(count):
        if count >= 2:
            renewed_twice.set()

    with LeaseHeartbeat(
        lambda: open_metastore(None, warehouse), lease.lease_id, 7_200, 0.01, on_renew=on_renew
    ) as beat:
        assert renewed_twice.wait(60)
    after = beat.renewals
    assert beat.error is None
    with open_metastore(None, warehouse) as store:
        assert store.get_lease(lease.lease_id).expires >= lease.created + 7_200
    assert beat.renewals == after  # stopped with the block


def test_lease_heartbeat_renews_at_once_not_one_interval_late(tmp_path):
    """The lease may be nearly out of TTL when the block starts: the first renewal does not wait."""
    warehouse, lease = _warehouse(tmp_path)
    renewed = threading.Event()
    with LeaseHeartbeat(
        lambda: open_metastore(None, warehouse),
        lease.lease_id,
        7_200,
        3_600,
        on_renew=lambda _: renewed.set(),
    ) as beat:
        assert renewed.wait(60), "no renewal before the first interval (an hour) ran out"
    assert beat.renewals == 1
    with open_metastore(None, warehouse) as store:
        assert store.get_lease(lease.lease_id).expires >= lease.created + 7_200


def test_lease_heartbeat_stops_on_a_released_lease_and_keeps_the_error(tmp_path):
    warehouse, lease = _warehouse(tmp_path)
    with open_metastore(None, warehouse) as store:
        store.release_lease(lease.lease_id)
    with LeaseHeartbeat(lambda: open_metastore(None, warehouse), lease.lease_id, 60, 0.01) as beat:
        beat._thread.join(60)  # it ends by itself
        assert not beat._thread.is_alive()
    assert isinstance(beat.error, NoSuchLeaseError)
    assert beat.renewals == 0
