"""Choose the lock manager from the environment: ``open_lock_manager``.

::

    ACIDFLOW_LOCK_MANAGER=zookeeper|sql|none   (unset: zookeeper if ACIDFLOW_ZOOKEEPER is set, else sql)
    ACIDFLOW_ZOOKEEPER=host:port[,host:port...][/chroot]

The adapters are imported inside ``open_lock_manager``: kazoo and sqlalchemy load only for the
manager that is chosen.
Not here: the lock rules. Errors: ``InvalidLockConfigError``, ``LockServiceUnavailableError``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from acid_core.errors import (
    InvalidLockConfigError,
)
from acid_core.locks.memory import NoLockManager

if TYPE_CHECKING:
    from collections.abc import Mapping

    from acid_core.locks.port import LockManager


LOCK_MANAGER_ENV = "ACIDFLOW_LOCK_MANAGER"
ZOOKEEPER_ENV = "ACIDFLOW_ZOOKEEPER"
# The metastore's settings (as in acid_core.cli.options), for the sql lock manager.
METASTORE_ENV = "ACIDFLOW_METASTORE"
LEASE_STORE_ENV = "ACIDFLOW_LEASE_STORE"  # with a thrift:// metastore: where the SQL locks live
WAREHOUSE_ENV = "ACIDFLOW_WAREHOUSE"
DEFAULT_WAREHOUSE = "./warehouse"


def open_lock_manager(
    environ: Mapping[str, str] | None = None,
    *,
    fair: bool = False,
    metastore_url: str | None = None,
    warehouse: str | None = None,
) -> LockManager:
    """Build the lock manager chosen by ``ACIDFLOW_LOCK_MANAGER`` (``zookeeper``, ``sql``, ``none``).

    ``zookeeper`` needs ``ACIDFLOW_ZOOKEEPER=host:port[,host:port...][/chroot]``. ``sql`` uses the
    metastore database: ``ACIDFLOW_METASTORE`` (a SQLAlchemy URL), else the embedded SQLite file of
    ``ACIDFLOW_WAREHOUSE`` (default ``./warehouse``); with a Hive Metastore (``thrift://``), acidflow's
    side store ``ACIDFLOW_LEASE_STORE`` (a SQLAlchemy URL), else that embedded file (refused for a
    warehouse on S3 or HDFS, naming those settings). Unset means ``zookeeper`` when
    ``ACIDFLOW_ZOOKEEPER`` is set, otherwise ``sql`` (the embedded default). A caller that already
    knows its metastore passes ``metastore_url`` (and ``warehouse``), which win over the environment,
    so that its locks live in the same database as its transactions.

    Raises:
        InvalidLockConfigError: an unknown manager, a missing or malformed ZooKeeper address.
        LockServiceUnavailableError: ZooKeeper or the metastore database cannot be reached.
        EmbeddedMetastoreLocationError: ``sql`` on an S3 or HDFS warehouse with no database to hold
            the locks (no SQL metastore URL; with ``thrift://``, no ``ACIDFLOW_LEASE_STORE``).
    """
    env = os.environ if environ is None else environ
    hosts = env.get(ZOOKEEPER_ENV, "").strip()
    name = env.get(LOCK_MANAGER_ENV, "").strip().lower() or ("zookeeper" if hosts else "sql")
    if name == "none":
        return NoLockManager()
    if name == "zookeeper":
        if not hosts:
            raise InvalidLockConfigError(
                ZOOKEEPER_ENV, hosts, "host:port[,host:port...]", f"set it when {LOCK_MANAGER_ENV}=zookeeper"
            )
        servers, _, _chroot = hosts.partition("/")  # ZooKeeper's optional "/chroot" suffix
        for server in servers.split(","):
            host, colon, port = server.strip().rpartition(":")
            if not colon or not host or not port.isdigit():
                raise InvalidLockConfigError(ZOOKEEPER_ENV, hosts, "host:port[,host:port...][/chroot]")
            if not 0 < int(port) < 65536:  # kazoo would fail later with "Port out of range"
                raise InvalidLockConfigError(
                    ZOOKEEPER_ENV,
                    hosts,
                    "host:port[,host:port...][/chroot] with each port from 1 to 65535",
                    f"port {port} of {server.strip()!r} is out of range",
                )
        from acid_core.locks.zookeeper import KazooLockManager  # kazoo is an optional extra

        manager: LockManager = KazooLockManager(hosts, fair=fair)
        return manager
    if name == "sql":
        from acid_core.locks.sql import SqlLockManager  # sqlalchemy is an optional extra
        from acid_core.metastore import default_metastore_url

        url = metastore_url or env.get(METASTORE_ENV, "").strip()
        purpose = "metastore"
        if url.lower().startswith("thrift://"):
            # A Hive Metastore has no SQL of ours: the locks live in acidflow's side store
            # (ACIDFLOW_LEASE_STORE), by default the warehouse's embedded file.
            side_store = env.get(LEASE_STORE_ENV, "").strip()
            url = "" if side_store.lower() == "none" else side_store
            purpose = "lock store"
        if not url:
            # An empty ACIDFLOW_WAREHOUSE is refused (resolve_warehouse), not read as the default.
            from acid_core.fs import resolve_warehouse

            if warehouse is None:
                warehouse = resolve_warehouse(
                    env.get(WAREHOUSE_ENV, DEFAULT_WAREHOUSE), source=f"${WAREHOUSE_ENV}"
                )
            url = default_metastore_url(warehouse, create=True, purpose=purpose)  # refuses S3/HDFS
        sql_manager: LockManager = SqlLockManager(url, fair=fair)
        return sql_manager
    raise InvalidLockConfigError(LOCK_MANAGER_ENV, name, "zookeeper, sql or none")
