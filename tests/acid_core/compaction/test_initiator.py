"""Initiator decisions, table-driven; expected values follow Hive's Initiator / CompactionTxnHandler rules."""

from __future__ import annotations

import pytest

from acid_core.compaction.initiator import (
    CompactionRecord,
    CompactionType,
    DecisionReason,
    InitiatorConfig,
    PartitionFacts,
    decide_compaction,
)
from acid_core.errors import InvalidCompactionConfigError

DAY = 86400.0
NOW = 1_000_000_000.0
MAJOR, MINOR = CompactionType.MAJOR, CompactionType.MINOR


def facts(base=1000, delta=50, count=3, aborted=0, age=None, insert_only=False, partition="p=1"):
    return PartitionFacts("db.t", partition, base, delta, count, aborted, age, insert_only)


def failed(cid, end=NOW - 60):
    return CompactionRecord(cid, "failed", end)


CASES = {
    # id: (facts, properties, history, expected type, expected reason)
    "below_all_thresholds": (facts(), {}, [], None, DecisionReason.BELOW_THRESHOLDS),
    "exactly_10_deltas_is_not_more_than_10": (facts(count=10), {}, [], None, DecisionReason.BELOW_THRESHOLDS),
    "11_deltas_minor": (facts(count=11), {}, [], MINOR, DecisionReason.DELTA_NUM),
    "11_deltas_no_base_major": (facts(base=0, count=11), {}, [], MAJOR, DecisionReason.NO_BASE),
    "no_base_few_deltas_nothing": (facts(base=0, count=3), {}, [], None, DecisionReason.BELOW_THRESHOLDS),
    "insert_only_over_count_major": (
        facts(count=11, insert_only=True),
        {},
        [],
        MAJOR,
        DecisionReason.INSERT_ONLY,
    ),
    "pct_exactly_0.1_is_not_above": (
        facts(base=1000, delta=100),
        {},
        [],
        None,
        DecisionReason.BELOW_THRESHOLDS,
    ),
    "pct_above_0.1_major": (facts(base=1000, delta=101), {}, [], MAJOR, DecisionReason.DELTA_PCT),
    "pct_wins_over_count": (facts(base=1000, delta=500, count=20), {}, [], MAJOR, DecisionReason.DELTA_PCT),
    "1001_aborted_major": (facts(aborted=1001), {}, [], MAJOR, DecisionReason.TOO_MANY_ABORTS),
    "1000_aborted_not_enough": (facts(aborted=1000), {}, [], None, DecisionReason.BELOW_THRESHOLDS),
    "aborted_older_than_12h_major": (
        facts(aborted=1, age=12 * 3600 + 1),
        {},
        [],
        MAJOR,
        DecisionReason.OLD_ABORTS,
    ),
    "aborted_11h_old_nothing": (
        facts(aborted=1, age=11 * 3600),
        {},
        [],
        None,
        DecisionReason.BELOW_THRESHOLDS,
    ),
    "override_num_threshold": (
        facts(count=4),
        {"compactorthreshold.hive.compactor.delta.num.threshold": "3"},
        [],
        MINOR,
        DecisionReason.DELTA_NUM,
    ),
    "override_pct_threshold": (
        facts(base=1000, delta=50),
        {"COMPACTORTHRESHOLD.hive.compactor.delta.pct.threshold": "0.01"},
        [],
        MAJOR,
        DecisionReason.DELTA_PCT,
    ),
    "override_aborted_threshold": (
        facts(aborted=3),
        {"compactorthreshold.hive.compactor.abortedtxn.threshold": "2"},
        [],
        MAJOR,
        DecisionReason.TOO_MANY_ABORTS,
    ),
    "override_aborted_time_in_hours": (
        facts(aborted=1, age=2 * 3600),
        {"compactorthreshold.hive.compactor.aborted.txn.time.threshold": "1h"},
        [],
        MAJOR,
        DecisionReason.OLD_ABORTS,
    ),
    "no_auto_compaction": (
        facts(count=50),
        {"NO_AUTO_COMPACTION": "TRUE"},
        [],
        None,
        DecisionReason.NO_AUTO_COMPACTION,
    ),
    "no_auto_compaction_false_is_ignored": (
        facts(count=50),
        {"no_auto_compaction": "false"},
        [],
        MINOR,
        DecisionReason.DELTA_NUM,
    ),
    "initiated_skips": (
        facts(count=50),
        {},
        [CompactionRecord(7, "initiated")],
        None,
        DecisionReason.ALREADY_QUEUED,
    ),
    "working_skips": (
        facts(count=50),
        {},
        [CompactionRecord(7, "working")],
        None,
        DecisionReason.ALREADY_QUEUED,
    ),
    "ready_for_cleaning_does_not_skip": (
        facts(count=50),
        {},
        [CompactionRecord(7, "ready_for_cleaning")],
        MINOR,
        DecisionReason.DELTA_NUM,
    ),
    "two_failures_stop": (
        facts(count=50),
        {},
        [failed(1), failed(2)],
        None,
        DecisionReason.TOO_MANY_FAILURES,
    ),
    "did_not_initiate_counts_as_failure": (
        facts(count=50),
        {},
        [failed(1), CompactionRecord(2, "did_not_initiate", NOW - 5)],
        None,
        DecisionReason.TOO_MANY_FAILURES,
    ),
    "one_failure_goes_on": (facts(count=50), {}, [failed(1)], MINOR, DecisionReason.DELTA_NUM),
    "success_after_failures_resumes": (
        facts(count=50),
        {},
        [failed(1), failed(2), CompactionRecord(3, "succeeded", NOW - 10)],
        MINOR,
        DecisionReason.DELTA_NUM,
    ),
    "failures_older_than_7_days_resume": (
        facts(count=50),
        {},
        [failed(1, NOW - 9 * DAY), failed(2, NOW - 8 * DAY)],
        MINOR,
        DecisionReason.DELTA_NUM,
    ),
    "failures_6_days_old_still_stop": (
        facts(count=50),
        {},
        [failed(1, NOW - 7 * DAY), failed(2, NOW - 6 * DAY)],
        None,
        DecisionReason.TOO_MANY_FAILURES,
    ),
    "failed_threshold_override": (
        facts(count=50),
        {"compactorthreshold.hive.compactor.initiator.failed.compacts.threshold": "3"},
        [failed(1), failed(2)],
        MINOR,
        DecisionReason.DELTA_NUM,
    ),
}


