"""The backlog: per table and partition, what a reader merges and what the initiator decides.

::

    collect_backlog(metastore, config, group)
        for each ACID table of the group, for each partition (or the table):
            compactor's snapshot -> load_directory_state -> deltas, delete deltas, aborted, obsolete (+ bytes)
            PartitionFacts + queue/history -> decide_compaction (the initiator, pure) -> decision, reason
            BacklogLevels (config, TBLPROPERTIES) -> ok / warning / critical
    queue_summary(metastore, now)  -> Hive's compaction metrics (compaction_num_<state>, oldest ages)
    backlog_metrics(rows, summary) -> {metric name: value} as Hive's AcidMetricService names them
    queue_metrics(summary)         -> the same without the per-table delta counts (the cleaner's)
    record_backlog(metastore, rows, config, now)   -> the sensor's samples (ACIDFLOW_BACKLOG_SAMPLES),
                                                      at most one per partition per sample interval
    add_history(rows, samples, config, now)        -> rows + sparklines (SVG), time to critical

Rows are plain dicts (JSON-ready: XCom, the backlog page's API). Only ``record_backlog`` writes
(history rows in the metastore; never anything in a table).
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
    "add_history",
    "backlog_metrics",
    "collect_backlog",
    "list_group_tables",
    "queue_metrics",
    "queue_summary",
    "record_backlog",
]

_LOG = logging.getLogger(__name__)

# Hive's MetricsConstants (AcidMetricService): the names dashboards already know.
COMPACTION_STATUS_PREFIX: Final = "compaction_num_"
COMPACTION_OLDEST_ENQUEUE_AGE: Final = "compaction_oldest_enqueue_age_in_sec"
COMPACTION_OLDEST_WORKING_AGE: Final = "compaction_oldest_working_age_in_sec"
COMPACTION_OLDEST_CLEANING_AGE: Final = "compaction_oldest_cleaning_age_in_sec"
COMPACTION_NUM_OBSOLETE_DELTAS: Final = "compaction_num_obsolete_deltas"
COMPACTION_NUM_ACTIVE_DELTAS: Final = "compaction_num_active_deltas"
OLDEST_READY_FOR_CLEANING_AGE: Final = "oldest_ready_for_cleaning_age_in_sec"
NUM_OPEN_NON_REPL_TXNS: Final = "num_open_non_repl_transactions"
OLDEST_OPEN_NON_REPL_TXN_ID: Final = "oldest_open_non_repl_txn_id"
OLDEST_OPEN_NON_REPL_TXN_AGE: Final = "oldest_open_non_repl_txn_age_in_sec"
NUM_ABORTED_TXNS: Final = "num_aborted_transactions"
OLDEST_ABORTED_TXN_ID: Final = "oldest_aborted_txn_id"
OLDEST_ABORTED_TXN_AGE: Final = "oldest_aborted_txn_age_in_sec"
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
        "oldest_delta_time": None,
        "oldest_delta_age": None,
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
        delta_times: list[float] = []
        for name in state.deltas:
            key = "delete_delta" if name.startswith("delete_delta_") else "delta"
            row[f"{key}s"] += 1
            files = [c for c in io.list_tree(io.join(root, name)) if not c.is_dir]
            row[f"{key}_bytes"] += sum(int(c.size) for c in files)
            delta_times.extend(c.mtime for c in files)
        if delta_times:
            row["oldest_delta_time"] = min(delta_times)
            row["oldest_delta_age"] = max(0.0, now - min(delta_times))
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
    mine = [c for c in history if c.partition == partition]
    row["last_compaction"] = compaction_dict(mine[-1]) if mine else None
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


def record_backlog(
    metastore: Any,  # noqa: ANN401 - acid_core.metastore.Metastore
    rows: list[dict[str, Any]],
    config: AcidflowConfig,
    now: float | None = None,
) -> int:
    """Store one sample per measured row, unless the partition has one younger than the interval.

    Rows with an error are skipped; samples older than the retention are pruned in the same
    database transaction. Returns the number of samples written.
    """
    from acid_core.metastore import BacklogSample

    now = time.time() if now is None else now
    interval_start = now - config.history_sample_seconds
    recent = {
        (s.table, s.partition)
        for s in metastore.list_backlog_samples(interval_start)
        if s.sampled_at > interval_start
    }
    samples = [
        BacklogSample(
            table=row["table"],
            partition=row.get("partition"),
            sampled_at=now,
            deltas=int(row["deltas"]),
            delete_deltas=int(row["delete_deltas"]),
            delta_bytes=int(row["delta_bytes"]),
            delete_delta_bytes=int(row["delete_delta_bytes"]),
            aborted=int(row.get("aborted") or 0),
            oldest_delta_time=row.get("oldest_delta_time"),
        )
        for row in rows
        if row.get("error") is None and (row["table"], row.get("partition")) not in recent
    ]
    if samples:
        metastore.record_backlog_samples(samples, prune_before=now - config.history_retention_seconds)
    return len(samples)


def add_history(
    rows: list[dict[str, Any]],
    samples: list[Any],  # acid_core.metastore.BacklogSample
    config: AcidflowConfig,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """Each row with its trend over the history window: sparklines, time to critical, human units.

    Adds ``history`` ({series: {"svg", "points"}} for ``deltas`` (deltas + delete deltas),
    ``bytes`` and ``oldest_delta_age``), ``time_to_critical`` (seconds, None: not growing),
    ``total_bytes`` and ``*_human`` strings. The live measurement is the last point of each series.
    """
    from acidflow_airflow.trends import human_bytes, human_duration, sparkline_svg, time_to_threshold

    now = time.time() if now is None else now
    start = now - config.history_window_seconds
    by_key: dict[tuple[str, str | None], list[Any]] = {}
    for sample in samples:
        by_key.setdefault((sample.table, sample.partition), []).append(sample)
    enriched = []
    for row in rows:
        row = dict(row)
        past = [s for s in by_key.get((row["table"], row.get("partition")), []) if s.sampled_at < now]
        if row.get("error") is None:
            series = {
                "deltas": [(s.sampled_at, float(s.deltas + s.delete_deltas)) for s in past],
                "bytes": [(s.sampled_at, float(s.delta_bytes + s.delete_delta_bytes)) for s in past],
                "oldest_delta_age": [
                    (s.sampled_at, max(0.0, s.sampled_at - s.oldest_delta_time) / 3600)
                    for s in past
                    if s.oldest_delta_time is not None
                ],
            }
            count = row["deltas"] + row["delete_deltas"]
            total = row["delta_bytes"] + row["delete_delta_bytes"]
            series["deltas"].append((now, float(count)))
            series["bytes"].append((now, float(total)))
            if row.get("oldest_delta_age") is not None:
                series["oldest_delta_age"].append((now, row["oldest_delta_age"] / 3600))
            labels = {
                "deltas": "deltas + delete deltas",
                "bytes": "delta bytes",
                "oldest_delta_age": "oldest delta age (h)",
            }
            row["history"] = {
                name: {
                    "points": len(points),
                    "svg": sparkline_svg(points, start, now, label=labels[name]),
                }
                for name, points in series.items()
            }
            row["time_to_critical"] = time_to_threshold(series["deltas"], row["critical_deltas"] + 1)
            row["time_to_critical_human"] = (
                "" if row["time_to_critical"] is None else human_duration(row["time_to_critical"])
            )
            row["total_bytes"] = total
            for key in (
                "delta_bytes",
                "delete_delta_bytes",
                "aborted_bytes",
                "obsolete_bytes",
                "total_bytes",
            ):
                row[f"{key}_human"] = human_bytes(row[key])
            row["oldest_delta_age_human"] = human_duration(row.get("oldest_delta_age"))
        enriched.append(row)
    return enriched


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
    transactions = metastore.show_transactions()
    open_txns = [
        {
            "txn_id": int(t.txn_id),
            "user": t.user,
            "host": t.host,
            "started": t.started,
            "age": max(0.0, now - t.started),
        }
        for t in transactions
        if t.state.value == "open"
    ]
    aborted_txns = [
        {"txn_id": int(t.txn_id), "started": t.started, "age": max(0.0, now - t.started)}
        for t in transactions
        if t.state.value == "aborted"
    ]
    return {
        "counts": counts,
        "oldest_enqueue_age": oldest("initiated", "enqueue_time"),
        "oldest_working_age": oldest("working", "start_time"),
        "oldest_cleaning_age": max(0.0, now - min(cleaning_times)) if cleaning_times else 0.0,
        "cleaning": [compaction_dict(e) for e in cleaning],
        "leases": leases,
        "open_txns": open_txns,
        "aborted_txns": aborted_txns,
        "entries": [compaction_dict(e) for e in entries],
    }


def backlog_metrics(rows: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, float]:
    """Hive's metric names with values; per-table delta counts as ``compaction_num_active_deltas.<db>.<t>``."""
    metrics = queue_metrics(summary)
    metrics[COMPACTION_NUM_OBSOLETE_DELTAS] = float(sum(row.get("obsolete", 0) or 0 for row in rows))
    per_table: dict[str, float] = {}
    for row in rows:
        per_table[row["table"]] = (
            per_table.get(row["table"], 0.0) + (row.get("deltas") or 0) + (row.get("delete_deltas") or 0)
        )
    for table, count in per_table.items():
        metrics[f"{COMPACTION_NUM_ACTIVE_DELTAS}.{table}"] = count
    return metrics


