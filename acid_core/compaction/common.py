"""What every compactor role shares: where a partition lives, and the transaction reaper.

::

    partition_location(metastore, table, "ds=1")   the partition's stored LOCATION (or Hive's
                                                    default <table>/<partition>)
    reap_timed_out_transactions(metastore)         abort txns silent for over hive.txn.timeout

The initiator's runs (``acidflow initiate``, the backlog sensor), the worker and the cleaner each
start from these; one module keeps the roles from importing each other for them.

Invariants: ``partition_location`` never derives a path outside what the metastore stores except
Hive's default layout below the table location; the reaper only aborts (never deletes).
Not here: deciding (``initiator``), compacting (``worker``), deleting (``cleaner``).
Errors: whatever the metastore raises.
"""

from __future__ import annotations

import logging
import posixpath
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from acid_core.metastore import Metastore, Table

__all__ = ["DEFAULT_TXN_TIMEOUT_SECONDS", "partition_location", "reap_timed_out_transactions"]

_LOG = logging.getLogger(__name__)

DEFAULT_TXN_TIMEOUT_SECONDS: Final = 300.0
"""Hive's ``hive.txn.timeout``: a transaction silent this long is aborted by the reaper."""


def partition_location(metastore: Metastore, table: Table, partition: str | None) -> str:
    """The directory of a table or one of its partitions, as the metastore stores it."""
    if partition is None:
        return table.location
    for candidate in metastore.list_partitions(table.full_name):
        if candidate.name == partition:
            return candidate.location
    return posixpath.join(table.location, partition)  # Hive's default layout


def reap_timed_out_transactions(
    metastore: Metastore, timeout_seconds: float | None = None, now: float | None = None
) -> list[int]:
    """Abort transactions that stopped heartbeating (Hive's AcidHouseKeeperService reaper).

    Runs at the start of every initiator and cleaner run: a killed writer's open transaction
    would otherwise hold the compactor's high watermark and the cleaner's "min open txn" forever.
    Its write IDs become aborted, so every reader ignores what it wrote.

    Args:
        metastore: the metastore.
        timeout_seconds: silence that counts as dead (default ``DEFAULT_TXN_TIMEOUT_SECONDS``).
        now: the clock (epoch seconds).

    Returns:
        The transaction IDs aborted.
    """
    timeout = DEFAULT_TXN_TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
    reaped = [int(txn) for txn in metastore.abort_timed_out_txns(timeout, now)]
    if reaped:
        _LOG.warning(
            "reaper aborted %d transaction(s) silent for over %.0f s: %s", len(reaped), timeout, reaped
        )
    return reaped