@pytest.mark.parametrize(("case"), CASES.values(), ids=CASES.keys())
def test_decide_compaction_cases(case):
    partition_facts, properties, history, expected_type, expected_reason = case
    decision = decide_compaction(
        partition_facts, InitiatorConfig(), table_properties=properties, history=history, now=NOW
    )
    assert (decision.compaction_type, decision.reason) == (expected_type, expected_reason)
    assert decision.message.startswith("db.t partition p=1: ")
    assert decision.should_compact is (expected_type is not None)


def test_decide_compaction_carries_numbers_when_not_now():
    decision = decide_compaction(facts(base=2000, delta=100, count=4), InitiatorConfig(), now=NOW)
    assert decision.compaction_type is None
    assert dict(decision.numbers) == {
        "aborted_count": 0,
        "base_bytes": 2000,
        "delta_bytes": 100,
        "delta_count": 4,
        "delta_num_threshold": 10,
        "delta_pct": 0.05,
        "delta_pct_threshold": 0.1,
    }
    assert decision.message == (
        "db.t partition p=1: not now: 4 deltas <= threshold 10, delta/base 0.050 <= 0.1, "
        "0 aborted directories <= threshold 1000"
    )
    assert decision.to_json_dict()["reason"] == "below_thresholds"


def test_decide_compaction_unpartitioned_message_names_table():
    decision = decide_compaction(facts(count=11, partition=None), InitiatorConfig(), now=NOW)
    assert decision.message == "db.t: 11 deltas > threshold 10"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("compactorthreshold.hive.compactor.delta.num.threshold", "ten"),
        ("compactorthreshold.hive.compactor.delta.num.threshold", "-1"),
        ("compactorthreshold.hive.compactor.delta.pct.threshold", "nan"),
        ("compactorthreshold.hive.compactor.aborted.txn.time.threshold", "12 fortnights"),
    ],
    ids=["not_a_number", "negative", "nan", "bad_unit"],
)
def test_decide_compaction_bad_override_raises(key, value):
    with pytest.raises(InvalidCompactionConfigError, match=rf"Invalid compaction setting {key}={value!r}"):
        decide_compaction(facts(), InitiatorConfig(), table_properties={key: value}, now=NOW)
