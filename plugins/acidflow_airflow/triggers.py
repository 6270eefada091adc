"""``AcidBacklogTrigger``: waits on the triggerer until tables of a group need compaction.

::

    triggerer event loop
      every poke_interval: collect_backlog(group) in a worker thread (file listings, metastore reads),
                           recorded as history samples (the backlog page's trends)
      any row with an initiator decision (minor/major)  ->  TriggerEvent({"status": "work", rows})

Hundreds of tables cost no worker slot while they wait. The trigger only reads.
Errors: a metastore or listing failure ends the trigger with ``{"status": "error", "message"}``;
the sensor turns it into a task failure naming the group.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["AcidBacklogTrigger", "check_backlog"]


def check_backlog(
    group: str, warehouse: str | None, metastore: str | None, config_path: str | None
) -> list[dict[str, Any]]:
    """The group's backlog rows (blocking; the trigger runs it in a thread)."""
    from dataclasses import replace

    from acidflow_airflow.config import load_config
    from acidflow_airflow.hooks import AcidWarehouseHook

    config = load_config(config_path)
    if warehouse:
        config = replace(config, warehouse=warehouse)
    if metastore:
        config = replace(config, metastore=metastore)
    return AcidWarehouseHook(config).backlog(config.group(group), record=True)


class AcidBacklogTrigger(BaseTrigger):
    """Fires when at least one table/partition of ``group`` should be compacted (the initiator's rules)."""

    def __init__(
        self,
        group: str,
        poke_interval: float = 60.0,
        warehouse: str | None = None,
        metastore: str | None = None,
        config_path: str | None = None,
    ) -> None:
        super().__init__()
        self.group = group
        self.poke_interval = poke_interval
        self.warehouse = warehouse
        self.metastore = metastore
        self.config_path = config_path

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Class path and keyword arguments (the triggerer rebuilds the trigger from them)."""
        return (
            "acidflow_airflow.triggers.AcidBacklogTrigger",
            {
                "group": self.group,
                "poke_interval": self.poke_interval,
                "warehouse": self.warehouse,
                "metastore": self.metastore,
                "config_path": self.config_path,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll until work appears; yield one event."""
        while True:
            try:
                rows = await asyncio.to_thread(
                    check_backlog, self.group, self.warehouse, self.metastore, self.config_path
                )
            except Exception as error:  # reported to the sensor, which fails the task with it
                yield TriggerEvent(
                    {"status": "error", "group": self.group, "message": f"{type(error).__name__}: {error}"}
                )
                return
            if any(row.get("compaction_type") for row in rows):
                yield TriggerEvent({"status": "work", "group": self.group, "rows": rows})
                return
            self.log.info(
                "acidflow group %s: nothing to compact; next check in %s s", self.group, self.poke_interval
            )
            await asyncio.sleep(self.poke_interval)
