"""listing_reason and initiator_fingerprint: which partitions a cycle lists (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_core.compaction.initiator import (
    INITIATOR_LOOKBACK_SECONDS,
    CompactionRecord,
    InitiatorConfig,
    ListingReason,
    initiator_fingerprint,
    listing_reason,
)
from acid_core.metastore import CompactionState

START = 10_000.0  # the previous cycle's start
SINCE = START - INITIATOR_LOOKBACK_SECONDS
FP = "f" * 32


def reason(
    partition="p=1",
    *,
    previous=(START, FP),
    written=(),
    aborted=(),
    history=(),
    created_at=None,
    whole_table=False,
):
    return listing_reason(
        partition,
        fingerprint=FP,
        previous=previous,
        written=frozenset(written),
        aborted=frozenset(aborted),
        history=history,
        created_at=created_at,
        whole_table=whole_table,
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"previous": None}, ListingReason.FIRST_CYCLE),
        ({"previous": (START, "another")}, ListingReason.SETTINGS_CHANGED),
        ({}, None),
        ({"created_at": SINCE}, ListingReason.NEW_PARTITION),
        ({"created_at": SINCE - 1}, None),
        ({"written": ["p=1"]}, ListingReason.WRITTEN),
        ({"written": ["p=2", None]}, None),
        # A Hive Metastore by Thrift only: the table was written, the partition is unknown.
        ({"whole_table": True}, ListingReason.TABLE_WRITTEN),
        ({"whole_table": True, "previous": None}, ListingReason.FIRST_CYCLE),
        ({"aborted": ["p=1"]}, ListingReason.ABORTED),
        ({"history": [CompactionRecord(1, "initiated")]}, ListingReason.COMPACTION),
        ({"history": [CompactionRecord(1, "working")]}, ListingReason.COMPACTION),
        ({"history": [CompactionRecord(1, "ready_for_cleaning", SINCE - 50)]}, ListingReason.COMPACTION),
        ({"history": [CompactionRecord(1, "succeeded", SINCE)]}, ListingReason.COMPACTION),
        ({"history": [CompactionRecord(1, "succeeded", SINCE - 1)]}, None),
        ({"history": [CompactionRecord(1, "succeeded", None)]}, ListingReason.COMPACTION),
        # A failure long ago: the failed-retry rule may let it through now, with nothing changed.
        ({"history": [CompactionRecord(1, "failed", 0.0)]}, ListingReason.FAILED_COMPACTION),
        ({"history": [CompactionRecord(1, "did_not_initiate", 0.0)]}, ListingReason.FAILED_COMPACTION),
        (
            {"history": [CompactionRecord(2, "succeeded", 5.0), CompactionRecord(1, "failed", 1.0)]},
            None,
        ),
        (
            {"history": [CompactionRecord(1, "succeeded", 1.0), CompactionRecord(2, "failed", 5.0)]},
            ListingReason.FAILED_COMPACTION,
        ),
    ],
)
def test_listing_reason_table(kwargs, expected):
    assert reason(**kwargs) is expected


def test_listing_reason_unpartitioned_table_written_is_listed():
    assert reason(None, written=[None]) is ListingReason.WRITTEN
    assert reason(None, written=["p=1"]) is None


def fingerprint(config=None, properties=None, **kwargs):
    table = {"location": "s3://b/wh/t", "table_type": "acid", "num_buckets": 2, "create_time": 1.5}
    table.update(kwargs)
    return initiator_fingerprint(
        config or InitiatorConfig(), {"transactional": "true"} if properties is None else properties, **table
    )


@pytest.mark.parametrize(
    "changed",
    [
        {"config": InitiatorConfig(delta_num_threshold=5)},
        {
            "properties": {
                "transactional": "true",
                "compactorthreshold.hive.compactor.delta.num.threshold": "2",
            }
        },
        {"properties": {"transactional": "true", "NO_AUTO_COMPACTION": "false"}},
        {"location": "s3://b/wh/t2"},
        {"table_type": "insert_only"},
        {"num_buckets": 4},
        {"create_time": 2.5},  # dropped and created again under the same name
    ],
)
def test_initiator_fingerprint_changes_with_every_setting(changed):
    assert fingerprint(**changed) != fingerprint()
    assert (
        listing_reason(
            "p=1", fingerprint=fingerprint(**changed), previous=(START, fingerprint()), written=(), aborted=()
        )
        is ListingReason.SETTINGS_CHANGED
    )


def test_initiator_fingerprint_ignores_property_order():
    assert fingerprint(properties={"a": "1", "b": "2"}) == fingerprint(properties={"b": "2", "a": "1"})


_STATES = [state.value for state in CompactionState]
_records = st.lists(
    st.builds(
        CompactionRecord,
        st.integers(1, 50),
        st.sampled_from(_STATES),
        st.one_of(st.none(), st.floats(0, 2 * START)),
    ),
    max_size=5,
    unique_by=lambda r: r.compaction_id,
)


@given(
    written=st.frozensets(st.sampled_from(["p=1", "p=2", None]), max_size=3),
    aborted=st.frozensets(st.sampled_from(["p=1", "p=2", None]), max_size=3),
    history=_records,
    created_at=st.one_of(st.none(), st.floats(0, 2 * START)),
)
def test_listing_reason_skips_only_what_nothing_can_have_changed(written, aborted, history, created_at):
    """A skipped partition has no write, abort, creation or compaction event since the previous
    cycle, no compaction in flight, and no failed newest compaction whose retry time can come."""
    got = reason(written=written, aborted=aborted, history=history, created_at=created_at)
    finished = [
        r for r in history if r.state in {"succeeded", "failed", "did_not_initiate", "refused", "aborted"}
    ]
    newest = max(finished, key=lambda r: r.compaction_id, default=None)
    changed = (
        "p=1" in written
        or "p=1" in aborted
        or (created_at is not None and created_at >= SINCE)
        or any(r not in finished or r.end_time is None or r.end_time >= SINCE for r in history)
        or (newest is not None and newest.state in {"failed", "did_not_initiate"})
    )
    assert (got is not None) == changed
    # Without a previous cycle (or with other settings) everything is listed, whatever happened.
    assert (
        reason(previous=None, written=written, aborted=aborted, history=history) is ListingReason.FIRST_CYCLE
    )
