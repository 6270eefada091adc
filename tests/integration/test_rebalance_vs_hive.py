"""Apache Hive 2.3.10's own readers read a rebalanced base as acidflow does (issue 23 item 3).

A random history (inserts, deletes, updates, aborts: ``test_compaction_vs_hive._history``) is
rebalanced into 3 buckets with Hive 3.1-compatible names (Hive 2.3 does not parse ``_v``), then
cleaned. Hive's row-mode reader (``OrcRawRecordMerger``, which requires each file's keys in
order) and its vectorized ACID reader must return the rows and ROW__IDs acidflow returns, the
rows must be those of before, and the ROW__IDs those Hive 4's rebalance assigns: the rows in
their old ROW__ID order, position p in bucket p // ceil(R/3), row ID p, write ID kept.
"""

from __future__ import annotations

import pytest

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.rebalance import bucket_of_position
from acid_core.compaction.worker import run_worker
from acid_core.metastore import CompactionType
from acid_core.writes.transaction import Warehouse
from tests.integration.test_compaction_vs_hive import _history, _hive, _ours

pytestmark = pytest.mark.integration("hive")


@pytest.mark.parametrize("seed", [3])
def test_hive_reads_rebalanced_base_as_acidflow_does(hive, tmp_path, seed):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    _history(wh, seed)
    before = _ours(wh)  # sorted by the old (write ID, bucket, row ID)
    total = len(before)
    wh.metastore.enqueue_compaction("default.h", None, CompactionType.REBALANCE, number_of_buckets=3)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "compacted", outcome.message
    [base] = outcome.outputs
    assert base.startswith("base_")
    assert "_v" not in base
    expected = sorted(
        ((write_id, bucket_of_position(p, total, 3), p), *values)
        for p, ((write_id, _bucket, _row_id), *values) in enumerate(before)
    )
    assert _ours(wh) == expected
    assert _hive(hive, wh, vectorized=False) == expected
    assert _hive(hive, wh, vectorized=True) == expected
    run_cleaner(wh.metastore)
    assert _hive(hive, wh, vectorized=False) == expected
    assert _hive(hive, wh, vectorized=True) == expected
    wh.close()
