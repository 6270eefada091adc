"""Writes as transactions: ``Warehouse``, ``Transaction``, streaming ingest and Hive's bucketing hash.

See ``transaction`` for the layout each write leaves and the rules, ``rows`` for the partition
and bucket of each row, ``reading`` for a transaction's reads, ``streaming`` for Hive Streaming V2's
batched transactions, ``bucketing`` for the hash.
"""

from __future__ import annotations

from acid_core.writes.rows import HIVE_DEFAULT_PARTITION, assign_buckets, partition_values_of, row_type_of
from acid_core.writes.transaction import DEFAULT_HEARTBEAT_SECONDS, Transaction, Warehouse

__all__ = [
    "DEFAULT_HEARTBEAT_SECONDS",
    "HIVE_DEFAULT_PARTITION",
    "Transaction",
    "Warehouse",
    "assign_buckets",
    "partition_values_of",
    "row_type_of",
]
