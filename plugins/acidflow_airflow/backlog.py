"""The backlog: per table and partition, what a reader merges and what the initiator decides.

::

    collect_backlog(metastore, config, group)
        for each ACID table of the group, for each partition (or the table):
            compactor's snapshot -> load_directory_state -> deltas, delete deltas, aborted, obsolete (+ bytes)
            PartitionFacts + queue/history -> decide_compaction (the initiator, pure) -> decision, reason
            BacklogLevels (config, TBLPROPERTIES) -> ok / warning / critical
    queue_summary(metastore, now)  -> Hive's compaction metrics (compaction_num_<state>, oldest ages)
    backlog_metrics(rows, summary) -> {metric name: value} as Hive's AcidMetricService names them

Rows are plain dicts (JSON-ready: XCom, the backlog page's API). Nothing here writes anything.
Not here: enqueuing (``operators``), alert delivery (``notifiers``).
Errors: a table that cannot be read gets a row with ``error`` set, the others go on.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from acidflow_airflow.config import AcidflowConfig, TableGroup

__all__ = [
    "COMPACTION_NUM_ACTIVE_DELTAS",
    "COMPACTION_NUM_OBSOLETE_DELTAS",
    "COMPACTION_OLDEST_CLEANING_AGE",
    "COMPACTION_OLDEST_ENQUEUE_AGE",
    "backlog_metrics",
    "collect_backlog",
    "list_group_tables",
    "queue_summary",
]

_LOG = logging.getLogger(__name__)

# Hive's MetricsConstants (AcidMetricService): the names dashboards already know.
COMPACTION_STATUS_PREFIX: Final = "compaction_num_"
COMPACTION_OLDEST_ENQUEUE_AGE: Final = "compaction_oldest_enqueue_age_in_sec"
COMPACTION_OLDEST_WORKING_AGE: Final = "compaction_oldest_working_age_in_sec"
COMPACTION_OLDEST_CLEANING_AGE: Final = "compaction_oldest_cleaning_age_in_sec"
COMPACTION_NUM_OBSOLETE_DELTAS: Final = "compaction_num_obsolete_deltas"
COMPACTION_NUM_ACTIVE_DELTAS: Final = "compaction_num_active_deltas"
COMPACTION_STATES: Final = (
    "initiated",
    "working",
    "ready_for_cleaning",
    "succeeded",
    "failed",
    "did_not_initiate",
    "refused",
    "aborted",
)


def list_group_tables(metastore: Any, group: TableGroup | None) -> list[str]:  # noqa: ANN401
    """``db.table`` names of the ACID tables in ``group`` (every ACID table without one)."""
    from acid_core.metastore import TableType

    names = []
    for database in metastore.list_databases():
        for name in metastore.list_tables(database):
            full = f"{database}.{name}"
            if group is not None and not group.matches(full):
                continue
            if metastore.get_table(full).table_type is TableType.PLAIN:
                continue
            names.append(full)
    return sorted(names)


def _size(io: Any, path: str) -> int:  # noqa: ANN401
    info = io.info(path)
    if info is None:
        return 0
    if not info.is_dir:
        return int(info.size)
    return sum(int(child.size) for child in io.list_tree(path) if not child.is_dir)


def _partition_row(
    metastore: Any,  # noqa: ANN401 - acid_core.metastore.Metastore
    config: AcidflowConfig,
    table: Any,  # noqa: ANN401 - acid_core.metastore.Table
    partition: str | None,
    history: list[Any],
    now: float,
) -> dict[str, Any]:
    from acid_core.compaction.initiator import CompactionRecord, PartitionFacts, decide_compaction
    from acid_core.compaction.worker import partition_location
    from acid_core.directory import load_directory_state
    from acid_core.fs import file_io_for
    from acid_core.metastore import TableType

    location = partition_location(metastore, table, partition)
    io, root = file_io_for(location)
    row: dict[str, Any] = {
        "table": table.full_name,
        "partition": partition,
        "owner": table.owner,
        "location": location,
        "deltas": 0,
        "delete_deltas": 0,
        "aborted": 0,
        "obsolete": 0,
        "base": None,
        "base_bytes": 0,
        "delta_bytes": 0,
        "delete_delta_bytes": 0,
        "aborted_bytes": 0,
        "obsolete_bytes": 0,
        "error": None,
    }
    insert_only = table.table_type is TableType.INSERT_ONLY
    oldest_aborted: float | None = None
    if io.info(root) is not None:
        txns = metastore.get_valid_txns()
        write_ids = metastore.get_compactor_write_ids(table.full_name, txns)
        state = load_directory_state(io, root, write_ids, txns)
        row["base"] = state.base
        base_bytes = 0 if state.base is None else _size(io, io.join(root, state.base))
        for relative in state.original_files:
            base_bytes += _size(io, io.join(root, *relative.split("/")))
        row["base_bytes"] = base_bytes
        for name in state.deltas:
            key = "delete_delta" if name.startswith("delete_delta_") else "delta"
            row[f"{key}s"] += 1
            row[f"{key}_bytes"] += _size(io, io.join(root, name))
        row["aborted"] = len(state.aborted)
        row["aborted_bytes"] = sum(_size(io, io.join(root, name)) for name in state.aborted)
        row["obsolete"] = len(state.obsolete)
        row["obsolete_bytes"] = sum(_size(io, io.join(root, *name.split("/"))) for name in state.obsolete)
        ages = [
            now - min(child.mtime for child in files)
            for name in state.aborted
            if (files := [c for c in io.list_tree(io.join(root, name)) if not c.is_dir])
        ]
        oldest_aborted = max(ages) if ages else None
    facts = PartitionFacts(
        table.full_name,
        partition,
        row["base_bytes"],
        row["delta_bytes"] + row["delete_delta_bytes"],
        row["deltas"] + row["delete_deltas"],
        row["aborted"],
        oldest_aborted,
        insert_only,
    )
    records = [CompactionRecord(c.id, c.state.value, c.end_time) for c in history if c.partition == partition]
    decision = decide_compaction(
        facts, config.initiator_config(), table_properties=table.properties, history=records, now=now
    )
    levels = config.levels.for_table(table.properties, table.full_name)
    row.update(
        compaction_type=None if decision.compaction_type is None else decision.compaction_type.value,
        reason=decision.reason.value,
        message=decision.message,
        numbers={k: float(v) for k, v in decision.numbers.items()},
        level=levels.level(facts.delta_count),
        critical_deltas=levels.critical_deltas,
        channels=list(config.channels_for(table.full_name, table.owner, table.properties)),
    )
    return row


def collect_backlog(
    metastore: Any,  # noqa: ANN401 - acid_core.metastore.Metastore
    config: AcidflowConfig,
    group: TableGroup | None = None,
    tables: list[str] | None = None,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """One row per table/partition of ``group`` (or of ``tables``): counts, bytes, decision, level."""
    from acid_core.errors import AcidError

    now = time.time() if now is None else now
    names = tables if tables is not None else list_group_tables(metastore, group)
    rows: list[dict[str, Any]] = []
    for name in names:
        table = metastore.get_table(name)
        history = metastore.show_compactions(table.full_name)
        partitions = (
            [p.name for p in metastore.list_partitions(table.full_name)] if table.partition_keys else [None]
        )
        for partition in partitions:
            try:
                rows.append(_partition_row(metastore, config, table, partition, history, now))
            except AcidError as error:
                _LOG.warning("backlog of %s %s: %s", table.full_name, partition, error)
                rows.append(
                    {
                        "table": table.full_name,
                        "partition": partition,
                        "owner": table.owner,
                        "error": str(error),
                        "level": "critical",
                        "compaction_type": None,
                        "reason": "error",
                        "message": str(error),
                        "channels": list(config.channels_for(table.full_name, table.owner, table.properties)),
                    }
                )
    return rows


def compaction_dict(entry: Any) -> dict[str, Any]:  # noqa: ANN401 - CompactionInfo
    """A queue or history entry as a JSON-ready dict."""
    return {
        "id": entry.id,
        "table": entry.table,
        "partition": entry.partition,
        "type": entry.compaction_type.value,
        "state": entry.state.value,
        "enqueue_time": entry.enqueue_time,
        "start_time": entry.start_time,
        "end_time": entry.end_time,
        "commit_time": entry.commit_time,
        "worker_id": entry.worker_id,
        "initiator_id": entry.initiator_id,
        "error_message": entry.error_message,
        "next_txn_id": entry.next_txn_id,
    }


def queue_summary(metastore: Any, now: float | None = None) -> dict[str, Any]:  # noqa: ANN401
    """Counts per state, the oldest ages, and what blocks cleaning (open txns, leases)."""
    now = time.time() if now is None else now
    entries = metastore.show_compactions()
    counts = dict.fromkeys(COMPACTION_STATES, 0)
    for entry in entries:
        counts[entry.state.value] = counts.get(entry.state.value, 0) + 1

    def oldest(state: str, attribute: str) -> float:
        times = [getattr(e, attribute) for e in entries if e.state.value == state and getattr(e, attribute)]
        return max(0.0, now - min(times)) if times else 0.0

    cleaning = [e for e in entries if e.state.value == "ready_for_cleaning"]
    cleaning_times = [e.commit_time or e.end_time for e in cleaning if (e.commit_time or e.end_time)]
    leases = [
        {
            "lease_id": lease.lease_id,
            "table": lease.table,
            "owner": lease.owner,
            "created": lease.created,
            "expires": lease.expires,
        }
        for lease in metastore.list_leases()
    ]
    open_txns = [
        {"txn_id": int(t.txn_id), "user": t.user, "host": t.host, "started": t.started}
        for t in metastore.show_transactions()
        if t.state.value == "open"
    ]
    return {
        "counts": counts,
        "oldest_enqueue_age": oldest("initiated", "enqueue_time"),
        "oldest_working_age": oldest("working", "start_time"),
        "oldest_cleaning_age": max(0.0, now - min(cleaning_times)) if cleaning_times else 0.0,
        "cleaning": [compaction_dict(e) for e in cleaning],
        "leases": leases,
        "open_txns": open_txns,
        "entries": [compaction_dict(e) for e in entries],
    }


def backlog_metrics(rows: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, float]:
    """Hive's metric names with values; per-table delta counts as ``compaction_num_active_deltas.<db>.<t>``."""
    metrics: dict[str, float] = {
        f"{COMPACTION_STATUS_PREFIX}{state}": float(count) for state, count in summary["counts"].items()
    }
    metrics[COMPACTION_OLDEST_ENQUEUE_AGE] = float(summary["oldest_enqueue_age"])
    metrics[COMPACTION_OLDEST_WORKING_AGE] = float(summary["oldest_working_age"])
    metrics[COMPACTION_OLDEST_CLEANING_AGE] = float(summary["oldest_cleaning_age"])
    metrics[COMPACTION_NUM_OBSOLETE_DELTAS] = float(sum(row.get("obsolete", 0) or 0 for row in rows))
    per_table: dict[str, float] = {}
    for row in rows:
        per_table[row["table"]] = (
            per_table.get(row["table"], 0.0) + (row.get("deltas") or 0) + (row.get("delete_deltas") or 0)
        )
    for table, count in per_table.items():
        metrics[f"{COMPACTION_NUM_ACTIVE_DELTAS}.{table}"] = count
    return metrics
