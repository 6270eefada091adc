"""Hooks: the acidflow metastore and warehouse, opened from the platform configuration.

::

    AcidMetastoreHook(config)  .get_conn() -> SqlMetastore | HiveMetastore  (ACIDFLOW_METASTORE, else the
                               Connection acid_metastore_default, else embedded SQLite)
    AcidWarehouseHook(config)  .backlog(group, record=False) / .queue_summary()
                               .backlog_page()  rows with history (sparklines, time to critical) + queue
                               (reads tables; ``record=True`` adds the sensor's history samples)
                               .warehouse()  -> acid_core.writes.Warehouse (metastore + lock manager)

Nothing is opened in ``__init__``: DAG files build operators with hooks at parse time without I/O.
Errors: ``MetastoreError`` when the metastore cannot be opened; ``InvalidLockConfigError`` for a
bad lock manager setting.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from acidflow_airflow.config import AcidflowConfig, load_config_for_task

if TYPE_CHECKING:
    from collections.abc import Iterator

    from acidflow_airflow.config import TableGroup

__all__ = ["AcidMetastoreHook", "AcidWarehouseHook"]


# Connection extras of a Hive Metastore and the acidflow variables they set (acid_core.metastore.factory).
_CONNECTION_EXTRAS = {
    "hms_db": "ACIDFLOW_HMS_DB",
    "lease_store": "ACIDFLOW_LEASE_STORE",
    "sasl": "ACIDFLOW_HMS_SASL",
}


class AcidMetastoreHook(BaseHook):
    """Opens the acidflow transaction metastore named by the configuration."""

    conn_name_attr = "acid_metastore_conn_id"
    default_conn_name = "acid_metastore_default"
    conn_type = "acidflow"
    hook_name = "acidflow metastore"

    def __init__(self, config: AcidflowConfig | None = None) -> None:
        super().__init__()
        self._config = config

    @property
    def config(self) -> AcidflowConfig:
        """The configuration (loaded on first use).

        Without a metastore in the configuration (``ACIDFLOW_METASTORE`` / ``metastore:``), the
        Airflow Connection ``acid_metastore_default`` names it when defined: type
        ``hive_metastore`` with host ``hms1[,hms2]`` and port (9083) is a Hive Metastore
        (extras, each exported unless that variable is set: ``hms_db``, its backend database for
        the 2.3/3.1 queue, as ``ACIDFLOW_HMS_DB``; ``lease_store``, acidflow's side store for
        leases and backlog history -- one database every worker shares -- as
        ``ACIDFLOW_LEASE_STORE``; ``sasl``, e.g. ``GSSAPI``, as ``ACIDFLOW_HMS_SASL``); any type with
        extra ``url`` is that metastore URL.
        """
        if self._config is None:
            config = load_config_for_task()
            if config.metastore is None:
                url = self._metastore_from_connection()
                if url is not None:
                    config = replace(config, metastore=url)
            self._config = config
        return self._config

    def _metastore_from_connection(self) -> str | None:
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            conn = self.get_connection(self.default_conn_name)
        except AirflowNotFoundException:
            return None
        extra = conn.extra_dejson
        for key, variable in _CONNECTION_EXTRAS.items():
            if extra.get(key):
                os.environ.setdefault(variable, str(extra[key]))
        if extra.get("url"):
            return str(extra["url"])
        if conn.conn_type in ("hive_metastore", "hive-metastore") and conn.host:
            port = conn.port or 9083
            hosts = [h.strip() for h in conn.host.split(",") if h.strip()]
            return ",".join(f"thrift://{h}:{port}" if ":" not in h else f"thrift://{h}" for h in hosts)
        return None

    def get_conn(self) -> Any:  # noqa: ANN401 - acid_core.metastore.SqlMetastore
        """Open (and migrate) the metastore; the caller closes it."""
        from acid_core.metastore import open_metastore

        return open_metastore(self.config.metastore, self.config.warehouse)

    @contextmanager
    def lock_manager(self) -> Iterator[Any]:
        """The lock manager of ``ACIDFLOW_LOCK_MANAGER`` over this configuration's metastore."""
        from acid_core.locks import open_lock_manager

        locks = open_lock_manager(metastore_url=self.config.metastore, warehouse=self.config.warehouse)
        try:
            yield locks
        finally:
            locks.close()

    @contextmanager
    def metastore(self) -> Iterator[Any]:
        """The metastore, closed on exit."""
        store = self.get_conn()
        try:
            yield store
        finally:
            store.close()


class AcidWarehouseHook(AcidMetastoreHook):
    """Reads the warehouse's backlog and queue; opens a ``Warehouse`` for writes (demo, tests)."""

    hook_name = "acidflow warehouse"

    def backlog(
        self,
        group: TableGroup | None = None,
        tables: list[str] | None = None,
        *,
        record: bool = False,
        now: float | None = None,
    ) -> list[dict[str, Any]]:
        """The backlog rows of a group or of named tables (see ``acidflow_airflow.backlog``).

        With ``record`` (the sensor runs), the measurement is also stored as history samples.
        """
        from acidflow_airflow.backlog import collect_backlog, record_backlog

        with self.metastore() as store:
            rows = collect_backlog(store, self.config, group, tables, now=now)
            if record:
                record_backlog(store, rows, self.config, now=now)
            return rows

    def backlog_page(self, now: float | None = None) -> dict[str, Any]:
        """What the backlog page shows: every table's rows with their history, and the queue."""
        import time

        from acidflow_airflow.backlog import add_history, collect_backlog, queue_summary

        now = time.time() if now is None else now
        with self.metastore() as store:
            rows = collect_backlog(store, self.config, now=now)
            samples = store.list_backlog_samples(now - self.config.history_window_seconds)
            summary = queue_summary(store, now)
        return {
            "rows": add_history(rows, samples, self.config, now),
            "queue": summary,
            "generated": now,
            "window_seconds": self.config.history_window_seconds,
        }

    def queue_summary(self) -> dict[str, Any]:
        """Queue counts, oldest ages, open transactions and leases."""
        from acidflow_airflow.backlog import queue_summary

        with self.metastore() as store:
            return queue_summary(store)

    @contextmanager
    def warehouse(self) -> Iterator[Any]:
        """A ``acid_core.writes.Warehouse`` with the lock manager of ``ACIDFLOW_LOCK_MANAGER``."""
        from acid_core.locks import open_lock_manager
        from acid_core.writes import Warehouse

        store = self.get_conn()
        locks = open_lock_manager(metastore_url=self.config.metastore, warehouse=self.config.warehouse)
        try:
            yield Warehouse(self.config.warehouse, store, locks)
        finally:
            locks.close()
            store.close()
