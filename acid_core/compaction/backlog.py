"""The initiator's shell: gather each table's and partition's facts, decide, and enqueue.

::

    run_initiator(metastore)
        for each full-ACID or insert-only table:
            its last cycle's mark + the partitions written/aborted since (the metastore: by
            time in acidflow's SQL store, by write ID on a Hive Metastore)
            for each partition (or the table) whose listing_reason is not None (initiator, pure):
            compactor's snapshot -> load_directory_state -> PartitionFacts   (sizes, counts, ages)
            queue and history of that partition -> CompactionRecord
            decide_compaction (pure)                                        -> Decision
            enqueue_compaction(type, initiator_id) unless dry_run
            commit_initiator_mark(table, cycle start, settings fingerprint, compactor's write-ID
                                  list) unless dry_run

Listing: a cycle that lists many of a table's partitions lists the table once, recursively
(``PrelistedFileIO``: one paged LIST on an object store); one that lists one partition, or at most
2% of them, lists each of them once. Skipped partitions are not yielded (``InitiatorStats``
counts them). A dry run lists every partition and records no mark. Crash safety: a table's mark
is written after all its partitions were decided, so a cycle that dies half-way leaves the older
mark and the next one lists more.

Not here: the rules (``initiator``).
Errors: a table whose directory cannot be read gets a "did not initiate" history entry and the
loop goes on (Hive's Initiator marks it failed); bad TBLPROPERTIES raise
``InvalidCompactionConfigError`` for that table only, recorded the same way.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypedDict, Unpack

from acid_core.compaction.common import partition_location, reap_timed_out_transactions
from acid_core.compaction.initiator import (
    INITIATOR_LOOKBACK_SECONDS,
    CompactionRecord,
    Decision,
    InitiatorConfig,
    PartitionFacts,
    decide_compaction,
    initiator_fingerprint,
    listing_reason,
)
from acid_core.directory import load_directory_state
from acid_core.errors import AcidError, InvalidWriteIdListError, UnsupportedCompactionError
from acid_core.fs import PrelistedFileIO, file_io_for
from acid_core.metastore import CompactionType, TableType
from acid_core.metastore.port import InitiatorMark, PartitionChanges
from acid_core.writeids import parse_valid_compactor_write_id_list

if TYPE_CHECKING:
    from collections.abc import Iterator

    from acid_core.fs import FileIO
    from acid_core.metastore import CompactionInfo, Metastore, Table
    from acid_core.writeids import ValidCompactorWriteIdList, ValidTxnList

__all__ = [
    "INITIATOR_ID",
    "BacklogEntry",
    "InitiatorOptions",
    "InitiatorStats",
    "collect_facts",
    "iter_initiator",
    "run_initiator",
]

_LOG = logging.getLogger(__name__)

INITIATOR_ID: Final = f"acidflow-initiator@{socket.gethostname()}"


@dataclass(frozen=True, slots=True)
class BacklogEntry:
    """One line of the backlog: the decision and, when enqueued, the compaction ID."""

    decision: Decision
    compaction_id: int | None = None


@dataclass(slots=True)
class InitiatorStats:
    """What a cycle listed and skipped, filled in as ``iter_initiator`` runs.

    Attributes:
        listed: partitions (or unpartitioned tables) whose directories were listed.
        skipped: partitions unchanged since the table's previous cycle, not listed.
        reasons: how many were listed for each ``ListingReason`` value.
    """

    listed: int = 0
    skipped: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


# A cycle that lists more than one partition and more than this fraction of a table's partitions
# lists the table at once. On an object store a partition's listing costs at least one request and
# the table's one per 1,000 objects: with 20 or more objects per partition (a few deltas x buckets
# and their side files) listing 2% of the partitions one by one costs no more than the whole
# table, and one partition never costs more than the table it is in.
_PER_PARTITION_LISTING_MAX_FRACTION: Final = 0.02


def _dir_bytes(io: FileIO, path: str) -> int:
    return sum(child.size for child in io.list_tree(path) if not child.is_dir)


def collect_facts(
    metastore: Metastore,
    table: Table,
    partition: str | None,
    now: float | None = None,
    *,
    location: str | None = None,
    snapshot: tuple[ValidTxnList, ValidCompactorWriteIdList] | None = None,
    file_io: FileIO | None = None,
) -> PartitionFacts:
    """Measure one table or partition directory at the compactor's snapshot (Hive's ``getAcidState``).

    ``location`` and ``snapshot`` (the txn list and the table's compactor list) save the metastore
    calls when the caller already has them: ``run_initiator`` takes one snapshot per table, as
    Hive's Initiator takes one txn list per cycle, and lists the partitions once. ``file_io``
    (a ``PrelistedFileIO`` of the table) answers the listings from one recursive listing.
    """
    now = time.time() if now is None else now
    io, root = file_io_for(location or partition_location(metastore, table, partition))
    if file_io is not None:
        io = file_io
    insert_only = table.table_type is TableType.INSERT_ONLY
    if io.info(root) is None:
        return PartitionFacts(table.full_name, partition, 0, 0, 0, insert_only=insert_only)
    if snapshot is None:
        txns = metastore.get_valid_txns()
        write_ids = metastore.get_compactor_write_ids(table.full_name, txns)
    else:
        txns, write_ids = snapshot
    state = load_directory_state(io, root, write_ids, txns)
    base_bytes = 0 if state.base is None else _dir_bytes(io, io.join(root, state.base))
    for relative in state.original_files:
        info = io.info(io.join(root, *relative.split("/")))
        base_bytes += 0 if info is None else info.size
    delta_bytes = sum(_dir_bytes(io, io.join(root, name)) for name in state.deltas)
    ages: list[float] = []
    for name in state.aborted:
        times = [child.mtime for child in io.list_tree(io.join(root, name)) if not child.is_dir]
        if times:
            ages.append(now - min(times))
    return PartitionFacts(
        table.full_name,
        partition,
        base_bytes,
        delta_bytes,
        len(state.deltas),
        len(state.aborted),
        max(ages) if ages else None,
        insert_only,
        bucketed=table.num_buckets > 0,
    )


def _parse_mark_write_ids(mark: InitiatorMark) -> ValidCompactorWriteIdList | None:
    """The write-ID list a mark recorded, or None (none recorded, or unreadable: list more, not less)."""
    if mark.write_ids is None:
        return None
    try:
        return parse_valid_compactor_write_id_list(mark.write_ids)
    except InvalidWriteIdListError as error:
        _LOG.warning(
            "%s: the last cycle's write-ID list is unreadable (%s); listing it all", mark.table, error
        )
        return None


def _records_by_partition(history: list[CompactionInfo]) -> dict[str | None, list[CompactionRecord]]:
    """A table's queue and history grouped by partition, once per table (not a scan per partition)."""
    records: dict[str | None, list[CompactionRecord]] = {}
    for entry in history:
        records.setdefault(entry.partition, []).append(
            CompactionRecord(entry.id, entry.state.value, entry.end_time)
        )
    return records


def _table_names(metastore: Metastore, tables: list[str] | None) -> Iterator[str]:
    """``tables``, or every table of every database, one database's names at a time."""
    if tables:
        yield from tables
        return
    for database in metastore.list_databases():
        for name in metastore.list_tables(database):
            yield f"{database}.{name}"


class InitiatorOptions(TypedDict, total=False):
    """The keyword arguments of ``iter_initiator`` and ``run_initiator``."""

    config: InitiatorConfig | None
    dry_run: bool
    tables: list[str] | None
    now: float | None
    txn_timeout_seconds: float | None
    stats: InitiatorStats | None
    lookback_seconds: float


def run_initiator(metastore: Metastore, **options: Unpack[InitiatorOptions]) -> list[BacklogEntry]:
    """``iter_initiator`` collected into a list (see there)."""
    return list(iter_initiator(metastore, **options))


def iter_initiator(
    metastore: Metastore,
    *,
    config: InitiatorConfig | None = None,
    dry_run: bool = False,
    tables: list[str] | None = None,
    now: float | None = None,
    txn_timeout_seconds: float | None = None,
    stats: InitiatorStats | None = None,
    lookback_seconds: float = INITIATOR_LOOKBACK_SECONDS,
) -> Iterator[BacklogEntry]:
    """Decide for every ACID table and partition; enqueue what should be compacted unless ``dry_run``.

    Unless ``dry_run``, the transaction reaper runs first (``reap_timed_out_transactions``).
    Entries are yielded as they are decided, so a cycle over 10,000 tables x 100 partitions holds
    one table's partitions at a time, not the whole backlog. Like Hive's Initiator, one
    ``ValidTxnList`` serves the whole cycle, and the compaction history of every table is read in
    one query (per table only when ``tables`` names a few). Unless ``dry_run``, a partition
    unchanged since the table's previous cycle is not listed (``initiator.listing_reason``).

    Args:
        metastore: the metastore.
        config: thresholds (Hive's defaults).
        dry_run: decide only.
        tables: ``db.table`` names to look at (default: every table of every database).
        now: the clock (epoch seconds).
        txn_timeout_seconds: the reaper's timeout (None: Hive's 300 s).
        stats: filled in with what was listed and skipped.
        lookback_seconds: a change this long before the previous cycle's start still counts as
            new (``initiator.INITIATOR_LOOKBACK_SECONDS``: writers' clock skew, commit latency).

    Yields:
        The backlog: one entry per table/partition, with its decision.
    """
    config = config or InitiatorConfig()
    now = time.time() if now is None else now
    if not dry_run:
        reap_timed_out_transactions(metastore, txn_timeout_seconds, now)
    histories: dict[str, list[CompactionInfo]] | None = None
    if not tables:
        histories = {}
        for entry in metastore.show_compactions():
            histories.setdefault(entry.table, []).append(entry)
    marks = {} if dry_run else metastore.load_initiator_marks()
    stats = InitiatorStats() if stats is None else stats
    txns = metastore.get_valid_txns()
    for name in _table_names(metastore, tables):
        table = metastore.get_table(name)
        if table.table_type is TableType.PLAIN:
            continue
        records = _records_by_partition(
            metastore.show_compactions(table.full_name)
            if histories is None
            else histories.pop(table.full_name, [])
        )
        all_partitions: list[tuple[str | None, str, float | None]] = (
            [(p.name, p.location, p.create_time) for p in metastore.list_partitions(table.full_name)]
            if table.partition_keys
            else [(None, table.location, None)]
        )
        fingerprint = initiator_fingerprint(
            config,
            table.properties,
            location=table.location,
            table_type=table.table_type.value,
            num_buckets=table.num_buckets,
            create_time=table.create_time,
        )
        mark = marks.get(table.full_name)
        previous = None if mark is None else (mark.started_at, mark.fingerprint)
        # The compactor's view of the table: what this cycle decides at, and (in the mark) what
        # the next cycle compares its own with.
        snapshot = (txns, metastore.get_compactor_write_ids(table.full_name, txns))
        changes = PartitionChanges(frozenset(), frozenset())
        if mark is not None and mark.fingerprint == fingerprint:
            changes = metastore.list_partition_changes(
                table.full_name,
                mark.started_at - lookback_seconds,
                previous_write_ids=_parse_mark_write_ids(mark),
                write_ids=snapshot[1],
            )
        partitions: list[tuple[str | None, str]] = []
        for partition, location, created_at in all_partitions:
            reason = listing_reason(
                partition,
                fingerprint=fingerprint,
                previous=previous,
                written=changes.written,
                aborted=changes.aborted,
                history=records.get(partition, ()),
                created_at=created_at,
                lookback_seconds=lookback_seconds,
                whole_table=changes.whole_table,
            )
            if reason is None:
                stats.skipped += 1
                continue
            stats.listed += 1
            stats.reasons[reason.value] = stats.reasons.get(reason.value, 0) + 1
            partitions.append((partition, location))
        if len(partitions) < len(all_partitions):
            _LOG.info(
                "%s: %d of %d partitions unchanged since the cycle of %s, not listed",
                name,
                len(all_partitions) - len(partitions),
                len(all_partitions),
                None if mark is None else mark.started_at,
            )
        # Many partitions: one recursive listing of the table instead of several round trips per
        # partition. A few (the partitions changed since the last cycle): one listing each.
        prelisted: FileIO | None = None
        table_io: FileIO | None = None
        per_partition = len(partitions) < len(all_partitions) and (
            len(partitions) <= max(1.0, _PER_PARTITION_LISTING_MAX_FRACTION * len(all_partitions))
        )
        try:
            table_io, table_root = file_io_for(table.location)
            if partitions and not per_partition:
                prelisted = PrelistedFileIO(table_io, table_root)
        except AcidError as error:
            _LOG.warning("cannot list %s at once (%s); listing its partitions one by one", name, error)
            table_io, per_partition = None, False
        table_prefix = table.location.rstrip("/") + "/"
        for partition, location in partitions:
            # A partition elsewhere (another filesystem, say) is listed on its own.
            inside = location == table.location or location.startswith(table_prefix)
            try:
                file_io = prelisted if inside else None
                if per_partition and inside and table_io is not None:
                    relative = location[len(table_prefix) :].split("/") if location != table.location else []
                    file_io = PrelistedFileIO(table_io, table_io.join(table_root, *relative))
                facts = collect_facts(
                    metastore,
                    table,
                    partition,
                    now,
                    location=location,
                    snapshot=snapshot,
                    file_io=file_io,
                )
                decision = decide_compaction(
                    facts,
                    config,
                    table_properties=table.properties,
                    history=records.get(partition, ()),
                    now=now,
                )
            except AcidError as error:
                _LOG.warning("cannot decide for %s %s: %s", table.full_name, partition, error)
                if not dry_run:
                    metastore.record_did_not_initiate(
                        table.full_name, partition, CompactionType.MAJOR, str(error)
                    )
                continue
            compaction_id = None
            # The worker compacts full-ACID tables only; insert-only decisions are reported, not queued.
            if decision.compaction_type is not None and not dry_run and table.table_type is TableType.ACID:
                try:
                    compaction_id = metastore.enqueue_compaction(
                        table.full_name,
                        partition,
                        CompactionType(decision.compaction_type.value),
                        initiator_id=INITIATOR_ID,
                        number_of_buckets=decision.number_of_buckets,
                    )
                except UnsupportedCompactionError as error:
                    # acidflow.compactor.rebalance.buckets on a metastore without rebalance (HMS mode).
                    _LOG.warning("cannot queue for %s %s: %s", table.full_name, partition, error)
                    metastore.record_did_not_initiate(
                        table.full_name, partition, CompactionType.MAJOR, str(error)
                    )
            yield BacklogEntry(decision, compaction_id)
        if not dry_run:
            # Every partition of the table was decided (and what was due queued) at this cycle's
            # snapshot: the next cycle needs to list only what changes from now on.
            metastore.commit_initiator_mark(
                InitiatorMark(table.full_name, now, fingerprint, snapshot[1].to_string())
            )
