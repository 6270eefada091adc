"""Model test (hypothesis, stateful): a live lease reads exactly what it read when taken.

Real components only: a warehouse on a temporary directory with its embedded SQLite metastore,
the real write path (inserts and deletes, committed or aborted), the real worker (minor and major
compactions) and the real cleaner, in random orders with leases taken and released in between.

Invariants, after every step:

1. every live lease reads, at its snapshot (``write_ids`` + ``txns``), exactly the rows (with
   their ROW__IDs) it read when it was taken, however many compactions and cleans ran since;
2. the current snapshot reads exactly the model's committed rows.

At the end, with every lease released, one cleaner run leaves nothing obsolete: the table
converges to its newest base plus newer deltas (issue 11, parts 2 and 3).
"""

from __future__ import annotations

import shutil
import tempfile
import time

import pyarrow as pa
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.worker import run_worker
from acid_core.directory import load_directory_state
from acid_core.fs import file_io_for
from acid_core.metastore import CompactionState, CompactionType
from acid_core.orc.schema import ROW_ID_COLUMN
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import History, create_table, read_rows_at

TABLE = "default.t"


class LeaseModel(RuleBasedStateMachine):
    leases = Bundle("leases")

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="lease-model-")
        self.wh = Warehouse.open(f"{self.directory}/wh", heartbeat_seconds=None)
        create_table(self.wh, TABLE, partitioned=False, buckets=2)
        self.history = History(self.wh, TABLE, False)
        self.model: dict[int, str] = {}
        self.next_id = 1
        self.live: dict[int, tuple[object, list[tuple]]] = {}
        self.insert(count=2, commit=True)  # the table directory exists from the start

    def _now(self) -> float:
        # The queue's commit times are in milliseconds: a cleaner run in the same millisecond as
        # the commit would find nothing ready yet.
        return time.time() + 1

    def _read(self, write_ids, txns) -> list[tuple]:
        return read_rows_at(self.history, write_ids, txns)

    def insert(self, count, commit):
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        txn = self.wh.transaction(heartbeat_seconds=None).begin()
        txn.insert(TABLE, pa.table({"id": pa.array(ids, pa.int32()), "v": [f"v{i}" for i in ids]}))
        if commit:
            txn.commit()
            self.model.update({i: f"v{i}" for i in ids})
        else:
            txn.abort()

    def delete(self, data, commit):
        live = self.wh.read(TABLE, with_row_id=True)
        if live.num_rows == 0:
            return
        picked = data.draw(st.lists(st.integers(0, live.num_rows - 1), min_size=1, max_size=3, unique=True))
        chosen = live.take(pa.array(sorted(picked), pa.int64()))
        txn = self.wh.transaction(heartbeat_seconds=None).begin()
        txn.delete(TABLE, chosen.select([ROW_ID_COLUMN]))
        if commit:
            txn.commit()
            for key in chosen.column("id").to_pylist():
                self.model.pop(key, None)
        else:
            txn.abort()

    @rule(
        data=st.data(),
        kind=st.sampled_from(["insert", "insert", "delete"]),
        commit=st.sampled_from([True, True, True, False]),
    )
    def write(self, data, kind, commit):
        if kind == "insert":
            self.insert(data.draw(st.integers(1, 4)), commit)
        else:
            self.delete(data, commit)

    @rule(kind=st.sampled_from([CompactionType.MINOR, CompactionType.MAJOR]), then_clean=st.booleans())
    def compact(self, kind, then_clean):
        self.wh.metastore.enqueue_compaction(TABLE, None, kind)
        for outcome in run_worker(self.wh.metastore):
            assert outcome.status != "failed", outcome.message
        if then_clean:
            self.clean()

    def clean(self):
        for result in run_cleaner(self.wh.metastore, now=self._now()):
            assert result.status in {"cleaned", "waiting", "superseded"}, result.message

    @initialize(target=leases)
    def first_lease(self):
        # Leases matter most before any compaction: every example starts with one.
        return self.take_lease()

    @rule(target=leases)
    def take_lease(self):
        lease = self.wh.metastore.take_lease(TABLE, ttl_seconds=3600)
        self.live[lease.lease_id] = (lease, self._read(lease.write_ids, lease.txns))
        return lease.lease_id

    @rule(lease_id=consumes(leases))
    def release_lease(self, lease_id):
        self.wh.metastore.release_lease(lease_id)
        del self.live[lease_id]

    @invariant()
    def every_live_lease_reads_what_it_read_when_taken(self):
        for lease, rows in self.live.values():
            assert self._read(lease.write_ids, lease.txns) == rows, f"lease {lease.lease_id}"

    @invariant()
    def the_current_snapshot_reads_the_model(self):
        rows = self.wh.read(TABLE).to_pylist()
        assert sorted((r["id"], r["v"]) for r in rows) == sorted(self.model.items())

    def teardown(self):
        try:
            for lease_id in list(self.live):
                self.wh.metastore.release_lease(lease_id)
            self.live.clear()
            for result in run_cleaner(self.wh.metastore, now=self._now()):
                assert result.status in {"cleaned", "superseded"}, result.message
            assert not [
                c
                for c in self.wh.metastore.show_compactions(TABLE)
                if c.state is CompactionState.READY_FOR_CLEANING
            ]
            table = self.wh.metastore.get_table(TABLE)
            io, root = file_io_for(table.location)
            txns = self.wh.metastore.get_valid_txns()
            state = load_directory_state(io, root, self.wh.metastore.get_valid_write_ids(TABLE, txns), txns)
            assert state.obsolete == (), state.obsolete
            self.the_current_snapshot_reads_the_model()
        finally:
            self.wh.close()
            shutil.rmtree(self.directory, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cleaner_lease_model():
    run_state_machine_as_test(
        LeaseModel, settings=settings(max_examples=10, stateful_step_count=14, deadline=None)
    )
