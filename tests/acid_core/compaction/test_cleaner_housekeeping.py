"""After a full compact-and-clean cycle the metastore forgets the aborted writes whose files are
gone (Hive 4: Cleaner -> markCleaned with the directory state's aborted write IDs, then
AcidHouseKeeperService's cleanEmptyAbortedAndCommittedTxns), and no reader sees a different row.
"""

from __future__ import annotations

import time

import pytest

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.worker import run_worker
from acid_core.metastore import CompactionType, TxnState
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import data_rows, model_rows, random_history, read_rows


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield warehouse
    warehouse.close()


def _aborted(wh) -> set[int]:
    return {int(t.txn_id) for t in wh.metastore.show_transactions() if t.state is TxnState.ABORTED}


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_clean_cycle_forgets_cleaned_aborted_writes_and_changes_no_row(wh, seed):
    history = random_history(wh, seed, partitioned=False, buckets=1, txns=12)
    aborted_before = _aborted(wh)
    assert aborted_before, "the history should contain aborted transactions"
    rows = read_rows(history)

    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    assert [o.status for o in run_worker(wh.metastore)] == ["compacted"]
    assert {r.status for r in run_cleaner(wh.metastore)} == {"cleaned"}

    assert read_rows(history) == rows
    # Housekeeping spares transactions younger than its timeout window (1 s); the next periodic
    # run, later, finds their files gone and forgets them. At most the newest transaction is kept
    # (Hive keeps it to protect the txn id sequence).
    later = time.time() + 10
    assert run_cleaner(wh.metastore, now=later) == []
    assert len(_aborted(wh) & aborted_before) <= 1
    assert read_rows(history) == rows
    assert data_rows(read_rows(history)) == model_rows(history)
