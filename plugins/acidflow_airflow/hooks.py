"""Hooks: the acidflow metastore and warehouse, opened from the platform configuration.

::

    AcidMetastoreHook(config)  .get_conn() -> SqlMetastore        (ACIDFLOW_METASTORE or embedded SQLite)
    AcidWarehouseHook(config)  .backlog(group, record=False) / .queue_summary()
                               .backlog_page()  rows with history (sparklines, time to critical) + queue
                               (reads tables; ``record=True`` adds the sensor's history samples)
                               .warehouse()  -> acid_core.writes.Warehouse (metastore + lock manager)

Nothing is opened in ``__init__``: DAG files build operators with hooks at parse time without I/O.
Errors: ``MetastoreError`` when the metastore cannot be opened; ``InvalidLockConfigError`` for a
bad lock manager setting.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from acidflow_airflow.config import AcidflowConfig, load_config_for_task

if TYPE_CHECKING:
    from collections.abc import Iterator

    from acidflow_airflow.config import TableGroup

__all__ = ["AcidMetastoreHook", "AcidWarehouseHook"]


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
        """The configuration (loaded on first use)."""
        if self._config is None:
            self._config = load_config_for_task()
        return self._config

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