def queue_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """The queue's and the transactions' metrics (Hive's names) from ``queue_summary``."""
    metrics: dict[str, float] = {
        f"{COMPACTION_STATUS_PREFIX}{state}": float(count) for state, count in summary["counts"].items()
    }
    metrics[COMPACTION_OLDEST_ENQUEUE_AGE] = float(summary["oldest_enqueue_age"])
    metrics[COMPACTION_OLDEST_WORKING_AGE] = float(summary["oldest_working_age"])
    metrics[COMPACTION_OLDEST_CLEANING_AGE] = float(summary["oldest_cleaning_age"])
    # acidflow has no CQ_CLEANER_START: both of Hive 4's cleaning ages count from the commit.
    metrics[OLDEST_READY_FOR_CLEANING_AGE] = float(summary["oldest_cleaning_age"])
    open_txns = summary.get("open_txns") or []
    oldest_open = min(open_txns, key=lambda t: t["txn_id"], default=None)
    metrics[NUM_OPEN_NON_REPL_TXNS] = float(len(open_txns))
    metrics[OLDEST_OPEN_NON_REPL_TXN_ID] = float(oldest_open["txn_id"]) if oldest_open else 0.0
    metrics[OLDEST_OPEN_NON_REPL_TXN_AGE] = float(oldest_open["age"]) if oldest_open else 0.0
    aborted_txns = summary.get("aborted_txns") or []
    oldest_aborted = min(aborted_txns, key=lambda t: t["txn_id"], default=None)
    metrics[NUM_ABORTED_TXNS] = float(len(aborted_txns))
    metrics[OLDEST_ABORTED_TXN_ID] = float(oldest_aborted["txn_id"]) if oldest_aborted else 0.0
    metrics[OLDEST_ABORTED_TXN_AGE] = float(oldest_aborted["age"]) if oldest_aborted else 0.0
    return metrics
