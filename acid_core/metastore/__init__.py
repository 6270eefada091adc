"""The transaction metastore: catalog, transactions, write IDs, compaction queue and reader leases.

Public names are re-exported from ``store``; sqlalchemy and alembic are imported only in this
package. See ``store`` for the model and the rules (Hive's ``TxnHandler``).

The re-exports load lazily (PEP 562), so importing ``acid_core.metastore.cli_lease`` to build the
``acidflow`` parser does not pay for sqlalchemy and alembic (about a second) on every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acid_core.metastore.store import (
        DEFAULT_DATABASE,
        DEFAULT_OPEN_TXN_TIMEOUT_SECONDS,
        METASTORE_DIR_NAME,
        Clock,
        Column,
        CompactionInfo,
        CompactionState,
        CompactionType,
        Database,
        HousekeepingResult,
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
        create_engine_for_url,
        default_metastore_url,
        describe_db_error,
        format_partition_name,
        open_metastore,
        split_table_name,
        table_type_from_properties,
        upgrade_schema,
    )

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_OPEN_TXN_TIMEOUT_SECONDS",
    "METASTORE_DIR_NAME",
    "Clock",
    "Column",
    "CompactionInfo",
    "CompactionState",
    "CompactionType",
    "Database",
    "HousekeepingResult",
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
    "create_engine_for_url",
    "default_metastore_url",
    "describe_db_error",
    "format_partition_name",
    "open_metastore",
    "split_table_name",
    "table_type_from_properties",
    "upgrade_schema",
]


def __getattr__(name: str) -> object:
    if name in __all__:
        from acid_core.metastore import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
