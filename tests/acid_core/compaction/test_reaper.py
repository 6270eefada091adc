"""The transaction reaper runs with every initiator and cleaner run (issue 4: "Transactions that
stop heartbeating are aborted by a reaper after a configurable timeout; aborted write ids stay
invalid"). Hive: AcidHouseKeeperService aborts transactions silent for hive.txn.timeout (300 s).
"""

from __future__ import annotations

import time

import pytest

from acid_core.compaction.backlog import run_initiator
from acid_core.compaction.cleaner import DEFAULT_TXN_TIMEOUT_SECONDS, CleanerOptions, run_cleaner
from acid_core.metastore import TxnState
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import create_table


@pytest.fixture
def wh(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield warehouse
    warehouse.close()


def _silent_writer(wh) -> tuple[int, int]:
    """A writer that opened a transaction, took a write ID and then died (no more heartbeats)."""
    txn = wh.metastore.open_txn()
    write_id = wh.metastore.allocate_write_id(txn, "default.t")
    return int(txn), int(write_id)


def _state(wh, txn: int) -> TxnState | None:
    return next((t.state for t in wh.metastore.show_transactions() if t.txn_id == txn), None)


@pytest.mark.parametrize("run", ["initiator", "cleaner"])
def test_a_silent_transaction_is_aborted_after_the_timeout_and_its_write_id_stays_invalid(wh, run):
    create_table(wh, "t", partitioned=False, buckets=1)
    txn, write_id = _silent_writer(wh)

    def run_once(now: float) -> None:
        if run == "initiator":
            run_initiator(wh.metastore, now=now)
        else:
            run_cleaner(wh.metastore, CleanerOptions(), now=now)

    run_once(time.time() + DEFAULT_TXN_TIMEOUT_SECONDS - 60)  # not silent long enough yet
    assert _state(wh, txn) is TxnState.OPEN

    run_once(time.time() + DEFAULT_TXN_TIMEOUT_SECONDS + 60)
    assert _state(wh, txn) is TxnState.ABORTED
    snapshot = wh.metastore.get_valid_write_ids("default.t", wh.metastore.get_valid_txns())
    assert snapshot.is_write_id_aborted(write_id)
    assert not snapshot.is_write_id_valid(write_id)


def test_dry_runs_do_not_reap(wh):
    create_table(wh, "t", partitioned=False, buckets=1)
    txn, _ = _silent_writer(wh)
    later = time.time() + DEFAULT_TXN_TIMEOUT_SECONDS + 60
    run_initiator(wh.metastore, dry_run=True, now=later)
    run_cleaner(wh.metastore, CleanerOptions(dry_run=True), now=later)
    assert _state(wh, txn) is TxnState.OPEN
