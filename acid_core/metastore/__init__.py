"""The transaction metastore: catalog, transactions, write IDs, compaction queue and reader leases.

Public names are re-exported from ``store``; sqlalchemy and alembic are imported only in this
package. See ``store`` for the model and the rules (Hive's ``TxnHandler``).
"""

from __future__ import annotations

from acid_core.metastore.store import (
    DEFAULT_DATABASE,
    METASTORE_DIR_NAME,
    Clock,
    Column,
    CompactionInfo,
    CompactionState,
    CompactionType,
    Database,
    InMemoryMetastore,
    Lease,
    Metastore,
    Partition,
    SqlMetastore,
    Table,
    TableDefinition,
    TableType,
    TxnInfo,
    TxnState,
    TxnType,
    WriteOperation,
    default_metastore_url,
    format_partition_name,
    open_metastore,
    split_table_name,
    table_type_from_properties,
)

__all__ = [
    "DEFAULT_DATABASE",
    "METASTORE_DIR_NAME",
    "Clock",
    "Column",
    "CompactionInfo",
    "CompactionState",
    "CompactionType",
    "Database",
    "InMemoryMetastore",
    "Lease",
    "Metastore",
    "Partition",
    "SqlMetastore",
    "Table",
    "TableDefinition",
    "TableType",
    "TxnInfo",
    "TxnState",
    "TxnType",
    "WriteOperation",
    "default_metastore_url",
    "format_partition_name",
    "open_metastore",
    "split_table_name",
    "table_type_from_properties",
]
