"""Open the metastore a URL names: the embedded SQLite file, a SQLAlchemy URL, or a Hive Metastore.

``open_metastore(None, warehouse)`` is the embedded default, ``<warehouse>/.acidflow/metastore.sqlite``;
``thrift://host:9083[,thrift://host2:9083]`` is a Hive Metastore (``hive.HiveMetastore``), with
Hive 2.3's/3.1's compaction queue reached through ``ACIDFLOW_HMS_DB`` (a SQLAlchemy URL of the HMS
backend database) when the server has no compactor-worker calls, and acidflow's side store (reader
lease records, backlog history) at ``ACIDFLOW_LEASE_STORE``: a SQLAlchemy URL of acidflow's own
store, ``none`` to switch it off, or (unset) the embedded SQLite file next to the warehouse,
opened only when first needed.

Not here: the adapters themselves (``sql``, ``hive``), configuration parsing (the command line).
A warehouse on S3 or HDFS has no embedded metastore (SQLite needs a local file): without a URL it
is refused (``EmbeddedMetastoreLocationError``), before anything is created.
Errors: ``InvalidWarehouseError`` for an empty warehouse or an unknown scheme; whatever the adapter raises on open (``MetastoreError`` for an unreachable database,
``InvalidMetastoreRequestError`` for a malformed ``thrift://`` list).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from acid_core.errors import EmbeddedMetastoreLocationError
from acid_core.fs import is_local_location, resolve_warehouse
from acid_core.metastore.hive.thrift import is_thrift_url
from acid_core.metastore.port import METASTORE_DIR_NAME

if TYPE_CHECKING:
    from collections.abc import Callable

    from acid_core.metastore.hive.metastore import HiveMetastore
    from acid_core.metastore.sql.metastore import SqlMetastore

__all__ = [
    "HMS_DB_ENV",
    "HMS_SASL_ENV",
    "HMS_SASL_SERVICE_ENV",
    "HMS_TIMEOUT_ENV",
    "LEASE_STORE_ENV",
    "default_metastore_url",
    "open_metastore",
]

HMS_DB_ENV: Final = "ACIDFLOW_HMS_DB"
HMS_TIMEOUT_ENV: Final = "ACIDFLOW_HMS_TIMEOUT"
HMS_SASL_ENV: Final = "ACIDFLOW_HMS_SASL"
HMS_SASL_SERVICE_ENV: Final = "ACIDFLOW_HMS_SASL_SERVICE"
LEASE_STORE_ENV: Final = "ACIDFLOW_LEASE_STORE"


def default_metastore_url(warehouse: str, *, create: bool = False, purpose: str = "metastore") -> str:
    """``sqlite:///<warehouse>/.acidflow/metastore.sqlite`` (absolute), for a local warehouse only.

    Args:
        warehouse: the warehouse directory or URI.
        create: also create ``<warehouse>/.acidflow`` (the warehouse's first use).
        purpose: what the file would hold (``metastore``, ``side store``, ``lock store``): the
            refusal names the setting that places it.

    Raises:
        InvalidWarehouseError: see ``fs.resolve_warehouse``.
        EmbeddedMetastoreLocationError: the warehouse is on S3, HDFS, ...: SQLite needs a local file.
    """
    location = resolve_warehouse(warehouse, source="warehouse")
    if not is_local_location(location):
        raise EmbeddedMetastoreLocationError(location, purpose)
    directory = Path(location).resolve() / METASTORE_DIR_NAME
    if create:
        directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{directory / 'metastore.sqlite'}"


def _warehouse_root(warehouse: str) -> str:
    # Where tables created through acidflow go: a URI stays one (Path() made s3://b/w ./s3:/b/w).
    location = resolve_warehouse(warehouse, source="warehouse")
    return str(Path(location).resolve()) if is_local_location(location) else location


def open_metastore(
    url: str | None, warehouse: str, *, hms_db: str | None = None
) -> SqlMetastore | HiveMetastore:
    """Open the metastore at ``url``, or the embedded SQLite file of ``warehouse``.

    Args:
        url: ``None`` (embedded SQLite), a SQLAlchemy URL, or ``thrift://h:9083[,thrift://h2:9083]``.
        warehouse: the warehouse directory (for a Hive Metastore: where tables created through
            acidflow go; Hive's own tables keep the locations the HMS stores).
        hms_db: the HMS backend database for Hive 2.3's compaction queue (default
            ``$ACIDFLOW_HMS_DB``); ignored for SQL metastores.
    """
    if url is not None and is_thrift_url(url):
        return _open_hive(url, warehouse, hms_db if hms_db is not None else os.environ.get(HMS_DB_ENV))
    return _open_sql(url, warehouse)


def _open_sql(url: str | None, warehouse: str, purpose: str = "metastore") -> SqlMetastore:
    from acid_core.metastore.sql.metastore import SqlMetastore

    root = _warehouse_root(warehouse)
    return SqlMetastore(url or default_metastore_url(root, create=True, purpose=purpose), warehouse=root)


def _open_hive(url: str, warehouse: str, hms_db: str | None) -> HiveMetastore:
    from acid_core.errors import InvalidMetastoreRequestError
    from acid_core.metastore.hive.metastore import HiveMetastore
    from acid_core.metastore.hive.thrift import (
        DEFAULT_TIMEOUT_SECONDS,
        ThriftHmsConnection,
        parse_metastore_uris,
    )

    timeout_text = os.environ.get(HMS_TIMEOUT_ENV) or str(DEFAULT_TIMEOUT_SECONDS)
    try:
        timeout = float(timeout_text)
    except ValueError:
        timeout = -1.0
    if not timeout > 0:
        raise InvalidMetastoreRequestError(HMS_TIMEOUT_ENV, timeout_text, "a positive number of seconds")
    connection = ThriftHmsConnection(
        parse_metastore_uris(url),
        timeout_seconds=timeout,
        sasl_mechanism=os.environ.get(HMS_SASL_ENV) or None,
        sasl_service=os.environ.get(HMS_SASL_SERVICE_ENV) or "hive",
    )
    queue = None
    if hms_db:
        from acid_core.metastore.hive.queue_sql import HiveQueueSql

        queue = HiveQueueSql(hms_db)
    return HiveMetastore(
        connection,
        queue_sql=queue,
        lease_store=_side_store(os.environ.get(LEASE_STORE_ENV), warehouse),
        warehouse=_warehouse_root(warehouse),
    )


def _side_store(setting: str | None, warehouse: str) -> Callable[[], SqlMetastore] | None:
    """The opener of a Hive Metastore's side store (``ACIDFLOW_LEASE_STORE``), or None for ``none``."""
    text = (setting or "").strip()
    if text.lower() == "none":
        return None
    if is_thrift_url(text):
        from acid_core.errors import InvalidMetastoreRequestError

        raise InvalidMetastoreRequestError(
            LEASE_STORE_ENV, text, "a SQLAlchemy URL of acidflow's own store, 'none', or unset"
        )

    # Opened on first use; on an S3/HDFS warehouse without a URL that use is refused in one line
    # naming ACIDFLOW_LEASE_STORE (not ACIDFLOW_METASTORE, which is the thrift:// URL here).
    return lambda: _open_sql(text or None, warehouse, purpose="side store")
