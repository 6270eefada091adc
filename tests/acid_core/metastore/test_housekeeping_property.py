"""Housekeeping never changes what a snapshot reads, and never revives an aborted write on disk.

An independent model of the files plays the writers, the worker and the cleaner next to the
real store (in-memory SQLite), in random orders:

* ``present[w]``: write ID ``w`` has events on disk. A write puts them there; only the cleaner
  takes them away: after a compaction with highest write ID ``H``, the aborted writes ``<= H``
  of its capped list (Hive's Cleaner / ``removeFiles``). Committed rows survive compaction.
* ``compaction_dirs[c]``: an aborted compaction txn ``c`` left a half-written ``base_H_vc``;
  readers skip it while ``c`` is invalid in their ValidTxnList; the next cleaner deletes it.

The rows a snapshot reads are ``{w present and valid in its ValidWriteIdList}`` plus the
compaction directories whose visibility txn it sees as valid. Checked at every housekeeping:

1. a fresh snapshot reads the same rows before and after (and the ValidTxnList taken before,
   resolved again after, too);
2. every open reader transaction's snapshot (taken when it opened, resolved again now) reads the
   rows it read when it opened (Hive's MIN_HISTORY_LEVEL guarantee);
3. every aborted write still on disk, and every aborted compaction directory, stays invalid;
4. a second run deletes nothing (idempotent).

At the end, with every txn ended and everything compacted and cleaned (as often as Hive's rules
need), housekeeping leaves at most the newest transaction aborted (Hive keeps the newest txn
before the timeout window).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from acid_core.metastore import (
    Column,
    CompactionType,
    InMemoryMetastore,
    SqlMetastore,
    TableDefinition,
    TxnType,
    WriteOperation,
)

if TYPE_CHECKING:
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

TABLE = "default.t"


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class _Reader:
    txn_id: int
    txns: ValidTxnList
    rows: frozenset[object]


@dataclass
class _Model:
    store: SqlMetastore
    clock: _Clock
    writers: list[tuple[int, int | None]] = field(default_factory=list)
    readers: list[_Reader] = field(default_factory=list)
    present: dict[int, bool] = field(default_factory=dict)
    aborted_writes: set[int] = field(default_factory=set)
    compaction_dirs: dict[int, bool] = field(default_factory=dict)
    housekeeping_runs: int = 0

    # -- what a snapshot reads ------------------------------------------------------------------

    def rows(self, txns: ValidTxnList, write_ids: ValidWriteIdList) -> frozenset[object]:
        data = {w for w, on_disk in self.present.items() if on_disk and write_ids.is_write_id_valid(w)}
        bases = {
            ("base", c) for c, on_disk in self.compaction_dirs.items() if on_disk and txns.is_txn_valid(c)
        }
        return frozenset(data | bases)

    def fresh_rows(self) -> frozenset[object]:
        txns = self.store.get_valid_txns()
        return self.rows(txns, self.store.get_valid_write_ids(TABLE, txns))

    # -- operations -----------------------------------------------------------------------------

    def open_writer(self) -> None:
        self.writers.append((self.store.open_txn("writer", "host"), None))

    def write(self, index: int) -> None:
        if not self.writers:
            return
        txn_id, write_id = self.writers[index % len(self.writers)]
        if write_id is not None:
            return
        write_id = self.store.add_write_component(txn_id, TABLE, None, WriteOperation.INSERT)
        self.writers[index % len(self.writers)] = (txn_id, write_id)
        self.present[write_id] = True

    def end_writer(self, index: int, *, commit: bool) -> None:
        if not self.writers:
            return
        txn_id, write_id = self.writers.pop(index % len(self.writers))
        if commit:
            self.store.commit_txn(txn_id)
        else:
            self.store.abort_txn(txn_id)
            if write_id is not None:
                self.aborted_writes.add(write_id)

    def open_reader(self) -> None:
        txn_id = self.store.open_txn("reader", "host")
        txns = self.store.get_valid_txns(txn_id)
        self.readers.append(
            _Reader(txn_id, txns, self.rows(txns, self.store.get_valid_write_ids(TABLE, txns)))
        )

    def close_reader(self, index: int) -> None:
        if self.readers:
            self.store.commit_txn(self.readers.pop(index % len(self.readers)).txn_id)

    def _start_compaction(self) -> tuple[int, int]:
        compaction_id = self.store.enqueue_compaction(TABLE, None, CompactionType.MAJOR)
        claimed = self.store.find_next_to_compact("worker")
        assert claimed is not None
        assert claimed.id == compaction_id
        txn_id = self.store.open_txn("compactor", "host", TxnType.COMPACTION)
        compactor = self.store.get_compactor_write_ids(TABLE, self.store.get_valid_txns(txn_id))
        self.store.update_compactor_state(compaction_id, txn_id, compactor.high_watermark)
        return compaction_id, txn_id

    def compact(self) -> None:
        compaction_id, txn_id = self._start_compaction()
        self.store.commit_txn(txn_id)
        self.store.mark_compacted(compaction_id)

    def compact_and_abort(self) -> None:
        compaction_id, txn_id = self._start_compaction()
        self.compaction_dirs[txn_id] = True  # the worker died half-way through base_H_vT
        self.store.abort_txn(txn_id)
        self.store.mark_failed(compaction_id, "worker died")

    def clean(self) -> None:
        for compaction in self.store.find_ready_to_clean(now=self.clock.now + 1):
            txns = self.store.get_valid_txns()
            reader = self.store.get_valid_write_ids(TABLE, txns)
            highest = compaction.highest_write_id
            assert highest is not None
            cap = min(highest, reader.high_watermark)
            # The cleaner's capped list: aborted directories <= the compaction's highest write ID,
            # and directories whose visibility (compaction) txn aborted.
            removed = [w for w in reader.aborted_ids if w <= cap]
            for write_id in removed:
                self.present[write_id] = False
            for txn_id in self.compaction_dirs:
                if txns.is_txn_aborted(txn_id):
                    self.compaction_dirs[txn_id] = False
            self.store.mark_cleaned(compaction.id, has_uncompacted_aborts=False, aborted_write_ids=removed)

    def housekeep(self) -> None:
        txns_before = self.store.get_valid_txns()
        rows_before = self.rows(txns_before, self.store.get_valid_write_ids(TABLE, txns_before))

        result = self.store.housekeeping(now=self.clock.now)
        self.housekeeping_runs += 1
        event(
            f"deleted txns: {bool(result.deleted_txn_ids)}, write-ID rows: {bool(result.deleted_write_id_rows)}"
        )

        assert self.fresh_rows() == rows_before
        assert self.rows(txns_before, self.store.get_valid_write_ids(TABLE, txns_before)) == rows_before
        for reader in self.readers:
            assert self.rows(reader.txns, self.store.get_valid_write_ids(TABLE, reader.txns)) == reader.rows
        txns = self.store.get_valid_txns()
        write_ids = self.store.get_valid_write_ids(TABLE, txns)
        for write_id in self.aborted_writes:
            if self.present[write_id]:
                assert not write_ids.is_write_id_valid(write_id), f"aborted write {write_id} revived"
        for txn_id, on_disk in self.compaction_dirs.items():
            if on_disk:
                assert not txns.is_txn_valid(txn_id), f"aborted compaction {txn_id} revived"
        again = self.store.housekeeping(now=self.clock.now)
        assert (again.deleted_txn_ids, again.deleted_write_id_rows) == ((), 0)
        assert again.low_water_mark == result.low_water_mark


# Weighted so that commits dominate: aborted txns hold the low water mark down until they are
# compacted and cleaned, and the interesting deletions need most txns below it to have ended.
_WITH_COMPACTION = {
    "open_writer": 3,
    "write": 3,
    "commit": 4,
    "abort": 1,
    "open_reader": 2,
    "close_reader": 2,
    "compact": 1,
    "compact_and_abort": 1,
    "clean": 1,
    "housekeep": 3,
}
# An aborted write pins the low water mark until it is compacted and cleaned, so this mix has
# none: it is about readers that opened while a writer was open (MIN_HISTORY_LEVEL) and write IDs
# allocated out of txn order, with the write-ID rows below them going all the time.
_WRITERS_AND_READERS = {
    "open_writer": 2,
    "write": 4,
    "commit": 4,
    "open_reader": 1,
    "close_reader": 2,
    "housekeep": 3,
}


def _operations(weights: dict[str, int]) -> st.SearchStrategy[list[tuple[str, int]]]:
    names = [name for name, weight in weights.items() for _ in range(weight)]
    return st.lists(st.tuples(st.sampled_from(names), st.integers(0, 7)), max_size=45)


# Each example drives up to ~100 store transactions; the explicit cap keeps the ci profile (200)
# inside pytest-timeout's 120 s.
@settings(max_examples=60)
@given(_operations(_WITH_COMPACTION))
# Write IDs out of txn order: txn 2 gets write ID 1 and aborts, txn 1 gets 2 and commits.
@example(
    [
        ("open_writer", 0),
        ("open_writer", 0),
        ("write", 1),
        ("write", 0),
        ("commit", 0),
        ("abort", 0),
        ("housekeep", 0),
    ]
)
def test_housekeeping_keeps_every_snapshot_and_every_aborted_write_on_disk_invalid(operations):
    _run(operations)


@settings(max_examples=60)
@given(_operations(_WRITERS_AND_READERS))
# A reader opens while a writer is open; the writer commits before housekeeping.
@example([("open_writer", 0), ("write", 0), ("open_reader", 0), ("commit", 0), ("housekeep", 0)])
def test_housekeeping_keeps_the_snapshots_of_open_readers(operations):
    _run(operations)


def _run(operations: list[tuple[str, int]]) -> None:
    clock = _Clock()
    store = InMemoryMetastore(clock=clock)
    try:
        store.create_table(
            TableDefinition(TABLE, (Column("id", "int"),), properties={"transactional": "true"})
        )
        model = _Model(store, clock)
        for name, index in operations:
            clock.now += 1
            if name == "open_writer":
                model.open_writer()
            elif name == "write":
                model.write(index)
            elif name in ("commit", "abort"):
                model.end_writer(index, commit=name == "commit")
            elif name == "open_reader":
                model.open_reader()
            elif name == "close_reader":
                model.close_reader(index)
            elif name in ("compact", "compact_and_abort", "clean"):
                getattr(model, name)()
            else:
                model.housekeep()

        # Everything ends, is compacted and cleaned: only the newest txn may stay aborted.
        while model.writers:
            model.end_writer(0, commit=False)
        while model.readers:
            model.close_reader(0)
        clock.now += 10
        model.clean()
        # With only aborted writes left, Hive's list reports just the lowest one (hwm = it), so
        # each compaction may clean one more: repeat while aborted events are still on disk.
        # The list only moves on once housekeeping has deleted the cleaned txns, as in Hive.
        for _ in range(len(model.aborted_writes) + 1):
            model.compact()
            clock.now += 10
            model.clean()
            clock.now += 10
            model.housekeep()
            if not any(model.present[w] for w in model.aborted_writes):
                break
        newest = store.open_txn() - 1
        assert set(store.get_valid_txns().aborted_ids) <= {newest}
        assert not any(model.present[w] for w in model.aborted_writes)
    finally:
        store.close()
