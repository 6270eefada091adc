"""The snapshot a Spark read uses: taken once on the driver, as a reader lease the cleaner honours.

::

    take_snapshot(store, "db.t", ttl)     get_valid_txns(), then take_lease -> Snapshot(lease_id, write_ids, txns)
    lease_snapshot(store, "db.t", 7)      an existing lease (acidflow lease take): its write IDs
    held_snapshot("db.t", ...)            a context manager for the user's driver: take, yield, release

``take_snapshot`` is the one place that talks to the lease API, so when leases store the full
snapshot (ValidWriteIdList and ValidTxnList) only it changes. Until then the transaction list is
read just before the lease: a compaction that commits in between is not seen (its ``_vT`` output is
skipped and the deltas it replaced are read), and the cleaner keeps those deltas for the lease
whether or not its reader sees the compaction's output (``compaction.cleaner``).

Invariants: every partition of one read gets the same ``Snapshot``; a ``latest`` snapshot's lease
expires after its TTL if nobody releases it (Spark has no end-of-job hook for Python sources).
Not here: listing files (``source`` plans them on the driver).
Errors: ``NoSuchLeaseError`` (unknown lease, or one of another table), ``NoSuchTableError``.
"""

from __future__ import annotations

import getpass
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acid_core.errors import NoSuchLeaseError
from acid_core.metastore.port import split_table_name

if TYPE_CHECKING:
    from collections.abc import Iterator

    from acid_core.metastore.port import Metastore
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["Snapshot", "held_snapshot", "lease_snapshot", "take_snapshot"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One read's view of a table.

    Attributes:
        lease_id: the lease protecting its files, or None for an explicit snapshot.
        write_ids: the table's ValidWriteIdList.
        txns: the ValidTxnList deciding ``_vT`` visibility.
    """

    lease_id: int | None
    write_ids: ValidWriteIdList
    txns: ValidTxnList | None


def _owner() -> str:
    return f"spark:{getpass.getuser()}@{socket.gethostname()}"


def take_snapshot(store: Metastore, table: str, ttl_seconds: float, owner: str | None = None) -> Snapshot:
    """Register the table's current snapshot as a lease (see the module docstring)."""
    txns = store.get_valid_txns()
    lease_id, write_ids = store.take_lease(table, ttl_seconds, owner=owner or _owner())
    return Snapshot(lease_id, write_ids, txns)


def lease_snapshot(store: Metastore, table: str, lease_id: int) -> Snapshot:
    """The snapshot of an existing lease of ``table``.

    Raises:
        NoSuchLeaseError: no live lease with that ID on that table.
    """
    wanted = split_table_name(table)
    for lease in store.list_leases(table):
        if lease.lease_id == lease_id and split_table_name(lease.table) == wanted:
            return Snapshot(lease_id, lease.write_ids, store.get_valid_txns())
    raise NoSuchLeaseError(lease_id)


@contextmanager
def held_snapshot(
    table: str,
    *,
    metastore: str | None = None,
    warehouse: str = "./warehouse",
    ttl_seconds: float = 3600.0,
) -> Iterator[Snapshot]:
    """Hold a lease for the length of a ``with`` block; pass ``str(snapshot.lease_id)`` as ``snapshot``.

    Every read in the block sees the same rows, and the lease is released when the block ends.
    """
    from acid_core.metastore.factory import open_metastore

    store = open_metastore(metastore, warehouse)
    try:
        snapshot = take_snapshot(store, table, ttl_seconds)
        try:
            yield snapshot
        finally:
            assert snapshot.lease_id is not None  # noqa: S101 - take_snapshot always leases
            store.release_lease(snapshot.lease_id)
    finally:
        store.close()
