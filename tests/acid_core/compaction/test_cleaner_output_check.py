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


def _an_input_bucket(location, before):
    return next(
        os.path.join(location, name, "bucket_00000")
        for name in before
        if name.startswith("delta_") and os.path.exists(os.path.join(location, name, "bucket_00000"))
    )


@pytest.mark.parametrize("kind", [CompactionType.MAJOR, CompactionType.MINOR], ids=["major", "minor"])
def test_cleaner_output_that_reads_but_holds_other_rows_than_recorded_keeps_the_inputs(wh, kind):
    history, expected, location, before, outputs = _compacted(wh, kind)
    output = next(name for name in outputs if not name.startswith("delete_"))
    bucket = os.path.join(location, output, "bucket_00000")
    with open(bucket, "rb") as f:
        good = f.read()
    # A well-formed ACID event file, of other rows (an input delta's): its footer reads fine.
    with open(_an_input_bucket(location, before), "rb") as f, open(bucket, "wb") as out:
        out.write(f.read())
    [result] = run_cleaner(wh.metastore)
    assert result.status == "retrying"
    assert "its files hold other rows than its compaction wrote" in result.message
    assert "bucket_00000" in result.message
    assert set(before) <= set(os.listdir(location))
    with open(bucket, "wb") as f:
        f.write(good)
    [result] = run_cleaner(wh.metastore, now=10**10)
    assert result.status == "cleaned"
    assert read_rows(history) == expected


def test_cleaner_output_missing_a_file_it_recorded_keeps_the_inputs(wh):
    history, expected, location, before, outputs = _compacted(wh, CompactionType.MAJOR)
    [base] = outputs
    os.rename(os.path.join(location, base, "bucket_00000"), os.path.join(location, "bucket_00000.aside"))
    [result] = run_cleaner(wh.metastore)
    assert result.status == "retrying"
    assert "'bucket_00000': 'missing'" in result.message
    assert set(before) <= set(os.listdir(location))
    os.rename(os.path.join(location, "bucket_00000.aside"), os.path.join(location, base, "bucket_00000"))
    [result] = run_cleaner(wh.metastore, now=10**10)
    assert result.status == "cleaned"
    assert read_rows(history) == expected


def test_cleaner_refuses_a_manifest_that_does_not_parse_and_deletes_nothing(wh):
    _history, _expected, location, before, _outputs = _compacted(wh, CompactionType.MAJOR)
    [manifest] = os.listdir(os.path.join(location, "_acidflow_cleaner", "output"))
    with open(os.path.join(location, "_acidflow_cleaner", "output", manifest), "w") as f:
        f.write("{not json")
    [result] = run_cleaner(wh.metastore)
    assert result.status == "retrying"
    assert "the compaction output manifest does not parse" in result.message
    assert set(before) <= set(os.listdir(location))


def test_manifest_records_the_footer_rows_and_is_pruned_once_its_output_is_gone(wh):
    history, expected, location, _before, outputs = _compacted(wh, CompactionType.MINOR)
    manifests = os.path.join(location, "_acidflow_cleaner", "output")
    [first] = os.listdir(manifests)
    [result] = run_cleaner(wh.metastore, now=10**10)
    assert result.status == "cleaned"
    assert os.listdir(manifests) == [first]  # its output is live: kept for the next check
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    [outcome] = run_worker(wh.metastore)
    assert outcome.status == "compacted"
    [result] = run_cleaner(wh.metastore, now=10**10)
    assert result.status == "cleaned"
    assert not any(os.path.exists(os.path.join(location, name)) for name in outputs)
    [second] = os.listdir(manifests)  # the minor's output is deleted: its manifest went with it
    assert second != first
    assert read_rows(history) == expected
