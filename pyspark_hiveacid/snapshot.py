"""The snapshot a Spark read uses: taken once on the driver, as a reader lease the cleaner honours.

::

    take_snapshot(store, "db.t", ttl)     get_valid_txns(), then take_lease -> Snapshot(lease_id, write_ids, txns)
    lease_snapshot(store, "db.t", 7)      an existing lease (acidflow lease take): its write IDs
    held_snapshot("db.t", ...)            a context manager for the user's driver: take, yield, release
    renew_snapshot(store, snapshot, ttl)  on an executor, while a task reads: push the lease's expiry on

How a ``latest`` lease ends: Spark 4's Python data source API has no end-of-job hook (a reader
has no ``close``, and ``partitions()`` runs in a planning worker, not the user's driver), so the
lease is a TTL renewed by its readers: every task renews it when it starts and every third of the
TTL while it reads. The lease therefore lives while the job reads and expires ``lease_ttl`` after
its last task, however long the job runs; a task that starts after that fails with
``NoSuchLeaseError`` instead of reading files the cleaner may have removed (load the DataFrame
again). On a Hive Metastore each renewal also heartbeats the lease's HMS transaction.

``take_snapshot`` is the one place that talks to the lease API, so when leases store the full
snapshot (ValidWriteIdList and ValidTxnList) only it changes. Until then the transaction list is
read just before the lease: a compaction that commits in between is not seen (its ``_vT`` output is
skipped and the deltas it replaced are read), and the cleaner keeps those deltas for the lease
whether or not its reader sees the compaction's output (``compaction.cleaner``).

Invariants: every partition of one read gets the same ``Snapshot``; a ``latest`` snapshot's lease
expires one TTL after its last renewal.
Not here: listing files (``source`` plans them on the driver).
Errors: ``NoSuchLeaseError`` (unknown lease, or one of another table), ``NoSuchTableError``.
"""

from __future__ import annotations

import getpass
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acid_core.errors import HiveMetastoreCapabilityError, InvalidDataSourceOptionError, NoSuchLeaseError
from acid_core.metastore.port import split_table_name
from acid_core.writeids import ValidTxnList

if TYPE_CHECKING:
    from collections.abc import Iterator

    from acid_core.metastore.port import Metastore
    from acid_core.writeids import ValidWriteIdList

__all__ = [
    "Snapshot",
    "current_user",
    "held_snapshot",
    "lease_snapshot",
    "renew_snapshot",
    "take_snapshot",
]


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


def current_user() -> str:
    """The OS user, or ``unknown`` where the password database has no entry (containers, Spark workers)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _owner() -> str:
    return f"spark:{current_user()}@{socket.gethostname()}"


def take_snapshot(store: Metastore, table: str, ttl_seconds: float, owner: str | None = None) -> Snapshot:
    """Register the table's current snapshot as a lease (see the module docstring).

    Raises:
        InvalidDataSourceOptionError: ``snapshot=latest`` on a metastore that cannot hold a snapshot
            (a Hive Metastore without acidflow's lease store): one line naming the option and
            what works instead.
    """
    try:
        lease = store.take_lease(table, ttl_seconds, owner=owner or _owner())
    except HiveMetastoreCapabilityError as e:
        raise InvalidDataSourceOptionError(
            "snapshot",
            "latest",
            f"an explicit snapshot, because the metastore cannot hold one for the read ({e.problem}): "
            "option snapshot='<ValidWriteIdList>' (and txns='<ValidTxnList>') from the metastore",
        ) from e
    # A lease is a full snapshot: its ValidTxnList was taken with its write IDs (revision 0003).
    txns = lease.txns if lease.txns is not None else store.get_valid_txns()
    return Snapshot(lease.lease_id, lease.write_ids, txns)


def renew_snapshot(store: Metastore, lease_id: int, ttl_seconds: float) -> None:
    """Push a live lease's expiry to ``ttl_seconds`` from now (``Metastore.renew_lease``).

    On a Hive Metastore this also heartbeats the lease's HMS transaction.

    Raises:
        NoSuchLeaseError: the lease was released or has expired.
        LeaseLostError: (Hive Metastore) the lease's transaction was aborted.
    """
    store.renew_lease(lease_id, ttl_seconds)


def lease_snapshot(store: Metastore, table: str, lease_id: int) -> Snapshot:
    """The snapshot of an existing lease of ``table``.

    Raises:
        NoSuchLeaseError: no live lease with that ID on that table.
    """
    wanted = split_table_name(table)
    for lease in store.list_leases(table):
        if lease.lease_id == lease_id and split_table_name(lease.table) == wanted:
            if lease.txns is not None:  # the lease's own ValidTxnList (metastore revision 0003)
                return Snapshot(lease_id, lease.write_ids, lease.txns)
            return Snapshot(lease_id, lease.write_ids, _txns_at_lease(store, table, lease.created))
    raise NoSuchLeaseError(lease_id)


def _txns_at_lease(store: Metastore, table: str, created: float) -> ValidTxnList:
    """Today's ValidTxnList with the compactions committed since the lease made invisible again.

    The lease stores only write IDs. Every transaction committed after it has write IDs the lease
    already excludes, except compactions: their ``base_N_vT`` would be visible, and Hive's
    ``getAcidState`` then refuses an older snapshot ("not enough history") instead of reading the
    deltas the lease keeps. Hiding those compaction transactions (as open) is what a reader
    holding the lease-time ValidTxnList sees.
    """
    txns = store.get_valid_txns()
    late = {
        int(c.txn_id)
        for c in store.show_compactions(table)
        if c.txn_id is not None and (c.commit_time is None or c.commit_time >= created)
    }
    late -= set(txns.open_ids) | set(txns.aborted_ids)
    late = {t for t in late if t <= txns.high_watermark}
    if not late:
        return txns
    open_ids = tuple(sorted({*txns.open_ids, *late}))
    lowest = min(late) if txns.min_open_id is None else min(txns.min_open_id, *late)
    return ValidTxnList(txns.high_watermark, open_ids, txns.aborted_ids, lowest)


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
    A thread renews it meanwhile (``LeaseHeartbeat``: on a Hive Metastore the lease's transaction
    must be heartbeated within ``hive.txn.timeout``), so a block may outlast ``ttl_seconds``.
    """
    from acid_core.metastore.factory import open_metastore
    from acid_core.metastore.lease_heartbeat import LeaseHeartbeat, heartbeat_interval

    store = open_metastore(metastore, warehouse)
    try:
        snapshot = take_snapshot(store, table, ttl_seconds)
        assert snapshot.lease_id is not None  # noqa: S101 - take_snapshot always leases
        try:
            with LeaseHeartbeat(
                lambda: open_metastore(metastore, warehouse),
                snapshot.lease_id,
                ttl_seconds,
                heartbeat_interval(ttl_seconds),
            ):
                yield snapshot
        finally:
            store.release_lease(snapshot.lease_id)
    finally:
        store.close()
