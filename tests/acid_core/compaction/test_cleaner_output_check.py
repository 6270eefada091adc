"""Before it deletes anything, the cleaner reads the footer of every file of the superseding output.

Hive's cleaner does not look; acidflow does: a base corrupted after its compaction committed must not
take the deltas with it (the table would have no good copy of its rows left).
"""

from __future__ import annotations

import os

import pytest

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.worker import run_worker
from acid_core.metastore import CompactionState, CompactionType
from tests.acid_core.compaction.histories import random_history, read_rows


def _compacted(wh, kind):
    history = random_history(wh, 51, partitioned=False, buckets=1, txns=6)
    expected = read_rows(history)
    location = wh.metastore.get_table("default.t").location
    before = sorted(n for n in os.listdir(location) if not n.startswith(("_", ".")))
    wh.metastore.enqueue_compaction("default.t", None, kind)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "compacted"
    return history, expected, location, before, outcome.outputs


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: b"not an ORC file at all",
        lambda data: data[:-3] + b"\xff\xff\xff",
    ],
    ids=["truncated", "garbage", "tail_overwritten"],
)
@pytest.mark.parametrize("kind", [CompactionType.MAJOR, CompactionType.MINOR], ids=["major", "minor"])
def test_cleaner_corrupt_output_keeps_the_inputs_and_reports_it(wh, damage, kind):
    history, expected, location, before, outputs = _compacted(wh, kind)
    output = next(name for name in outputs if not name.startswith("delete_"))
    bucket = os.path.join(location, output, "bucket_00000")
    with open(bucket, "rb") as f:
        good = f.read()
    with open(bucket, "wb") as f:
        f.write(damage(good))
    [result] = run_cleaner(wh.metastore)
    assert result.status == "retrying"
    assert (
        f"Corrupt ACID data at '{os.path.join(location, output)}': it supersedes the directories to delete"
        in (result.message)
    )
    assert "bucket_00000" in result.message
    assert set(before) <= set(os.listdir(location))
    [entry] = wh.metastore.show_compactions("default.t")
    assert entry.state is CompactionState.READY_FOR_CLEANING
    assert "it supersedes the directories to delete" in (entry.error_message or "")
    # The file repaired (restored from a backup), the next run cleans.
    with open(bucket, "wb") as f:
        f.write(good)
    [result] = run_cleaner(wh.metastore, now=10**10)
    assert result.status == "cleaned"
    assert not set(before) & set(os.listdir(location))
    assert read_rows(history) == expected
