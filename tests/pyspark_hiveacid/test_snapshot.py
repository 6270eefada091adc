"""Taking the snapshot of a read: a metastore that cannot hold one gives a one-line option error."""

from __future__ import annotations

import pytest

from acid_core.errors import HiveMetastoreCapabilityError, InvalidDataSourceOptionError
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
