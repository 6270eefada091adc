"""The transaction metastore: catalog, transactions, write IDs, compaction queue and reader leases.

Public names are re-exported from ``port`` (the values and the ``Metastore`` protocol), ``sql``
(the SQLAlchemy adapter), ``hive`` (the Hive Metastore adapter over Thrift) and ``factory``
(``open_metastore``); sqlalchemy and alembic are imported
only in this package. See ``sql`` for the model and the rules (Hive's ``TxnHandler``).

The re-exports load lazily (PEP 562), so importing ``acid_core.metastore.port`` to build the
``acidflow`` parser, or a port value such as ``TableType``, does not pay for sqlalchemy and alembic
(about a second) on every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acid_core.metastore.factory import default_metastore_url, open_metastore
    from acid_core.metastore.hive.metastore import HiveMetastore
    from acid_core.metastore.port import (
        DEFAULT_DATABASE,
        DEFAULT_OPEN_TXN_TIMEOUT_SECONDS,
        METASTORE_DIR_NAME,
        BacklogSample,
        Clock,
        Column,
        CompactionInfo,
        CompactionState,
        CompactionType,
        Database,
        HousekeepingResult,
        Lease,
        Metastore,
        Partition,
        Table,
        TableDefinition,
        TableType,
        TxnInfo,
        TxnState,
        TxnType,
        WriteOperation,
        format_partition_name,
        split_table_name,
        table_type_from_properties,
    )
    from acid_core.metastore.sql.metastore import (
        InMemoryMetastore,
        SqlMetastore,
        create_engine_for_url,
        describe_db_error,
        upgrade_schema,
    )

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_OPEN_TXN_TIMEOUT_SECONDS",
    "METASTORE_DIR_NAME",
    "BacklogSample",
    "Clock",
    "Column",
    "CompactionInfo",
    "CompactionState",
    "CompactionType",
    "Database",
    "HiveMetastore",
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


_SQL_NAMES = (
    "InMemoryMetastore",
    "SqlMetastore",
    "create_engine_for_url",
    "describe_db_error",
    "upgrade_schema",
)
_FACTORY_NAMES = ("default_metastore_url", "open_metastore")


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    if name == "HiveMetastore":
        module = "hive.metastore"
    else:
        module = "sql.metastore" if name in _SQL_NAMES else "factory" if name in _FACTORY_NAMES else "port"
    return getattr(importlib.import_module(f"acid_core.metastore.{module}"), name)
