"""Issue 14 goal 5: small compactions stay on the embedded executor, and the worker says why.

Real metastore, files and worker; the large-input runner is the embedded one behind a recorder
(what the worker routes is under test, not Spark itself: tests/integration/test_spark_compaction.py).
"""

from __future__ import annotations

import logging
import re

import pytest

from acid_core.compaction.worker import WorkerOptions, run_tasks_embedded, run_worker
from acid_core.metastore import CompactionType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history


class _RecordingRunner:
    def __init__(self):
        self.calls = 0

    def __call__(self, tasks, heartbeat):
        self.calls += 1
        return run_tasks_embedded(tasks, heartbeat)


@pytest.mark.parametrize(
    ("threshold", "large_calls", "says"),
    [
        (1 << 40, 0, r"are below the large-input threshold of 1099511627776 bytes: the embedded executor"),
        (0, 1, r"reach the large-input threshold of 0 bytes: the large-input \(Spark\) executor"),
    ],
    ids=["small-embedded", "large-spark"],
)
def test_worker_routes_by_input_size_and_logs_the_reason(tmp_path, caplog, threshold, large_calls, says):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    random_history(wh, 2, partitioned=False, buckets=1, txns=5)
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    large = _RecordingRunner()
    with caplog.at_level(logging.INFO, logger="acid_core.compaction.worker"):
        (outcome,) = run_worker(
            wh.metastore, options=WorkerOptions(large_runner=large, large_threshold_bytes=threshold)
        )
    assert outcome.status == "compacted", outcome
    assert large.calls == large_calls
    assert any(re.search(says, r.getMessage()) for r in caplog.records), caplog.text
    wh.close()
